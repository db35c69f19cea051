"""Lockstep comparison of the cycle model with the RTL: the stepper, the comparator, reports.

:class:`ModelStepper` steps ``nic.scheduler``'s contract functions a cycle at a time
(``outputs()`` during the cycle, then ``edge(inputs)``), optionally with an injected
deviation (:class:`Fault`) — the regression's proof that it can fail. :func:`compare`
names every output that differs; :class:`Mismatch` is the first one, with what is needed
to reproduce it (:func:`write_reproducer`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from nic import scheduler as S
from nic.scheduler import OUTPUT_NAMES, SchedulerParams


@dataclass(frozen=True)
class Fault:
    """A one-cycle deviation of the model: at model cycle ``cycle``, output ``signal`` is XORed with ``xor``."""

    cycle: int
    signal: str
    xor: int = 1

    def __post_init__(self) -> None:
        if self.signal not in OUTPUT_NAMES:
            raise ValueError(f"fault signal {self.signal!r} is not an output; outputs are {', '.join(OUTPUT_NAMES)}")


class ModelStepper:
    """The cycle model, stepped with the environment's input dicts."""

    def __init__(self, params: SchedulerParams, fault: Fault | None = None) -> None:
        self.params = params
        self.fault = fault
        self._p = params.vector()
        self.tab, self.regs = S.new_state(params)
        self._inp = S.new_inputs(params)
        self._out = np.zeros(S.N_OUTS, dtype=np.int64)
        self._index = {n: i for i, n in enumerate(S.SCALAR_INPUT_NAMES)}
        self.cycle = 0

    def outputs(self) -> dict[str, int]:
        S.sched_outputs(self.tab, self.regs, self._p, self._out)
        outs = dict(zip(OUTPUT_NAMES, self._out.tolist()))
        f = self.fault
        if f is not None and f.cycle == self.cycle:
            outs[f.signal] ^= f.xor
        return outs

    def edge(self, inp: dict) -> None:
        """Apply the rising edge that ends the current cycle (``outputs()`` must have been called)."""
        a = self._inp
        a[:] = 0
        nis = self.params.nis
        for name, value in inp.items():
            if name == "recv":
                mask = 0
                for port, item in enumerate(value):
                    if item is None:
                        continue
                    flow, op, src = item
                    mask |= 1 << port
                    a[S.N_IN_HEADER + port] = flow
                    a[S.N_IN_HEADER + nis + port] = op
                    a[S.N_IN_HEADER + 2 * nis + port] = src
                a[S.I_RECV_VALID] = mask
            else:
                a[self._index[name]] = value
        S.sched_edge(self.tab, self.regs, self._p, a, self._out)
        self.cycle += 1


def compare(rtl: dict, model: dict) -> list[tuple[str, object, int]]:
    """Every output whose RTL value differs from the model's: (signal, rtl value, model value)."""
    return [(n, rtl[n], model[n]) for n in OUTPUT_NAMES if rtl[n] != model[n]]


@dataclass
class Mismatch:
    """The first cycle on which the RTL and the model disagree."""

    sim: str
    cycle: int  # cycles since the start of the run (0 = first compared cycle)
    signal: str  # the first differing output (in OUTPUT_NAMES order)
    rtl: object  # int, or the simulator's string when it is not 0/1 (X/Z)
    model: int
    seed: int | None  # seed of the episode (stimulus) being run
    episode: str | None
    episode_cycle: int | None
    diffs: list = field(default_factory=list)  # every differing output of that cycle
    reproducer: str | None = None

    def describe(self) -> str:
        where = f"episode {self.episode} (seed {self.seed}), cycle {self.episode_cycle} of the episode" if self.episode else "trace replay"
        s = (f"{self.sim}: mismatch at cycle {self.cycle} ({where}): {self.signal} rtl={self.rtl} model={self.model}")
        if len(self.diffs) > 1:
            s += f" (+{len(self.diffs) - 1} more: " + ", ".join(f"{d[0]} rtl={d[1]} model={d[2]}" for d in self.diffs[1:]) + ")"
        if self.reproducer:
            s += f"; reproducer: {self.reproducer}"
        return s


def write_reproducer(path: Path, *, params: SchedulerParams, mismatch: Mismatch, trace: list[dict], trace_start: int,
                     episode: dict | None) -> Path:
    """Write the stimulus that reproduces ``mismatch``: the inputs from the last reset/clear to the failing cycle.

    Replay it with ``hw-models rtl replay FILE --sim ...`` (model and RTL, compared again),
    or step :class:`ModelStepper` through ``trace`` by hand.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "what": "nic_scheduler model-vs-RTL mismatch reproducer (docs/rtl.md)",
        "params": asdict(params),
        "mismatch": asdict(mismatch),
        "trace_start_cycle": trace_start,
        "replay_mismatch_cycle": mismatch.cycle - trace_start,
        "episode": episode,
        "trace": trace,
    }
    path.write_text(json.dumps(doc, indent=1, default=int))
    return path


def run_model(params: SchedulerParams, source, *, fault: Fault | None = None, max_cycles: int = 10_000_000) -> tuple[int, list[dict]]:
    """Run ``source`` against the model alone; return (cycles, outputs per cycle)."""
    m = ModelStepper(params, fault)
    seen = []
    while m.cycle < max_cycles:
        o = m.outputs()
        inp = source.next_inputs(o)
        if inp is None:
            break
        seen.append(o)
        m.edge(inp)
    return m.cycle, seen
