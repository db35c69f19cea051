"""Builds and runs the AXI-Lite register map's cocotb benches (tests/rtl/axil_bench.py) on
rtl/nic_axil_scheduler.v; the tests and bench/rtl_mutation.py share it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from hw_models.rtl.cocotb_run import build_hdl, run_tests
from hw_models.toolchain import axil_sources, sim_build_root
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
    hdl = params.verilog_parameters()
    tag = "-".join(f"{k.lower()}{v}" for k, v in hdl.items())
    build_dir = Path(build_dir) if build_dir else sim_build_root() / f"axil-{sim}-{tag}"
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    runner = build_hdl(sim, TOPLEVEL, list(sources) if sources is not None else axil_sources(), hdl, build_dir,
                       build_args=["-O1"] if sim == "verilator" else [])
    job = work / "job.json"
    job.write_text(json.dumps({"params": params.__dict__}))
    return run_tests(runner, toplevel=TOPLEVEL, test_module=BENCH_MODULE, build_dir=build_dir, work_dir=work,
                     parameters=hdl, testcase=testcase, env={"HWM_AXIL_JOB": str(job)})
