"""Builds and runs the AXI-Lite register map's cocotb benches (tests/rtl/axil_bench.py) on
rtl/nic_axil_scheduler.v; the tests and bench/rtl_mutation.py share it."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from hw_models.rtl.regress import bench_outcomes
from hw_models.toolchain import axil_sources, require_simulator, sim_build_root
from nic.scheduler import SchedulerParams

TOPLEVEL = "nic_axil_scheduler"
BENCH_MODULE = "axil_bench"


def run_benches(sim: str, params: SchedulerParams, work: Path, *, sources: Sequence[Path] | None = None,
                build_dir: Path | None = None, testcase: str | None = None) -> dict[str, str | None]:
    """Build the wrapper with ``params`` and run every bench in one simulator launch.

    Returns bench name -> None (passed) or the failure text, plus ``_log``: the simulator log.
    ``sources`` replaces :func:`hw_models.toolchain.axil_sources` (mutants); tests/rtl must be
    importable (it is on ``sys.path`` under pytest; the mutation check adds it).
    """
    from cocotb_tools.runner import get_runner

    require_simulator(sim)
    hdl = params.verilog_parameters()
    tag = "-".join(f"{k.lower()}{v}" for k, v in hdl.items())
    build_dir = Path(build_dir) if build_dir else sim_build_root() / f"axil-{sim}-{tag}"
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    runner = get_runner(sim)
    runner.log.setLevel(logging.ERROR)
    runner.build(sources=list(sources) if sources is not None else axil_sources(), hdl_toplevel=TOPLEVEL,
                 parameters=hdl, build_dir=build_dir, build_args=["-O1"] if sim == "verilator" else [],
                 log_file=build_dir / "build.log")
    job = work / "job.json"
    job.write_text(json.dumps({"params": params.__dict__}))
    (work / "results.xml").unlink(missing_ok=True)
    try:
        runner.test(test_module=BENCH_MODULE, hdl_toplevel=TOPLEVEL, build_dir=build_dir, test_dir=work,
                    testcase=testcase, parameters=hdl,
                    extra_env={"HWM_AXIL_JOB": str(job), "COCOTB_REWRITE_ASSERTION_FILES": BENCH_MODULE + ".py"},
                    results_xml=str(work / "results.xml"), log_file=work / "sim.log")
    except SystemExit:  # the runner exits when a test fails: results.xml says which
        pass
    out: dict[str, str | None] = {"_log": str(work / "sim.log")}
    if (work / "results.xml").exists():
        out.update(bench_outcomes(work / "results.xml"))
    return out
