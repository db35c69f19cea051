"""DNN training workloads: the MultiTree paper's networks, layer by layer, and your own.

Every network is generated from its layer descriptions by :class:`~hw_models.training.layers.NetBuilder`
(no totals typed in); docs/training_workloads.md lists the configurations and the table that
``python -m hw_models.training.workloads`` prints.

* :data:`WORKLOADS` and :func:`get_workload` -- the built-in networks by name;
* :func:`load_workload_file` -- a JSON or TOML layer list (validated: a bad key or value is a
  :class:`~noc.base.errors.ConfigError` naming it and what is allowed);
* :func:`from_torch_module` -- the layers of a PyTorch module, recorded while it runs
  (needs ``torch``, the ``bench`` extra; imported only when called).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from hw_models.training.layers import Gemm, Layer, NetBuilder
from noc.base.errors import ConfigError

__all__ = ["Gemm", "Layer", "Workload", "WORKLOADS", "get_workload", "load_workload_file", "workload_from_dict",
           "from_torch_module", "alexnet", "vgg16", "resnet50", "googlenet", "transformer_base", "ncf",
           "alphago_zero", "faster_rcnn", "DTYPE_BYTES_ALLOWED"]

DTYPE_BYTES_ALLOWED = (1, 2, 4, 8)


@dataclass(frozen=True)
class Workload:
    """A network's layers in forward order, per sample, and the bytes of one gradient
    element (``dtype_bytes``: 4 for fp32 training)."""

    name: str
    layers: tuple[Layer, ...]
    dtype_bytes: int = 4
    notes: str = ""

    def __post_init__(self):
        if isinstance(self.dtype_bytes, bool) or self.dtype_bytes not in DTYPE_BYTES_ALLOWED:
            raise ConfigError(f"workload {self.name!r}: dtype_bytes = {self.dtype_bytes!r}: must be one of "
                              f"{', '.join(map(str, DTYPE_BYTES_ALLOWED))}")
        if not self.layers:
            raise ConfigError(f"workload {self.name!r} has no layers")
        seen: set[str] = set()
        for layer in self.layers:
            if layer.name in seen:
                raise ConfigError(f"workload {self.name!r}: layer name {layer.name!r} is used twice")
            seen.add(layer.name)
        object.__setattr__(self, "layers", tuple(self.layers))

    @property
    def params(self) -> int:
        return sum(x.params for x in self.layers)

    @property
    def fwd_flops(self) -> int:
        """Forward FLOPs per sample."""
        return sum(x.fwd_flops for x in self.layers)

    @property
    def bwd_flops(self) -> int:
        """Backward FLOPs per sample."""
        return sum(x.bwd_flops for x in self.layers)

    @property
    def gemm_macs(self) -> int:
        """Multiply-adds of the forward GEMMs per sample."""
        return sum(g.macs for x in self.layers for g in x.gemms)

    @property
    def activation_elems(self) -> int:
        """Output elements of all layers per sample."""
        return sum(x.activation_elems for x in self.layers)

    @property
    def grad_bytes(self) -> tuple[int, ...]:
        """Gradient bytes of each layer (``params * dtype_bytes``), in layer order."""
        return tuple(x.params * self.dtype_bytes for x in self.layers)

    @property
    def total_grad_bytes(self) -> int:
        return self.params * self.dtype_bytes

    def layer(self, name: str) -> Layer:
        for x in self.layers:
            if x.name == name:
                return x
        raise KeyError(name)


def _workload(b: NetBuilder, notes: str, dtype_bytes: int = 4) -> Workload:
    return Workload(name=b.name, layers=tuple(b.layers), dtype_bytes=dtype_bytes, notes=notes)


# ---------------------------------------------------------------------------------------
# The networks
# ---------------------------------------------------------------------------------------

def alexnet() -> Workload:
    """AlexNet in its single-tower form (convolutions of 64, 192, 384, 256, 256 channels;
    no grouping, no LRN), 224x224x3 input, 1000 classes."""
    b = NetBuilder("alexnet", (3, 224, 224))
    for i, (ch, k, s, p, pool) in enumerate([(64, 11, 4, 2, True), (192, 5, 1, 2, True), (384, 3, 1, 1, False),
                                             (256, 3, 1, 1, False), (256, 3, 1, 1, True)], start=1):
        b.conv(f"conv{i}", ch, k, s, p)
        b.relu(f"relu{i}")
        if pool:
            b.pool(f"pool{i}", "maxpool", 3, 2)
    b.flatten("flatten")
    for i, width in ((6, 4096), (7, 4096)):
        b.dropout(f"drop{i}")
        b.linear(f"fc{i}", width)
        b.relu(f"relu{i}")
    b.linear("fc8", 1000)
    return _workload(b, "single-tower AlexNet (torchvision layout), 224x224x3 input, 1000 classes; "
                        "the adaptive 6x6 average pool is the identity at this input size and is left out")


def vgg16() -> Workload:
    """VGG-16 (configuration D): 13 3x3 convolutions and 3 fully connected layers, no batch
    norm, 224x224x3 input."""
    b = NetBuilder("vgg16", (3, 224, 224))
    cfg = [[64, 64], [128, 128], [256, 256, 256], [512, 512, 512], [512, 512, 512]]
    for s, stage in enumerate(cfg, start=1):
        for j, ch in enumerate(stage, start=1):
            b.conv(f"conv{s}_{j}", ch, 3, 1, 1)
            b.relu(f"relu{s}_{j}")
        b.pool(f"pool{s}", "maxpool", 2, 2)
    b.flatten("flatten")
    b.linear("fc6", 4096)
    b.relu("relu6")
    b.dropout("drop6")
    b.linear("fc7", 4096)
    b.relu("relu7")
    b.dropout("drop7")
    b.linear("fc8", 1000)
    return _workload(b, "VGG-16 (configuration D, no batch norm), 224x224x3 input, 1000 classes")


def _conv_bn(b: NetBuilder, prefix: str, names: str, out_channels: int, kernel: int, stride: int = 1,
             padding: int = 0) -> None:
    """A convolution without bias and its batch norm, then a ReLU when ``names`` (space-separated,
    each after ``prefix``: conv, batch norm[, ReLU]) has a third."""
    conv, bn, *relu = (prefix + n for n in names.split())
    b.conv(conv, out_channels, kernel, stride, padding, bias=False)
    b.batchnorm(bn)
    if relu:
        b.relu(relu[0])


def _bottleneck(b: NetBuilder, prefix: str, mid: int, stride: int) -> None:
    """ResNet v1.5 bottleneck: 1x1 (mid), 3x3 (mid, stride), 1x1 (4 mid), batch norm after
    each convolution, a 1x1 projection when the shape changes, the sum, ReLU."""
    x = b.shape
    out = 4 * mid
    _conv_bn(b, f"{prefix}.", "conv1 bn1 relu1", mid, 1)
    _conv_bn(b, f"{prefix}.", "conv2 bn2 relu2", mid, 3, stride, 1)
    _conv_bn(b, f"{prefix}.", "conv3 bn3", out, 1)
    y = b.shape
    if stride != 1 or x[0] != out:
        b.shape = x
        _conv_bn(b, f"{prefix}.", "downsample downsample_bn", out, 1, stride)
        assert b.shape == y
    b.add(f"{prefix}.add")
    b.relu(f"{prefix}.relu3")


def _resnet50_stem_and_stages(b: NetBuilder, stages: int) -> None:
    _conv_bn(b, "", "conv1 bn1 relu1", 64, 7, 2, 3)
    b.pool("maxpool", "maxpool", 3, 2, 1)
    for s, (blocks, mid) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))[:stages], start=1):
        for i in range(blocks):
            _bottleneck(b, f"layer{s}.{i}", mid, 2 if (i == 0 and s > 1) else 1)


def resnet50() -> Workload:
    """ResNet-50 v1.5 (stride 2 in the 3x3 convolution of a downsampling block), batch
    norm, 224x224x3 input, 1000 classes."""
    b = NetBuilder("resnet50", (3, 224, 224))
    _resnet50_stem_and_stages(b, 4)
    b.global_avgpool("avgpool")
    b.linear("fc", 1000)
    return _workload(b, "ResNet-50 v1.5 (torchvision layout: stride in the 3x3 convolution), batch norm "
                        "(2 parameters per channel), 224x224x3 input, 1000 classes")


# GoogLeNet v1, its paper's Table 1: #1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool proj
GOOGLENET_INCEPTION = {
    "3a": (64, 96, 128, 16, 32, 32), "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64), "4b": (160, 112, 224, 24, 64, 64), "4c": (128, 128, 256, 24, 64, 64),
    "4d": (112, 144, 288, 32, 64, 64), "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128), "5b": (384, 192, 384, 48, 128, 128),
}


def _inception(b: NetBuilder, name: str, n1: int, r3: int, n3: int, r5: int, n5: int, pp: int) -> None:
    x = b.shape
    outs = []
    b.conv(f"{name}.1x1", n1, 1)
    b.relu(f"{name}.1x1_relu")
    outs.append(b.shape)
    b.shape = x
    for k, r, n in ((3, r3, n3), (5, r5, n5)):  # a 1x1 reduction, then the kxk convolution ("same" padding)
        b.conv(f"{name}.{k}x{k}_reduce", r, 1)
        b.relu(f"{name}.{k}x{k}_reduce_relu")
        b.conv(f"{name}.{k}x{k}", n, k, 1, k // 2)
        b.relu(f"{name}.{k}x{k}_relu")
        outs.append(b.shape)
        b.shape = x
    b.pool(f"{name}.pool", "maxpool", 3, 1, 1)
    b.conv(f"{name}.pool_proj", pp, 1)
    b.relu(f"{name}.pool_proj_relu")
    outs.append(b.shape)
    b.concat(f"{name}.concat", outs)


def googlenet() -> Workload:
    """GoogLeNet (Inception v1) as in its paper: biases on every convolution, LRN in the
    stem, 5x5 convolutions, pooling windows rounded up; without the two auxiliary
    classifiers (they only exist in training and are usually left out of counts)."""
    b = NetBuilder("googlenet", (3, 224, 224))
    b.conv("conv1", 64, 7, 2, 3)
    b.relu("conv1_relu")
    b.pool("pool1", "maxpool", 3, 2, ceil_mode=True)
    b.lrn("lrn1")
    b.conv("conv2_reduce", 64, 1)
    b.relu("conv2_reduce_relu")
    b.conv("conv2", 192, 3, 1, 1)
    b.relu("conv2_relu")
    b.lrn("lrn2")
    b.pool("pool2", "maxpool", 3, 2, ceil_mode=True)
    for name in GOOGLENET_INCEPTION:  # 3a, 3b, pool3, 4a .. 4e, pool4, 5a, 5b
        _inception(b, f"inception{name}", *GOOGLENET_INCEPTION[name])
        if name in ("3b", "4e"):
            b.pool(f"pool{name[0]}", "maxpool", 3, 2, ceil_mode=True)
    b.global_avgpool("avgpool")
    b.dropout("dropout")
    b.linear("fc", 1000)
    return _workload(b, "GoogLeNet (Inception v1) as in its paper: biases, LRN, 5x5 branches, "
                        "no auxiliary classifiers, 224x224x3 input, 1000 classes")


def _attention(b: NetBuilder, prefix: str, q_len: int, kv_len: int, d: int, heads: int, cross_from: tuple | None) -> None:
    """Multi-head attention: Q, K, V projections, scores, softmax, weighted sum, output
    projection. ``cross_from``: the encoder output's shape (K and V come from it)."""
    dk = d // heads
    if cross_from is None:
        b.linear(f"{prefix}.qkv", 3 * d)
    else:
        b.linear(f"{prefix}.q", d)
        b.shape = cross_from
        b.linear(f"{prefix}.kv", 2 * d)
    b.matmul(f"{prefix}.scores", m=q_len, n=kv_len, k=dk, count=heads, out_shape=(heads * q_len, kv_len),
             input_elems=q_len * d + kv_len * d)
    b.softmax(f"{prefix}.softmax")
    b.matmul(f"{prefix}.context", m=q_len, n=dk, k=kv_len, count=heads, out_shape=(q_len, d),
             input_elems=heads * q_len * kv_len + kv_len * d)
    b.linear(f"{prefix}.out", d)


