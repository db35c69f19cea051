"""nic.collectives.treepack: spanning trees per root packed onto any network.

Checked on exact sums (the verifier) and the NIC table's counting rule, for the trees being
spanning arborescences of their roots, against the exact optimum (the lockstep time never
beats it; on the networks listed it equals it), and the trees-per-root count against
ForestColl's own ``k`` (a multiple of it) (bench/data/forestcoll_reference.csv).
"""

from __future__ import annotations

import math
from fractions import Fraction
import sys
from pathlib import Path

import numpy as np
import pytest

from nic.collectives import build, ideal_cycles, optimal_bound, verify
from nic.collectives.treepack import pack, ring_trees, trees_per_root, treepack
from nic.nic_table import check_representable, node_tables, table_depth
from nic.scheduler import OP_GATHER
from noc.topology import parse_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from forestcoll_reference import read_reference, topologies  # noqa: E402

SPECS = ["torus:4x6", "torus:3x5:c2", "mesh:4x4", "mesh:4x4:c4", "mesh:3x3", "hypercube:d4", "fattree:k4:l2",
         "bigraph:4x4", "ring:6", "switch:5"]
HETEROGENEOUS = topologies()


def _topology(name):
    return HETEROGENEOUS[name] if name in HETEROGENEOUS else parse_spec(name)


def _size(s) -> int:
    return 4 * s.num_flows * 1024  # 1024 whole 4-byte elements per flow


@pytest.mark.parametrize("name", SPECS + ["ring:8:c4 thin 1-2,5-6 at 4", "torus:4x4:c2 x32 y16 ni24"])
def test_packing_is_a_correct_allreduce_the_nic_tables_hold(name):
    t = _topology(name)
    s = treepack(t)
    verify(s, seed=3)
    verify(s, num_elements=s.num_flows, seed=4)
    check_representable(s)
    assert table_depth(node_tables(s)) <= 4096  # the scheduler's largest DEPTH
    # its lockstep time never beats the exact optimum
    size = _size(s)
    assert ideal_cycles(s, t, size) >= float(optimal_bound(t).all_reduce_cycles(size)) * (1 - 1e-12)


@pytest.mark.parametrize("spec", ["mesh:4x4", "hypercube:d4", "torus:4x6", "mesh:4x4:c4", "fattree:k4:l2"])
def test_packing_reaches_the_optimum_in_lockstep(spec):
    t = parse_spec(spec)
    s = build(t, "forest")
    size = _size(s)
    assert ideal_cycles(s, t, size) == pytest.approx(float(optimal_bound(t).all_reduce_cycles(size)), rel=1e-9)


@pytest.mark.parametrize("spec,weight", [("mesh:4x4", 0.3), ("fattree:k4:l2", 0.1), ("torus:4x4:c4", 1.0)])
def test_every_packed_tree_spans_the_network_from_its_root(spec, weight):
    t = parse_spec(spec)
    k = trees_per_root(t)
    parents = pack(t, k, weight)
    n = t.num_nodes
    assert parents.shape == (k * n, n)
    for f in range(k * n):
        root = f // k
        assert parents[f, root] == -1 and np.count_nonzero(parents[f] < 0) == 1
        for v in range(n):  # every node reaches the root in fewer than n hops
            u, hops = v, 0
            while u != root:
                u, hops = int(parents[f, u]), hops + 1
                assert hops < n


def test_ring_trees_are_the_ring_allreduce_paths():
    t = parse_spec("mesh:4x4")
    parents = ring_trees(t, 1)
    s = build(t, "ring")
    order = s.params["order"]
    for r in range(16):  # root order[c]'s chain runs on around the ring
        c = order.index(r)
        assert [int(parents[r, order[(c + d) % 16]]) for d in range(1, 16)] == [order[(c + d - 1) % 16]
                                                                                for d in range(1, 16)]
    assert ring_trees(parse_spec("mesh:3x3"), 1) is None  # no Hamiltonian cycle of one-hop links


