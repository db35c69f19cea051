"""cocotb benches of rtl/nic_axil_scheduler.v: the scheduler programmed through its AXI-Lite
register map (run inside the simulator by tests/rtl/test_axil.py).

The register map is driven by cocotbext-axi's ``AxiLiteMaster``, with random pauses on all
five channels (valid pauses on AW, W and AR; ready pauses on B and R), so AW and W arrive
in either order and the slave's B and R are held under backpressure. Around it:

* the data-path side (send_ready, ni_done, receives) is played by :class:`Harness`, which
  also runs the cycle model of the scheduler in lockstep with the scheduler *inside* the
  wrapper (its inputs as the register block drives them, every output compared every
  cycle), the schedule-derived scoreboard and the AXI-Stream hold rule;
* an AXI-Lite protocol monitor checks the slave's side (B and R held, and their payload
  stable, until taken) and records in which order AW and W arrived;
* each bench checks what it is about against the register map's description
  (hw_models/rtl/regmap.py) and the documented rules (flags, W1C, mask, timeout timing).

The HDL parameters come from ``$HWM_AXIL_JOB``.
"""

from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from hw_models.rtl import regmap as R
from hw_models.rtl.checks import AxisHoldChecker, Scoreboard
from hw_models.rtl.lockstep import ModelStepper, compare
from hw_models.rtl.stimulus import expected_messages, expected_sources, pin_values, random_table, with_sources
from nic.scheduler import OP_RECV, OP_REDUCE, OUTPUT_NAMES, SchedulerParams

#: scheduler inputs that the register block drives (read from the wrapper's hierarchy)
REG_DRIVEN = ("clear", "load_valid", "load_addr", "load_op", "load_flow", "load_peer", "load_step", "load_len",
              "load_dep_op", "load_dep_count", "load_src", "load_src_chk", "rd_en", "rd_addr", "start",
              "timeout_cycles")


def _params() -> SchedulerParams:
    return SchedulerParams(**json.loads(open(os.environ["HWM_AXIL_JOB"]).read())["params"])


def _int(handle):
    s = str(handle.value)
    try:
        return int(s, 2)
    except ValueError:
        return s


def _pauses(rng, p):
    while True:
        yield bool(rng.random() < p)


