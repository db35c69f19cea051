"""nic.allreduce at message level: validation against closed forms, bounds and the NIC designs."""

from __future__ import annotations

import numpy as np
import pytest

from nic.allreduce import NicConfig, check_times, dependencies, prepare, ring_allreduce_cycles, simulate_allreduce
from nic.collectives import build
from nic.scheduler import OP_REDUCE
from noc.config import validate
from noc.errors import ConfigError
from noc.flit import FlitNetworkConfig
from noc.topology import parse_spec

MIB = 1 << 20
# the pure fluid (no network config) and the wormhole model of the CLI's default network
NETWORKS = [pytest.param(None, id="fluid"), pytest.param(FlitNetworkConfig(), id="wormhole")]


def test_ring_on_a_ring_matches_the_textbook_formula():
    t = parse_spec("ring:8")
    s = build(t, "ring")
    for size in (16 * MIB, 64 * MIB):
        r = simulate_allreduce(t, s, NicConfig(), None, size)
        # alpha per step: link latency (1) + issue delay (1) + lockstep step advance (1)
        formula = ring_allreduce_cycles(8, size, float(t.link_bytes_per_cycle[0]), alpha_cycles=3.0)
        assert r.total_cycles == pytest.approx(formula, rel=0.05)
        assert r.verified


BOUND_CASES = [(spec, a) for spec in ("torus:4x4", "torus:4x4:c4", "mesh:4x4", "fattree:k4:l2", "torus:8x8:c4")
               for a in ("ring", "ring2d", "dbtree", "halving_doubling", "multitree", "bidir_ring")
               if not (a == "ring2d" and spec.startswith("fattree"))]  # ring2d is for 2D grids only


@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("spec,algorithm", BOUND_CASES)
def test_no_algorithm_beats_the_bandwidth_bound(spec, algorithm, network):
    t = parse_spec(spec)
    s = build(t, algorithm)
    for design in ("codesigned", "baseline"):
        for size in (64 * 1024, 16 * MIB):
            r = simulate_allreduce(t, s, NicConfig(design=design), network, size)
            assert r.total_cycles >= r.bound_cycles
            assert 0 < r.bound_fraction <= 1


@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("spec", ["torus:4x4:c4", "torus:8x8:c4"])
def test_multitree_with_four_nis_beats_ring_at_large_sizes(spec, network):
    t = parse_spec(spec)
    for size in (16 * MIB, 64 * MIB):
        ring = simulate_allreduce(t, build(t, "ring"), NicConfig(), network, size)
        mt = simulate_allreduce(t, build(t, "multitree"), NicConfig(), network, size)
        assert mt.total_cycles < ring.total_cycles / 2  # 4 NIs: ~3x on these tori


@pytest.mark.parametrize("network", NETWORKS)
@pytest.mark.parametrize("spec", ["torus:4x4", "torus:4x4:c4", "mesh:4x4", "torus:8x8", "torus:8x8:c4", "fattree:k4:l2"])
def test_codesigned_nic_never_slower_than_baseline_for_multitree(spec, network):
    t = parse_spec(spec)
    s = build(t, "multitree")
    for size in (32 * 1024, MIB, 64 * MIB):
        co = simulate_allreduce(t, s, NicConfig(design="codesigned"), network, size)
        base = simulate_allreduce(t, s, NicConfig(design="baseline"), network, size)
        assert co.total_cycles <= base.total_cycles


def test_result_fields_are_consistent():
    t = parse_spec("torus:4x4:c4")
    r = simulate_allreduce(t, build(t, "multitree"), NicConfig(), None, 4 * MIB)
    assert len(r.step_end_cycles) == 10 and max(r.step_end_cycles) == r.total_cycles
    assert np.all(np.diff(r.step_end_cycles) > 0)  # lockstep: steps finish in order
    assert len(r.node_idle_fraction) == 16 and all(0 <= x < 1 for x in r.node_idle_fraction)
    assert 0 < r.link_utilisation_mean <= r.link_utilisation_max <= 1 + 1e-9
    assert r.busbw_gbps == pytest.approx(r.algbw_gbps * 2 * 15 / 16)


def test_wire_bytes_per_packet_and_bulk():
    payload = np.array([256.0, 1000.0, 4096.0])
    assert NicConfig(design="codesigned").wire_bytes(payload).tolist() == [272.0, 1016.0, 4112.0]
    assert NicConfig(design="baseline").wire_bytes(payload).tolist() == [272.0, 1000.0 + 4 * 16, 4096.0 + 16 * 16]


def test_dependencies_follow_the_tree():
    s = build(parse_spec("torus:4x4"), "multitree")
    ptr, idx = dependencies(s)
    for i in range(s.num_transfers):
        deps = idx[ptr[i]:ptr[i + 1]]
        assert (s.dst[deps] == s.src[i]).all() and (s.flow[deps] == s.flow[i]).all()
        assert (s.step[deps] < s.step[i]).all()
        if s.op[i] == OP_REDUCE:
            assert (s.op[deps] == OP_REDUCE).all()


def test_time_check_catches_a_broken_dependency():
    t = parse_spec("torus:4x4")
    s = build(t, "ring")
    prep = prepare(t, s, NicConfig(), MIB)
    start = s.step.astype(float) * 10
    arrive = start + 5
    check_times(prep, start, arrive)  # consistent
    arrive[prep.dep_idx[0]] = 1e9  # a dependency now arrives after its dependant started
    with pytest.raises(RuntimeError, match="broke a dependency"):
        check_times(prep, start, arrive)


def test_bad_inputs_are_clear_errors():
    t = parse_spec("torus:4x4")
    s = build(t, "ring")
    with pytest.raises(ConfigError, match="model 'warp'"):
        simulate_allreduce(t, s, NicConfig(), None, MIB, model="warp")
    with pytest.raises(ConfigError, match="smaller than one 4-byte element per flow"):
        simulate_allreduce(t, s, NicConfig(), None, 8)
    with pytest.raises(ConfigError, match="design"):
        validate({"design": "magic"}, NicConfig, "nic")
    with pytest.raises(Exception, match="16 nodes but torus:8x8 has 64"):
        simulate_allreduce(parse_spec("torus:8x8"), s, NicConfig(), None, MIB)
    from noc.flit import FlitNetworkConfig

    for model in ("message", "flit"):  # one VC cannot serve a torus's two dateline classes
        with pytest.raises(ConfigError, match="num_vcs = 1: dor routing on torus:4x4 uses 2 VC classes"):
            simulate_allreduce(t, s, NicConfig(), FlitNetworkConfig(num_vcs=1), MIB, model=model)
