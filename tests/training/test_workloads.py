"""The DNN workloads against published counts, hand formulas and PyTorch's own shapes."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from hw_models.training.layers import Gemm, NetBuilder
from hw_models.training.systolic import training_gemms
from hw_models.training.workloads import (
    WORKLOADS, Workload, alphago_zero, faster_rcnn, from_torch_module, get_workload, load_workload_file, ncf,
    transformer_base, vgg16, workload_from_dict,
)
from noc.base.errors import ConfigError

# Published parameter counts (torchvision's model documentation) and forward multiply-adds
# per 224x224 image in GMAC (torchvision lists them as "GFLOPS", 2 decimals).
PUBLISHED = {"alexnet": (61_100_840, 0.71), "vgg16": (138_357_544, 15.47), "resnet50": (25_557_032, 4.09)}
RESNET50_FC = 2048 * 1000 + 1000


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_parameters_and_macs(name):
    w = get_workload(name)
    params, gmacs = PUBLISHED[name]
    assert w.params == params
    assert round(w.gemm_macs / 1e9, 2) == gmacs
    assert w.fwd_flops == 2 * w.gemm_macs + sum(x.fwd_flops for x in w.layers if not x.gemms)


def test_googlenet_matches_its_table_by_hand():
    # GoogLeNet paper, Table 1: #1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool proj
    table = [(192, (64, 96, 128, 16, 32, 32)), (256, (128, 128, 192, 32, 96, 64)),
             (480, (192, 96, 208, 16, 48, 64)), (512, (160, 112, 224, 24, 64, 64)),
             (512, (128, 128, 256, 24, 64, 64)), (512, (112, 144, 288, 32, 64, 64)),
             (528, (256, 160, 320, 32, 128, 128)), (832, (256, 160, 320, 32, 128, 128)),
             (832, (384, 192, 384, 48, 128, 128))]
    total = (7 * 7 * 3 * 64 + 64) + (64 * 64 + 64) + (9 * 64 * 192 + 192)
    for cin, (a, r3, b3, r5, b5, pp) in table:
        assert a + b3 + b5 + pp in (256, 480, 512, 528, 832, 1024)
        total += cin * a + a + cin * r3 + r3 + 9 * r3 * b3 + b3 + cin * r5 + r5 + 25 * r5 * b5 + b5 + cin * pp + pp
    total += 1024 * 1000 + 1000
    w = get_workload("googlenet")
    assert w.params == total == 6_998_552
    assert abs(w.params - 6.8e6) / 6.8e6 < 0.03  # the paper's rounded table sums to about 6.8 M
    # the paper's output sizes: 28x28x256 after 3a, 14x14x512 after 4a, 7x7x1024 after 5b
    assert w.layer("inception3a.concat").activation_elems == 28 * 28 * 256
    assert w.layer("inception4a.concat").activation_elems == 14 * 14 * 512
    assert w.layer("inception4e.concat").activation_elems == 14 * 14 * 832
    assert w.layer("inception5b.concat").activation_elems == 7 * 7 * 1024
    assert 1.5e9 < w.gemm_macs < 1.6e9  # "1.5 billion multiply-adds" (its paper)


def _transformer_by_hand(seq, vocab, d, ff, heads, n):
    linear = lambda i, o, bias=True: i * o + (o if bias else 0)  # noqa: E731
    enc = 4 * linear(d, d) + linear(d, ff) + linear(ff, d) + 2 * 2 * d
    dec = 8 * linear(d, d) + linear(d, ff) + linear(ff, d) + 3 * 2 * d
    params = vocab * d + n * enc + n * dec
    w_enc = 4 * d * d + 2 * d * ff          # weight multiply-adds per token
    w_dec = 8 * d * d + 2 * d * ff
    attn = 2 * seq * seq * d                 # scores and context, all heads
    macs = n * (seq * w_enc + attn) + n * (seq * w_dec + 2 * attn) + seq * vocab * d
    return params, macs


@pytest.mark.parametrize("cfg", [dict(seq=128, vocab=37000, d=512, ff=2048, heads=8, n=6),
                                 dict(seq=16, vocab=1000, d=64, ff=256, heads=4, n=2)])
def test_transformer_by_hand(cfg):
    w = transformer_base(seq_len=cfg["seq"], vocab=cfg["vocab"], d_model=cfg["d"], d_ff=cfg["ff"],
                         heads=cfg["heads"], layers=cfg["n"])
    params, macs = _transformer_by_hand(**cfg)
    assert (w.params, w.gemm_macs) == (params, macs)
    if cfg["vocab"] == 37000:
        assert w.params == 63_082_496  # the paper quotes 65 M for its base model
    assert w.layer("src_embed").params == cfg["vocab"] * cfg["d"]
    assert w.layer("out_proj").params == 0 and w.layer("tgt_embed").params == 0  # one shared matrix


def test_ncf_alphago_faster_rcnn_by_hand():
    users, items = 138_493, 26_744
    assert ncf().params == (users + items) * (64 + 128) + (256 * 256 + 256) + (256 * 128 + 128) \
        + (128 * 64 + 64) + (128 + 1) == 31_832_577
    res = 2 * 9 * 256 * 256 + 2 * 2 * 256
    agz = (9 * 17 * 256 + 512) + 19 * res + (256 * 2 + 4 + 722 * 362 + 362) + (256 + 2 + 361 * 256 + 256 + 256 + 1)
    assert alphago_zero().params == agz == 22_827_877
    rpn = (9 * 1024 * 512 + 512) + (512 * 18 + 18) + (512 * 36 + 36)
    head = (2048 * 21 + 21) + (2048 * 84 + 84)
    # whole ResNet-50 but its classifier (res5 is the detection head) + RPN + detection outputs
    assert faster_rcnn().params == PUBLISHED["resnet50"][0] - RESNET50_FC + rpn + head == 28_469_983

    def bottleneck(cin, mid, proj):
        return cin * mid + 9 * mid * mid + mid * 4 * mid + 2 * (2 * mid + 4 * mid) + (cin * 4 * mid + 8 * mid if proj else 0)
    res5 = bottleneck(1024, 512, True) + 2 * bottleneck(2048, 512, False)
    assert faster_rcnn(image_hw=224, head=False).params == PUBLISHED["resnet50"][0] - RESNET50_FC - res5 + rpn
    # the detection head's res5 runs once per RoI: its GEMMs have rois * 7 * 7 rows
    assert faster_rcnn(rois=64).layer("layer4.1.conv2").gemms == (Gemm(64 * 49, 512, 9 * 512),)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_flop_conventions_and_gemm_lists_agree(name):
    w = WORKLOADS[name]
    first = w.layers[0]
    assert not first.input_grad and all(x.input_grad for x in w.layers[1:] if x.kind != "embedding")
    for x in w.layers:
        macs = sum(g.macs for g in x.gemms)
        if x.gemms:
            assert x.fwd_flops == 2 * macs
            assert x.bwd_flops == (2 if x.input_grad else 1) * x.fwd_flops
        for batch in (1, 3):
            fwd, bwd = training_gemms(x, batch)
            assert sum(2 * r.m * r.n * r.k * r.repeat for r in fwd) == batch * 2 * macs
            assert sum(2 * r.m * r.n * r.k * r.repeat for r in bwd) == batch * (x.bwd_flops if x.gemms else 0)
    assert w.grad_bytes == tuple(4 * x.params for x in w.layers)
    assert w.total_grad_bytes == sum(w.grad_bytes) == 4 * w.params
    half = replace(w, dtype_bytes=2)
    assert half.total_grad_bytes == 2 * w.params


@pytest.mark.parametrize("name", ["alexnet", "vgg16"])
def test_sequential_networks_chain_their_shapes(name):
    layers = WORKLOADS[name].layers
    assert layers[0].input_elems == 3 * 224 * 224
    for a, b in zip(layers, layers[1:]):
        assert a.activation_elems == b.input_elems, (a.name, b.name)
    assert layers[-1].activation_elems == 1000


def test_resnet50_conv_shapes_are_im2col():
    w = get_workload("resnet50")
    assert w.layer("conv1").gemms == (Gemm(m=112 * 112, n=64, k=7 * 7 * 3),)
    assert w.layer("layer2.0.conv2").gemms == (Gemm(m=28 * 28, n=128, k=9 * 128),)  # v1.5: stride in the 3x3
    assert w.layer("layer2.0.downsample").gemms == (Gemm(m=28 * 28, n=512, k=256),)
    assert w.layer("fc").gemms == (Gemm(m=1, n=1000, k=2048),)


def test_unknown_workload_names_the_allowed_ones():
    with pytest.raises(ConfigError, match="'lenet'.*allowed: alexnet, vgg16, resnet50, googlenet, transformer, ncf, "
                                          "alphago_zero, faster_rcnn"):
        get_workload("lenet")
    assert get_workload("AlphaGo-Zero") is WORKLOADS["alphago_zero"]


def test_workload_value_checks():
    w = WORKLOADS["alexnet"]
    with pytest.raises(ConfigError, match="dtype_bytes = 3.*1, 2, 4, 8"):
        replace(w, dtype_bytes=3)
    with pytest.raises(ConfigError, match="'conv1' is used twice"):
        Workload("x", (w.layers[0], w.layers[0]))
    with pytest.raises(ConfigError, match="Gemm.k = 0"):
        Gemm(1, 1, 0)


# -- layer files ------------------------------------------------------------------------

def _vgg16_spec():
    layers = []
    for s, stage in enumerate([[64, 64], [128, 128], [256] * 3, [512] * 3, [512] * 3], start=1):
        for j, ch in enumerate(stage, start=1):
            layers += [{"kind": "conv", "name": f"conv{s}_{j}", "out_channels": ch, "kernel": 3, "padding": 1},
                       {"kind": "relu", "name": f"relu{s}_{j}"}]
        layers.append({"kind": "maxpool", "name": f"pool{s}", "kernel": [2, 2]})
    layers.append({"kind": "flatten", "name": "flatten"})
    for i in (6, 7):
        layers += [{"kind": "linear", "name": f"fc{i}", "out_features": 4096}, {"kind": "relu", "name": f"relu{i}"},
                   {"kind": "dropout", "name": f"drop{i}"}]
    layers.append({"kind": "linear", "name": "fc8", "out_features": 1000})
    return {"name": "vgg16", "input": [3, 224, 224], "layers": layers}


def _toml(spec) -> str:
    import tomli_w

    return tomli_w.dumps(spec)


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_layer_file_reproduces_vgg16(tmp_path, fmt):
    spec = _vgg16_spec()
    path = tmp_path / f"vgg.{fmt}"
    path.write_text(json.dumps(spec) if fmt == "json" else _toml(spec))
    w = load_workload_file(path)
    assert w.layers == vgg16().layers
    assert w.dtype_bytes == 4


def test_layer_file_gemm_and_sequence_layers():
    spec = {"name": "mlp", "input": [16, 64], "dtype_bytes": 2, "notes": "tokens",
            "layers": [{"kind": "linear", "out_features": 128}, {"kind": "layernorm"},
                       {"kind": "gemm", "m": 16, "n": 16, "k": 32, "count": 4, "shared": False}, {"kind": "softmax"}]}
    w = workload_from_dict(spec)
    assert [x.name for x in w.layers] == ["linear0", "layernorm1", "gemm2", "softmax3"]
    assert w.layers[0].gemms == (Gemm(16, 128, 64),) and w.layers[0].params == 64 * 128 + 128
    assert not w.layers[0].input_grad and w.layers[0].bwd_flops == w.layers[0].fwd_flops
    assert w.layers[2].params == 0 and w.layers[2].gemms == (Gemm(16, 16, 32, 4, False),)
    assert w.layers[3].activation_elems == 4 * 16 * 16
    assert w.total_grad_bytes == 2 * w.params


BAD_FILES = [
    ({"name": "x", "input": [3, 8, 8], "layers": [{"kind": "conv", "out_channels": 4, "kernal": 3}]},
     "layers[0] (conv): unknown key 'kernal' = 3 (allowed: kind, name, out_channels, kernel, stride, padding, groups, bias)"),
    ({"name": "x", "input": [3, 8, 8], "layers": [{"kind": "conv", "out_channels": 4, "kernel": 0}]},
     "layers[0].kernel = 0: must be an integer >= 1 or a pair"),
    ({"name": "x", "input": [3, 8, 8], "layers": [{"kind": "conv", "out_channels": 4, "kernel": "3"}]},
     "layers[0].kernel = '3': must be"),
    ({"name": "x", "input": [3, 8, 8], "layers": [{"kind": "conv", "out_channels": 4, "kernel": 3, "bias": 1}]},
     "layers[0].bias = 1: must be true or false"),
    ({"name": "x", "input": [3, 8, 8], "layers": [{"kind": "conv", "kernel": 3}]},
     "layers[0] (conv): missing key 'out_channels'"),
    ({"name": "x", "input": [3, 8, 8], "layers": [{"kind": "conv3d"}]},
     "layers[0].kind = 'conv3d': unknown layer kind (allowed: conv, linear,"),
    ({"name": "x", "input": [3, 8, 8], "layers": [{"kind": "conv", "out_channels": 4, "kernel": 9}]},
     "kernel 9x9 is larger than its padded input 8x8"),
    ({"name": "x", "input": [3, 8, 8], "layers": [{"kind": "linear", "out_features": 4}]},
     "needs a vector (F,) or a sequence (L, D)"),
    ({"name": "x", "input": [3, 8, 8], "layers": []}, "layers = []: must be a non-empty list"),
    ({"name": "x", "input": [0, 8], "layers": [{"kind": "relu"}]}, "input = [0, 8]: must be a list of 1 to 3"),
    ({"name": "x", "input": [8], "layers": [{"kind": "relu"}], "dtype": 4},
     "unknown key 'dtype' = 4 (allowed: name, input, dtype_bytes, notes, layers)"),
    ({"name": "x", "input": [8], "dtype_bytes": 3, "layers": [{"kind": "relu"}]}, "dtype_bytes = 3: must be one of 1, 2, 4, 8"),
    ({"input": [8], "layers": [{"kind": "relu"}]}, "missing key 'name'"),
    ({"name": "x", "input": [8], "layers": [{"kind": "relu", "name": "a"}, {"kind": "relu", "name": "a"}]},
     "layer name 'a' is used twice"),
]


@pytest.mark.parametrize("spec,message", BAD_FILES)
def test_bad_layer_files_are_refused_with_the_key_value_and_rule(spec, message):
    with pytest.raises(ConfigError) as exc:
        workload_from_dict(spec, source="net.toml")
    assert message in str(exc.value)
    assert str(exc.value).startswith("net.toml")


def test_bad_layer_file_paths(tmp_path):
    with pytest.raises(ConfigError, match="must end in .json or .toml"):
        load_workload_file(tmp_path / "net.yaml")
    with pytest.raises(ConfigError, match="no such"):
        load_workload_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_workload_file(bad)


def test_pool_output_sizes_count_windows():
    # floor: windows inside the padded input; ceil: a last partial window may stick out on the
    # right by less than a stride, but never start in the right padding (PyTorch's rule)
    for size in range(3, 20):
        for k, s, p in [(3, 2, 0), (3, 2, 1), (2, 2, 0), (3, 1, 1), (5, 3, 2)]:
            for ceil in (False, True):
                b = NetBuilder("p", (1, size, size))
                b.pool("pool", "maxpool", k, s, p, ceil_mode=ceil)
                slack = s - 1 if ceil else 0
                windows = [i for i in range(100) if i * s + k <= size + 2 * p + slack and i * s < size + p]
                assert b.shape[1:] == (len(windows), len(windows)), (size, k, s, p, ceil)


# -- PyTorch ------------------------------------------------------------------------------

def _torch_alexnet(nn):
    return nn.Sequential(
        nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(), nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(),
        nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2), nn.AdaptiveAvgPool2d((6, 6)), nn.Flatten(),
        nn.Dropout(), nn.Linear(9216, 4096), nn.ReLU(), nn.Dropout(), nn.Linear(4096, 4096), nn.ReLU(),
        nn.Linear(4096, 1000))


def _strip(layer):
    return replace(layer, name="")


def test_torch_alexnet_equals_ours_layer_for_layer():
    torch = pytest.importorskip("torch")
    with torch.device("meta"):  # shapes only: no weights initialised, no arithmetic
        net = _torch_alexnet(torch.nn)
    w = from_torch_module(net, (3, 224, 224), name="alexnet")
    assert w.params == sum(p.numel() for p in net.parameters()) == PUBLISHED["alexnet"][0]
    assert [_strip(x) for x in w.layers] == [_strip(x) for x in get_workload("alexnet").layers]


def test_torch_module_with_branches_sequences_and_norms():
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(8, 4, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2, bias=False)
            self.down = nn.Conv2d(8, 8, 1, stride=2, bias=False)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            y = self.conv2(self.relu(self.bn1(self.conv1(x)))) + self.down(x)
            return self.fc(torch.flatten(self.pool(y), 1))

    net = Block()
    w = from_torch_module(net, (8, 9, 9))
    b = NetBuilder("block", (8, 9, 9))
    b.conv("conv1", 4, 1, bias=False)
    b.batchnorm("bn1")
    b.relu("relu")
    b.conv("conv2", 8, 3, 2, 1, groups=2, bias=False)
    b.shape = (8, 9, 9)
    b.conv("down", 8, 1, 2, bias=False)
    b.global_avgpool("pool")
    b.linear("fc", 5)
    assert w.layers == tuple(b.layers)
    assert w.layer("conv2").gemms == (Gemm(m=25, n=4, k=9 * 2, count=2),)
    assert w.params == sum(p.numel() for p in net.parameters())

    seq = nn.Sequential(nn.Embedding(100, 16), nn.Linear(16, 32), nn.LayerNorm(32), nn.Softmax(-1))
    ws = from_torch_module(seq, (10,))
    assert [x.kind for x in ws.layers] == ["embedding", "linear", "layernorm", "softmax"]
    assert ws.layers[1].gemms == (Gemm(10, 32, 16),) and ws.params == 100 * 16 + 16 * 32 + 32 + 64


def test_torch_unsupported_module_names_the_allowed_ones():
    torch = pytest.importorskip("torch")
    with pytest.raises(ConfigError, match="type GELU is not supported \\(allowed: Conv2d, Linear"):
        from_torch_module(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU()), (4,))
    with pytest.raises(ConfigError, match="input_shape"):
        from_torch_module(torch.nn.Linear(4, 4), (0,))


def test_torchvision_resnet50_if_available():
    pytest.importorskip("torch")
    tv = pytest.importorskip("torchvision")
    w = from_torch_module(tv.models.resnet50(), (3, 224, 224))
    ours = get_workload("resnet50")
    assert [(x.params, x.gemms) for x in w.layers if x.gemms] == [(x.params, x.gemms) for x in ours.layers if x.gemms]
    assert w.params == ours.params


def test_workloads_build_from_descriptions_not_totals():
    # a parameter of a builder changes the totals by the formula's amount
    base, wider = alphago_zero(blocks=1), alphago_zero(blocks=2)
    assert wider.params - base.params == 2 * 9 * 256 * 256 + 4 * 256
    assert wider.gemm_macs - base.gemm_macs == 2 * 19 * 19 * 9 * 256 * 256
    assert math.isclose(transformer_base(seq_len=256).gemm_macs / transformer_base(seq_len=128).gemm_macs, 2.0, rel_tol=0.1)


@pytest.mark.parametrize("layers,says", [
    ([{"kind": "linear", "out_features": 2**63 - 1}], "linear0': params = "),
    ([{"kind": "gemm", "m": 10**9, "n": 10**9, "k": 10**9}], "gemm0': params = 1,000,000,000,000,000,000"),
    ([{"kind": "gemm", "m": 2**30, "n": 2**5, "k": 2**30, "params": 0}], "fwd_flops = 73,786,976,294,838,206,464"),
    ([{"kind": "linear", "out_features": 2**21}, {"kind": "linear", "out_features": 2**21}], "params = 4,398,048,608,256"),
])
def test_a_layer_past_the_largest_modelled_is_refused_by_name(layers, says):
    # without the bound, train and train-system died on an int64 overflow in the schedule's chunk bounds
    spec = {"name": "big", "input": [1024], "layers": layers}
    with pytest.raises(ConfigError) as exc:
        workload_from_dict(spec, source="net.toml")
    assert says in str(exc.value) and "past the largest modelled" in str(exc.value)
    assert str(exc.value).startswith("net.toml")


def test_the_largest_layer_allowed_still_builds():
    # 2^20 x 2^20 weights (+ 2^20 bias) is 2^40 + 2^20 elements: one bias past the bound
    w = workload_from_dict({"name": "edge", "input": [2**20], "layers": [{"kind": "linear", "out_features": 2**20,
                                                                              "bias": False}]})
    assert w.layers[0].params == 2**40