def test_gathers_follow_the_trees_from_the_roots():
    t = parse_spec("mesh:4x4:c4")
    s = treepack(t)
    k = s.params["trees_per_root"]
    g = s.op == OP_GATHER
    # every flow's gathers reach every node but its root exactly once
    for f in range(s.num_flows):
        dst = s.dst[g & (s.flow == f)]
        assert sorted(dst.tolist()) == [v for v in range(16) if v != f // k]


ROWS = read_reference()


@pytest.mark.parametrize("name", sorted({r["topology"] for r in ROWS}))
def test_trees_per_root_is_a_multiple_of_forestcolls_k(name):
    """ForestColl's k for the all-gather and the reduce-scatter (its own output: k trees per
    root pack at the optimum, so any multiple of k does too); ours serves both with one tree
    set, so it is a multiple of both. It is their least common multiple where every link
    binds, and twice it on the torus whose y links are half its x links."""
    ks = [int(r["forestcoll_k"]) for r in ROWS if r["topology"] == name]
    k = trees_per_root(_topology(name))
    assert k % math.lcm(*ks) == 0
    assert k == (2 if name == "torus:4x4:c2 x32 y16 ni24" else math.lcm(*ks))


def _two_boxes():
    from forest_table import two_by_eight  # noqa: PLC0415 - bench/forest_table.py's machine

    return two_by_eight()


def test_steps_are_split_by_the_speed_of_their_transfers_slowest_first():
    """On the two-box machine (links across the boxes 64x slower than inside) every step of
    the packing holds transfers of one speed, each original step's slow part before its fast
    part; the schedule is still a correct all-reduce. On a network of one link speed the
    split changes nothing."""
    from nic.collectives.treepack import split_by_speed, transfer_rates

    t = _two_boxes()
    s = build(t, "forest")  # the packing (kept by build for the next test)
    verify(s, seed=5)
    rate = transfer_rates(t, s.src.astype(np.int64), s.dst.astype(np.int64))
    assert set(np.unique(rate).tolist()) == {0.5, 16.0}  # across the boxes / the NI link inside
    for step in range(s.num_steps):
        assert len(set(rate[s.step == step].tolist())) == 1
    mesh = parse_spec("mesh:4x4:c4")
    m = build(mesh, "forest")
    assert np.array_equal(split_by_speed(mesh, m.step, m.src.astype(np.int64), m.dst.astype(np.int64)), m.step)


def test_ni_occupancy_bounds_the_message_model_and_binds_on_the_two_box_machine():
    """ni_occupancy_cycles (the busiest node's NI time, each transfer at the least bandwidth
    on its way) is never above the message model's cycles; on the two-box machine it is
    23/8 of the exact optimum for the packing (within 1 %): any schedule there moves at least
    M/2 bytes across the boxes each phase at 0.5 B/cycle per NI, and 7M bytes inside each
    box at 16 B/cycle, on 32 NIs a box (docs/collectives.md)."""
    from nic.allreduce import simulate_allreduce
    from nic.collectives import ni_occupancy_cycles

    size = 64 << 10
    for t in (_two_boxes(), parse_spec("torus:4x4:c4"), parse_spec("fattree:k4:l2")):
        for a in ("forest", "multitree", "ring"):
            s = build(t, a)
            run = simulate_allreduce(t, s, size_bytes=size, seed=1)
            assert ni_occupancy_cycles(s, t, size) <= run.total_cycles
    t = _two_boxes()
    opt = optimal_bound(t).all_reduce_cycles(size)
    per_phase = (Fraction(size, 2) / Fraction(1, 2) + Fraction(7 * size, 16)) / 32  # one box's NI time / its NIs
    assert 2 * per_phase == Fraction(23, 8) * opt
    assert 1 <= ni_occupancy_cycles(build(t, "forest"), t, size) / float(2 * per_phase) <= 1.01
