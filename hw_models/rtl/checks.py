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