def _sublayer(b: NetBuilder, name: str, seq_len: int, d_model: int, heads: int, cross_from: tuple | None,
              norm: str) -> None:
    """Post-layer-norm attention sub-layer: attention ``name``, its residual add, layer norm ``norm``."""
    _attention(b, name, seq_len, seq_len, d_model, heads, cross_from)
    b.add(f"{name}_add")
    b.layernorm(norm)


def _feed_forward(b: NetBuilder, p: str, d_ff: int, d_model: int, norm: str) -> None:
    """Post-layer-norm feed-forward sub-layer of layer ``p``: two linears with a ReLU, residual add, layer norm."""
    b.linear(f"{p}.ffn1", d_ff)
    b.relu(f"{p}.ffn_relu")
    b.linear(f"{p}.ffn2", d_model)
    b.add(f"{p}.ffn_add")
    b.layernorm(norm)


def transformer_base(seq_len: int = 128, vocab: int = 37000, d_model: int = 512, d_ff: int = 2048,
                     heads: int = 8, layers: int = 6) -> Workload:
    """Transformer (base) for translation: 6 encoder and 6 decoder layers, d_model 512,
    feed-forward 2048, 8 heads, post-layer-norm; one vocabulary of ``vocab`` tokens shared by
    the source embedding, the target embedding and the output projection (one matrix). A
    sample is one sentence pair of ``seq_len`` tokens on each side. Dropout is not counted."""
    b = NetBuilder("transformer", (seq_len,))
    b.embedding("src_embed", vocab, d_model, seq_len)
    b.add("src_pos")
    for i in range(layers):
        p = f"enc{i}"
        _sublayer(b, f"{p}.attn", seq_len, d_model, heads, None, f"{p}.ln1")
        _feed_forward(b, p, d_ff, d_model, f"{p}.ln2")
    memory = b.shape
    b.embedding("tgt_embed", vocab, d_model, seq_len, params=False)
    b.add("tgt_pos")
    for i in range(layers):
        p = f"dec{i}"
        _sublayer(b, f"{p}.self_attn", seq_len, d_model, heads, None, f"{p}.ln1")
        _sublayer(b, f"{p}.cross_attn", seq_len, d_model, heads, memory, f"{p}.ln2")
        _feed_forward(b, p, d_ff, d_model, f"{p}.ln3")
    b.linear("out_proj", vocab, bias=False, params=0)
    b.softmax("out_softmax")
    return _workload(b, f"Transformer base: {layers}+{layers} layers, d_model {d_model}, d_ff {d_ff}, {heads} heads, "
                        f"shared {vocab}-token vocabulary (source and target embeddings and the output "
                        f"projection are one matrix, counted once, in src_embed), {seq_len} tokens per side "
                        f"per sample, sinusoidal positions (no parameters)")


