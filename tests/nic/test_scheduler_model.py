"""The scheduler cycle model against docs/nic_scheduler.md.

Hand-derived cycle traces pin the timing; randomised runs check the contract's
invariants (dependencies before sends, lockstep, each entry once, done at the end).
"""

from __future__ import annotations

import numpy as np
import pytest

from nic.scheduler import OP_GATHER, OP_RECV, OP_REDUCE, SchedulerModel, SchedulerParams
from noc.base.errors import ConfigError


def make(depth=8, nis=1, **kw) -> SchedulerModel:
    return SchedulerModel(SchedulerParams(depth=depth, nis=nis, **kw))


def test_single_send_trace_cycle_by_cycle():
    m = make()
    m.load_table([[OP_REDUCE, 3, 5, 0, 100, 0, 0]])  # cycle 0: load
    o = m.tick(start=1)  # cycle 1: start sampled at the edge
    assert o["running"] == 0 and o["send_valid"] == 0
    o = m.tick(send_ready=0)  # cycle 2: running; the request register takes entry 0 at this edge
    assert o["running"] == 1 and o["send_valid"] == 0
    o = m.tick(send_ready=0)  # cycle 3: offered, not taken
    assert o["send_valid"] == 1
    assert (o["send_entry"], o["send_flow"], o["send_peer"], o["send_len"], o["send_op"], o["send_ni"]) == (0, 3, 5, 100, 0, 0)
    held = o
    o = m.tick(send_ready=1)  # cycle 4: the same request, held; handshake
    assert o == held
    o = m.tick()  # cycle 5: NI busy, nothing offered (the payload keeps its last values)
    assert o["send_valid"] == 0 and o["ni_busy"] == 1 and o["done"] == 0 and o["send_peer"] == 5
    o = m.tick(ni_done=1)  # cycle 6: NI finishes
    assert o["ni_busy"] == 1
    o = m.tick()  # cycle 7: NI idle, step over -> DONE at this edge
    assert o["ni_busy"] == 0 and o["done"] == 0
    o = m.tick()
    assert o["done"] == 1 and o["running"] == 0 and o["err"] == 0


def test_dependencies_gate_the_send_until_two_cycles_after_the_last_arrival():
    m = make(nis=2)
    m.load_table([[OP_REDUCE, 7, 1, 0, 8, OP_REDUCE, 2]])
    m.tick(start=1)
    assert m.tick()["send_valid"] == 0
    m.tick(recv=[(7, OP_REDUCE, 4)])  # first child
    assert m.tick()["send_valid"] == 0
    m.tick(recv=[(7, OP_REDUCE, 5)])  # second child arrives in this cycle (counted at its edge)...
    assert m.tick()["send_valid"] == 0  # ...the entry is eligible and taken into the request register...
    assert m.outputs()["send_valid"] == 1  # ...and offered in the cycle after
    assert m.outputs()["err"] == 0


def test_early_arrivals_before_start_are_kept():
    m = make()
    m.load_table([[OP_GATHER, 2, 9, 0, 4, OP_GATHER, 1]])
    m.tick(recv=[(2, OP_GATHER, 0)])
    m.tick(start=1)
    m.tick()
    assert m.outputs()["send_valid"] == 1


def test_lockstep_waits_for_every_ni_before_the_next_step():
    m = make(nis=2)
    m.load_table([
        [OP_REDUCE, 0, 1, 0, 4, 0, 0],
        [OP_REDUCE, 1, 2, 0, 4, 0, 0],
        [OP_REDUCE, 2, 3, 1, 4, 0, 0],
    ])
    m.tick(start=1)
    assert m.tick(send_ready=1)["send_valid"] == 0  # entry 0 taken into the request register
    o = m.tick(send_ready=1)  # handshake; entry 1 taken in the same edge, on the NI not reserved
    assert (o["send_valid"], o["send_entry"], o["send_ni"]) == (1, 0, 0)
    o = m.tick(send_ready=1)
    assert (o["send_valid"], o["send_entry"], o["send_ni"], o["ni_busy"]) == (1, 1, 1, 0b01)
    # Step 1's entry is ready but both NIs are busy, and then one NI still is.
    assert m.tick(ni_done=0b01)["send_valid"] == 0
    assert m.tick()["send_valid"] == 0
    assert m.tick(ni_done=0b10)["send_valid"] == 0
    o = m.tick()  # all NIs idle, request register empty: the step advances at this edge
    assert o["step"] == 0 and o["send_valid"] == 0
    o = m.tick()  # step 1: its entry is taken into the register
    assert o["step"] == 1 and o["send_valid"] == 0
    o = m.outputs()
    assert o["send_valid"] == 1 and o["send_entry"] == 2 and o["send_step"] == 1


