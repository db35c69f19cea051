"""Checks on the scheduler's outputs that do not come from the cycle model.

:class:`AxisHoldChecker` checks the AXI-Stream rule on the send interface: once
``send_valid`` is high and ``send_ready`` low, the next cycle offers the same request
(``send_valid`` still high, the payload unchanged); only ``rst``/``clear`` may withdraw
it. It reads the outputs and inputs of each cycle, so the benches run it on the RTL's
own outputs and the tests on the model's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The send interface's payload (AXI-Stream TDATA/TUSER): what must hold while stalled.
SEND_PAYLOAD = ("send_entry", "send_op", "send_flow", "send_peer", "send_len", "send_step", "send_ni")


@dataclass
class AxisHoldChecker:
    """Feed it every cycle's outputs and inputs in order; it counts stalls and violations."""

    stalled_cycles: int = 0  # cycles with send_valid high and send_ready low
    handshakes: int = 0
    violations: list = field(default_factory=list)  # (cycle, what)
    _held: dict | None = None  # the request offered and not taken in the previous cycle
    _cycle: int = 0

    def feed(self, outs: dict, inp: dict) -> None:
        cyc = self._cycle
        self._cycle += 1
        if self._held is not None:
            if not outs["send_valid"]:
                self.violations.append((cyc, "send_valid dropped before the handshake"))
            else:
                changed = [k for k in SEND_PAYLOAD if outs[k] != self._held[k]]
                if changed:
                    self.violations.append((cyc, "payload changed while stalled: " + ", ".join(
                        f"{k} {self._held[k]} -> {outs[k]}" for k in changed)))
        self._held = None
        if outs["send_valid"]:
            if inp.get("send_ready"):
                self.handshakes += 1
            else:
                self.stalled_cycles += 1
                if not (inp.get("rst") or inp.get("clear")):
                    self._held = {k: outs[k] for k in SEND_PAYLOAD}


OP_RECV_CODE = 2  # docs/nic_scheduler.md: op 2 is RECV (sends nothing), 3 is invalid