class Harness:
    """Clock, reset, the AXI-Lite master, the data-path side, and the per-cycle checks."""

    def __init__(self, dut, params: SchedulerParams, seed: int, pause: float = 0.3) -> None:
        self.dut, self.p = dut, params
        self.rng = np.random.default_rng(seed)
        self.sched = dut.u_sched
        Clock(dut.clk, 10, unit="ns").start()
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        if pause:
            for ch in (self.axil.write_if.aw_channel, self.axil.write_if.w_channel, self.axil.write_if.b_channel,
                       self.axil.read_if.ar_channel, self.axil.read_if.r_channel):
                ch.set_pause_generator(_pauses(np.random.default_rng(self.rng.integers(1 << 30)), pause))
        self.model = ModelStepper(params)
        self.board = Scoreboard(params)
        self.hold = AxisHoldChecker()
        self.mismatch = None
        self.axi_violations: list[str] = []
        self.write_orders = {"aw_first": 0, "w_first": 0, "together": 0}
        self.cycle = 0
        self.armed = False
        self.rst = 1
        # data-path side
        self.p_ready = 1.0
        self.p_recv = 0.5
        self.ni_delay_max = 3
        self.msgs: list[tuple[int, int, int]] = []  # (flow, op, src) still to deliver
        self.extra: list[tuple[int, int, int]] = []  # one-off messages, delivered next cycle
        self.done_at: dict[int, int] = {}
        self.sent_entries: list[int] = []
        self.trace: list[dict] = []  # per cycle: running, done, irq, ev_timeout, flags
        self._in = {n: getattr(self.sched, n) for n in REG_DRIVEN}
        self._out = {n: getattr(self.sched, n) for n in OUTPUT_NAMES}
        for name in ("recv_valid", "recv_flow", "recv_op", "recv_src", "ni_done", "send_ready"):
            getattr(dut, name).value = 0
        dut.rst.value = 1

    async def start(self) -> None:
        cocotb.start_soon(self._cycles())
        cocotb.start_soon(self._axi_monitor())
        for _ in range(3):
            await RisingEdge(self.dut.clk)
        await FallingEdge(self.dut.clk)
        self.rst = 0
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    def check(self) -> None:
        assert self.mismatch is None, self.mismatch
        assert self.board.violations == [], self.board.violations[:5]
        assert self.hold.violations == [], self.hold.violations[:5]
        assert self.axi_violations == [], self.axi_violations[:5]

    # ---- every cycle, at the falling edge ---------------------------------------------
    async def _cycles(self) -> None:
        p, rng = self.p, self.rng
        while True:
            await FallingEdge(self.dut.clk)
            outs = {n: _int(h) for n, h in self._out.items()}
            if self.armed and self.mismatch is None:
                diffs = compare(outs, self.model.outputs())
                if diffs:
                    self.mismatch = f"cycle {self.cycle}: scheduler inside the wrapper differs from the model: {diffs}"
            inp = {n: _int(h) for n, h in self._in.items()}
            if self.rst:  # before the first edge of rst the register block's outputs are unknown
                inp = {n: v if isinstance(v, int) else 0 for n, v in inp.items()}
            inp["rst"] = self.rst
            ready = int(rng.random() < self.p_ready)
            inp["send_ready"] = ready
            done_mask = 0
            for ni, t in list(self.done_at.items()):
                if self.cycle >= t:
                    done_mask |= 1 << ni
                    del self.done_at[ni]
            if self.armed and outs["send_valid"] == 1 and ready:
                self.done_at[outs["send_ni"]] = self.cycle + 1 + int(rng.integers(0, self.ni_delay_max + 1))
                self.sent_entries.append(outs["send_entry"])
            inp["ni_done"] = done_mask
            recv = [None] * p.nis
            for port in range(p.nis):
                if self.extra:
                    recv[port] = self.extra.pop(0)
                elif self.msgs and rng.random() < self.p_recv:
                    recv[port] = self.msgs.pop(0)
            if any(x is not None for x in recv):
                inp["recv"] = recv
            self._drive(inp)
            if inp.get("rst") or inp.get("clear"):
                self.done_at.clear()
            self.trace.append({"cycle": self.cycle, "running": outs["running"], "done": outs["done"],
                               "ev_timeout": outs["ev_timeout"], "irq": _int(self.dut.irq)})
            if all(isinstance(v, int) for v in outs.values()) or self.rst:
                self.board.feed(outs, inp)  # (it reads nothing before its first rst/clear)
                if self.armed:
                    self.hold.feed(outs, inp)
                self.model.edge(inp)
                if self.rst:
                    self.armed = True
            self.cycle += 1

    def _drive(self, inp: dict) -> None:
        """The wrapper's pass-through inputs of one cycle (the receive ports, ni_done, send_ready)."""
        pins = pin_values(inp, self.p)
        for name in ("recv_valid", "recv_flow", "recv_op", "recv_src", "ni_done", "send_ready"):
            getattr(self.dut, name).value = pins[name]

    async def _axi_monitor(self) -> None:
        """The slave's side of AXI-Lite: B and R held with a stable payload until taken; AW/W order."""
        d = self.dut
        held_b = held_r = None
        aw_q: list[int] = []  # cycles of AW / W handshakes not yet paired
        w_q: list[int] = []
        t = 0
        while True:
            await RisingEdge(d.clk)
            t += 1
            if self.rst:
                held_b = held_r = None
                aw_q.clear()
                w_q.clear()
                continue
            bv, br, bresp = _int(d.s_axil_bvalid), _int(d.s_axil_bready), _int(d.s_axil_bresp)
            rv, rr, rdata = _int(d.s_axil_rvalid), _int(d.s_axil_rready), (_int(d.s_axil_rdata), _int(d.s_axil_rresp))
            if held_b is not None and (not bv or bresp != held_b):
                self.axi_violations.append(f"B dropped or changed before bready: {held_b} -> {bv}/{bresp}")
            if held_r is not None and (not rv or rdata != held_r):
                self.axi_violations.append(f"R dropped or changed before rready: {held_r} -> {rv}/{rdata}")
            if self.axi_violations:  # fail now (a task's exception fails the test), not at a hang's timeout
                raise AssertionError(f"AXI-Lite rule broken: {self.axi_violations[0]}")
            held_b = bresp if bv and not br else None
            held_r = rdata if rv and not rr else None
            if _int(d.s_axil_awvalid) == 1 and _int(d.s_axil_awready) == 1:
                aw_q.append(t)
            if _int(d.s_axil_wvalid) == 1 and _int(d.s_axil_wready) == 1:
                w_q.append(t)
            while aw_q and w_q:
                a, w = aw_q.pop(0), w_q.pop(0)
                self.write_orders["aw_first" if a < w else "w_first" if w < a else "together"] += 1

    # ---- register access by name ------------------------------------------------------
    async def wr(self, name: str, value: int) -> None:
        r = await self.axil.write(R.BY_NAME[name].offset, int(value).to_bytes(4, "little"))
        assert r.resp == AxiResp.OKAY, (name, r.resp)

    async def rd(self, name: str) -> int:
        r = await self.axil.read(R.BY_NAME[name].offset, 4)
        assert r.resp == AxiResp.OKAY, (name, r.resp)
        return int.from_bytes(r.data, "little")

    async def load_row(self, addr: int | None, row) -> None:
        """Stage one row and load it (at ``addr``, or at ENTRY_ADDR with auto-increment when None)."""
        row = [int(x) for x in row]
        src, chk = (row[7], row[8]) if len(row) >= 9 else (0, 0)
        words = R.entry_words(*row[:7], src=src, src_chk=chk)
        if addr is not None:
            await self.wr("ENTRY_ADDR", addr)
        for name in ("ENTRY_W0", "ENTRY_W1", "ENTRY_W2", "ENTRY_W3"):
            await self.wr(name, words[name])
        await self.wr("ENTRY_CMD", R.pack("ENTRY_CMD", load=1, inc=int(addr is None)))

    async def load_table(self, rows, shuffle: bool = False) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        if shuffle:
            for a in self.rng.permutation(len(rows)).tolist():
                await self.load_row(a, rows[a])
        else:
            await self.wr("ENTRY_ADDR", 0)
            for row in rows:
                await self.load_row(None, row)

    async def read_entry(self, addr: int) -> dict[str, int]:
        await self.wr("ENTRY_ADDR", addr)
        await self.wr("ENTRY_CMD", R.pack("ENTRY_CMD", read=1))
        out = {}
        for name in ("RD_W0", "RD_W1", "RD_W2", "RD_W3"):
            out.update(R.unpack(name, await self.rd(name)))
        return out

    async def wait_done(self, limit: int = 20000) -> None:
        for _ in range(limit):
            await RisingEdge(self.dut.clk)
            if not self.msgs and not self.done_at and _int(self.sched.done) == 1:
                return
        raise AssertionError(f"schedule did not finish in {limit} cycles; {len(self.msgs)} messages undelivered")

    async def idle(self, n: int) -> None:
        for _ in range(n):
            await RisingEdge(self.dut.clk)


