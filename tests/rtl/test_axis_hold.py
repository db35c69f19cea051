"""The send interface keeps the AXI-Stream rule (docs/nic_scheduler.md, "The send request"):
checked on the cycle model under random schedules with random backpressure (the RTL's
own outputs are checked by the `axis_hold_rule` bench, tests/rtl/nic_scheduler_bench.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from hw_models.rtl.checks import AxisHoldChecker
from hw_models.rtl.lockstep import ModelStepper
from hw_models.rtl.stimulus import Environment, random_episode
from nic.scheduler import SchedulerParams


def backpressured_episodes(params, seeds):
    """Random episodes (tables, errors, resets) whose sink takes a request with probability 0.15..0.8."""
    eps = []
    for s in seeds:
        ep = random_episode(s, params)
        ep.p_ready = float(np.random.default_rng([s, 0xA515]).uniform(0.15, 0.8))
        eps.append(ep)
    return eps


def _check(params, seeds):
    env = Environment(params, backpressured_episodes(params, seeds))
    m = ModelStepper(params)
    chk = AxisHoldChecker()
    while True:
        o = m.outputs()
        inp = env.next_inputs(o)
        if inp is None:
            break
        chk.feed(o, inp)
        m.edge(inp)
    return chk, len(env.finished)


@pytest.mark.parametrize("params", [SchedulerParams(depth=64, nis=4), SchedulerParams(depth=6, nis=3, flow_w=3, node_w=3,
                                                                                    step_w=4, len_w=6, cnt_w=2, err_w=3),
                                    SchedulerParams(depth=1, nis=1)], ids=["d64n4", "d6n3narrow", "d1n1"])
def test_the_offered_request_holds_until_it_is_taken(params):
    chk, n = _check(params, range(40))
    assert n == 40
    assert chk.stalled_cycles > 20 and chk.handshakes > 20  # backpressure really happened
    assert chk.violations == []


@pytest.mark.slow
def test_the_offered_request_holds_on_200_random_schedules():
    chk, n = _check(SchedulerParams(depth=64, nis=4), range(200))
    assert n == 200 and chk.stalled_cycles > 1000
    assert chk.violations == []


def _outs(valid, entry=0, ni=0, peer=0):
    return {"send_valid": valid, "send_entry": entry, "send_op": 0, "send_flow": 0, "send_peer": peer, "send_len": 0,
            "send_step": 0, "send_ni": ni}


def test_the_checker_flags_a_changed_payload_and_a_dropped_valid_but_not_a_reset():
    chk = AxisHoldChecker()
    chk.feed(_outs(1, entry=3, ni=1), {})  # stalled
    chk.feed(_outs(1, entry=2, ni=1), {})  # a lower entry replaced it: the old contract's fault
    chk.feed(_outs(1, entry=2, ni=0), {"send_ready": 0})  # the NI changed
    chk.feed(_outs(0), {})  # dropped
    assert [c for c, _ in chk.violations] == [1, 2, 3]
    assert "send_entry 3 -> 2" in chk.violations[0][1] and "send_ni 1 -> 0" in chk.violations[1][1]
    assert "dropped" in chk.violations[2][1]
    ok = AxisHoldChecker()
    ok.feed(_outs(1, peer=4), {"clear": 1})  # withdrawn by clear: allowed
    ok.feed(_outs(0), {})
    ok.feed(_outs(1, peer=5), {})
    ok.feed(_outs(1, peer=5), {"send_ready": 1})
    ok.feed(_outs(1, peer=6), {"send_ready": 1})  # the next request right after a handshake
    ok.feed(_outs(0), {})
    assert ok.violations == [] and ok.stalled_cycles == 2 and ok.handshakes == 2
