"""Build and run one cocotb bench of the data path (tests/rtl/test_datapath.py,
tests/rtl/test_allreduce_rtl.py): a build directory per (simulator, top level, parameter
set) in sim_build/, the bench's parameters and knobs in a JSON job file ($HWM_DP_JOB)."""

from __future__ import annotations

import json
import logging

import pytest

from rtl_matrix import SIMS
from hw_models.rtl.regress import build_dir_lock
from hw_models.toolchain import REPO_ROOT, RTL_DIR, require_simulator

DP_SOURCES = ["nic_fp32_add.v", "nic_reduce_add.v", "nic_packetiser.v", "nic_depacketiser.v", "nic_datapath.v"]


def run_bench(sim, toplevel, bench, params, job, tmp_path, sources=DP_SOURCES, test_module="datapath_benches",
              build_tag=None, rtl_dir=None, build_root=None):
    """Build ``toplevel`` from ``sources`` (file names in ``rtl_dir``, default rtl/, or paths)
    with ``params`` (once per tag, in ``build_root``, default sim_build/) and run one cocotb
    bench; return the simulation log; fail with its tail when the bench fails."""
    from cocotb_tools.runner import get_runner

    require_simulator(sim)
    tag = build_tag or "-".join(f"{k}{v}" for k, v in params.items())
    build_dir = (build_root or REPO_ROOT / "sim_build") / f"dp-{sim}-{toplevel}-{tag}"
    rtl_dir = rtl_dir or RTL_DIR
    runner = get_runner(sim)
    runner.log.setLevel(logging.ERROR)
    with build_dir_lock(build_dir):
        runner.build(sources=[rtl_dir / s if isinstance(s, str) else s for s in sources], hdl_toplevel=toplevel,
                     parameters=params, build_dir=build_dir, build_args=["-Wno-fatal"] if sim == "verilator" else [],
                     log_file=build_dir / "build.log")
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps({**params, **job}))
    try:
        runner.test(test_module=test_module, hdl_toplevel=toplevel, testcase=bench, build_dir=build_dir,
                    test_dir=tmp_path, parameters=params,
                    extra_env={"HWM_DP_JOB": str(job_path), "COCOTB_REWRITE_ASSERTION_FILES": test_module + ".py"},
                    results_xml=str(tmp_path / "results.xml"), log_file=tmp_path / "sim.log")
    except SystemExit:  # cocotb's runner exits when a test fails: the log says why
        pass
    text = (tmp_path / "results.xml").read_text() if (tmp_path / "results.xml").exists() else ""
    log = (tmp_path / "sim.log").read_text() if (tmp_path / "sim.log").exists() else ""
    assert "<failure" not in text and "<error" not in text and 'name="' + bench in text, log[-4000:]
    return log



def sim_cases(items, default_verilator, key, label):
    """pytest params (sim, item) for both simulators; Verilator runs only the items whose
    ``key`` is in ``default_verilator`` unless ``-m slow``."""
    out = []
    for sim in SIMS:
        name = sim.values[0] if hasattr(sim, "values") else sim
        marks = tuple(sim.marks) if hasattr(sim, "values") else ()
        for it in items:
            slow = name == "verilator" and key(it) not in default_verilator
            out.append(pytest.param(name, it, id=f"{name}-{label(it)}", marks=marks + ((pytest.mark.slow,) if slow else ())))
    return out