def _mask(w):
    return (1 << w) - 1


def _stored(p: SchedulerParams) -> dict[str, int]:
    """The bits each RW register stores with these parameters (the rest read 0)."""
    w0 = 0x3 | 0x4 | 0x8 | (_mask(p.cnt_w) << 4) | (_mask(p.step_w) << 12)
    return {"IRQ_ENABLE": 0xF, "TIMEOUT": _mask(p.tmo_w), "ENTRY_ADDR": _mask(p.addr_w), "ENTRY_W0": w0,
            "ENTRY_W1": _mask(p.flow_w) | (_mask(p.node_w) << 16), "ENTRY_W2": _mask(p.len_w),
            "ENTRY_W3": _mask(p.node_w)}


def _rows(rng, p, n=None):
    return with_sources(random_table(rng, p, n), rng, p)


def _check_entry(got: dict, row) -> None:
    op, flow, peer, step, length, dep_op, dep_count, src, chk = (int(x) for x in row)
    want = {"op": op, "flow": flow, "peer": peer, "step": step, "len": length, "dep_op": dep_op,
            "dep_count": dep_count, "src": src, "src_chk": chk, "valid": 1}
    assert {k: got[k] for k in want} == want, (got, want)


@cocotb.test(timeout_time=300, timeout_unit="us")
async def reset_values_and_access(dut):
    """Every register's reset value; RW registers keep the strobed bytes of a write (and
    only the bits the scheduler uses); RO and WO registers ignore writes; unmapped
    addresses answer SLVERR."""
    p = _params()
    h = Harness(dut, p, seed=1)
    await h.start()
    for r in R.REGISTERS:
        v = await h.rd(r.name)
        want = r.reset if r.name != "CONFIG" else R.pack("CONFIG", depth=p.depth, nis=p.nis)
        assert v == want, (r.name, hex(v), hex(want))
    stored = _stored(p)
    shadow = dict.fromkeys(stored, 0)
    rng = np.random.default_rng(5)
    for _ in range(60):
        name = str(rng.choice(list(stored)))
        value = int(rng.integers(0, 1 << 32))
        strb = int(rng.integers(1, 16))
        # a write of the strobed bytes only: cocotbext-axi sets WSTRB from the bytes given
        lo = (strb & -strb).bit_length() - 1
        hi = strb.bit_length()
        data = value.to_bytes(4, "little")[lo:hi]
        resp = await h.axil.write(R.BY_NAME[name].offset + lo, data)
        assert resp.resp == AxiResp.OKAY
        m = sum(0xFF << (8 * k) for k in range(lo, hi))
        shadow[name] = ((shadow[name] & ~m) | (value & m)) & stored[name]
        assert await h.rd(name) == shadow[name], name
    for name in ("ID", "CONFIG", "STATUS", "ERR_COUNT", "ERR_INFO", "NI_BUSY", "RD_W0", "RD_W3"):
        before = await h.rd(name)
        await h.wr(name, 0xFFFF_FFFF)
        assert await h.rd(name) == before, name
    assert await h.rd("CTRL") == 0 and await h.rd("ENTRY_CMD") == 0
    mapped = {r.offset for r in R.REGISTERS}
    for off in [a for a in range(0, 0x100, 4) if a not in mapped][:12]:
        r = await h.axil.read(off, 4)
        assert r.resp == AxiResp.SLVERR and int.from_bytes(r.data, "little") == 0, hex(off)
        w = await h.axil.write(off, b"\xff\xff\xff\xff")
        assert w.resp == AxiResp.SLVERR, hex(off)
    assert (await h.rd("IRQ_STATUS")) == 0 and _int(dut.irq) == 0
    h.check()


