"""cocotb benches of rtl/nic_scheduler.v (run inside the simulator by tests/rtl/test_benches.py).

Every bench drives the DUT through :func:`hw_models.rtl.cocotb_regress.lockstep`, so the
cycle model runs alongside and every output is compared on every cycle; on top of that
each bench asserts what its scenario is about on the RTL's own outputs (hand-derived
timings, error counts, read-back values). The HDL parameters come from the job file
(``$HWM_RTL_JOB``); a bench that does not apply to them returns early (pytest skips it).
"""

from __future__ import annotations

import os

import cocotb
import numpy as np

from hw_models.rtl.checks import AxisHoldChecker
from hw_models.rtl.cocotb_regress import load_job, lockstep
from hw_models.rtl.stimulus import Environment, TraceSource, multitree_node_tables, random_episode, random_table
from nic.scheduler import OP_GATHER, OP_RECV, OP_REDUCE, OUTPUT_NAMES


def _job():
    job, params = load_job(os.environ["HWM_RTL_JOB"])
    return job, params


async def _run(dut, params, source, sim, record=True):
    """Lockstep run; returns (summary, RTL outputs per cycle, inputs per cycle)."""
    seen_out, seen_in = [], []

    def check(cycle, rtl, inp):
        seen_out.append(rtl)
        seen_in.append(inp)

    r = await lockstep(dut, params, source, sim=sim, check=check if record else None)
    assert r["mismatches"] == 0, r["mismatch_text"]
    assert r["violations"] == [], r["violations"]
    return r, seen_out, seen_in


def _load(rows):
    out = []
    for addr, row in enumerate(np.asarray(rows).tolist()):
        op, flow, peer, step, length, dep_op, dep_count = row
        out.append({"load_valid": 1, "load_addr": addr, "load_op": op, "load_flow": flow, "load_peer": peer,
                    "load_step": step, "load_len": length, "load_dep_op": dep_op, "load_dep_count": dep_count})
    return out


def _finished_cleanly(r, eps):
    for ep, fin in zip(eps, r["episodes"]):
        sends = int(np.sum(np.asarray(ep.rows)[:, 0] != OP_RECV)) if len(ep.rows) else 0
        assert fin["sends"] == sends, (ep.name, fin, sends)
        if not ep.p_err:
            assert fin["err_count"] == 0, (ep.name, fin)
    assert r["schedules"] == len(eps)


@cocotb.test()
async def reset(dut):
    """Every output is 0 after reset and after clear, whatever came before."""
    job, p = _job()
    rows = [[OP_REDUCE, 1, 2, 0, 3, 0, 0]]
    trace = [{"rst": 1}] + _load(rows) + [{"start": 1}, {"rd_en": 1, "rd_addr": 0}, {"ni_done": 1}, {},
                                           {"rst": 1}, {}, {"start": 1}, {"send_ready": 1}, {"clear": 1}, {}]
    r, outs, _ = await _run(dut, p, TraceSource(trace), job["sim"])
    assert all(v == 0 for v in outs[0].values())
    # (SCHED_PIPE 1: the request is offered a cycle later)
    assert outs[4 + p.pipe]["send_valid"] == 1 and outs[6]["err"] == 1 and outs[9]["running"] == 1  # things happened...
    for k in (7, 11):  # ...and are gone the cycle after rst / clear
        assert all(v == 0 for v in outs[k].values()), outs[k]


@cocotb.test()
async def load_and_read_back(dut):
    """Random table loaded in random order; every address read back (beyond DEPTH: zeros)."""
    job, p = _job()
    rng = np.random.default_rng(11)
    rows = random_table(rng, p, p.depth)
    loads = _load(rows)
    order = rng.permutation(len(loads))
    trace = [{"rst": 1}] + [loads[i] for i in order]
    naddr = 1 << p.addr_w
    trace += [{"rd_en": 1, "rd_addr": a} for a in range(naddr)] + [{}]
    r, outs, _ = await _run(dut, p, TraceSource(trace), job["sim"])
    first = 1 + len(loads) + 1
    for a in range(naddr):
        o = outs[first + a]
        assert o["rd_valid"] == 1
        if a < p.depth:
            got = [o[k] for k in ("rd_op", "rd_flow", "rd_peer", "rd_step", "rd_len", "rd_dep_op", "rd_dep_count")]
            assert got == rows[a].tolist() and o["rd_entry_valid"] == 1 and o["rd_issued"] == 0 and o["rd_count"] == 0
        else:
            assert all(o[k] == 0 for k in OUTPUT_NAMES if k.startswith("rd_") and k != "rd_valid")


