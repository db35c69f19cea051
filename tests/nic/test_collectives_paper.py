"""nic.collectives against the public implementation of the MultiTree paper.

``bench/data/multitree_paper_trees.json`` holds the trees and 2D-ring chains that
implementation builds (commit b241ca1..., written by bench/multitree_paper_trees.py); the
tests compare ``multitree(..., tree_order="paper")`` and ``ring2d_4dir`` with them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from nic.collectives import ScheduleError, build, contention, verify
from nic.collectives.multitree import multitree_trees, paper_priority
from nic.nic_table import check_representable
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.topology import parse_spec

DATA = json.loads((Path(__file__).resolve().parents[2] / "bench" / "data" / "multitree_paper_trees.json").read_text())
TREE_CASES = DATA["cases"]
RING2D_CASES = DATA["ring2d"]


def _case_id(case: dict) -> str:
    k = case["dims"][0]
    return f"{case['network']}{k}x{k}" + (f"-kary{case['kary']}" if "kary" in case else "")


def _spec(case: dict, nis: int = 1) -> str:
    k = case["dims"][0]
    return f"{case['network']}:{k}x{k}" + (f":c{nis}" if nis > 1 else "")


# ---- MultiTree, tree_order="paper" ----------------------------------------------------------

def test_reference_file_is_from_the_public_implementation_commit():
    assert DATA["peer_commit"] == "b241ca1d339c1ef13e18e9b610d0951437f93e86"
    assert len(TREE_CASES) == 8 and {(c["network"], c["dims"][0], c["kary"]) for c in TREE_CASES} == {
        (net, k, kary) for net in ("torus", "mesh") for k in (4, 8) for kary in (2, 5)}


@pytest.mark.parametrize("case", TREE_CASES, ids=_case_id)
def test_paper_order_builds_the_public_implementations_trees_edge_for_edge(case):
    tree, child, parent, tstep, steps = multitree_trees(parse_spec(_spec(case)), case["nis"], tree_order="paper")
    ours = [[int(r), int(p), int(c), int(s)] for r, p, c, s in zip(tree, parent, child, tstep)]
    ours.sort(key=lambda e: e[0])  # stable: each tree's edges stay in the order they were added
    assert steps == case["timesteps"]
    assert ours == case["edges"]


@pytest.mark.parametrize("case", TREE_CASES, ids=_case_id)
def test_paper_order_schedules_are_correct_allreduces(case):
    t = parse_spec(_spec(case, case["nis"]))  # the topology's NIs set kary = NIs + 1
    s = build(t, "multitree", tree_order="paper")
    verify(s, seed=3)
    assert s.params["tree_order"] == "paper" and s.params["kary"] == case["kary"]
    assert s.num_steps == 2 * case["timesteps"]
    assert s.params["edges_per_step"] == np.bincount([e[3] for e in case["edges"]]).tolist()
    assert contention(s, t).contention_free


@pytest.mark.parametrize("case", TREE_CASES, ids=_case_id)
def test_paper_priority_is_the_public_implementations(case):
    assert paper_priority(parse_spec(_spec(case))).tolist() == case["priority"]


def test_paper_mesh_priority_depends_on_the_row_only():
    # its distance() adds |corner_row - corner_col| where the column distance belongs
    assert paper_priority(parse_spec("mesh:4x4")).tolist() == [6] * 4 + [5] * 8 + [6] * 4
    assert paper_priority(parse_spec("torus:4x4")).tolist() == [0] * 16


@pytest.mark.parametrize("case", TREE_CASES, ids=_case_id)
def test_our_order_needs_no_more_steps_than_the_papers(case):
    t = parse_spec(_spec(case))
    assert multitree_trees(t, case["nis"])[4] <= case["timesteps"]


def test_default_tree_order_is_ours_and_recorded():
    t = parse_spec("torus:4x4")
    default = build(t, "multitree")
    ours, paper = build(t, "multitree", tree_order="ours"), build(t, "multitree", tree_order="paper")
    assert default == ours and default.params["tree_order"] == "ours"
    assert paper != ours and paper.params["tree_order"] == "paper"
    assert paper.num_steps == ours.num_steps == 30  # same step count, different trees


def test_unknown_tree_order_is_a_clear_error():
    with pytest.raises(ScheduleError, match="tree_order='bfs': choose one of 'ours', 'paper'"):
        build(parse_spec("torus:4x4"), "multitree", tree_order="bfs")


@pytest.mark.parametrize("spec", ["hypercube:d4", "fattree:k4:l2", "torus:2x2x2", "ring:6", "full:4"])
def test_paper_tree_order_outside_2d_grids_is_a_clear_error(spec):
    with pytest.raises(ScheduleError, match=r"tree_order='paper' needs a 2D torus or mesh.*use tree_order='ours'"):
        build(parse_spec(spec), "multitree", tree_order="paper")


@pytest.mark.parametrize("spec", ["torus:3x5", "mesh:5x3:c2", "torus:2x4"])
def test_paper_tree_order_on_other_2d_grids_is_correct(spec):
    verify(build(parse_spec(spec), "multitree", tree_order="paper"))


# ---- ring2d_4dir ---------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["torus:4x4:c4", "mesh:4x4:c4", "torus:8x8:c4", "torus:4x2", "torus:8x4",
                                  "mesh:8x4", "torus:2x2", "mesh:3x5"])
def test_ring2d_4dir_is_a_correct_allreduce(spec):
    t = parse_spec(spec)
    s = build(t, "ring2d_4dir")
    verify(s, seed=4)
    verify(s, num_elements=s.num_flows, seed=5)
    check_representable(s)
    nx, ny = t.dims
    assert s.num_flows == 8 * t.num_nodes
    assert s.num_steps == 2 * (nx - 1) + 2 * (ny - 1)


def _messages(s, steps) -> Counter:
    """(step, src, dst) -> flows moved, over ``steps`` (a message is a step's transfers between two nodes)."""
    m = np.isin(s.step, list(steps))
    return Counter(zip(s.step[m].tolist(), s.src[m].tolist(), s.dst[m].tolist()))


@pytest.mark.parametrize("case", RING2D_CASES, ids=_case_id)
def test_ring2d_4dir_outer_stages_are_the_public_implementations_2d_ring(case):
    """Its reduce-scatter = our steps 0..T-1, its all-gather = our steps 3T..4T-1, message
    for message: same sender, receiver and size (its flow carries k/4 chunks of M/N, ours
    M/(8N) each, so one of its flows is 2k of ours)."""
    s = build(parse_spec(_spec(case, 4)), "ring2d_4dir")
    T, k = case["timesteps"], case["dims"][0]
    units = int(case["base_chunks_per_flow"] * 8)
    assert units == 2 * k and case["num_flows"] == 4 * case["nodes"]
    rs, ag = Counter(), Counter()
    for _flow, parent, child, step in case["edges"]:
        rs[(T - 1 - step, child, parent)] += units
        ag[(3 * T + step, parent, child)] += units
    assert _messages(s, range(T)) == rs
    assert _messages(s, range(3 * T, 4 * T)) == ag
    assert s.num_steps == 4 * T  # the two stages in between are what its doubled time stands for


def test_ring2d_4dir_uses_all_four_links_of_every_node_in_every_step():
    t = parse_spec("torus:4x4:c4")
    s = build(t, "ring2d_4dir")
    k, n = 4, 16
    offsets, links = t.router_out_links
    e = t.num_endpoints
    for step in range(s.num_steps):
        msgs = _messages(s, [step])
        for v in range(n):
            out = {dst: flows for (_, src, dst), flows in msgs.items() if src == v}
            neighbours = {int(t.link_dst[l]) - e for l in links[offsets[v]:offsets[v + 1]]}
            assert set(out) == neighbours and len(out) == 4  # one message on each of its four links
            # stages 1 and 4 move a row/column piece (2k flows), stages 2 and 3 a part of one (2 flows)
            outer = step < k - 1 or step >= 3 * (k - 1)
            assert set(out.values()) == ({2 * k} if outer else {2})
    assert contention(s, t).max_messages_per_link_step == 1


def test_ring2d_4dir_directions_in_the_first_step():
    """Hand-counted: at step 0 half A's east chains reduce westward along the rows (the far
    end c-1 sends to c-2), its west chains eastward; half B's south chains northward and
    its north chains southward. Flow f's direction is f mod 4 (0 east, 1 west, 2 south,
    3 north); half A's piece column is (f // 4) mod 4."""
    t = parse_spec("torus:4x4")
    s = build(t, "ring2d_4dir")
    m = (s.step == 0) & (s.op == OP_REDUCE)
    d = s.flow % 4
    x = lambda v: v % 4  # noqa: E731
    y = lambda v: v // 4  # noqa: E731
    east_chain = m & (d == 0)
    assert east_chain.sum() == 16 * 8  # every node, 2 x 4 parts of its piece
    assert ((x(s.src[east_chain]) - x(s.dst[east_chain])) % 4 == 1).all()  # west by one
    c = (s.flow[east_chain] // 4) % 4
    assert (x(s.src[east_chain]) == (c - 1) % 4).all()
    west_chain = m & (d == 1)
    assert ((x(s.dst[west_chain]) - x(s.src[west_chain])) % 4 == 1).all()
    south_chain = m & (d == 2)
    assert ((y(s.src[south_chain]) - y(s.dst[south_chain])) % 4 == 1).all()  # north by one
    north_chain = m & (d == 3)
    assert ((y(s.dst[north_chain]) - y(s.src[north_chain])) % 4 == 1).all()
    # a node's transfers of a step, in schedule order, take its four directions in turn
    for v in range(16):
        dirs = d[m & (s.src == v)].tolist()
        assert all(sorted(dirs[i:i + 4]) == [0, 1, 2, 3] for i in range(0, len(dirs), 4))
    assert int((s.op == OP_GATHER).sum()) == int((s.op == OP_REDUCE).sum())


@pytest.mark.parametrize("spec", ["hypercube:d4", "fattree:k4:l2", "ring:6", "torus:2x2x2"])
def test_ring2d_4dir_outside_2d_grids_is_a_clear_error(spec):
    with pytest.raises(ScheduleError, match="ring2d_4dir needs a 2D mesh or torus"):
        build(parse_spec(spec), "ring2d_4dir")


def test_ring2d_4dir_aliases():
    t = parse_spec("torus:4x2")
    s = build(t, "ring2d_4dir")
    assert build(t, "2dring-4dir") == s and build(t, "ring2d_paper") == s


def test_ring2d_4dir_receivers_take_four_transfers_at_once_on_four_nis():
    # the receiving NI of a node's k-th transfer of a step in flow order is NI k mod 4, and
    # flows interleave the directions: each block of four a node receives comes from its
    # four neighbours and lands on its four NIs
    from nic.allreduce import NicConfig
    from nic.preparation import prepare

    t = parse_spec("torus:4x4:c4")
    s = build(t, "ring2d_4dir")
    prep = prepare(t, s, NicConfig(), 1 << 20)
    for v in (0, 5):
        m = (s.step == 0) & (s.dst == v)
        order = np.argsort(s.flow[m], kind="stable")
        srcs, eps = s.src[m][order], prep.dst_ep[m][order]
        for i in range(0, len(srcs), 4):
            assert len(set(srcs[i:i + 4].tolist())) == 4 and len(set(eps[i:i + 4].tolist())) == 4
