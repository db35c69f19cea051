"""The schedule-derived scoreboard (hw_models.rtl.checks.Scoreboard): it agrees with the cycle
model on random runs (two implementations of the contract's checks), and it flags the
bugs a shared contract would hide (the benches run it on the RTL's outputs)."""

from __future__ import annotations

import pytest

from hw_models.rtl.checks import Scoreboard
from hw_models.rtl.lockstep import ModelStepper
from hw_models.rtl.stimulus import Environment, random_episode
from nic.scheduler import OP_REDUCE, SchedulerParams

NARROW = SchedulerParams(depth=6, nis=3, flow_w=3, node_w=3, step_w=4, len_w=6, cnt_w=2, err_w=3)


def _run(params, episodes, corrupt=None):
    env = Environment(params, episodes)
    m = ModelStepper(params)
    sb = Scoreboard(params)
    while True:
        o = m.outputs()
        inp = env.next_inputs(o)
        if inp is None:
            break
        sb.feed(corrupt(m.cycle, dict(o)) if corrupt else o, inp)
        m.edge(inp)
    return sb


@pytest.mark.parametrize("params", [SchedulerParams(depth=64, nis=4), NARROW, SchedulerParams(depth=1, nis=1),
                                    SchedulerParams(depth=16, nis=16)], ids=["d64n4", "d6n3narrow", "d1n1", "d16n16"])
def test_the_scoreboard_agrees_with_the_model_on_random_runs_with_errors(params):
    sb = _run(params, [random_episode(s, params, errors=s % 2 == 0) for s in range(30)])
    assert sb.violations == []
    assert sb.sends > 20 and sb.flagged > 0  # it saw sends and predicted errors


def test_the_scoreboard_agrees_with_the_pipelined_model_and_knows_its_delay():
    """PIPE 1 (registered receive checks): a scoreboard of the same variant agrees with the
    model; one of PIPE 0 fed the same outputs flags the errors as counted an edge late."""
    eps = [random_episode(s, NARROW, errors=True) for s in range(12)]
    p1 = SchedulerParams(**{**NARROW.__dict__, "pipe": 1})
    sb = _run(p1, eps)
    assert sb.violations == [] and sb.flagged > 0 and sb.sends > 10

    env, m, sb0 = Environment(p1, eps), ModelStepper(p1), Scoreboard(NARROW)
    while (inp := env.next_inputs(o := m.outputs())) is not None:
        sb0.feed(o, inp)
        m.edge(inp)
    assert any("err_count" in what for _, what in sb0.violations)


def _script(params, trace, outs_at):
    """Feed ``trace`` with the model's outputs, except where ``outs_at(cycle, outs)`` changes them."""
    m = ModelStepper(params)
    sb = Scoreboard(params)
    for inp in trace:
        sb.feed(outs_at(m.cycle, m.outputs()), inp)
        m.edge(inp)
    return sb


def test_a_surplus_message_on_a_second_port_that_nobody_flags_is_caught():
    p = SchedulerParams(depth=4, nis=2)
    load = {"load_valid": 1, "load_addr": 0, "load_op": OP_REDUCE, "load_flow": 1, "load_dep_op": OP_REDUCE,
            "load_dep_count": 1}
    trace = [{"rst": 1}, load, {"recv": [(1, OP_REDUCE, 5), (1, OP_REDUCE, 6)]}, {}]

    def blind(cycle, o):  # a model and RTL that share a bug: the surplus is not counted
        o = dict(o)
        o["err_count"] = 0
        o["err"] = 0
        o["err_src"] = o["err_flow"] = 0
        return o

    sb = _script(p, trace, blind)
    assert [c for c, _ in sb.violations][:1] == [3]
    assert "err_count = 0, the schedule and inputs give 1" in sb.violations[0][1]
    assert _script(p, trace, lambda c, o: o).violations == []


def test_a_send_twice_a_wrong_field_and_an_early_step_are_caught():
    p = SchedulerParams(depth=4, nis=2)
    rows = [[OP_REDUCE, 1, 2, 0, 9, 0, 0], [OP_REDUCE, 2, 3, 1, 7, 0, 0]]
    trace = [{"rst": 1}] + [{"load_valid": 1, "load_addr": a, "load_op": r[0], "load_flow": r[1], "load_peer": r[2],
                             "load_step": r[3], "load_len": r[4]} for a, r in enumerate(rows)]
    trace += [{"start": 1}] + [{"send_ready": 1}] * 4

    def fake(cycle, o):
        o = dict(o)
        if cycle == 4:  # the first request is offered: claim entry 1 (step 1) with a top bit of peer stuck
            o.update(send_valid=1, send_entry=1, send_peer=3 ^ 0x80, send_step=1, send_len=7, send_flow=2)
        if cycle == 5:
            o.update(send_valid=1, send_entry=1, send_peer=3, send_step=1, send_len=7, send_flow=2, send_ni=1)
        return o

    sb = _script(p, trace, fake)
    text = " | ".join(w for _, w in sb.violations)
    assert "loaded as" in text and "before entries [0] of earlier steps" in text and "entry 1 sent twice" in text


def test_random_runs_with_errors_provoke_wrong_sources_and_timeouts_and_the_scoreboard_predicts_them():
    p = SchedulerParams(depth=16, nis=2)
    env = Environment(p, [random_episode(s, p, errors=True) for s in range(30)])
    m = ModelStepper(p)
    sb = Scoreboard(p)
    events = {"ev_unexp": 0, "ev_wrong_src": 0, "ev_timeout": 0}
    while (inp := env.next_inputs(o := m.outputs())) is not None:
        sb.feed(o, inp)
        for k in events:
            events[k] += o[k]
        m.edge(inp)
    assert sb.violations == []
    assert min(events.values()) > 0, events


def test_a_wrong_source_or_a_timeout_that_model_and_rtl_both_miss_is_caught():
    p = SchedulerParams(depth=4, nis=2)
    load = {"load_valid": 1, "load_addr": 0, "load_op": OP_REDUCE, "load_flow": 1, "load_dep_op": OP_REDUCE,
            "load_dep_count": 2, "load_src": 5, "load_src_chk": 1}
    trace = [{"rst": 1}, load, {"recv": [(1, OP_REDUCE, 6), None]}, {}, {"start": 1}] + [{"timeout_cycles": 2}] * 4

    def blind(cycle, o):  # a shared bug: neither error is counted nor pulsed
        return dict(o, err_count=0, err=0, ev_wrong_src=0, ev_timeout=0)

    text = " | ".join(w for _, w in _script(p, trace, blind).violations)
    assert "ev_unexp/ev_wrong_src/ev_timeout = (0, 0, 0), the last edge's errors give (0, 1, 0)" in text
    assert "ev_unexp/ev_wrong_src/ev_timeout = (0, 0, 0), the last edge's errors give (0, 0, 1)" in text
    assert _script(p, trace, lambda c, o: o).violations == []
