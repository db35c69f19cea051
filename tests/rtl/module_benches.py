"""cocotb benches of the scheduler's sub-modules, each against a Python reference written
from its header comment (run by tests/rtl/test_modules.py; parameters from $HWM_MOD_JOB).

* ``nic_sched_lowest``: lowest set bit (index, one-hot, any) — exhaustive up to 8 bits,
  else every single bit, all ones, zero and random vectors;
* ``nic_sched_mux``: OR of the selected words — one-hot, none and several selected;
* ``nic_sched_ram``: read-first registered read with enable, write port, read-register reset;
* ``nic_sched_entry``: one table entry — load, match and count (saturating), needs, issue
  by send/retire, reset of the state only — with every field driven over its whole range.
"""

from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, Timer


def _job():
    return json.loads(open(os.environ["HWM_MOD_JOB"]).read())


def _int(handle):
    return int(handle.value)


@cocotb.test()
async def lowest_bench(dut):
    job = _job()
    n, idx_w = job["N"], job["IDX_W"]
    if n <= 8:
        vecs = list(range(1 << n))
    else:
        rng = np.random.default_rng(n)
        vecs = [0, (1 << n) - 1] + [1 << k for k in range(n)] + [(1 << n) - (1 << k) for k in range(n)]
        vecs += [int.from_bytes(rng.bytes((n + 7) // 8), "little") & ((1 << n) - 1) for _ in range(300)]
    for v in vecs:
        dut.req.value = v
        await Timer(1, unit="ns")
        low = (v & -v).bit_length() - 1 if v else None
        assert _int(dut.any) == (v != 0), v
        assert _int(dut.onehot) == (0 if v == 0 else 1 << low), (v, _int(dut.onehot))
        if v:
            assert _int(dut.index) == low, (v, _int(dut.index))
    assert idx_w >= 1


@cocotb.test()
async def mux_bench(dut):
    job = _job()
    n, w = job["N"], job["W"]
    rng = np.random.default_rng(100 * n + w)
    for k in range(400):
        words = [int(rng.integers(0, 1 << w)) for _ in range(n)]
        kind = k % 4
        if kind == 0:
            sel = 0
        elif kind == 3:
            sel = int.from_bytes(rng.bytes((n + 7) // 8), "little") & ((1 << n) - 1)  # several: the OR of them
        else:
            sel = 1 << int(rng.integers(0, n))
        dut.data.value = sum(x << (i * w) for i, x in enumerate(words))
        dut.sel.value = sel
        await Timer(1, unit="ns")
        want = 0
        for i in range(n):
            if (sel >> i) & 1:
                want |= words[i]
        assert _int(dut.out) == want, (words, sel)


@cocotb.test()
async def ram_bench(dut):
    job = _job()
    depth, w, aw = job["DEPTH"], job["W"], job["ADDR_W"]
    rng = np.random.default_rng(depth * 7 + w)
    Clock(dut.clk, 10, unit="ns").start()
    mem: dict[int, int] = {}
    q = 0
    dut.rst.value = 1
    dut.we.value = 0
    dut.re.value = 0
    dut.waddr.value = 0
    dut.raddr.value = 0
    dut.wdata.value = 0
    await FallingEdge(dut.clk)
    await FallingEdge(dut.clk)
    checked = 0
    for cyc in range(600):
        assert _int(dut.q) == q, (cyc, _int(dut.q), q)
        rst = int(rng.random() < 0.03)
        we = int(rng.random() < 0.5)
        wa = int(rng.integers(0, depth))
        wd = int(rng.integers(0, 1 << w)) if rng.random() < 0.5 else (1 << w) - 1 - int(rng.integers(0, 4))
        known = list(mem)
        re = int(rng.random() < 0.6 and bool(known))
        ra = int(rng.choice(known)) if known and rng.random() < 0.8 else wa  # often the address being written
        if ra not in mem:
            re = 0
        dut.rst.value, dut.we.value, dut.waddr.value, dut.wdata.value = rst, we, wa, wd
        dut.re.value, dut.raddr.value = re, ra
        await FallingEdge(dut.clk)
        # the edge: read first (old word), then the write
        if rst:
            q = 0
        elif re:
            q = mem[ra]
            checked += 1
        if we:
            mem[wa] = wd
    assert checked > 100 and 1 <= aw


class EntryRef:
    """nic_sched_entry from its header comment: fields, valid/issued/count, match, needs and wrong_src."""

    def __init__(self, job):
        self.j = job
        self.valid = self.issued = self.count = 0
        self.f = None  # (op, flow, step, dep_op, dep_count, src, src_chk) once loaded

    def comb(self, i):
        nis = self.j["NIS"]
        op, flow, step, dep_op, dep, src, chk = self.f if self.f else (0, 0, 0, 0, 0, 0, 0)
        pending = self.valid and not self.issued
        pending_now = pending and step == i["active_step"]
        eligible = i["running"] and pending_now and self.count >= dep
        match = [bool(self.valid and i["rv"][p] and i["flow"][p] == flow and i["op"][p] == dep_op) for p in range(nis)]
        needs = [match[p] and self.count + i["prior"][p] < dep for p in range(nis)]
        wrong = [match[p] and chk and i["src"][p] != src for p in range(nis)]
        return {"pending": int(pending), "pending_now": int(pending_now), "elig_send": int(eligible and op != 2),
                "needs": sum(1 << p for p in range(nis) if needs[p]), "_retire": eligible and op == 2,
                "wrong_src": sum(1 << p for p in range(nis) if wrong[p]),
                "_nmatch": sum(match)}

    def edge(self, i, c):
        if i["rst"]:
            self.valid = self.issued = self.count = 0
        elif i["load_we"]:
            self.valid, self.issued, self.count = 1, 0, 0
            self.f = (i["load_op"], i["load_flow"], i["load_step"], i["load_dep_op"], i["load_dep_count"],
                      i["load_src"], i["load_src_chk"])
        else:
            if i["send_take"] or c["_retire"]:
                self.issued = 1
            if c["_nmatch"]:
                self.count = min(self.count + c["_nmatch"], self.f[4])
        if i["load_we"] and i["rst"]:
            self.f = (i["load_op"], i["load_flow"], i["load_step"], i["load_dep_op"], i["load_dep_count"],
                      i["load_src"], i["load_src_chk"])


@cocotb.test()
async def entry_bench(dut):
    j = _job()
    nis, fw, sw, cw, nw = j["NIS"], j["FLOW_W"], j["STEP_W"], j["CNT_W"], j.get("NODE_W", 8)
    rng = np.random.default_rng(nis * 1000 + fw * 31 + cw)
    Clock(dut.clk, 10, unit="ns").start()
    ref = EntryRef(j)

    def full(width):  # upper half of the range as often as the lower
        return int(rng.integers(0, 1 << width)) if rng.random() < 0.5 else int(rng.integers(1 << (width - 1), 1 << width))

    def drive(i):
        dut.rst.value = i["rst"]
        dut.load_we.value = i["load_we"]
        dut.load_op.value = i["load_op"]
        dut.load_flow.value = i["load_flow"]
        dut.load_step.value = i["load_step"]
        dut.load_dep_op.value = i["load_dep_op"]
        dut.load_dep_count.value = i["load_dep_count"]
        dut.load_src.value = i["load_src"]
        dut.load_src_chk.value = i["load_src_chk"]
        dut.recv_src.value = sum(v << (p * nw) for p, v in enumerate(i["src"]))
        dut.running.value = i["running"]
        dut.active_step.value = i["active_step"]
        dut.send_take.value = i["send_take"]
        dut.recv_valid.value = sum(v << p for p, v in enumerate(i["rv"]))
        dut.recv_flow.value = sum(v << (p * fw) for p, v in enumerate(i["flow"]))
        dut.recv_op.value = sum(v << p for p, v in enumerate(i["op"]))
        dut.recv_prior.value = sum(v << (p * 5) for p, v in enumerate(i["prior"]))

    flow = step = src = chk = 0
    covered = {"count_top": 0, "needs": 0, "elig": 0, "retire": 0, "wrong_src": 0}
    for cyc in range(3000):
        loading = cyc == 1 or rng.random() < 0.012
        if loading:
            flow, step, src, chk = full(fw), full(sw), full(nw), int(rng.random() < 0.6)
        f_here = ref.f[1] if ref.f else flow
        s_here = ref.f[5] if ref.f else src
        i = {"rst": int(cyc == 0 or rng.random() < 0.003), "load_we": int(loading),
             "load_op": int(rng.integers(0, 3)), "load_flow": flow, "load_step": step,
             "load_dep_op": int(rng.integers(0, 2)), "load_src": src, "load_src_chk": chk,
             "load_dep_count": full(cw) if rng.random() < 0.6 else int(rng.integers(0, min(3, (1 << cw) - 1) + 1)),
             "running": int(rng.random() < 0.8),
             "active_step": (ref.f[2] if ref.f and rng.random() < 0.7 else full(sw)),
             "send_take": int(rng.random() < 0.03),
             "rv": [int(rng.random() < 0.6) for _ in range(nis)],
             "flow": [f_here if rng.random() < 0.7 else full(fw) for _ in range(nis)],
             "op": [(ref.f[3] if ref.f and rng.random() < 0.8 else int(rng.integers(0, 2))) for _ in range(nis)],
             "prior": [int(rng.integers(0, p + 1)) for p in range(nis)],
             "src": [s_here if rng.random() < 0.6 else full(nw) for _ in range(nis)]}
        drive(i)
        await Timer(1, unit="ns")
        c = ref.comb(i)
        if cyc > 0:
            got = {k: _int(getattr(dut, k)) for k in ("pending", "pending_now", "elig_send", "needs", "wrong_src")}
            assert got == {k: c[k] for k in got}, (cyc, got, c)
            assert (_int(dut.e_valid), _int(dut.e_issued), _int(dut.e_count)) == (ref.valid, ref.issued, ref.count), cyc
            if ref.valid:
                assert (_int(dut.e_op), _int(dut.e_flow), _int(dut.e_step), _int(dut.e_dep_op),
                        _int(dut.e_dep_count), _int(dut.e_src), _int(dut.e_src_chk)) == ref.f, cyc
            covered["count_top"] |= ref.count >> (cw - 1) & 1
            covered["needs"] |= c["needs"] != 0
            covered["elig"] |= c["elig_send"]
            covered["retire"] |= bool(c["_retire"])
            covered["wrong_src"] |= c["wrong_src"] != 0
        await FallingEdge(dut.clk)
        ref.edge(i, c)
    assert all(covered.values()), covered
