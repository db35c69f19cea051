"""nic.collectives: schedules, the MultiTree construction, the verifier, contention, bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nic.collectives import (
    ALGORITHMS, Schedule, ScheduleError, VerificationError, bounds, build, contention, ideal_cycles,
    multitree, ring_order, verify,
)
from nic.collectives.multitree import multitree_trees
from nic.nic_table import check_representable, node_tables
from nic.scheduler import OP_GATHER, OP_RECV, OP_REDUCE
from noc.topology import parse_spec

FAMILIES = ["torus:4x4", "torus:3x5", "mesh:4x4", "mesh:3x3", "torus:4x4:c4", "ring:6", "hypercube:d3",
            "fattree:k4:l2", "bigraph:2x4", "switch:5", "full:4", "torus:2x2x2"]


def _applicable(spec: str, algorithm: str) -> bool:
    t = parse_spec(spec)
    if algorithm == "ring2d_4dir":
        return t.family in ("torus", "mesh") and len(t.dims) == 2
    return algorithm != "ring2d" or (t.is_direct and len(t.dims) == 2)


CASES = [(s, a) for s in FAMILIES for a in ALGORITHMS if _applicable(s, a)]


@pytest.mark.parametrize("spec,algorithm", CASES)
def test_every_algorithm_on_every_family_is_a_correct_allreduce(spec, algorithm):
    t = parse_spec(spec)
    s = build(t, algorithm)
    verify(s, seed=1)
    verify(s, num_elements=s.num_flows, seed=2)  # one element per flow
    check_representable(s)
    assert s.num_nodes == t.num_nodes


# ---- MultiTree: the published reference points ----------------------------------------

def test_multitree_4x4_torus_one_ni_takes_15_steps():
    _, _, _, tstep, steps = multitree_trees(parse_spec("torus:4x4"))
    assert steps == 15
    assert np.bincount(tstep).tolist() == [16] * 15  # every node sends once per step


def test_multitree_4x4_torus_four_nis_takes_5_steps_with_published_edge_counts():
    _, _, _, tstep, steps = multitree_trees(parse_spec("torus:4x4:c4"))
    assert steps == 5
    assert np.bincount(tstep).tolist() == [64, 64, 48, 48, 16]


def test_multitree_trees_are_spanning_and_respect_step_limits():
    t = parse_spec("torus:4x4:c4")
    tree, child, parent, tstep, steps = multitree_trees(t)
    n = t.num_nodes
    for r in range(n):  # each tree spans: every non-root node joins once, parent joined earlier
        m = tree == r
        assert sorted(child[m].tolist()) == [v for v in range(n) if v != r]
        joined = {r: -1}
        for c, p, s in sorted(zip(child[m], parent[m], tstep[m]), key=lambda x: x[2]):
            assert p in joined and joined[p] < s  # parent was in the tree at the start of the step
            joined[c] = s
    kary = t.nis_per_node + 1
    for s in range(steps):
        m = tstep == s
        assert np.bincount(parent[m], minlength=n).max() <= kary - 1
        assert np.bincount(child[m], minlength=n).max() <= kary - 1
        assert t.router_distances[parent[m], child[m]].tolist() == [1] * int(m.sum())


def test_multitree_schedule_steps_follow_the_construction():
    s = multitree(parse_spec("torus:4x4"))
    T = s.params["construction_steps"]
    assert s.num_steps == 2 * T
    red = s.op == OP_REDUCE
    # reduce edges of construction step t are sent at T-1-t, gathers at T+t
    assert (s.step[red] < T).all() and (s.step[~red] >= T).all()
    assert s.num_transfers == 2 * 16 * 15


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:4x4:c4", "torus:8x8", "mesh:4x4", "torus:3x5", "hypercube:d4"])
def test_multitree_on_direct_networks_is_contention_free(spec):
    t = parse_spec(spec)
    c = contention(multitree(t), t)
    assert c.max_messages_per_link_step == 1 and c.contention_free


def test_multitree_on_switched_networks_is_contention_free_over_routed_paths():
    for spec in ["fattree:k4:l2", "bigraph:2x4"]:
        t = parse_spec(spec)
        assert contention(multitree(t), t).contention_free


def test_baselines_contend_where_expected():
    t = parse_spec("torus:4x4")
    assert contention(build(t, "ring"), t).max_messages_per_link_step == 1  # Hamiltonian cycle
    assert contention(build(t, "dbtree"), t).max_messages_per_link_step > 1
    assert contention(build(t, "halving_doubling"), t).max_messages_per_link_step > 1


def test_ring_order_is_a_hamiltonian_cycle_on_even_grids():
    for spec in ["torus:4x4", "mesh:4x4", "mesh:3x4", "mesh:4x3", "torus:6x2"]:
        t = parse_spec(spec)
        order = ring_order(t)
        assert sorted(order) == list(range(t.num_nodes))
        hops = [t.router_distances[order[i], order[(i + 1) % len(order)]] for i in range(len(order))]
        assert hops == [1] * len(order), spec


# ---- the verifier catches each failure kind --------------------------------------------

def _ring3() -> list[tuple]:
    """A correct 3-node ring: flow c reduces (c+1)->(c+2)->c, then gathers c->c+1->c+2."""
    t = []
    for c in range(3):
        t += [(0, (c + 1) % 3, (c + 2) % 3, c, OP_REDUCE), (1, (c + 2) % 3, c, c, OP_REDUCE),
              (2, c, (c + 1) % 3, c, OP_GATHER), (3, (c + 1) % 3, (c + 2) % 3, c, OP_GATHER)]
    return t


def _sched(transfers) -> Schedule:
    return Schedule.from_transfers("hand", "ring:3", 3, 1, 3, transfers)


def test_hand_made_ring_is_correct():
    verify(_sched(_ring3()))


def test_verifier_catches_send_before_children_arrived():
    t = _ring3()
    t[1] = (0, t[1][1], t[1][2], t[1][3], t[1][4])  # the second hop in the same step as the first
    with pytest.raises(VerificationError, match="sent before its children arrived"):
        verify(_sched(t))


def test_verifier_catches_gather_of_an_incomplete_sum():
    t = [x for x in _ring3() if not (x[0] == 1 and x[3] == 0)]  # flow 0 loses its second reduce hop
    with pytest.raises(VerificationError, match=r"flow 0.*lacks the contributions"):
        verify(_sched(t))


def test_verifier_catches_a_contribution_counted_twice():
    t = _ring3() + [(1, 0, 2, 1, OP_REDUCE)]  # node 0 sends its partial sum of flow 1 a second time
    with pytest.raises(VerificationError, match="already sent its partial sum of flow 1"):
        verify(_sched(t))
    # one flow around a cycle: node 0's data comes back to node 0 inside node 2's partial sum
    loop = [(0, 0, 1, 0, OP_REDUCE), (1, 1, 2, 0, OP_REDUCE), (2, 2, 0, 0, OP_REDUCE),
            (3, 0, 1, 0, OP_GATHER), (4, 1, 2, 0, OP_GATHER)]
    with pytest.raises(VerificationError, match="transfer 2 .*contribution of node 0 to flow 0 counted twice at node 0"):
        verify(Schedule.from_transfers("hand", "ring:3", 3, 1, 1, loop))


def test_verifier_catches_a_chunk_never_delivered():
    t = [x for x in _ring3() if not (x[0] == 3 and x[3] == 2)]  # last gather hop of flow 2 dropped
    with pytest.raises(VerificationError, match=r"flow 2: chunk .* never delivered to node 1"):
        verify(_sched(t))


def test_verifier_catches_a_contribution_never_counted():
    t = [x for x in _ring3() if not (x[0] == 0 and x[3] == 1)]  # flow 1: node 2's data never sent
    with pytest.raises(VerificationError, match="lacks the contributions of node 2"):
        verify(_sched(t))


def test_schedule_rejects_bad_ids():
    with pytest.raises(ScheduleError, match="dst=7 out of range"):
        _sched([(0, 0, 7, 0, OP_REDUCE)])
    with pytest.raises(ScheduleError, match="src == dst"):
        _sched([(0, 1, 1, 0, OP_REDUCE)])


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["torus", "mesh", "ring"]), a=st.integers(2, 6), b=st.integers(2, 5),
       algorithm=st.sampled_from(sorted(ALGORITHMS)), seed=st.integers(0, 2**31 - 1))
def test_random_sizes_verify(kind, a, b, algorithm, seed):
    spec = f"ring:{a * b}" if kind == "ring" else f"{kind}:{a}x{b}"
    t = parse_spec(spec)
    if not _applicable(spec, algorithm):
        return
    verify(build(t, algorithm), seed=seed)


# ---- serialisation and tables ------------------------------------------------------------

def test_json_round_trip():
    s = multitree(parse_spec("torus:4x4:c4"))
    back = Schedule.from_json(s.to_json())
    assert back == s and hash(back) == hash(s)
    assert back.params["edges_per_step"] == [64, 64, 48, 48, 16]
    with pytest.raises(ScheduleError, match="format"):
        Schedule.from_json('{"format": "other"}')


def test_flat_view_chunks_tile_the_vector():
    s = build(parse_spec("torus:3x3"), "ring")
    m = 1000
    chunks = {(t["offset"], t["length"]) for t in s.transfers(m)}
    assert sum(length for _, length in chunks) == m and len(chunks) == s.num_flows


def test_node_tables_match_the_tree():
    s = multitree(parse_spec("torus:4x4"))
    tables = node_tables(s)
    for v, rows in enumerate(tables):
        assert (np.diff(rows[:, 3]) >= 0).all()  # sorted by step
        sends = rows[rows[:, 0] != OP_RECV]
        assert len(sends) == int((s.src == v).sum())
        for op, f, peer, step, length, dep_op, dep_count in rows.tolist():
            if op == OP_REDUCE:  # waits for exactly its children in tree f
                assert dep_count == int(((s.dst == v) & (s.flow == f) & (s.op == OP_REDUCE)).sum())
            if op == OP_RECV:
                assert dep_op == OP_GATHER and dep_count == 1
    entries = s.node_table(5)
    assert all(e.step < s.num_steps for e in entries)


# ---- bounds and ideal time -----------------------------------------------------------------

def test_bounds_closed_forms():
    t = parse_spec("torus:4x4")  # 16 B/cycle links, one NI per node
    b = bounds(t, 1 << 20)
    assert b.injection_cycles == pytest.approx(2 * 15 / 16 * (1 << 20) / 16)
    assert b.bisection_cycles == pytest.approx((1 << 20) / (8 * 16))  # 8 links cross a 4x4 torus's cut
    assert b.min_tree_steps == 15
    assert bounds(parse_spec("torus:4x4:c4"), 1 << 20).min_tree_steps == math.ceil(240 / 64)


@pytest.mark.parametrize("spec,algorithm", [c for c in CASES if c[0] in ("torus:4x4", "torus:4x4:c4", "mesh:4x4", "fattree:k4:l2")])
def test_no_schedule_beats_the_bandwidth_bound(spec, algorithm):
    t = parse_spec(spec)
    size = 1 << 22
    assert ideal_cycles(build(t, algorithm), t, size) >= bounds(t, size).bandwidth_cycles * (1 - 1e-9)


def test_multitree_reaches_the_injection_bound_on_a_torus():
    t = parse_spec("torus:4x4")
    size = 16 * 4 * 1024
    assert ideal_cycles(multitree(t), t, size) == pytest.approx(bounds(t, size).injection_cycles)


def test_unknown_algorithm_is_a_clear_error():
    with pytest.raises(ScheduleError, match="unknown algorithm 'bogus'; choose one of ring"):
        build(parse_spec("torus:4x4"), "bogus")
    with pytest.raises(ScheduleError, match="ring2d needs a 2D mesh or torus"):
        build(parse_spec("fattree:k4:l2"), "ring2d")


def test_build_gives_one_schedule_per_inputs():
    """A schedule asked for again on an equal topology (rebuilt from its spec) is the same
    object, equal to what its builder makes afresh; other options or algorithms are not."""
    import nic.collectives as collectives
    from nic.collectives import build, builder
    from noc.topology import parse_spec

    first = build(parse_spec("torus:4x4"), "multitree")
    again = build(parse_spec("torus:4x4"), "multitree")
    assert again is first
    assert first == builder("multitree")(parse_spec("torus:4x4"))
    paper = build(parse_spec("torus:4x4"), "multitree", tree_order="paper")
    assert paper is not first and paper == builder("multitree")(parse_spec("torus:4x4"), tree_order="paper")
    assert build(parse_spec("torus:4x4"), "ring") is not first
    assert build(parse_spec("torus:4x8"), "multitree").num_nodes == 32
    assert len(collectives._BUILT) <= collectives._BUILT_MAX
