"""The compute models: the systolic closed form against SCALE-Sim, the roofline and the
per-layer costs against hand calculations."""

from __future__ import annotations

import dataclasses
import math
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hw_models.training.compute import (
    DEVICES, MULTITREE_NODE, LayerCost, Roofline, Systolic, get_device, layer_bytes, layer_costs,
    systolic_layer_cycles,
)
from hw_models.training.layers import NetBuilder
from hw_models.training.scalesim_runner import ArrayConfig, ConvShape, run_convs, run_gemms, scalesim_available
from hw_models.training.systolic import gemm_cycles, training_gemms
from hw_models.training.workloads import Workload, get_workload
from noc.base.errors import ConfigError

needs_scalesim = pytest.mark.skipif(not scalesim_available(), reason="SCALE-Sim is not installed (the scalesim extra)")

# Small GEMMs (m, n, k): aligned, ragged, tall, one element, and the three GEMMs of a
# convolution's training step (forward, input gradient, weight gradient: transposed shapes).
GEMMS = [(20, 12, 9), (33, 7, 25), (5, 40, 16), (1, 1, 1), (49, 8, 18), (49, 18, 8), (18, 8, 49)]


@needs_scalesim
@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
def test_closed_form_equals_scalesim_on_a_non_square_array(dataflow):
    array = ArrayConfig(rows=8, cols=4, dataflow=dataflow, ifmap_sram_kib=64, filter_sram_kib=64, ofmap_sram_kib=32)
    reports = run_gemms(GEMMS, array)
    for (m, n, k), r in zip(GEMMS, reports):
        assert r.stall_cycles == 0
        assert gemm_cycles(m, n, k, 8, 4, dataflow) == r.cycles == r.total_cycles + 1, (m, n, k)


@needs_scalesim
def test_conv_im2col_shapes_equal_scalesim_convolutions():
    # our convolutions (padding, stride) as GEMMs, against SCALE-Sim's own conv mapping of the
    # input rows the convolution reads ((out - 1) * stride + kernel: SCALE-Sim has no padding)
    array = ArrayConfig(rows=8, cols=8)
    cases = [(3, 9, 9, 4, 3, 1, 1), (4, 11, 11, 6, 3, 2, 1), (2, 12, 12, 5, 5, 3, 2), (6, 7, 7, 3, 1, 1, 0)]
    convs, ours = [], []
    for c, h, w, f, k, s, p in cases:
        b = NetBuilder("c", (c, h, w))
        b.conv("conv", f, k, s, p)
        (g,) = b.layers[0].gemms
        oh, ow = b.shape[1:]
        convs.append(ConvShape((oh - 1) * s + k, (ow - 1) * s + k, k, k, c, f, s, s))
        ours.append(g)
    for conv, g, r in zip(convs, ours, run_convs(convs, array)):
        assert conv.gemm == (g.m, g.n, g.k)
        assert gemm_cycles(g.m, g.n, g.k, 8, 8) == r.cycles


@needs_scalesim
def test_scalesim_engine_equals_closed_form_for_a_small_network():
    b = NetBuilder("tiny", (3, 8, 8))
    b.conv("conv1", 6, 3, 1, 1)
    b.relu("relu1")
    b.conv("conv2", 5, 3, 2, 1)
    b.flatten("flat")
    b.linear("fc", 7)
    w = Workload("tiny", tuple(b.layers))
    dev = Systolic(rows=8, cols=4, arrays=2, freq_hz=1e8, vector_flops_per_cycle=16)
    closed = layer_costs(w, 3, dev)
    assert layer_costs(w, 3, dev, engine="scalesim") == closed
    assert closed[0].bwd_s > 0 and closed[1].fwd_s > 0


@needs_scalesim
def test_scalesim_user_bandwidth_adds_stalls_on_top_of_the_closed_form():
    array = ArrayConfig(rows=8, cols=8, ifmap_sram_kib=1, filter_sram_kib=1, ofmap_sram_kib=1,
                        bandwidth_words_per_cycle=1)
    (r,) = run_gemms([(64, 16, 64)], array)
    assert r.stall_cycles > 0
    assert r.compute_cycles == gemm_cycles(64, 16, 64, 8, 8)


@pytest.mark.slow
@needs_scalesim
def test_closed_form_equals_scalesim_on_real_layers():
    from hw_models.training.scalesim_runner import comparison_cases

    cases = comparison_cases()
    for (label, (m, n, k)), r in zip(cases, run_gemms([s for _, s in cases])):
        assert r.stall_cycles == 0
        assert gemm_cycles(m, n, k, 32, 32) == r.cycles, label


def test_missing_scalesim_is_a_config_error(monkeypatch):
    from hw_models.training import scalesim_runner

    monkeypatch.setitem(sys.modules, "scalesim", None)
    monkeypatch.setitem(sys.modules, "scalesim.scale_sim", None)
    monkeypatch.setattr(scalesim_runner, "_CACHE", {})
    assert not scalesim_available()
    with pytest.raises(ConfigError, match=r"SCALE-Sim is not installed: pip install 'hw-models\[scalesim\]'"):
        run_gemms([(2, 2, 2)])