@cocotb.test()
async def single_flow(dut):
    """The hand-derived trace of tests/nic/test_scheduler_model.py, on the RTL (SCHED_PIPE 1:
    the same, one cycle later from the take on)."""
    job, p = _job()
    d = p.pipe
    trace = [{"rst": 1}] + _load([[OP_REDUCE, 3, 5, 0, 6, 0, 0]]) + [{"start": 1}, {}] + [{}] * d + [
        {"send_ready": 0}, {"send_ready": 1}, {}, {"ni_done": 1}, {}, {}]
    r, outs, _ = await _run(dut, p, TraceSource(trace), job["sim"])
    assert outs[3]["running"] == 1 and outs[3 + d]["send_valid"] == 0  # taken into the request register
    o = outs[4 + d]  # offered, not taken
    assert o["send_valid"] == 1
    assert (o["send_entry"], o["send_flow"], o["send_peer"], o["send_len"], o["send_op"], o["send_ni"]) == (0, 3, 5, 6, 0, 0)
    assert outs[5 + d] == o  # held, then the handshake
    assert outs[6 + d]["send_valid"] == 0 and outs[6 + d]["ni_busy"] == 1
    assert outs[7 + d]["ni_busy"] == 1 and outs[8 + d]["ni_busy"] == 0 and outs[8 + d]["done"] == 0
    assert outs[9 + d]["done"] == 1 and outs[9 + d]["running"] == 0 and outs[9 + d]["err"] == 0


@cocotb.test()
async def axis_hold_rule(dut):
    """Random schedules under heavy random backpressure: the RTL's offered request holds until taken."""
    job, p = _job()
    eps = []
    for s in range(6000, 6010):
        ep = random_episode(s, p)
        ep.p_ready = float(np.random.default_rng([s, 0xA515]).uniform(0.15, 0.6))
        eps.append(ep)
    chk = AxisHoldChecker()
    r = await lockstep(dut, p, Environment(p, eps), sim=job["sim"], check=lambda c, rtl, inp: chk.feed(rtl, inp))
    assert r["mismatches"] == 0, r["mismatch_text"]
    assert r["violations"] == [], r["violations"]
    assert chk.stalled_cycles > 0 and chk.handshakes > 0
    assert chk.violations == [], chk.violations[:5]


@cocotb.test()
async def multitree_tables(dut):
    """Every node table of a tree all-reduce on a 4x4 torus (c4 when NIS = 4), back to back,
    with the expected sources checked where a row waits for one node: no error."""
    job, p = _job()
    tables, nis, _src = multitree_node_tables("torus:4x4:c4" if p.nis == 4 else "torus:4x4", sources=True)
    assert max(len(t) for t in tables) <= p.depth and p.flow_w >= 4 and p.node_w >= 4, \
        f"the 4x4 MultiTree tables ({max(len(t) for t in tables)} rows, 16 flows/nodes) do not fit {p}"
    eps = [random_episode(100 + n, p, rows=t, prep="clear", errors=False, name=f"torus4x4/node{n}")
           for n, t in enumerate(tables)]
    r, outs, _ = await _run(dut, p, Environment(p, eps), job["sim"], record=False)
    _finished_cleanly(r, eps)


@cocotb.test()
async def random_dependencies(dut):
    """Random tables (shared flows, skipped steps, RECV entries, dep counts 0..3)."""
    job, p = _job()
    eps = [random_episode(s, p, errors=False) for s in range(1000, 1012)]
    r, _, _ = await _run(dut, p, Environment(p, eps), job["sim"], record=False)
    _finished_cleanly(r, eps)


@cocotb.test()
async def backpressure_and_gaps(dut):
    """Heavy send backpressure, sparse receives, idle gaps between loads, slow NIs."""
    job, p = _job()
    eps = []
    for s in range(2000, 2008):
        ep = random_episode(s, p, errors=False)
        ep.p_ready, ep.p_recv, ep.p_gap, ep.ni_delay_max, ep.step_gated = 0.25, 0.08, 0.4, 9, True
        eps.append(ep)
    r, outs, ins = await _run(dut, p, Environment(p, eps), job["sim"])
    _finished_cleanly(r, eps)
    offered_not_taken = sum(1 for o, i in zip(outs, ins) if o["send_valid"] and not i.get("send_ready"))
    assert offered_not_taken > 0  # backpressure really happened