def ncf(users: int = 138_493, items: int = 26_744, mf_dim: int = 64, mlp: tuple[int, ...] = (256, 256, 128, 64)) -> Workload:
    """Neural collaborative filtering (NeuMF) with MLPerf's recommendation configuration on
    MovieLens-20M: 138,493 users, 26,744 items, matrix-factorisation factors 64, MLP layers
    256-256-128-64 (each MLP embedding is half the first layer). A sample is one
    (user, item) pair."""
    b = NetBuilder("ncf", (2,))
    b.embedding("mf_user", users, mf_dim, 1)
    b.embedding("mf_item", items, mf_dim, 1)
    b.elementwise("mf_mul", "mul", inputs=2)
    mf = b.shape
    b.embedding("mlp_user", users, mlp[0] // 2, 1)
    b.embedding("mlp_item", items, mlp[0] // 2, 1)
    b.concat("mlp_concat", [(mlp[0] // 2,), (mlp[0] // 2,)])
    for i, width in enumerate(mlp[1:], start=1):
        b.linear(f"mlp_fc{i}", width)
        b.relu(f"mlp_relu{i}")
    b.concat("neumf_concat", [mf, b.shape])
    b.linear("predict", 1)
    b.elementwise("sigmoid", "sigmoid")
    return _workload(b, f"NeuMF, MLPerf configuration: {users} users, {items} items, MF factors {mf_dim}, "
                        f"MLP {'-'.join(map(str, mlp))}; embedding gradients counted dense (all-reduced whole)")


def _agz_res_block(b: NetBuilder, prefix: str, ch: int) -> None:
    _conv_bn(b, f"{prefix}.", "conv1 bn1 relu1", ch, 3, 1, 1)
    _conv_bn(b, f"{prefix}.", "conv2 bn2", ch, 3, 1, 1)
    b.add(f"{prefix}.add")
    b.relu(f"{prefix}.relu2")


def alphago_zero(blocks: int = 19, filters: int = 256, board: int = 19, planes: int = 17) -> Workload:
    """AlphaGo Zero's network: a convolutional block and ``blocks`` residual blocks of
    ``filters`` 3x3 filters with batch norm on a 19x19 board of 17 input planes (the
    20-block network), a policy head (1x1 conv of 2 filters, FC to 362 moves) and a value
    head (1x1 conv of 1 filter, FC 256, FC 1, tanh). Convolutions without biases (batch
    norm follows), fully connected layers with biases."""
    b = NetBuilder("alphago_zero", (planes, board, board))
    _conv_bn(b, "", "conv bn relu", filters, 3, 1, 1)
    for i in range(blocks):
        _agz_res_block(b, f"res{i}", filters)
    tower = b.shape
    _conv_bn(b, "policy.", "conv bn relu", 2, 1)
    b.flatten("policy.flatten")
    b.linear("policy.fc", board * board + 1)
    b.softmax("policy.softmax")
    b.shape = tower
    _conv_bn(b, "value.", "conv bn relu", 1, 1)
    b.flatten("value.flatten")
    b.linear("value.fc1", 256)
    b.relu("value.fc1_relu")
    b.linear("value.fc2", 1)
    b.elementwise("value.tanh", "tanh")
    return _workload(b, f"AlphaGo Zero, {blocks + 1}-block network: {filters} filters, {board}x{board} board, "
                        f"{planes} input planes, policy and value heads")


def faster_rcnn(image_hw: int = 600, rois: int = 128, classes: int = 21, rpn_channels: int = 512,
                anchors: int = 9, head: bool = True) -> Workload:
    """Faster R-CNN with a ResNet-50 C4 backbone: conv1 to res4 of ResNet-50 v1.5 on a
    ``image_hw`` square image (stride 16), the region proposal network (3x3 conv of
    ``rpn_channels``, 1x1 convs for ``anchors`` objectness scores and ``4 * anchors`` box
    offsets) and, with ``head``, the detection head on ``rois`` regions per image: RoIAlign to
    14x14, res5 of ResNet-50 (7x7 after its stride), average pool, class scores
    (``classes``, 21 for PASCAL VOC) and box offsets (``4 * classes``). Proposal selection
    (NMS) does no GEMM and is not counted. ``head=False, image_hw=224`` is the truncated form
    (backbone and RPN only) in SCALE-Sim's Faster R-CNN topology."""
    b = NetBuilder("faster_rcnn", (3, image_hw, image_hw))
    _resnet50_stem_and_stages(b, 3)
    feat = b.shape
    b.conv("rpn.conv", rpn_channels, 3, 1, 1)
    b.relu("rpn.relu")
    rpn = b.shape
    b.conv("rpn.cls", anchors * 2, 1)
    b.shape = rpn
    b.conv("rpn.bbox", anchors * 4, 1)
    if head:
        b.shape = feat
        b.roialign("roi_align", rois, 14)
        for i in range(3):
            _bottleneck(b, f"layer4.{i}", 512, 2 if i == 0 else 1)
        b.pool("head.avgpool", "avgpool", 7, 7)
        b.reshape("head.flatten", (rois, b.shape[0]))
        pooled = b.shape
        b.linear("head.cls", classes)
        b.softmax("head.cls_softmax")
        b.shape = pooled
        b.linear("head.bbox", 4 * classes)
    what = (f"detection head on {rois} RoIs per image (RoIAlign 14x14, res5, {classes} classes)" if head
            else "no detection head")
    return _workload(b, f"Faster R-CNN, ResNet-50 C4 backbone, {image_hw}x{image_hw} image, RPN {rpn_channels} "
                        f"channels x {anchors} anchors, {what}; all parameters trained (no frozen stages)")


_BUILDERS: dict[str, Callable[[], Workload]] = {
    "alexnet": alexnet, "vgg16": vgg16, "resnet50": resnet50, "googlenet": googlenet,
    "transformer": transformer_base, "ncf": ncf, "alphago_zero": alphago_zero, "faster_rcnn": faster_rcnn,
}

WORKLOADS: dict[str, Workload] = {name: build() for name, build in _BUILDERS.items()}


def get_workload(name: str) -> Workload:
    """A built-in workload by name (:data:`WORKLOADS`); a :class:`ConfigError` listing the
    names otherwise."""
    key = str(name).strip().lower().replace("-", "_")
    if key not in WORKLOADS:
        raise ConfigError(f"workload {name!r} is unknown (allowed: {', '.join(WORKLOADS)}; "
                          "or a JSON/TOML layer file)")
    return WORKLOADS[key]


# ---------------------------------------------------------------------------------------
# Your own: a JSON or TOML layer list
# ---------------------------------------------------------------------------------------

_REQUIRED = object()
_INT, _PAIR, _BOOL, _STR = "an integer >= 1", "an integer >= 1 or a pair [h, w] of them", "true or false", "a string"
_PAD = "an integer >= 0 or a pair [h, w] of them"

# kind -> {key: (rule, default)}; "name" and "kind" are allowed for every kind
LAYER_KEYS: dict[str, dict[str, tuple[str, Any]]] = {
    "conv": {"out_channels": (_INT, _REQUIRED), "kernel": (_PAIR, _REQUIRED), "stride": (_PAIR, 1), "padding": (_PAD, 0),
             "groups": (_INT, 1), "bias": (_BOOL, True)},
    "linear": {"out_features": (_INT, _REQUIRED), "bias": (_BOOL, True)},
    "maxpool": {"kernel": (_PAIR, _REQUIRED), "stride": (_PAIR, None), "padding": (_PAD, 0), "ceil_mode": (_BOOL, False)},
    "avgpool": {"kernel": (_PAIR, _REQUIRED), "stride": (_PAIR, None), "padding": (_PAD, 0), "ceil_mode": (_BOOL, False)},
    "global_avgpool": {}, "flatten": {}, "relu": {}, "dropout": {}, "batchnorm": {}, "layernorm": {},
    "softmax": {}, "sigmoid": {}, "tanh": {},
    "lrn": {"size": (_INT, 5)},
    "gemm": {"m": (_INT, _REQUIRED), "n": (_INT, _REQUIRED), "k": (_INT, _REQUIRED), "count": (_INT, 1), "shared": (_BOOL, True),
             "params": ("an integer >= 0", None)},
}
TOP_KEYS = {"name": _STR, "input": "a list of 1 to 3 integers >= 1 (C, H, W / F / L, D)",
            "dtype_bytes": f"one of {', '.join(map(str, DTYPE_BYTES_ALLOWED))}", "notes": _STR,
            "layers": "a non-empty list of layer tables"}


def _is_int(v: Any, lo: int = 1) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _check_value(where: str, key: str, value: Any, rule: str) -> None:
    ok = {
        _INT: _is_int(value),
        _PAIR: _is_int(value) or (isinstance(value, list) and len(value) == 2 and all(_is_int(x) for x in value)),
        _PAD: _is_int(value, 0) or (isinstance(value, list) and len(value) == 2 and all(_is_int(x, 0) for x in value)),
        _BOOL: isinstance(value, bool),
        _STR: isinstance(value, str) and value.strip() != "",
        "an integer >= 0": _is_int(value, 0),
    }[rule]
    if not ok:
        raise ConfigError(f"{where}.{key} = {value!r}: must be {rule}")


def workload_from_dict(data: dict[str, Any], source: str = "workload") -> Workload:
    """A :class:`Workload` from a layer list as plain data (what a JSON or TOML file holds):

    ``name``, ``input`` (the shape of one sample: ``[C, H, W]``, ``[F]`` or ``[L, D]``),
    optional ``dtype_bytes`` (4) and ``notes``, and ``layers``: a list of tables with a
    ``kind`` (:data:`LAYER_KEYS`), an optional ``name`` and the kind's keys. Layers apply in
    order, each to the previous one's output. A ``gemm`` layer gives its shape directly
    (``m, n, k`` per sample, ``count``, ``shared``, ``params``: default ``k * n * count``
    when shared, else 0) and leaves a ``(count * m, n)`` sequence."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a table of keys ({', '.join(TOP_KEYS)}), got {type(data).__name__}")
    for key in data:
        if key not in TOP_KEYS:
            raise ConfigError(f"{source}: unknown key {key!r} = {data[key]!r} (allowed: {', '.join(TOP_KEYS)})")
    for key in ("name", "input", "layers"):
        if key not in data:
            raise ConfigError(f"{source}: missing key {key!r} ({TOP_KEYS[key]})")
    _check_value(source, "name", data["name"], _STR)
    shape = data["input"]
    if not (isinstance(shape, list) and 1 <= len(shape) <= 3 and all(_is_int(x) for x in shape)):
        raise ConfigError(f"{source}.input = {shape!r}: must be {TOP_KEYS['input']}")
    dtype_bytes = data.get("dtype_bytes", 4)
    if isinstance(dtype_bytes, bool) or dtype_bytes not in DTYPE_BYTES_ALLOWED:
        raise ConfigError(f"{source}.dtype_bytes = {dtype_bytes!r}: must be {TOP_KEYS['dtype_bytes']}")
    notes = data.get("notes", "")
    if not isinstance(notes, str):
        raise ConfigError(f"{source}.notes = {notes!r}: must be a string")
    layers = data["layers"]
    if not isinstance(layers, list) or not layers:
        raise ConfigError(f"{source}.layers = {layers!r}: must be {TOP_KEYS['layers']}")

    b = NetBuilder(data["name"], tuple(shape))
    for i, spec in enumerate(layers):
        where = f"{source}: layers[{i}]"
        if not isinstance(spec, dict):
            raise ConfigError(f"{where} = {spec!r}: must be a table with a 'kind'")
        kind = spec.get("kind")
        if not isinstance(kind, str) or kind not in LAYER_KEYS:  # a list or table is no kind (nor hashable)
            raise ConfigError(f"{where}.kind = {kind!r}: unknown layer kind (allowed: {', '.join(LAYER_KEYS)})")
        keys = LAYER_KEYS[kind]
        for key, value in spec.items():
            if key in ("kind", "name"):
                continue
            if key not in keys:
                allowed = ", ".join(["kind", "name", *keys])
                raise ConfigError(f"{where} ({kind}): unknown key {key!r} = {value!r} (allowed: {allowed})")
            _check_value(where, key, value, keys[key][0])
        for key, (rule, default) in keys.items():
            if default is _REQUIRED and key not in spec:
                raise ConfigError(f"{where} ({kind}): missing key {key!r} ({rule})")
        name = spec.get("name", f"{kind}{i}")
        _check_value(where, "name", name, _STR)
        v = {key: spec.get(key, default) for key, (_, default) in keys.items()}
        try:
            if kind == "conv":
                b.conv(name, v["out_channels"], v["kernel"], v["stride"], v["padding"], v["groups"], v["bias"])
            elif kind == "linear":
                b.linear(name, v["out_features"], v["bias"])
            elif kind in ("maxpool", "avgpool"):
                b.pool(name, kind, v["kernel"], v["stride"], v["padding"], v["ceil_mode"])
            elif kind == "lrn":
                b.lrn(name, v["size"])
            elif kind == "gemm":
                g = Gemm(v["m"], v["n"], v["k"], v["count"], v["shared"])
                params = v["params"] if v["params"] is not None else (g.k * g.n * g.count if g.shared else 0)
                b.gemm(name, g, params)
            elif kind in ("sigmoid", "tanh"):
                b.elementwise(name, kind)
            else:
                getattr(b, kind)(name)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return _workload(b, notes, dtype_bytes)


def load_workload_file(path: str | Path) -> Workload:
    """A workload from a ``.json`` or ``.toml`` layer list (:func:`workload_from_dict`)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise ConfigError(f"{p}: a workload file must end in .json or .toml, not {suffix or '(no suffix)'!r}")
    if p.is_dir():
        raise ConfigError(f"{p}: is a directory, not a workload file")
    if suffix == ".toml":
        from noc.base.config import read_toml  # noqa: PLC0415

        data = read_toml(p)
    else:
        try:
            data = json.loads(p.read_text())
        except FileNotFoundError:
            raise ConfigError(f"{p}: no such workload file") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{p}: not valid JSON: {exc}") from None
    return workload_from_dict(data, source=str(p))


# ---------------------------------------------------------------------------------------
# From a PyTorch module
# ---------------------------------------------------------------------------------------

TORCH_MODULES = ("Conv2d", "Linear", "BatchNorm1d", "BatchNorm2d", "LayerNorm", "ReLU", "ReLU6", "MaxPool2d",
                 "AvgPool2d", "AdaptiveAvgPool2d", "Dropout", "Flatten", "Softmax", "Sigmoid", "Tanh",
                 "LocalResponseNorm", "Embedding", "Identity")


def from_torch_module(module: Any, input_shape: tuple[int, ...], name: str | None = None,
                      dtype_bytes: int = 4) -> Workload:
    """The layers of a PyTorch ``module`` for one sample of ``input_shape`` (without the
    batch axis), recorded by running it once on zeros (in eval mode, without gradients, on
    the device of its parameters: a module built on PyTorch's ``meta`` device runs without
    arithmetic or memory).

    Every call of a leaf module (:data:`TORCH_MODULES`) becomes a layer named by the
    module's path; the figures come from the same builder as the built-in networks, and each
    layer's output shape is checked against the one PyTorch produced. Operations that are
    not modules (``x + y``, ``torch.cat``, ``torch.flatten``) are not seen: they have no
    parameters and no GEMMs. A leaf module of another type, a dilated convolution, or
    parameters that no recorded call used, is a :class:`ConfigError`."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        raise ConfigError("from_torch_module needs PyTorch, which is not installed: "
                          "pip install 'hw-models[bench]' (torch)") from None
    if not (isinstance(input_shape, (tuple, list)) and input_shape and all(_is_int(x) for x in input_shape)):
        raise ConfigError(f"input_shape = {input_shape!r}: must be a non-empty tuple of integers >= 1 "
                          "(one sample, without the batch axis)")
    paths = {m: p for p, m in module.named_modules()}
    calls: list[tuple[str, Any, tuple[int, ...], tuple[int, ...]]] = []

    def hook(mod, inputs, output):
        in_shape = tuple(inputs[0].shape[1:]) if inputs and hasattr(inputs[0], "shape") else ()
        calls.append((paths.get(mod, type(mod).__name__), mod, in_shape, tuple(output.shape[1:])))

    leaves = [m for m in module.modules() if not any(True for _ in m.children())]
    handles = [m.register_forward_hook(hook) for m in leaves]
    was_training = module.training
    try:
        module.eval()
        with torch.no_grad():
            device = next((p.device for p in module.parameters()), torch.device("cpu"))
            dtype = torch.long if any(type(m).__name__ == "Embedding" for m in leaves) else torch.float32
            x = torch.zeros((1, *input_shape), dtype=dtype, device=device)
            module(x)
    finally:
        for h in handles:
            h.remove()
        module.train(was_training)

    b = NetBuilder(name or type(module).__name__.lower(), tuple(input_shape))
    used: dict[str, int] = {}
    for path, mod, in_shape, out_shape in calls:
        kind = type(mod).__name__
        used[path] = used.get(path, 0) + 1
        lname = (path or kind) if used[path] == 1 else f"{path or kind}#{used[path]}"
        if kind == "Identity":
            continue
        if kind not in TORCH_MODULES:
            raise ConfigError(f"module {path!r}: type {kind} is not supported (allowed: {', '.join(TORCH_MODULES)})")
        b.shape = in_shape
        if kind == "Conv2d":
            if tuple(mod.dilation) != (1, 1) or isinstance(mod.padding, str):
                raise ConfigError(f"module {path!r}: Conv2d with dilation {tuple(mod.dilation)} / padding "
                                  f"{mod.padding!r} is not supported (dilation 1 and integer padding only)")
            b.conv(lname, mod.out_channels, tuple(mod.kernel_size), tuple(mod.stride), tuple(mod.padding),
                   mod.groups, mod.bias is not None)
        elif kind == "Linear":
            if len(in_shape) > 2:
                b.shape = (math.prod(in_shape[:-1]), in_shape[-1])
            b.linear(lname, mod.out_features, mod.bias is not None)
        elif kind in ("BatchNorm1d", "BatchNorm2d"):
            b.batchnorm(lname)
            if not mod.affine:
                b.layers[-1] = _no_params(b.layers[-1])
        elif kind == "LayerNorm":
            b.layernorm(lname)
            if not mod.elementwise_affine:
                b.layers[-1] = _no_params(b.layers[-1])
        elif kind in ("ReLU", "ReLU6"):
            b.relu(lname)
        elif kind in ("MaxPool2d", "AvgPool2d"):
            if kind == "MaxPool2d" and _as_pair(mod.dilation) != (1, 1):
                raise ConfigError(f"module {path!r}: MaxPool2d with dilation {mod.dilation} is not supported")
            b.pool(lname, "maxpool" if kind == "MaxPool2d" else "avgpool", _as_pair(mod.kernel_size),
                   _as_pair(mod.stride), _as_pair(mod.padding), bool(mod.ceil_mode))
        elif kind == "AdaptiveAvgPool2d":
            if out_shape[1:] == (1, 1):
                b.global_avgpool(lname)
                b.shape = out_shape
            elif out_shape == in_shape:
                continue  # the identity at this input size
            elif in_shape[1] % out_shape[1] == 0 and in_shape[2] % out_shape[2] == 0:
                k = (in_shape[1] // out_shape[1], in_shape[2] // out_shape[2])
                b.pool(lname, "avgpool", k, k)
            else:
                raise ConfigError(f"module {path!r}: AdaptiveAvgPool2d from {in_shape} to {out_shape} has uneven "
                                  "windows, which are not supported")
        elif kind == "Dropout":
            b.dropout(lname)
        elif kind == "Flatten":
            b.reshape(lname, out_shape)
            b.layers[-1] = replace(b.layers[-1], kind="flatten")
        elif kind == "Softmax":
            b.softmax(lname)
        elif kind in ("Sigmoid", "Tanh"):
            b.elementwise(lname, kind.lower())
        elif kind == "LocalResponseNorm":
            b.lrn(lname, mod.size)
        elif kind == "Embedding":
            tokens = math.prod(in_shape) if in_shape else 1
            b.embedding(lname, mod.num_embeddings, mod.embedding_dim, tokens)
        if math.prod(b.shape) != math.prod(out_shape) or (len(out_shape) == 3 and tuple(b.shape) != out_shape):
            raise ConfigError(f"module {path!r} ({kind}): our shape {b.shape} differs from PyTorch's {out_shape}")
    if not b.layers:
        raise ConfigError(f"module {type(module).__name__}: no supported layer ran")
    wl = _workload(b, f"extracted from a PyTorch {type(module).__name__} for input {tuple(input_shape)}", dtype_bytes)
    torch_params = sum(p.numel() for p in module.parameters())
    if wl.params != torch_params:
        raise ConfigError(f"module {type(module).__name__}: the recorded layers hold {wl.params} parameters, "
                          f"the module {torch_params} (a parameter used outside a supported module call?)")
    return wl


def _as_pair(v: Any) -> tuple[int, int]:
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _no_params(layer: Layer) -> Layer:
    return replace(layer, params=0, bwd_flops=layer.fwd_flops if layer.input_grad else 0)


# ---------------------------------------------------------------------------------------
# The table in docs/training_workloads.md
# ---------------------------------------------------------------------------------------

def summary_table(workloads: dict[str, Workload] | None = None) -> str:
    """A Markdown table of the workloads: layers, GEMM layers, parameters, gradient MiB,
    forward and backward GFLOPs and activations per sample."""
    rows = ["| workload | layers | GEMM layers | parameters | gradient (fp32) MiB | forward GFLOP/sample "
            "| backward GFLOP/sample | activations M elements/sample |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, w in (workloads or WORKLOADS).items():
        rows.append(f"| {name} | {len(w.layers)} | {sum(1 for x in w.layers if x.gemms)} | {w.params:,} "
                    f"| {w.total_grad_bytes / 2**20:.1f} | {w.fwd_flops / 1e9:.3f} | {w.bwd_flops / 1e9:.3f} "
                    f"| {w.activation_elems / 1e6:.2f} |")
    return "\n".join(rows)


if __name__ == "__main__":  # pragma: no cover - prints the docs' table
    print(summary_table())
    print()
    for w in WORKLOADS.values():
        print(f"- {w.name}: {w.notes}")