@settings(max_examples=100, deadline=None)
@given(m=st.integers(1, 300), n=st.integers(1, 300), k=st.integers(1, 300), rows=st.integers(1, 40),
       cols=st.integers(1, 40), dataflow=st.sampled_from(["os", "ws", "is"]))
def test_closed_form_bounds(m, n, k, rows, cols, dataflow):
    c = gemm_cycles(m, n, k, rows, cols, dataflow)
    # never faster than all PEs busy on every cycle
    assert c * rows * cols >= m * n * k
    # more work never takes fewer cycles
    assert gemm_cycles(m + 1, n, k, rows, cols, dataflow) >= c
    assert gemm_cycles(m, n, k + 1, rows, cols, dataflow) >= c
    assert gemm_cycles(m, n + 1, k, rows, cols, dataflow) >= c
    # output stationary: the transposed GEMM on the transposed array takes the same time
    if dataflow == "os":
        assert c == gemm_cycles(n, m, k, cols, rows, "os")


def test_training_gemms_shapes():
    layer = get_workload("resnet50").layer("layer1.0.conv2")  # 3x3, 64 -> 64 on 56x56
    fwd, bwd = training_gemms(layer, 4)
    p, k = 56 * 56, 9 * 64
    assert [(r.m, r.n, r.k, r.repeat) for r in fwd] == [(4 * p, 64, k, 1)]
    assert [(r.m, r.n, r.k, r.repeat) for r in bwd] == [(4 * p, k, 64, 1), (k, 64, 4 * p, 1)]
    first = get_workload("resnet50").layers[0]
    assert len(training_gemms(first, 4)[1]) == 1  # no input gradient for the first layer
    scores = get_workload("transformer").layer("enc0.attn.scores")  # 8 heads, 128 tokens, d_k 64
    fwd, bwd = training_gemms(scores, 2)
    assert [(r.m, r.n, r.k, r.repeat) for r in fwd] == [(128, 128, 64, 16)]
    assert [(r.m, r.n, r.k, r.repeat) for r in bwd] == [(128, 64, 128, 16), (64, 128, 128, 16)]


def test_systolic_layer_cycles_by_hand():
    b = NetBuilder("two", (4, 10, 10))
    b.conv("conv", 8, 3, 1, 1)  # m = 100, n = 8, k = 36 per sample
    b.relu("relu")
    b.conv("conv2", 16, 3, 1, 1)  # m = 100, n = 16, k = 72
    w = Workload("two", tuple(b.layers))
    dev = Systolic(rows=16, cols=8, arrays=4, freq_hz=2e9, vector_flops_per_cycle=64)
    cyc = systolic_layer_cycles(w, 10, dev)  # 3 samples per array, 4 arrays busy
    R, C = 16, 8

    def os(m, n, k):
        return math.ceil(m / R) * math.ceil(n / C) * (k + R + C - 2)
    assert cyc[0].fwd_cycles == os(300, 8, 36)
    assert cyc[0].bwd_cycles == os(36, 8, 300)  # the first layer: weight gradient only
    assert cyc[0].grad_sum_cycles == math.ceil(3 * (36 * 8 + 8) / 64)
    assert (cyc[1].fwd_cycles, cyc[1].bwd_cycles, cyc[1].grad_sum_cycles) == (
        math.ceil(3 * 800 / 64), math.ceil(3 * 800 / 64), 0)
    assert cyc[2].fwd_cycles == os(300, 16, 72)
    assert cyc[2].bwd_cycles == os(300, 72, 16) + os(72, 16, 300)
    costs = layer_costs(w, 10, dev)
    assert costs[2] == LayerCost("conv2", cyc[2].fwd_cycles / 2e9, (cyc[2].bwd_cycles + cyc[2].grad_sum_cycles) / 2e9,
                                 4 * (72 * 16 + 16))
    # one sample: one array busy, nothing to sum; the vector unit off: element-wise layers are free
    one = systolic_layer_cycles(w, 1, dataclasses.replace(dev, vector_flops_per_cycle=0))
    assert one[0].grad_sum_cycles == 0 and one[1].fwd_cycles == one[1].bwd_cycles == 0


def test_batch_split_over_arrays():
    w = get_workload("alphago_zero")
    one = systolic_layer_cycles(w, 1, MULTITREE_NODE)
    full = systolic_layer_cycles(w, 16, MULTITREE_NODE)
    more = systolic_layer_cycles(w, 17, MULTITREE_NODE)
    for a, b, c in zip(one, full, more):
        assert (a.fwd_cycles, a.bwd_cycles) == (b.fwd_cycles, b.bwd_cycles)  # one sample per array either way
        assert c.fwd_cycles >= b.fwd_cycles
    assert sum(c.fwd_cycles for c in more) > sum(c.fwd_cycles for c in full)