class Scoreboard:
    """An independent check of a scheduler run, derived from the schedule it is given.

    It shadows the table from the load inputs (the schedule as loaded) and, from the
    inputs alone, predicts what the contract says must be seen; it never reads the cycle
    model. Every cycle it checks the outputs it is fed (the RTL's in the benches):

    * every send handshake names a loaded REDUCE/GATHER entry not sent since its load,
      with that entry's op, flow, peer, len and step, whose ``dep_count`` matching
      messages have arrived, with no unsent entry of an earlier step left, on an NI that
      is not sending;
    * ``ni_busy`` is the set of NIs that took a request and have not reported ``ni_done``;
    * every message the schedule does not expect (no valid entry of its flow and op still
      needs one) is flagged: ``err_count`` grows by exactly the unexpected messages,
      spurious ``ni_done`` pulses and bad loads (saturating), and ``err_src``/``err_flow``
      name the first unexpected message;
    * a message of a (flow, op) whose loaded entries check the source, from another source
      than an entry expects, is a wrong-source error; ``timeout_cycles`` consecutive cycles
      of ``running`` without progress (handshake, receive, ``ni_done``) are one timeout
      error; both count in ``err_count``, and ``ev_unexp``/``ev_wrong_src``/``ev_timeout``
      pulse in the cycle after the edge that saw them (with the pipelined variant,
      ``params.pipe`` 1, a receive's errors count, pulse and are recorded one edge later);
    * when ``done`` rises, every REDUCE/GATHER entry of the table has been sent.
    """

    def __init__(self, params) -> None:
        self.p = params
        self.err_max = (1 << params.err_w) - 1
        self.violations: list[tuple[int, str]] = []
        self.cycle = 0
        self.sends = 0
        self.flagged = 0  # errors predicted (unsaturated)
        self._reset()
        self._done_before = 0
        self.armed = False  # checks start at the first rst/clear (the state before is unknown)

    def _reset(self) -> None:
        self.rows: dict[int, tuple] = {}  # addr -> (op, flow, peer, step, len, dep_op, dep_count, src, src_chk)
        self.count: dict[int, int] = {}
        self.sent: set[int] = set()
        self.busy: set[int] = set()
        self.err_count = 0
        self.err_first: tuple[int, int] | None = None
        self.events = (0, 0, 0)  # ev_unexp, ev_wrong_src, ev_timeout predicted for this cycle
        self.idle = 0  # consecutive running cycles without progress
        self.rx_late = (0, 0, None)  # pipe 1: the last edge's receive errors (unexpected, wrong, first)

    def _flag(self, what: str) -> None:
        self.violations.append((self.cycle, what))

    def feed(self, outs: dict, inp: dict) -> None:
        p = self.p
        if not self.armed:
            self.cycle += 1
            if inp.get("rst") or inp.get("clear"):
                self.armed = True
                self._done_before = 0
            return
        # ---- the outputs during this cycle against the prediction
        if outs["err_count"] != self.err_count:
            self._flag(f"err_count = {outs['err_count']}, the schedule and inputs give {self.err_count}")
        src, flow = self.err_first if self.err_first else (0, 0)
        if (outs["err_src"], outs["err_flow"]) != (src, flow):
            self._flag(f"err_src/err_flow = {outs['err_src']}/{outs['err_flow']}, first unexpected message was "
                       f"{src}/{flow}")
        ev = (outs["ev_unexp"], outs["ev_wrong_src"], outs["ev_timeout"])
        if ev != self.events:
            self._flag(f"ev_unexp/ev_wrong_src/ev_timeout = {ev}, the last edge's errors give {self.events}")
        busy_mask = sum(1 << i for i in self.busy)
        if outs["ni_busy"] != busy_mask:
            self._flag(f"ni_busy = {outs['ni_busy']:#x}, NIs sending: {busy_mask:#x}")
        if outs["done"] and not self._done_before:
            unsent = sorted(a for a, r in self.rows.items() if r[0] != OP_RECV_CODE and a not in self.sent)
            if unsent:
                self._flag(f"done with entries never sent: {unsent[:8]}")
        self._done_before = outs["done"]
        self.cycle += 1
        if inp.get("rst") or inp.get("clear"):
            self._reset()
            return
        errors = 0
        n_unexp = n_wrong = 0
        busy_before = set(self.busy)
        fire = bool(outs["send_valid"] and inp.get("send_ready"))
        # ---- send handshake
        if outs["send_valid"] and inp.get("send_ready"):
            self.sends += 1
            e = outs["send_entry"]
            row = self.rows.get(e)
            if row is None:
                self._flag(f"sent entry {e}, which is not loaded")
            else:
                op, fl, peer, step, length, dep_op, dep = row[:7]
                got = (outs["send_op"], outs["send_flow"], outs["send_peer"], outs["send_len"], outs["send_step"])
                if op == OP_RECV_CODE:
                    self._flag(f"sent entry {e}, a RECV entry")
                elif got != (op, fl, peer, length, step):
                    self._flag(f"entry {e} sent as op/flow/peer/len/step {got}, loaded as {(op, fl, peer, length, step)}")
                if e in self.sent:
                    self._flag(f"entry {e} sent twice")
                if self.count.get(e, 0) < dep:
                    self._flag(f"entry {e} sent after {self.count.get(e, 0)} of its {dep} messages")
                early = sorted(a for a, r in self.rows.items()
                               if r[0] != OP_RECV_CODE and a not in self.sent and r[3] < step)
                if early:
                    self._flag(f"entry {e} (step {step}) sent before entries {early[:8]} of earlier steps")
                self.sent.add(e)
            ni = outs["send_ni"]
            if ni in busy_before or ni >= p.nis:
                self._flag(f"entry {e} sent on NI {ni}, which is sending (or does not exist)")
            self.busy.add(ni)
        # ---- NI completions
        done = inp.get("ni_done", 0)
        for i in range(p.nis):
            if (done >> i) & 1:
                if i in busy_before:
                    self.busy.discard(i)
                else:
                    errors += 1  # spurious
        # ---- receives: a message is expected while some entry of its flow and op needs one
        recv = inp.get("recv") or []
        seen: dict[tuple[int, int], int] = {}
        first = None
        for item in recv:
            if item is None:
                continue
            f, o, s = (int(x) for x in item)
            prior = seen.get((f, o), 0)
            needed = any(r[1] == f and r[5] == o and self.count[a] + prior < r[6] for a, r in self.rows.items())
            if any(r[1] == f and r[5] == o and r[8] and r[7] != s for r in self.rows.values()):
                n_wrong += 1
            if not needed:
                n_unexp += 1
                if first is None:
                    first = (s, f)
            seen[(f, o)] = prior + 1
        if p.pipe:  # counted at the next edge
            (n_unexp, n_wrong, first), self.rx_late = self.rx_late, (n_unexp, n_wrong, first)
        errors += n_unexp + n_wrong
        if first is not None and self.err_first is None:
            self.err_first = first
        for a, r in self.rows.items():
            m = seen.get((r[1], r[5]), 0)
            if m:
                self.count[a] = min(self.count[a] + m, r[6])
        # ---- loads
        if inp.get("load_valid"):
            addr, op = inp.get("load_addr", 0), inp.get("load_op", 0)
            if addr >= p.depth or op == 3:
                errors += 1
            else:
                self.rows[addr] = tuple(int(inp.get(k, 0)) for k in (
                    "load_op", "load_flow", "load_peer", "load_step", "load_len", "load_dep_op", "load_dep_count",
                    "load_src", "load_src_chk"))
                self.count[addr] = 0
                self.sent.discard(addr)
        # ---- timeout
        tmo = int(inp.get("timeout_cycles", 0))
        timeout = 0
        progress = fire or any(x is not None for x in recv) or done != 0
        if not outs["running"] or progress or tmo == 0:
            self.idle = 0
        elif self.idle < tmo:
            self.idle += 1
            if self.idle == tmo:
                timeout = 1
                errors += 1
        self.events = (int(n_unexp > 0), int(n_wrong > 0), timeout)
        self.flagged += errors
        self.err_count = min(self.err_count + errors, self.err_max)
