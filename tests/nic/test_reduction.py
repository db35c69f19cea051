"""The node's reduction unit (nic.reduction) at both all-reduce levels, against formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nic.allreduce import NicConfig, simulate_allreduce
from nic.collectives import build
from nic.reduction import MODE_CHUNK, MODE_STREAM, reduce_done
from nic.scheduler import OP_REDUCE
from noc.flit import FlitNetworkConfig
from noc.topology import parse_spec

NET = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32)
PAPER = dict(reduce_elements_per_cycle=32, reduce_granule_elements=512)


def test_reduce_cycles_is_the_papers_npu_formula():
    # the public simulator of the MultiTree paper: ceil(ceil(P / 16) / 32) * 16 cycles for P
    # fp32 elements (16 vaults, a 32-wide array), i.e. whole 512-element granules at 32 per cycle
    nic = NicConfig(reduction="chunk", **PAPER)
    for p in (1, 63, 64, 511, 512, 513, 1000, 4096, 65536, 65537):
        assert nic.reduce_cycles(p) == math.ceil(math.ceil(p / 16) / 32) * 16
    plain = NicConfig(reduction="chunk", reduce_elements_per_cycle=3)
    assert [plain.reduce_cycles(e) for e in (1, 3, 4, 7)] == [1, 1, 2, 3]
    assert NicConfig().reduce_cycles(10_000) == 0  # free


def test_the_unit_is_a_fifo():
    unit = np.zeros(2)
    # chunk: starts when the message is in and the unit free
    assert reduce_done(unit, 0, 10.0, 5, 1, 0.0, MODE_CHUNK) == 15
    assert reduce_done(unit, 0, 11.0, 5, 1, 2.0, MODE_CHUNK) == 22  # waits for the first: 15 + 5 + 2
    assert reduce_done(unit, 1, 11.0, 5, 1, 0.0, MODE_CHUNK) == 16  # another node's unit is free
    unit[:] = 0
    # stream: only the last packet's share after the tail, unless the unit is behind
    assert reduce_done(unit, 0, 100.0, 40, 2, 0.0, MODE_STREAM) == 102
    assert reduce_done(unit, 0, 101.0, 40, 2, 0.0, MODE_STREAM) == 142


@pytest.mark.parametrize("model", ["message", "flit"])
@pytest.mark.parametrize("design", ["codesigned", "baseline"])
def test_a_ring_pays_one_reduction_per_reduce_scatter_step(model, design):
    # ring: each reduce-scatter step's arrival is summed before the next send, and nothing
    # else overlaps it, so the run is (N-1) reductions longer than with free reduction
    t = parse_spec("torus:4x4")
    s = build(t, "ring")
    size = 256 << 10
    chunk = size // 4 // t.num_nodes
    free = simulate_allreduce(t, s, NicConfig(design=design), NET, size, model=model).total_cycles
    for mode, work in (("chunk", math.ceil(chunk / 512) * 16), ("stream", math.ceil(min(chunk, 64) / 512) * 16)):
        nic = NicConfig(design=design, reduction=mode, **PAPER)
        r = simulate_allreduce(t, s, nic, NET, size, model=model)
        assert r.total_cycles == free + (t.num_nodes - 1) * work
        assert r.extra["reduce_busy_cycles_max"] == (t.num_nodes - 1) * nic.reduce_cycles(chunk)


@pytest.mark.parametrize("design", ["codesigned", "baseline"])
def test_a_slow_unit_is_a_bottleneck_at_both_levels(design):
    # a unit far slower than the links: MultiTree with 4 NIs is bound by the busiest
    # node's summation, which both levels must respect and agree on
    t = parse_spec("torus:4x4:c4")
    s = build(t, "multitree")
    nic = NicConfig(design=design, reduction="chunk", reduce_elements_per_cycle=0.25)
    size = 64 << 10
    res = {m: simulate_allreduce(t, s, nic, NET, size, model=m) for m in ("message", "flit")}
    busy = res["flit"].extra["reduce_busy_cycles_max"]
    assert busy == max(np.bincount(s.dst[s.op == OP_REDUCE], minlength=16)) * nic.reduce_cycles(size // 4 // 16)
    for r in res.values():
        assert r.verified and r.total_cycles > busy
    assert res["message"].total_cycles == pytest.approx(res["flit"].total_cycles, rel=0.05)


def test_free_reduction_keys_like_before_and_others_do_not():
    assert "reduction" not in NicConfig().key_fields()
    assert NicConfig(reduction="chunk").key_fields()["reduction"] == "chunk"
    with pytest.raises(ValueError, match="reduction"):
        NicConfig(reduction="sometimes")
    with pytest.raises(ValueError, match="reduce_elements_per_cycle"):
        NicConfig(reduce_elements_per_cycle=0)