def test_roofline_by_hand():
    b = NetBuilder("fc", (1000,))
    b.relu("relu")
    b.linear("fc", 500)
    w = Workload("fc", tuple(b.layers))
    dev = Roofline(peak_flops=1e12, mem_bytes_per_s=1e10, efficiency=0.5)
    relu, fc = layer_costs(w, 8, dev)
    # relu: 8000 FLOPs, reads and writes 8000 floats: memory-bound
    assert relu.fwd_s == pytest.approx(max(8000 / 1e12, 4 * 16000 / 1e10) / 0.5)
    assert relu.bwd_s == 0.0  # the first layer computes no input gradient and has no parameters
    params = 1000 * 500 + 500
    fwd_bytes = 4 * (8 * 1000 + 8 * 500 + params)
    bwd_bytes = 4 * (8 * 500 + 2 * 8 * 1000 + 2 * params)
    assert fc.fwd_s == pytest.approx(max(2 * 8 * 500_000 / 1e12, fwd_bytes / 1e10) / 0.5)
    assert fc.bwd_s == pytest.approx(max(4 * 8 * 500_000 / 1e12, bwd_bytes / 1e10) / 0.5)
    assert fc.grad_bytes == 4 * params and relu.grad_bytes == 0
    fast_mem = Roofline(peak_flops=1e9, mem_bytes_per_s=1e15)  # compute-bound
    assert layer_costs(w, 8, fast_mem)[1].fwd_s == pytest.approx(2 * 8 * 500_000 / 1e9)
    assert layer_bytes(w.layers[1], 8, 4) == (fwd_bytes, bwd_bytes)
    assert layer_bytes(get_workload("alexnet").layer("flatten"), 8, 4) == (0, 0)  # a view moves nothing
    emb = get_workload("ncf").layer("mf_user")  # only the looked-up rows move, not the table
    assert layer_bytes(emb, 8, 4) == (2 * 4 * 8 * 64, 3 * 4 * 8 * 64)


def test_layer_costs_cover_every_layer_on_every_preset():
    w = get_workload("googlenet")
    for name, dev in DEVICES.items():
        costs = layer_costs(w, 4, dev)
        assert [c.name for c in costs] == [x.name for x in w.layers]
        assert tuple(c.grad_bytes for c in costs) == w.grad_bytes
        assert all(c.fwd_s >= 0 and c.bwd_s >= 0 and math.isfinite(c.bwd_s) for c in costs)
        assert sum(c.bwd_s for c in costs) > sum(c.fwd_s for c in costs), name
    assert [f.name for f in dataclasses.fields(LayerCost)] == ["name", "fwd_s", "bwd_s", "grad_bytes"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        costs[0].fwd_s = 1.0


def test_systolic_peak_and_utilisation_of_a_large_aligned_gemm():
    assert MULTITREE_NODE.peak_flops == 2 * 32 * 32 * 16 * 1e9
    # VGG-16's conv layers map well: closed-form time within 10% of peak FLOPs
    w = get_workload("vgg16")
    cyc = systolic_layer_cycles(w, 16, MULTITREE_NODE)
    conv = [(x, c) for x, c in zip(w.layers, cyc) if x.kind == "conv" and x.name != "conv1_1"]
    flops = sum(16 * x.fwd_flops for x, _ in conv)
    secs = sum(c.fwd_cycles for _, c in conv) / 1e9
    assert 0.9 < flops / secs / MULTITREE_NODE.peak_flops <= 1.0


BAD_DEVICES = [
    (lambda: Systolic(rows=0), "Systolic.rows = 0: must be an integer > 0"),
    (lambda: Systolic(arrays=2.5), "Systolic.arrays = 2.5: must be an integer"),
    (lambda: Systolic(dataflow="rs"), "Systolic.dataflow = 'rs': must be one of os, ws, is"),
    (lambda: Systolic(freq_hz=float("nan")), "Systolic.freq_hz = nan"),
    (lambda: Systolic(vector_flops_per_cycle=-1), "Systolic.vector_flops_per_cycle = -1: must be an integer >= 0"),
    (lambda: Roofline(peak_flops=0, mem_bytes_per_s=1), "Roofline.peak_flops = 0: must be a finite number > 0"),
    (lambda: Roofline(1e12, 1e9, efficiency=1.5), "Roofline.efficiency = 1.5: must be a finite number > 0 and <= 1"),
    (lambda: layer_costs(get_workload("ncf"), 0, MULTITREE_NODE), "batch = 0: must be an integer >= 1"),
    (lambda: layer_costs(get_workload("ncf"), 2, MULTITREE_NODE, engine="booksim"),
     "engine = 'booksim': must be one of closed-form, scalesim"),
    (lambda: layer_costs(get_workload("ncf"), 2, "v100"), "neither a Roofline nor a Systolic"),
    (lambda: get_device("tpu"), "device 'tpu' is unknown (allowed: multitree-node, multitree-node-roofline, v100-fp32)"),
    (lambda: ArrayConfig(dataflow="xs"), "ArrayConfig.dataflow = 'xs': must be one of os, ws, is"),
    (lambda: run_gemms([(0, 2, 2)]), "GEMM (m, n, k) (0, 2, 2): every entry must be an integer >= 1"),
]


@pytest.mark.parametrize("make,message", BAD_DEVICES)
def test_bad_device_values_name_key_value_and_rule(make, message):
    with pytest.raises(ConfigError) as exc:
        make()
    assert message in str(exc.value)