@cocotb.test(timeout_time=300, timeout_unit="us")
async def load_random_tables_and_read_back(dut):
    """Random tables (every field, expected sources included) loaded through the map, in
    order with auto-increment and in random order; every entry read back through the map
    equals the row; a bad load (op 3, and an address beyond DEPTH) writes nothing and counts
    an error."""
    p = _params()
    h = Harness(dut, p, seed=2)
    await h.start()
    rng = np.random.default_rng(21)
    for k in range(3):
        rows = _rows(rng, p, p.depth if k == 0 else None)
        await h.wr("CTRL", R.pack("CTRL", clear=1))
        await h.load_table(rows, shuffle=k == 1)
        if k != 1:  # auto-increment: one past the last row
            assert await h.rd("ENTRY_ADDR") == len(rows) & _mask(p.addr_w)
        for a in rng.permutation(len(rows)).tolist()[:12]:
            _check_entry(await h.read_entry(a), rows[a])
        if len(rows) < p.depth:
            assert (await h.read_entry(len(rows)))["valid"] == 0
    before = await h.rd("ERR_COUNT")
    await h.load_row(0, [3, 1, 1, 1, 1, 0, 0])
    assert (await h.read_entry(0))["op"] == int(rows[0][0])
    n_bad = 1
    if p.depth < (1 << p.addr_w):
        await h.load_row(p.depth, [0, 1, 1, 1, 1, 0, 0])
        n_bad += 1
    assert await h.rd("ERR_COUNT") == min(before + n_bad, _mask(p.err_w))
    h.check()