def test_ties_go_to_the_lowest_table_address_and_steps_without_entries_are_skipped():
    m = make(nis=2)
    m.load_table([
        [OP_REDUCE, 0, 1, 2, 4, 0, 1],  # waits for flow 0
        [OP_REDUCE, 1, 2, 2, 4, 0, 0],
        [OP_REDUCE, 2, 3, 2, 4, 0, 0],
    ])
    m.tick(start=1)
    assert m.outputs()["step"] == 2
    m.tick()
    o = m.outputs()
    assert o["send_entry"] == 1  # entry 0 not ready; lowest ready wins
    m.tick(recv=[(0, OP_REDUCE, 7)], send_ready=0)
    # entry 0 is ready now, but the offered request is held until it is taken (AXI-Stream)
    assert m.outputs()["send_entry"] == 1
    m.tick(send_ready=1)
    o = m.outputs()
    # now entry 0 is the lowest eligible, on NI 1 (NI 0 carries entry 1)
    assert (o["send_valid"], o["send_entry"], o["send_ni"]) == (1, 0, 1)


def test_a_held_request_keeps_its_payload_when_a_lower_ni_becomes_free():
    m = make(nis=2)
    m.load_table([[OP_REDUCE, 0, 1, 0, 4, 0, 0], [OP_GATHER, 1, 2, 0, 5, 0, 0]])
    m.tick(start=1)
    m.tick()  # entry 0 -> register (NI 0)
    m.tick(send_ready=1)  # taken; entry 1 -> register on NI 1
    o = m.tick(send_ready=0, ni_done=0b01)  # NI 0 finishes while entry 1 waits on NI 1
    assert (o["send_entry"], o["send_ni"]) == (1, 1)
    o = m.outputs()
    assert (o["send_valid"], o["send_entry"], o["send_ni"], o["ni_busy"]) == (1, 1, 1, 0)


def test_recv_entries_retire_without_an_ni_and_done_follows():
    m = make()
    m.load_table([[OP_RECV, 4, 0, 0, 0, OP_GATHER, 1]])
    m.tick(start=1)
    assert m.tick()["send_valid"] == 0
    m.tick(recv=[(4, OP_GATHER, 3)])
    m.tick()  # retires at this edge
    m.tick()  # step over -> DONE
    assert m.outputs()["done"] == 1


def test_unexpected_messages_raise_the_error_and_count():
    m = make(nis=2)
    m.load_table([[OP_REDUCE, 1, 0, 0, 4, OP_REDUCE, 1]])
    # Two messages for a flow that needs one, in the same cycle: the second is unexpected.
    m.tick(recv=[(1, OP_REDUCE, 5), (1, OP_REDUCE, 6)])
    o = m.outputs()
    assert o["err"] == 1 and o["err_count"] == 1 and (o["err_src"], o["err_flow"]) == (6, 1)
    m.tick(recv=[(9, OP_GATHER, 3)])  # a flow nobody waits for
    o = m.outputs()
    assert o["err_count"] == 2 and (o["err_src"], o["err_flow"]) == (6, 1)  # first one is kept
    m.tick(ni_done=1)  # spurious done
    assert m.outputs()["err_count"] == 3
    m.tick(clear=1)
    assert m.outputs()["err"] == 0 and m.outputs()["err_count"] == 0


def test_error_counter_saturates():
    m = make(err_w=2)
    for _ in range(5):
        m.tick(recv=[(1, 0, 0)])
    assert m.outputs()["err_count"] == 3


def test_bad_loads_are_errors_and_write_nothing():
    m = make(depth=5)  # ADDR_W = 3, so address 6 is representable but out of the table
    m.tick(load_valid=1, load_addr=6, load_op=0)
    m.tick(load_valid=1, load_addr=1, load_op=3)
    assert m.outputs()["err_count"] == 2
    assert not m.tab[:, 0].any()


