"""The message-level event loop against hand-computed timings."""

from __future__ import annotations

import numpy as np
import pytest

from nic.message_sim import POLICY_BASELINE, POLICY_CODESIGNED, simulate_transfers
from noc.message import path_latency_cycles
from noc.routing import route
from noc.topology import parse_spec

T4 = parse_spec("ring:4")
RT4 = route(T4)
LAT4 = path_latency_cycles(T4, RT4, 2)  # one hop: 3 links + 2 routers = 7 cycles


def run(pairs, steps, deps, policy, wire_bytes=1600.0, nis=1, issue_delay=1.0):
    src = np.array([a for a, _ in pairs])
    dst = np.array([b for _, b in pairs])
    dep_ptr = np.zeros(len(pairs) + 1, dtype=np.int64)
    flat = []
    for i, d in enumerate(deps):
        flat += d
        dep_ptr[i + 1] = dep_ptr[i] + len(d)
    return simulate_transfers(
        src_node=src, step=np.array(steps), wire_bytes=np.full(len(pairs), wire_bytes), dep_ptr=dep_ptr,
        dep_idx=np.array(flat, dtype=np.int64), path_links=RT4.links[src, dst], path_len=RT4.length[src, dst],
        path_latency_cycles=LAT4[src, dst], link_bytes_per_cycle=T4.link_bytes_per_cycle, num_nodes=4,
        nis_per_node=nis, policy=policy, issue_delay_cycles=issue_delay,
    )


@pytest.mark.parametrize("policy", [POLICY_BASELINE, POLICY_CODESIGNED])
def test_one_transfer_is_serialisation_plus_path_latency(policy):
    r = run([(0, 1)], [0], [[]], policy)
    assert LAT4[0, 1] == 7
    assert (r.start_cycles[0], r.sent_cycles[0], r.arrive_cycles[0]) == (0, 100, 107)


def test_two_flows_on_one_link_share_it_fairly():
    r = run([(0, 2), (1, 2)], [0, 0], [[], []], POLICY_BASELINE)
    assert r.sent_cycles.tolist() == pytest.approx([200, 200])


def test_codesigned_priority_lets_the_earlier_step_go_first():
    r = run([(0, 2), (1, 2)], [0, 1], [[], []], POLICY_CODESIGNED)
    assert r.sent_cycles.tolist() == pytest.approx([100, 200])


def test_a_dependent_transfer_starts_after_arrival_plus_issue_delay():
    r = run([(0, 1), (1, 2)], [0, 1], [[], [0]], POLICY_BASELINE, issue_delay=3.0)
    assert r.start_cycles[1] == r.arrive_cycles[0] + 3.0


def test_lockstep_waits_for_the_ni_but_baseline_does_not():
    # node 0 sends twice: step 0 to node 1 and step 1 to node 3 (no dependency), 2 NIs.
    base = run([(0, 1), (0, 3)], [0, 1], [[], []], POLICY_BASELINE, nis=2)
    assert base.start_cycles.tolist() == [0, 0]
    lock = run([(0, 1), (0, 3)], [0, 1], [[], []], POLICY_CODESIGNED, nis=2)
    assert lock.start_cycles.tolist() == [0, 101]  # after the NI frees at 100, plus one cycle


def test_a_dependency_cycle_is_reported():
    with pytest.raises(RuntimeError, match="never arrived"):
        run([(0, 1), (1, 0)], [0, 0], [[1], [0]], POLICY_BASELINE)