async def _run_table(h: Harness, rows, *, p_ready, p_recv, timeout=0, enable=0x1, during=None) -> dict:
    """Clear, load, start; deliver the messages the table waits for (from their expected
    sources); wait for `done`. Returns the flags and counters read through the map."""
    p = h.p
    await h.wr("CTRL", R.pack("CTRL", clear=1))
    await h.wr("IRQ_STATUS", 0xF)
    await h.load_table(rows, shuffle=bool(h.rng.random() < 0.3))
    await h.wr("TIMEOUT", timeout)
    await h.wr("IRQ_ENABLE", enable)
    h.p_ready, h.p_recv = p_ready, p_recv
    checked = expected_sources(rows)
    msgs = [(f, o, checked.get((f, o), int(h.rng.integers(0, 1 << p.node_w)))) for f, o, _ in expected_messages(rows)]
    h.sent_entries = []
    await h.wr("CTRL", R.pack("CTRL", start=1))
    h.msgs = [msgs[i] for i in h.rng.permutation(len(msgs))]
    task = cocotb.start_soon(during()) if during is not None else None
    await h.wait_done()
    if task is not None:
        await task
    await h.idle(3)
    return {"status": R.unpack("STATUS", await h.rd("STATUS")), "flags": R.unpack("IRQ_STATUS", await h.rd("IRQ_STATUS")),
            "err_count": await h.rd("ERR_COUNT"), "irq": _int(h.dut.irq)}


@cocotb.test(timeout_time=300, timeout_unit="us")
async def run_schedules(dut):
    """Random tables run to `done` through the map: every REDUCE/GATHER entry sent once,
    STATUS.done, IRQ_STATUS.done with `irq` (enabled), no error; W1C of DONE drops `irq`.
    The scheduler inside the wrapper runs in lockstep with the model the whole time."""
    p = _params()
    h = Harness(dut, p, seed=3)
    await h.start()
    rng = np.random.default_rng(31)
    for k in range(4):
        rows = _rows(rng, p)
        r = await _run_table(h, rows, p_ready=float(rng.uniform(0.3, 1.0)), p_recv=float(rng.uniform(0.2, 0.9)),
                             timeout=_mask(p.tmo_w) if p.tmo_w >= 12 else 0)
        sends = sorted(a for a, row in enumerate(rows.tolist()) if row[0] != OP_RECV)
        assert sorted(h.sent_entries) == sends, (h.sent_entries, sends)
        assert r["status"]["done"] == 1 and r["status"]["running"] == 0 and r["status"]["err"] == 0, r
        assert r["flags"] == {"done": 1, "unexpected": 0, "wrong_src": 0, "timeout": 0}, r
        assert r["err_count"] == 0 and r["irq"] == 1, r
        await h.wr("IRQ_STATUS", R.pack("IRQ_STATUS", done=1))
        await h.idle(2)
        assert _int(dut.irq) == 0 and await h.rd("IRQ_STATUS") == 0
    h.check()


def _irq_expected(flags: int, enable: int) -> int:
    return int(flags & enable != 0)