def test_read_back_returns_the_entry_as_loaded_and_its_state():
    m = make(cnt_w=3)
    rows = [[OP_GATHER, 5, 6, 2, 77, OP_REDUCE, 3], [OP_REDUCE, 1, 2, 3, 9, OP_GATHER, 0]]
    m.load_table(rows)
    m.tick(recv=[(5, OP_REDUCE, 1)])
    m.tick(rd_en=1, rd_addr=0)
    o = m.outputs()
    assert o["rd_valid"] == 1 and o["rd_entry_valid"] == 1 and o["rd_issued"] == 0
    assert [o[k] for k in ("rd_op", "rd_flow", "rd_peer", "rd_step", "rd_len", "rd_dep_op", "rd_dep_count")] == rows[0]
    assert o["rd_count"] == 1
    m.tick()
    assert m.outputs()["rd_valid"] == 0 and m.outputs()["rd_flow"] == 5  # held


def test_values_wider_than_their_port_are_refused_by_name():
    """The hardware would drop the high bits (load_addr 5 on a 2-bit port writes entry 1, with
    no error); the stepping API names the port instead."""
    m = make(depth=4, flow_w=3, node_w=2)
    for port, value, width in (("load_addr", 5, 2), ("load_flow", 13, 3), ("load_peer", 7, 2), ("load_op", 4, 2),
                               ("load_valid", 2, 1), ("rd_addr", -1, 2)):
        with pytest.raises(ConfigError, match=f"{port} = {value} does not fit its {width}-bit port"):
            m.tick(**{port: value})
    with pytest.raises(ConfigError, match=r"recv_flow\[0\] = 8 does not fit its 3-bit port"):
        m.tick(recv=[(8, 0, 0)])
    m.tick(load_valid=1, load_addr=3, load_op=0, load_flow=7, load_peer=3)  # the widest values fit
    assert m.tab[3, 2] == 7 and m.tab[3, 3] == 3


@pytest.mark.parametrize("bad", [dict(depth=0), dict(nis=17), dict(cnt_w=9), dict(flow_w=True)])
def test_bad_parameters_are_rejected_by_name(bad):
    name = next(iter(bad)).upper()
    with pytest.raises(ConfigError, match=name):
        SchedulerParams(**bad)


# ---- randomised: the contract's invariants under a reactive environment -------------


def _random_table(rng, depth, nflows):
    n = int(rng.integers(1, depth + 1))
    steps = np.sort(rng.integers(0, 6, size=n))
    rows = []
    for s in steps:
        op = int(rng.choice([OP_REDUCE, OP_GATHER, OP_RECV], p=[0.45, 0.45, 0.1]))
        rows.append([op, int(rng.integers(0, nflows)), int(rng.integers(0, 16)), int(s), int(rng.integers(1, 50)),
                     int(rng.integers(0, 2)), int(rng.integers(0, 3))])
    return rows


@pytest.mark.parametrize("seed", range(40))
def test_random_tables_keep_the_contract_invariants(seed):
    rng = np.random.default_rng(seed)
    nis = int(rng.integers(1, 4))
    m = make(depth=12, nis=nis)
    rows = _random_table(rng, 12, nflows=4)
    m.load_table(rows)
    # Deliver exactly the messages each entry needs, at random times.
    pending_msgs = []
    for flow in range(4):
        for op in (0, 1):
            need = max([r[6] for r in rows if r[1] == flow and r[5] == op], default=0)
            pending_msgs += [(flow, op)] * need
    rng.shuffle(pending_msgs)
    arrived = {}
    issued_at = {}
    busy_until = {}
    m.tick(start=1)
    for cyc in range(2000):
        o = m.outputs()
        if o["done"]:
            break
        before = dict(arrived)  # messages whose edge has passed
        recv = []
        for _ in range(nis):
            if pending_msgs and rng.random() < 0.3:
                f, op = pending_msgs.pop()
                recv.append((f, op, 1))
                arrived[(f, op)] = arrived.get((f, op), 0) + 1
        ready = int(rng.random() < 0.7)
        done_mask = 0
        for ni, t in list(busy_until.items()):
            if cyc >= t:
                done_mask |= 1 << ni
                del busy_until[ni]
        if o["send_valid"]:
            e = o["send_entry"]
            r = rows[e]
            # dependency arrived before (counts update at the edge, so strictly earlier cycles)
            assert before.get((r[1], r[5]), 0) >= r[6]
            # lockstep: every entry of an earlier step has issued
            assert all(m.tab[i, 9] == 1 for i in range(len(rows)) if rows[i][3] < r[3])
            assert e not in issued_at
            if ready:
                issued_at[e] = cyc
                busy_until[o["send_ni"]] = cyc + 1 + int(rng.integers(0, 5))
        m.tick(recv=recv, send_ready=ready, ni_done=done_mask)
    else:
        pytest.fail("scheduler never finished")
    sends = [i for i, r in enumerate(rows) if r[0] != OP_RECV]
    assert sorted(issued_at) == sends
    assert m.outputs()["err"] == 0
    assert m.tab[: len(rows), 9].all()  # every entry issued or retired


