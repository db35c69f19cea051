"""cocotb side of the model-vs-RTL regression (runs inside the simulator).

:func:`lockstep` drives ``rtl/nic_scheduler.v`` and the cycle model with the same inputs,
cycle by cycle, and compares every output on every cycle. The cocotb test :func:`regress`
reads a job file (path in ``$HWM_RTL_JOB``, written by :mod:`hw_models.rtl.regress`),
runs all its episodes in one simulator launch (resetting/clearing between them as each
episode says), and writes a JSON result next to it. Mismatches are data, not test
failures: the host side decides.

Timing: inputs are written and outputs read at the falling edge of ``clk``; the rising
edge in between is the one the contract's "edge" refers to. Outputs depend on registered
state only, so the values read at the falling edge are the outputs during the next cycle.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

from hw_models.rtl.checks import AxisHoldChecker, Scoreboard
from hw_models.rtl.lockstep import Fault, Mismatch, ModelStepper, compare, write_reproducer
from hw_models.rtl.stimulus import PIN_INPUTS, Environment, Episode, StimulusError, TraceSource, pin_values
from nic.scheduler import OUTPUT_NAMES, SchedulerParams


def _reader(handle):
    # The simulator object's binary string, skipping the Logic/LogicArray construction of
    # ``handle.value`` (a quarter of the loop's time); the public path when it is absent.
    raw = getattr(getattr(handle, "_handle", None), "get_signal_val_binstr", None)
    get = raw if raw is not None else (lambda: str(handle.value))

    def read():
        s = get()
        try:
            return int(s, 2)
        except ValueError:
            return s  # X or Z somewhere: reported as the simulator's string

    return read


class Dut:
    """Named access to the scheduler's pins, writing only the inputs that change."""

    def __init__(self, dut, params: SchedulerParams) -> None:
        self.dut = dut
        self.params = params
        self._in = {name: getattr(dut, name) for name in PIN_INPUTS}
        self._last: dict[str, int] = {}
        self._readers = [(name, _reader(getattr(dut, name))) for name in OUTPUT_NAMES]

    def drive(self, pins: dict[str, int]) -> None:
        last = self._last
        for name, value in pins.items():
            if last.get(name) != value:
                self._in[name].value = value
                last[name] = value

    def outputs(self) -> dict:
        return {name: read() for name, read in self._readers}


async def lockstep(dut, params: SchedulerParams, source, *, sim: str, fault: Fault | None = None,
                   reproducer_dir: Path | None = None, progress_path: Path | None = None,
                   max_cycles: int = 50_000_000, check=None) -> dict:
    """Run ``source`` (an :class:`Environment` or :class:`TraceSource`) against RTL and model.

    Stops at the first cycle with a mismatch. ``check(cycle, rtl_outputs, inputs)`` is an
    optional per-cycle hook for bench-specific assertions. Returns a summary dict.
    """
    pins = Dut(dut, params)
    model = ModelStepper(params, fault)
    # independent of the model: the schedule-derived scoreboard and the AXI-Stream rule,
    # on the RTL's own outputs
    board = Scoreboard(params)
    hold = AxisHoldChecker()
    # Power-on: hold rst for one edge (RTL registers start unknown); the model starts reset.
    pins.drive(pin_values({"rst": 1}, params))
    Clock(dut.clk, 10, unit="ns").start()
    falling = FallingEdge(dut.clk)
    await falling
    await falling  # a whole cycle of rst, whatever the clock's first level
    pins.drive(pin_values({}, params))
    t0 = time.perf_counter()
    mismatch = None
    last_progress = 0
    while model.cycle < max_cycles:
        rtl = pins.outputs()
        mod = model.outputs()
        diffs = compare(rtl, mod)
        if diffs:
            ep = getattr(source, "episode", None)
            sig, rv, mv = diffs[0]
            mismatch = Mismatch(
                sim=sim, cycle=model.cycle, signal=sig, rtl=rv, model=mv,
                seed=ep.seed if ep is not None else None, episode=ep.name if ep is not None else None,
                episode_cycle=(model.cycle - source.episode_start) if ep is not None else None,
                diffs=[list(d) for d in diffs])
            if reproducer_dir is not None:
                path = Path(reproducer_dir) / f"mismatch-{sim}-cycle{model.cycle}.json"
                mismatch.reproducer = str(path)
                write_reproducer(path, params=params, mismatch=mismatch, trace=list(source.trace),
                                 trace_start=source.trace_start, episode=ep.to_json() if ep is not None else None)
            break
        inp = source.next_inputs(mod)
        if inp is None:
            break
        if check is not None:
            check(model.cycle, rtl, inp)
        board.feed(rtl, inp)
        hold.feed(rtl, inp)
        if board.violations or hold.violations:
            break
        pins.drive(pin_values(inp, params))
        model.edge(inp)
        if progress_path is not None and len(source.finished) != last_progress:
            last_progress = len(source.finished)
            Path(progress_path).write_text(str(last_progress))
        await falling
    wall = time.perf_counter() - t0
    return {
        "sim": sim,
        "params": params.verilog_parameters(),
        "schedules": len(source.finished),
        "cycles": model.cycle + 1,  # cycles whose outputs were compared (the last one has no inputs)
        "mismatches": len(mismatch.diffs) if mismatch else 0,
        "mismatch": mismatch.__dict__ if mismatch else None,
        "mismatch_text": mismatch.describe() if mismatch else None,
        "episodes": source.finished,
        # (cycle, what) of the first scoreboard / AXI-Stream violations on the RTL's outputs
        "violations": [list(v) for v in (board.violations + hold.violations)[:10]],
        "wall_s": wall,
        "cycles_per_s": model.cycle / wall if wall > 0 else 0.0,
    }


def load_job(path: str | os.PathLike) -> tuple[dict, SchedulerParams]:
    job = json.loads(Path(path).read_text())
    return job, SchedulerParams(**job["params"])


def source_for(job: dict, params: SchedulerParams):
    if job.get("trace") is not None:
        return TraceSource(job["trace"])
    return Environment(params, [Episode.from_json(e) for e in job["episodes"]])


@cocotb.test()
async def regress(dut):
    """Run the episodes of ``$HWM_RTL_JOB`` in lockstep with the model; write the result JSON."""
    job, params = load_job(os.environ["HWM_RTL_JOB"])
    fault = Fault(**job["fault"]) if job.get("fault") else None
    try:
        result = await lockstep(
            dut, params, source_for(job, params), sim=job["sim"], fault=fault,
            reproducer_dir=Path(job["reproducer_dir"]) if job.get("reproducer_dir") else None,
            progress_path=Path(job["progress"]) if job.get("progress") else None)
    except StimulusError as exc:
        result = {"sim": job["sim"], "params": params.verilog_parameters(), "schedules": 0, "cycles": 0,
                  "mismatches": 0, "mismatch": None, "mismatch_text": None, "episodes": [], "wall_s": 0.0,
                  "cycles_per_s": 0.0, "error": str(exc), "violations": []}
    Path(job["result"]).write_text(json.dumps(result, indent=1, default=int))
