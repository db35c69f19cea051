"""The compiled verifier against the exact one (full contribution sets, in Python): on
correct schedules and on randomly damaged ones, step by step and in simulated time, the
two agree on whether the all-reduce is correct."""

from __future__ import annotations

import numpy as np
import pytest

from nic.collectives import Schedule, build
from nic.collectives.verify import VerificationError, _event_order, _fast_fault, verify, verify_exact
from noc.topology import parse_spec

CASES = [("torus:4x4", "multitree"), ("torus:4x4", "ring"), ("mesh:3x3", "dbtree"), ("torus:4x4:c2", "multitree"),
         ("mesh:2x4", "halving_doubling"), ("torus:4x4", "ring2d")]


def _exact_ok(s: Schedule, times=None) -> bool:
    try:
        verify_exact(s, seed=3, times=times)
    except VerificationError:
        return False
    return True


def _damage(s: Schedule, rng: np.random.Generator) -> Schedule:
    arr = np.stack([s.step, s.src, s.dst, s.flow, s.op], axis=1).astype(np.int64)
    k = int(rng.integers(len(arr)))
    how = int(rng.integers(5))
    if how == 0:  # drop a transfer
        arr = np.delete(arr, k, axis=0)
    elif how == 1:  # send it a step earlier or later
        arr[k, 0] = max(arr[k, 0] + int(rng.choice([-1, 1])), 0)
    elif how == 2:  # to another node
        arr[k, 2] = (arr[k, 2] + 1 + int(rng.integers(s.num_nodes - 1))) % s.num_nodes
        if arr[k, 2] == arr[k, 1]:
            arr[k, 2] = (arr[k, 2] + 1) % s.num_nodes
    elif how == 3:  # the other op
        arr[k, 4] = 1 - arr[k, 4]
    else:  # twice
        arr = np.concatenate([arr, arr[k:k + 1]])
    return Schedule.from_transfers(s.algorithm, s.topology, s.num_nodes, s.nis_per_node, s.num_flows, arr)


@pytest.mark.parametrize("spec,algorithm", CASES)
def test_agrees_with_exact_on_damaged_schedules(spec, algorithm):
    s = build(parse_spec(spec), algorithm)
    assert _fast_fault(s, 2 * s.num_flows + 1, 3, None) < 0 and _exact_ok(s)
    rng = np.random.default_rng(7)
    faults = 0
    for _ in range(60):
        bad = _damage(s, rng)
        exact = _exact_ok(bad)
        fast = _fast_fault(bad, 2 * bad.num_flows + 1, 3, None) < 0
        assert fast == exact
        faults += not exact
    assert faults > 30  # the damage mostly breaks it, so both verdicts are exercised


@pytest.mark.parametrize("spec,algorithm", CASES[:3])
def test_agrees_with_exact_in_simulated_time(spec, algorithm):
    """Times from the steps (start = step, arrive = step + 0.5) are correct; jittered ones
    mostly are not."""
    s = build(parse_spec(spec), algorithm)
    start = s.step.astype(float)
    arrive = start + 0.5
    verify(s, seed=3, times=(start, arrive))
    rng = np.random.default_rng(11)
    verdicts = set()
    for k in range(40):
        st = start + rng.normal(0, 0.6 if k % 2 else 0.05, size=start.shape)
        ar = st + (rng.uniform(-0.2, 1.0, size=start.shape) if k % 2 else 0.5)
        exact = _exact_ok(s, (st, ar))
        fast = _fast_fault(s, 2 * s.num_flows + 1, 3, _event_order(s, (st, ar))) < 0
        assert fast == exact
        verdicts.add(exact)
    assert verdicts == {True, False}


def test_a_fault_is_named_by_the_exact_verifier():
    s = build(parse_spec("torus:4x4"), "ring")
    arr = np.stack([s.step, s.src, s.dst, s.flow, s.op], axis=1).astype(np.int64)
    bad = Schedule.from_transfers(s.algorithm, s.topology, s.num_nodes, 1, s.num_flows, arr[1:])
    with pytest.raises(VerificationError, match="flow"):
        verify(bad)


def _stepped_events(s: Schedule) -> np.ndarray:
    """The stepped order as _event_order writes events: each step's starts, then its arrivals (~i)."""
    st = np.searchsorted(s.step, np.arange(s.num_steps + 1))
    return np.concatenate([np.r_[np.arange(st[k], st[k + 1]), ~np.arange(st[k], st[k + 1])] for k in range(s.num_steps)])


@pytest.mark.parametrize("spec,algorithm", CASES[:3])
def test_timed_order_is_stepped_matches_the_sorted_events(spec, algorithm):
    """timed_order_is_stepped against the explicit sort of the events (_event_order): on
    step-aligned integer times with ties (an arrival in the instant the next step starts, a
    start in the instant another transfer of its step arrives, a transfer arriving in the
    instant it started) and on jittered ones; both verdicts occur."""
    from nic.collectives.verify import timed_order_is_stepped

    s = build(parse_spec(spec), algorithm)
    rng = np.random.default_rng(5)
    stepped = _stepped_events(s)
    verdicts = []
    for k in range(60):
        base = 4.0 * s.step
        start = base + (rng.integers(0, 2, size=base.shape) if k % 3 == 1 else 0)
        arrive = base + rng.integers(0 if k % 3 == 2 else 1, 5, size=base.shape)
        if k % 4 == 3:
            start = start + rng.normal(0, 1.0, size=base.shape)
        if k % 5 == 0:  # arrivals in transfer order, all in one instant or the next step's first
            arrive = base + (4.0 if k % 10 == 0 else 1.0 + np.arange(s.num_transfers) / s.num_transfers)
        want = bool(np.array_equal(_event_order(s, (start, arrive)), stepped))
        assert timed_order_is_stepped(s, (start, arrive)) == want
        verdicts.append(want)
    assert True in verdicts and False in verdicts
    # and a replay in the stepped order gives the timed replay's verdict (verify takes that path)
    start, arrive = 4.0 * s.step, 4.0 * s.step + 2
    assert timed_order_is_stepped(s, (start, arrive))
    assert _fast_fault(s, 2 * s.num_flows + 1, 3, _event_order(s, (start, arrive))) < 0
    verify(s, seed=3, times=(start, arrive))