# ---- the pipelined variant (PIPE 1, the RTL's SCHED_PIPE): hand-derived against PIPE 0 ----


def test_pipe1_offers_a_send_one_cycle_later_and_keeps_full_throughput():
    """Registered eligibility: the entry is eligible during cycle 2 (running), the request
    register takes it at the edge after cycle 3 instead of cycle 2; two entries of a step still
    go out on back-to-back handshakes."""
    def trace(pipe):
        m = make(nis=2, pipe=pipe)
        m.load_table([[OP_REDUCE, 3, 5, 0, 100, 0, 0], [OP_GATHER, 4, 6, 0, 50, 0, 0]])
        m.tick(start=1)
        return [m.tick(send_ready=1) for _ in range(6)]

    t0, t1 = trace(0), trace(1)
    v0 = [o["send_valid"] for o in t0]
    v1 = [o["send_valid"] for o in t1]
    assert v0 == [0, 1, 1, 0, 0, 0]  # cycles 2..7: offered in cycles 3 and 4 (entries 0, 1)
    assert v1 == [0, 0, 1, 1, 0, 0]  # one cycle later, still back to back
    assert [o["send_entry"] for o in t1[2:4]] == [0, 1] and [o["send_ni"] for o in t1[2:4]] == [0, 1]
    assert (t1[2]["send_flow"], t1[2]["send_peer"], t1[2]["send_len"]) == (3, 5, 100)


def test_pipe1_receive_errors_count_one_edge_later():
    """An unexpected message in cycle c: err_count/err/err_src and ev_unexp show it in cycle
    c + 1 at PIPE 0, in cycle c + 2 at PIPE 1; its count toward an entry is not delayed."""
    def trace(pipe):
        m = make(nis=2, pipe=pipe)
        m.load_table([[OP_REDUCE, 7, 1, 0, 8, OP_REDUCE, 1]])
        m.tick(start=1)
        m.tick(recv=[None, (9, OP_REDUCE, 4)])  # no entry of flow 9: unexpected (port 1)
        return [m.outputs()] + [m.tick() for _ in range(2)][1:]

    (a0, b0), (a1, b1) = trace(0), trace(1)
    assert (a0["err_count"], a0["ev_unexp"], a0["err_src"], a0["err_flow"]) == (1, 1, 4, 9)
    assert (b0["err_count"], b0["ev_unexp"]) == (1, 0)
    assert (a1["err_count"], a1["err"], a1["ev_unexp"], a1["err_src"]) == (0, 0, 0, 0)
    assert (b1["err_count"], b1["err"], b1["ev_unexp"], b1["err_src"], b1["err_flow"]) == (1, 1, 1, 4, 9)


def test_pipe1_a_delayed_error_meets_a_bad_load_in_one_saturating_add():
    """A wrong-source message, then a bad load at the next edge: PIPE 1 counts both at that
    edge (err_count 0 -> 2 in one add); a clear in between drops the delayed one."""
    m = make(nis=1, pipe=1, err_w=2)
    m.load_table([[OP_REDUCE, 7, 1, 0, 8, OP_REDUCE, 2, 3, 1]])  # checks source 3
    m.tick(recv=[(7, OP_REDUCE, 5)])  # wrong source (and needed: counted)
    o = m.tick(load_valid=1, load_addr=0, load_op=3)  # bad op: an error at this edge
    assert o["err_count"] == 0
    o = m.outputs()
    assert (o["err_count"], o["ev_wrong_src"]) == (2, 1)
    m.tick(recv=[(7, OP_REDUCE, 6)])  # wrong source again...
    m.tick(clear=1)  # ...dropped by the clear before it is counted
    assert m.outputs()["err_count"] == 0 and m.tick()["err_count"] == 0


def test_pipe_out_of_range_is_refused():
    with pytest.raises(ConfigError, match="PIPE = 2"):
        SchedulerParams(pipe=2)