@cocotb.test(timeout_time=300, timeout_unit="us")
async def error_flags_irq_w1c_mask(dut):
    """Each error flag provoked on its own: an unexpected message, a message from a wrong
    source, a timeout. Each sets its sticky flag (and only it), counts in ERR_COUNT, raises
    `irq` only while enabled; a W1C of another flag leaves it, its own W1C clears it; the
    timeout fires TIMEOUT cycles after the last progress, once per stall."""
    p = _params()
    h = Harness(dut, p, seed=4)
    await h.start()
    flow, other = 1 % (1 << p.flow_w), 0
    src = _mask(p.node_w)  # the top bit of the source set: a stuck-at-0 bit is seen
    wrong = src ^ (1 << (p.node_w - 1))
    # one REDUCE waiting for one message of `flow` from `src`
    row = [OP_REDUCE, flow, 0, 0, 1, 0, 1, src, 1]

    async def prepare():
        await h.wr("CTRL", R.pack("CTRL", clear=1))
        await h.idle(2)
        await h.wr("IRQ_STATUS", 0xF)
        await h.wr("IRQ_ENABLE", 0)
        await h.load_row(0, row)

    async def flags():
        return await h.rd("IRQ_STATUS")

    names = {"unexpected": 1 << 1, "wrong_src": 1 << 2, "timeout": 1 << 3}
    for which in ("unexpected", "wrong_src", "timeout"):
        await prepare()
        if which == "unexpected":
            h.extra.append((other if other != flow else flow ^ 1, 1, src))  # nobody counts GATHERs of that flow
        elif which == "wrong_src":
            h.extra.append((flow, 0, wrong))
        else:
            n = min(7, _mask(p.tmo_w))
            await h.wr("TIMEOUT", n)
            t0 = len(h.trace)
            await h.wr("CTRL", R.pack("CTRL", start=1))
            await h.idle(n + 12)
            tr = h.trace[t0:]
            first_run = next(t["cycle"] for t in tr if t["running"])
            pulses = [t["cycle"] for t in tr if t["ev_timeout"]]
            # n running cycles without progress: the error is seen in the edge that ends the
            # n-th; ev_timeout pulses in the cycle after it, once
            assert pulses == [first_run + n], (pulses, first_run, n)
        await h.idle(4)
        f = await flags()
        assert f == names[which], (which, hex(f))
        assert await h.rd("ERR_COUNT") == 1, which
        assert _int(dut.irq) == 0  # masked
        await h.wr("IRQ_ENABLE", names[which])
        await h.idle(1)
        assert _int(dut.irq) == 1, which
        await h.wr("IRQ_ENABLE", 0xF & ~names[which])
        await h.idle(1)
        assert _int(dut.irq) == 0, which
        await h.wr("IRQ_ENABLE", 0xF)
        await h.wr("IRQ_STATUS", 0xF & ~names[which])  # W1C of the others: no effect
        await h.idle(3)
        assert await flags() == names[which] and _int(dut.irq) == 1, which
        await h.wr("IRQ_STATUS", names[which])
        await h.idle(1)
        assert await flags() == 0 and _int(dut.irq) == 0, which
        if which == "wrong_src":  # the message was counted: the entry can now be sent
            await h.wr("CTRL", R.pack("CTRL", start=1))
            await h.idle(10)
            assert (await h.read_entry(0))["issued"] == 1
    # CTRL.clear also zeroes the flags
    await h.wr("TIMEOUT", 0)
    h.extra.append((flow ^ 1, 1, src))
    await h.idle(4)
    assert await flags() == names["unexpected"]
    await h.wr("CTRL", R.pack("CTRL", clear=1))
    await h.idle(2)
    assert await flags() == 0 and await h.rd("ERR_COUNT") == 0
    h.check()


@cocotb.test(timeout_time=300, timeout_unit="us")
async def heavy_backpressure(dut):
    """Long random pauses on every AXI-Lite channel while a schedule with errors runs and
    the map is read and written concurrently: AW and W arrive in both orders (and
    together), B and R stay valid and stable until taken, and every read returns the
    value written."""
    p = _params()
    h = Harness(dut, p, seed=6, pause=0.6)
    await h.start()
    rng = np.random.default_rng(61)
    rows = _rows(rng, p)
    vals = [int(rng.integers(0, 1 << 32)) for _ in range(20)]

    async def writer():
        for v in vals:
            await h.wr("ENTRY_W2", v)
            assert await h.rd("ENTRY_W2") == v & _mask(p.len_w)

    # (staging-register writes while the schedule runs: no load is in progress then)
    r = await _run_table(h, rows, p_ready=0.5, p_recv=0.5, enable=0xF, during=writer)
    assert r["status"]["done"] == 1 and r["flags"]["done"] == 1 and r["irq"] == 1
    assert min(h.write_orders.values()) > 0, h.write_orders
    h.check()
