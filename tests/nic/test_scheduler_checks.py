"""The expected-source check and the timeout of the scheduler's contract
(docs/nic_scheduler.md, steps 4, 6 and 9), cycle by cycle on the cycle model, with every
expected value derived by hand from the contract's text."""

from __future__ import annotations

import pytest

from nic.scheduler import OP_GATHER, OP_REDUCE, SchedulerModel, SchedulerParams
from noc.base.errors import ConfigError


def _model(**kw):
    m = SchedulerModel(SchedulerParams(depth=4, nis=2, **kw))
    m.tick(rst=1)
    return m


def _load(m, addr, op, flow, dep_op, dep_count, src=0, chk=0, step=0):
    m.tick(load_valid=1, load_addr=addr, load_op=op, load_flow=flow, load_step=step, load_len=1, load_dep_op=dep_op,
           load_dep_count=dep_count, load_src=src, load_src_chk=chk)


def test_a_message_from_another_source_than_a_checking_entry_expects_is_an_error_and_still_counts():
    m = _model()
    _load(m, 0, OP_REDUCE, flow=1, dep_op=OP_REDUCE, dep_count=2, src=5, chk=1)
    m.tick(recv=[(1, OP_REDUCE, 5), None])  # the expected source
    assert m.outputs()["err_count"] == 0 and m.outputs()["ev_wrong_src"] == 0
    m.tick(recv=[None, (1, OP_REDUCE, 6)])  # another source: error, pulse, but counted
    o = m.outputs()
    assert (o["err_count"], o["ev_wrong_src"], o["ev_unexp"], o["err"]) == (1, 1, 0, 1)
    m.tick(rd_en=1, rd_addr=0)
    o = m.outputs()
    assert (o["ev_wrong_src"], o["rd_count"], o["rd_src"], o["rd_src_chk"]) == (0, 2, 5, 1)  # one-cycle pulse


def test_two_wrong_ports_in_one_cycle_are_two_errors_and_a_surplus_is_both_unexpected_and_wrong():
    m = _model()
    _load(m, 0, OP_GATHER, flow=3, dep_op=OP_GATHER, dep_count=1, src=2, chk=1)
    m.tick(recv=[(3, OP_GATHER, 7), (3, OP_GATHER, 1)])  # both wrong; the second is also a surplus
    o = m.outputs()
    assert (o["err_count"], o["ev_wrong_src"], o["ev_unexp"]) == (3, 1, 1)
    assert (o["err_src"], o["err_flow"]) == (1, 3)  # the first unexpected message


def test_without_the_check_bit_any_source_is_fine():
    m = _model()
    _load(m, 0, OP_REDUCE, flow=1, dep_op=OP_REDUCE, dep_count=1, src=5, chk=0)
    m.tick(recv=[(1, OP_REDUCE, 6), None])
    assert m.outputs()["err_count"] == 0


def test_the_timeout_fires_once_after_n_running_cycles_without_progress_and_progress_restarts_it():
    n = 3
    m = _model()
    _load(m, 0, OP_REDUCE, flow=1, dep_op=OP_REDUCE, dep_count=1)  # waits for one message
    m.tick(start=1, timeout_cycles=n)  # IDLE: no count
    seen = []
    for _ in range(2 * n + 2):
        seen.append(m.tick(timeout_cycles=n))
    # RUN from the first of these cycles; the n-th edge without progress fires: the pulse
    # is in the cycle after it, once
    assert [o["running"] for o in seen] == [1] * (2 * n + 2)
    assert [o["ev_timeout"] for o in seen] == [0] * n + [1] + [0] * (n + 1)
    assert seen[-1]["err_count"] == 1
    # progress (a message, here the one it waits for) restarts the count; the entry is then
    # offered and the sink stalls: no progress again, a second timeout n cycles later
    m.tick(timeout_cycles=n, recv=[(1, OP_REDUCE, 0), None])
    seen = [m.tick(timeout_cycles=n, send_ready=0) for _ in range(n + 2)]
    assert seen[1]["send_valid"] == 1
    # the n cycles after the message's edge have no progress (the offer in the second is
    # never taken): the pulse is in the (n+1)-th
    assert [o["ev_timeout"] for o in seen] == [0] * n + [1, 0]
    assert seen[-1]["err_count"] == 2


def test_timeout_zero_never_fires_and_the_count_does_not_run_outside_run():
    m = _model()
    _load(m, 0, OP_REDUCE, flow=1, dep_op=OP_REDUCE, dep_count=1)
    for _ in range(20):
        m.tick(timeout_cycles=2)  # IDLE
    m.tick(start=1)
    for _ in range(20):
        assert m.tick()["err_count"] == 0  # RUN, timeout 0


def test_a_timeout_wider_than_its_port_is_refused():
    m = _model(tmo_w=4)
    with pytest.raises(ConfigError, match="timeout_cycles = 16 does not fit its 4-bit port"):
        m.tick(timeout_cycles=16)


def test_multitree_rows_that_wait_for_one_node_check_it_and_the_others_do_not():
    from nic.collectives import multitree
    from nic.nic_table import expected_sources, node_tables
    from noc.topology import parse_spec

    sched = multitree(parse_spec("torus:4x4"))
    tables = node_tables(sched)
    cols = expected_sources(sched, tables)
    checked = 0
    for v, (rows, c) in enumerate(zip(tables, cols)):
        for (op, f, _p, _s, _l, dep_op, dep), (src, chk) in zip(rows.tolist(), c.tolist()):
            senders = {int(s) for s, d, ff, o in zip(sched.src, sched.dst, sched.flow, sched.op)
                       if d == v and ff == f and o == dep_op}
            assert chk == int(dep > 0 and len(senders) == 1), (v, f, dep_op, senders)
            if chk:
                assert senders == {src}
                checked += 1
            if op == OP_GATHER and dep_op == OP_GATHER:  # a GATHER forwarded from the parent: one source
                assert chk == 1
    assert checked > 0