@cocotb.test()
async def simultaneous_receives(dut):
    """All ports deliver in the same cycle: counted together; the surplus is unexpected."""
    job, p = _job()
    n = p.nis
    cnt = min(max(1, n - 1), (1 << p.cnt_w) - 1)  # one port more than needed when NIS > 1
    rows = [[OP_REDUCE, 1, 2, 0, 4, OP_REDUCE, cnt]]
    recv = [(1, OP_REDUCE, (5 + k) % (1 << p.node_w)) for k in range(n)]
    trace = [{"rst": 1}] + _load(rows) + [{"start": 1}, {}, {"recv": recv}, {}, {}, {}]
    r, outs, _ = await _run(dut, p, TraceSource(trace), job["sim"])
    # the cycle after the receives: the entry is taken into the request register (SCHED_PIPE 1:
    # a cycle later, and the surplus is counted a cycle later)
    k = 1 + len(rows) + 3 + p.pipe
    assert outs[k + 1]["send_valid"] == 1 and outs[k]["send_valid"] == 0
    surplus = n - cnt
    assert outs[k]["err_count"] == surplus and outs[k - 1]["err_count"] == 0
    if surplus:
        assert (outs[k]["err_src"], outs[k]["err_flow"]) == (recv[cnt][2], 1)


@cocotb.test()
async def full_table(dut):
    """DEPTH entries: the table is full and runs to done."""
    job, p = _job()
    eps = []
    for s in (3000, 3001):
        ep = random_episode(s, p, errors=False, rows=random_table(np.random.default_rng(s), p, p.depth))
        eps.append(ep)
    r, _, _ = await _run(dut, p, Environment(p, eps), job["sim"], record=False)
    _finished_cleanly(r, eps)
    assert all(len(ep.rows) == p.depth for ep in eps)


@cocotb.test()
async def unexpected_messages(dut):
    """Unexpected messages, spurious ni_done and bad loads raise err and count (saturating)."""
    job, p = _job()
    rows = [[OP_REDUCE, 1, 0, 0, 4, OP_REDUCE, 1]]
    flow_x = (1 << p.flow_w) - 1  # nobody waits for it
    src = (1 << p.node_w) - 1
    trace = [{"rst": 1}] + _load(rows) + [
        {"recv": [(1, OP_REDUCE, 3)]},  # needed
        {"recv": [(flow_x, OP_GATHER, src)]},  # unexpected #1: recorded
        {"recv": [(1, OP_REDUCE, 2)]},  # surplus: unexpected #2
        {"ni_done": 1},  # spurious
        {"load_valid": 1, "load_addr": 0, "load_op": 3},  # bad op
        {},
    ]
    if p.depth < (1 << p.addr_w):
        trace.insert(-1, {"load_valid": 1, "load_addr": p.depth, "load_op": 0})  # beyond DEPTH
    trace += [{"recv": [(flow_x, OP_REDUCE, 0)]} for _ in range(10)] + [{}] * (1 + p.pipe)
    r, outs, _ = await _run(dut, p, TraceSource(trace), job["sim"])
    base = 1 + len(rows)
    d = p.pipe  # SCHED_PIPE 1: a receive's error counts an edge later (the spurious done and the bad load do not)
    assert outs[base + 1 + d]["err"] == 0
    assert outs[base + 2 + d]["err"] == 1 and outs[base + 2 + d]["err_count"] == 1
    assert (outs[base + 2 + d]["err_src"], outs[base + 2 + d]["err_flow"]) == (src, flow_x)
    if d:  # the surplus and the spurious done at the same edge
        assert outs[base + 4]["err_count"] == 3 and outs[base + 5]["err_count"] == 4
    else:
        assert outs[base + 3]["err_count"] == 2 and outs[base + 4]["err_count"] == 3 and outs[base + 5]["err_count"] == 4
    assert (outs[-1]["err_src"], outs[-1]["err_flow"]) == (src, flow_x)  # the first one is kept
    total = 4 + (1 if p.depth < (1 << p.addr_w) else 0) + 10
    assert outs[-1]["err_count"] == min(total, (1 << p.err_w) - 1)
    # and the random environment with errors injected, compared with the model
    eps = [random_episode(s, p, errors=True) for s in range(4000, 4006)]
    r2, _, _ = await _run(dut, p, Environment(p, eps), job["sim"], record=False)
    assert r2["schedules"] == len(eps)


@cocotb.test()
async def back_to_back(dut):
    """All-reduces back to back without reset or clear: load over the finished table, start again."""
    job, p = _job()
    rng = np.random.default_rng(5)
    eps = [random_episode(5000 + k, p, prep="none", errors=False,
                          rows=random_table(rng, p, int(rng.integers(1, p.depth + 1)))) for k in range(6)]
    eps[0].prep = "rst"
    r, outs, ins = await _run(dut, p, Environment(p, eps), job["sim"])
    _finished_cleanly(r, eps)
    assert sum(1 for i in ins if i.get("rst") or i.get("clear")) == 1
    rises = sum(1 for a, b in zip(outs, outs[1:]) if b["done"] and not a["done"])
    assert rises == len(eps)
