"""Host side of the RTL runs: builds (one per simulator and parameter set) and regressions.

``build(sim, params)`` compiles rtl/ with cocotb's runner into ``sim_build/<sim>-<params>``
(reused while the sources do not change). ``run_job`` launches one simulation running a
cocotb test module with a job file; ``regress`` is the model-vs-RTL regression on top:
episodes (random schedules and node tables) -> one simulator launch -> a
:class:`RegressionResult`. The same code serves tests/rtl, ``hw-models rtl regress`` and
bench/rtl_speed.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from hw_models.rtl.cocotb_run import bench_outcomes, build_dir_lock, build_hdl, run_tests  # noqa: F401 (re-exported)
from hw_models.rtl.lockstep import Fault
from hw_models.rtl.stimulus import Episode, random_episode
from hw_models.toolchain import SIMULATORS, ToolchainError, require_simulator, rtl_sources, sim_build_root
from nic.scheduler import SCALAR_INPUT_NAMES, SchedulerModel, SchedulerParams
from noc.base.errors import ConfigError, HwModelsError
from noc.base.files import why_missing

TOPLEVEL = "nic_scheduler"
REGRESS_MODULE = "hw_models.rtl.cocotb_regress"


class RegressionError(HwModelsError):
    """A regression that could not run (the simulator failed, or the stimulus could not go on)."""


def _params_tag(params: SchedulerParams) -> str:
    vp = params.verilog_parameters()
    short = f"d{vp['DEPTH']}n{vp['NIS']}"
    digest = hashlib.sha1(json.dumps(vp, sort_keys=True).encode()).hexdigest()[:8]
    return f"{short}-{digest}"


@dataclass
class Build:
    sim: str
    params: SchedulerParams
    build_dir: Path
    waves: bool
    runner: object = field(repr=False, default=None)


_BUILDS: dict[tuple, Build] = {}
_BUILD_LOCK = threading.Lock()


def build(sim: str, params: SchedulerParams, *, waves: bool | None = None, build_root: Path | None = None,
          log_file: Path | None = None, sources: Sequence[Path] | None = None) -> Build:
    """Compile the scheduler for ``sim`` with ``params`` (once per process and parameter set).

    ``sources``: other Verilog files than rtl/'s (bench/rtl_mutation.py builds mutants);
    they get a build directory of their own.
    """
    if sim not in SIMULATORS:
        raise ToolchainError(f"simulator {sim!r} is not supported; choose one of {', '.join(SIMULATORS)}")
    require_simulator(sim)
    if waves is None:
        waves = os.environ.get("WAVES", "0") not in ("", "0")
    srcs = [Path(x) for x in sources] if sources is not None else rtl_sources()
    src_tag = ""
    if sources is not None:
        h = hashlib.sha1()
        for x in srcs:
            h.update(x.name.encode() + x.read_bytes())
        src_tag = "-src" + h.hexdigest()[:8]
    key = (sim, params, waves, str(build_root), src_tag)
    with _BUILD_LOCK:
        if key in _BUILDS:
            return _BUILDS[key]
        root = Path(build_root) if build_root else sim_build_root()
        bdir = root / f"{sim}-{_params_tag(params)}{'-waves' if waves else ''}{src_tag}"
        bdir.mkdir(parents=True, exist_ok=True)
        try:
            runner = build_hdl(sim, TOPLEVEL, srcs, params.verilog_parameters(), bdir, waves=waves,
                               build_args=["-O3"] if sim == "verilator" else [], log_file=log_file)
        except (RuntimeError, SystemExit) as exc:
            raise RegressionError(f"{sim} build of {TOPLEVEL} with {params.verilog_parameters()} failed: {exc} "
                                  f"(log: {bdir / 'build.log'})") from exc
        b = Build(sim=sim, params=params, build_dir=bdir, waves=waves, runner=runner)
        _BUILDS[key] = b
        return b


def unique_wave_path(work_dir: Path, sim: str) -> Path:
    """A waveform file name in ``work_dir`` that no earlier run used (runs never overwrite waves)."""
    ext = "fst" if sim == "icarus" else "vcd"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    k = 0
    while True:
        path = Path(work_dir) / f"waves-{sim}-{stamp}-{os.getpid()}-{k}.{ext}"
        if not path.exists():
            return path
        k += 1


def run_job(b: Build, job: dict, *, work_dir: Path, test_module: str = REGRESS_MODULE, testcase: str | None = None,
            on_progress: Callable[[int], None] | None = None, log_name: str = "sim.log",
            expect_result: bool = True) -> dict | None:
    """Run ``test_module`` on build ``b`` with ``job`` (written to ``work_dir/job.json``); return its result JSON."""
    work_dir = Path(work_dir).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    job = dict(job)
    job.setdefault("sim", b.sim)
    job.setdefault("params", b.params.__dict__ if hasattr(b.params, "__dict__") else {})
    job["result"] = str(work_dir / "result.json")
    job["progress"] = str(work_dir / "progress")
    for p in (job["result"], job["progress"]):
        Path(p).unlink(missing_ok=True)
    job_path = work_dir / "job.json"
    job_path.write_text(json.dumps(job, default=int))
    runner = b.runner  # test() needs the state build() left on the runner object
    require_simulator(b.sim)
    log = work_dir / log_name
    err: list[BaseException] = []
    # one waveform file per run: Icarus is told where to write it; Verilator writes
    # dump.vcd in the test directory, renamed after the run
    wave_path = unique_wave_path(work_dir, b.sim) if b.waves else None
    plusargs = [f"+dumpfile_path={wave_path}"] if wave_path is not None and b.sim == "icarus" else []

    def target():
        try:
            run_tests(runner, toplevel=TOPLEVEL, test_module=test_module, build_dir=b.build_dir, work_dir=work_dir,
                      parameters=b.params.verilog_parameters(), testcase=testcase,
                      env={"HWM_RTL_JOB": str(job_path)}, waves=b.waves, plusargs=plusargs, log_name=log_name)
        except BaseException as exc:  # noqa: BLE001 - SystemExit from the runner included
            err.append(exc)

    th = threading.Thread(target=target, daemon=True)
    th.start()
    seen = -1
    while th.is_alive():
        th.join(0.2)
        if on_progress is not None:
            try:
                k = int(Path(job["progress"]).read_text() or 0)
            except (OSError, ValueError):
                k = 0
            if k != seen:
                seen = k
                on_progress(k)
    if wave_path is not None and b.sim == "verilator" and (work_dir / "dump.vcd").exists():
        (work_dir / "dump.vcd").rename(wave_path)
    result_path = Path(job["result"])
    if not expect_result:  # the test module reports through results.xml
        if not (work_dir / "results.xml").exists():
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise RegressionError(f"{b.sim} simulation wrote no results.xml ({err[0] if err else 'no error'}); log {log}:\n{tail}")
        return None
    if not result_path.exists():
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        raise RegressionError(f"{b.sim} simulation produced no result ({err[0] if err else 'no error'}); "
                              f"log {log}:\n{tail}")
    result = json.loads(result_path.read_text())
    if on_progress is not None:
        on_progress(result.get("schedules", 0))
    return result


# --------------------------------------------------------------------------------------
# The regression
# --------------------------------------------------------------------------------------


@dataclass
class RegressionResult:
    sim: str
    params: dict
    schedules: int
    cycles: int  # cycles on which every output was compared
    mismatches: int
    mismatch_text: str | None
    mismatch: dict | None
    wall_s: float  # whole launch, including simulator start-up
    sim_wall_s: float  # the lockstep loop only
    cycles_per_s: float
    error: str | None = None
    episodes: list = field(default_factory=list)
    violations: list = field(default_factory=list)  # scoreboard / AXI-Stream rule on the RTL: (cycle, what)

    @property
    def ok(self) -> bool:
        return self.mismatches == 0 and self.error is None and not self.violations

    def summary(self) -> str:
        s = (f"{self.sim} {self.params['DEPTH']}x{self.params['NIS']}NI: {self.schedules} schedules, "
             f"{self.cycles} cycles compared, {self.mismatches} mismatches, {self.cycles_per_s:,.0f} simulated cycles/s")
        if self.mismatch_text:
            s += f"\n  {self.mismatch_text}"
        if self.error:
            s += f"\n  error: {self.error}"
        for cyc, what in self.violations:
            s += f"\n  scoreboard, cycle {cyc}: {what}"
        return s


def random_episodes(params: SchedulerParams, seeds: Sequence[int], *, errors: bool | None = None) -> list[Episode]:
    return [random_episode(int(s), params, errors=errors) for s in seeds]


def regress(sim: str, params: SchedulerParams, episodes: Sequence[Episode], *, out_dir: Path | None = None,
            fault: Fault | None = None, on_progress: Callable[[int], None] | None = None,
            waves: bool | None = None) -> RegressionResult:
    """Run ``episodes`` on RTL (``sim``) and model in lockstep in one simulator launch."""
    b = build(sim, params, waves=waves)
    if out_dir is None:
        out_dir = Path(tempfile.mkdtemp(prefix=f"hwm-regress-{sim}-"))
    out_dir = Path(out_dir)
    job = {
        "sim": sim,
        "params": params.__dict__.copy(),
        "episodes": [e.to_json() for e in episodes],
        "fault": fault.__dict__.copy() if fault else None,
        "reproducer_dir": str(out_dir.resolve()),
    }
    t0 = time.perf_counter()
    r = run_job(b, job, work_dir=out_dir, on_progress=on_progress)
    wall = time.perf_counter() - t0
    return RegressionResult(
        sim=sim, params=params.verilog_parameters(), schedules=r["schedules"], cycles=r["cycles"],
        mismatches=r["mismatches"], mismatch_text=r.get("mismatch_text"), mismatch=r.get("mismatch"),
        wall_s=wall, sim_wall_s=r["wall_s"], cycles_per_s=r["cycles_per_s"], error=r.get("error"),
        episodes=r.get("episodes", []), violations=r.get("violations", []))


class ReproducerError(HwModelsError):
    """A reproducer file that cannot be replayed (unreadable, not JSON, or not a reproducer)."""


_TRACE_INPUTS = frozenset(n for n in SCALAR_INPUT_NAMES if n != "recv_valid") | {"recv"}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _json_kind(v) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(v), type(v).__name__)


def load_reproducer(path: Path) -> tuple[SchedulerParams, list[dict]]:
    """Read and check a reproducer written by the regression: (its parameters, its input trace).

    Every problem is a :class:`ReproducerError` naming the file and what is wrong, raised
    before anything is built or simulated. The trace is stepped through the cycle model
    (:class:`nic.scheduler.SchedulerModel`), which refuses unknown inputs and values that
    do not fit their ports.
    """
    path = Path(path)

    def bad(what: str) -> ReproducerError:
        return ReproducerError(f"reproducer {path}: {what}")

    if not path.exists():
        raise bad(why_missing(path, "does not exist"))
    if path.is_dir():
        raise bad("is a directory, not a reproducer file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise bad(f"is not a text file (byte {exc.start} is not UTF-8); expected the JSON written by "
                  "`hw-models rtl regress`") from None
    except OSError as exc:
        raise bad(f"cannot be read ({exc.strerror or exc})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(f"is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise bad("is not a reproducer: its JSON is nested too deeply") from None
    if not isinstance(doc, dict):
        raise bad(f"is not a reproducer: expected a JSON object with 'params' and 'trace', got {_json_kind(doc)}")
    for key, kind in (("params", dict), ("trace", list)):
        if key not in doc:
            raise bad(f"is not a reproducer: no {key!r} (expected a JSON object with 'params' and 'trace')")
        if not isinstance(doc[key], kind):
            raise bad(f"{key!r} is {_json_kind(doc[key])}, expected {_json_kind(kind())}")
    known = [f.name for f in fields(SchedulerParams)]
    unknown = sorted(set(doc["params"]) - set(known))
    if unknown:
        raise bad(f"unknown scheduler parameter(s) {', '.join(map(repr, unknown))}; parameters are {', '.join(known)}")
    try:
        params = SchedulerParams(**doc["params"])
    except ConfigError as exc:
        raise bad(str(exc)) from None
    trace = doc["trace"]
    model = SchedulerModel(params)
    for k, inp in enumerate(trace):
        where = f"trace[{k}]"
        if not isinstance(inp, dict):
            raise bad(f"{where} is {_json_kind(inp)}, expected an object of input values")
        for name, v in inp.items():
            if name not in _TRACE_INPUTS:
                raise bad(f"{where}: unknown input {name!r}; inputs are {', '.join(sorted(_TRACE_INPUTS))}")
            if name != "recv" and not _is_int(v):
                raise bad(f"{where}: input {name} = {v!r} is not an integer")
        recv = inp.get("recv")
        if "recv" in inp:
            if not isinstance(recv, list) or not all(
                    x is None or (isinstance(x, list) and len(x) == 3 and all(map(_is_int, x))) for x in recv):
                raise bad(f"{where}: recv = {recv!r} is not a list of null or [flow, op, src] per port")
            recv = [tuple(x) if x is not None else None for x in recv]
        try:
            model.tick(recv=recv, **{n: v for n, v in inp.items() if n != "recv"})
        except ConfigError as exc:
            raise bad(f"{where}: {exc}") from None
    return params, trace


def replay(sim: str, reproducer: Path, *, out_dir: Path | None = None, waves: bool | None = None) -> RegressionResult:
    """Replay a reproducer's input trace on RTL and model (compared every cycle again)."""
    params, trace = load_reproducer(reproducer)
    b = build(sim, params, waves=waves)
    out_dir = Path(out_dir or tempfile.mkdtemp(prefix=f"hwm-replay-{sim}-"))
    job = {"sim": sim, "params": asdict(params), "trace": trace, "reproducer_dir": None}
    t0 = time.perf_counter()
    r = run_job(b, job, work_dir=out_dir)
    return RegressionResult(
        sim=sim, params=params.verilog_parameters(), schedules=0, cycles=r["cycles"], mismatches=r["mismatches"],
        mismatch_text=r.get("mismatch_text"), mismatch=r.get("mismatch"), wall_s=time.perf_counter() - t0,
        sim_wall_s=r["wall_s"], cycles_per_s=r["cycles_per_s"], violations=r.get("violations", []))
