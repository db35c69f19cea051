"""The one cocotb build-and-run wrapper: every bench of rtl/ (scheduler, register map, data
path, per-module benches, regression) builds and launches through it.

* :func:`build_hdl` compiles a top level with cocotb's runner into its build directory,
  under a lock (parallel workers building the same design take turns; the later ones find
  the build up to date);
* :func:`run_tests` launches one simulation of a cocotb test module and returns each
  test's outcome from results.xml (a failing test does not raise: the runner's exit is
  caught and the outcomes say which failed).
"""

from __future__ import annotations

import contextlib
import logging
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

from hw_models.toolchain import require_simulator


@contextlib.contextmanager
def build_dir_lock(build_dir: Path):
    """Hold an exclusive lock on ``build_dir`` while a simulator builds into it, so processes
    building the same design at once (parallel test workers, two regressions) take turns: the
    first compiles, the others find the build up to date."""
    import fcntl

    build_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(build_dir.parent / f".{build_dir.name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def bench_outcomes(results_xml: Path) -> dict[str, str | None]:
    """A cocotb run's results.xml as bench name -> None (passed) or the failure (or error) text."""
    out: dict[str, str | None] = {}
    for case in ET.parse(results_xml).getroot().iter("testcase"):
        fail = case.find("failure")
        if fail is None:
            fail = case.find("error")
        out[case.get("name")] = None if fail is None else (fail.get("message") or "") + (fail.text or "")
    return out


def build_hdl(sim: str, toplevel: str, sources: Sequence[Path], parameters: Mapping[str, int], build_dir: Path, *,
              waves: bool = False, build_args: Sequence[str] = (), log_file: Path | None = None,
              top_ports_only: bool = False):
    """Compile ``toplevel`` from ``sources`` with ``parameters`` into ``build_dir``; return the runner
    (its ``test`` needs the state ``build`` left on it).

    ``top_ports_only`` (Verilator): only the top level's signals are visible to the bench
    (``--public-depth 1`` instead of cocotb's ``--public-flat-rw``), so Verilator may
    optimise the hierarchy below it; for a bench that drives and reads the top level's
    ports alone, on designs whose every-signal build is too large (64 NICs)."""
    from cocotb_tools.runner import get_runner

    require_simulator(sim)
    build_dir = Path(build_dir)
    runner = get_runner(sim)
    if top_ports_only and sim == "verilator":
        _top_ports_only(runner)
    runner.log.setLevel(logging.ERROR)  # "Skipping compilation of ..." is the normal case
    with build_dir_lock(build_dir):
        runner.build(sources=[Path(s) for s in sources], hdl_toplevel=toplevel, parameters=dict(parameters),
                     build_dir=build_dir, waves=waves, build_args=list(build_args),
                     log_file=log_file if log_file is not None else build_dir / "build.log")
    return runner


def _top_ports_only(runner) -> None:
    """Make a cocotb Verilator runner's build mark only the top level public."""
    build_command = runner._build_command

    def command():
        cmds = build_command()
        verilate = cmds[0]
        assert "--public-flat-rw" in verilate, verilate
        k = verilate.index("--public-flat-rw")
        cmds[0] = [*verilate[:k], "--public-depth", "1", *verilate[k + 1:]]
        return cmds

    runner._build_command = command


def run_tests(runner, *, toplevel: str, test_module: str, build_dir: Path, work_dir: Path,
              parameters: Mapping[str, int], testcase: str | None = None, env: Mapping[str, str] | None = None,
              waves: bool = False, plusargs: Sequence[str] = (), log_name: str = "sim.log") -> dict[str, str | None]:
    """One simulator launch of ``test_module`` on a :func:`build_hdl` build, in ``work_dir``.

    Returns test name -> None (passed) or its failure text, plus ``_log``: the simulator
    log's path. No results.xml (the simulator died) gives ``_log`` alone."""
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    results = work_dir / "results.xml"
    results.unlink(missing_ok=True)
    log = work_dir / log_name
    # cocotb rewrites the asserts of every imported module by default (seconds of start-up)
    extra_env = {"COCOTB_REWRITE_ASSERTION_FILES": test_module.rsplit(".", 1)[-1] + ".py", **(env or {})}
    try:
        runner.test(test_module=test_module, hdl_toplevel=toplevel, testcase=testcase, build_dir=Path(build_dir),
                    test_dir=work_dir, parameters=dict(parameters), extra_env=extra_env, waves=waves,
                    plusargs=list(plusargs), results_xml=str(results), log_file=log)
    except SystemExit:  # the runner exits when a test fails: results.xml says which
        pass
    out: dict[str, str | None] = {"_log": str(log)}
    if results.exists():
        out.update(bench_outcomes(results))
    return out
