"""Build and run one cocotb bench of a module (tests/rtl/test_datapath.py,
tests/rtl/test_allreduce_rtl.py, tests/rtl/test_modules.py) through the shared runner
(hw_models.rtl.cocotb_run): a build directory per (simulator, top level, parameter set) in
sim_build/, the bench's parameters and knobs in a JSON job file ($HWM_DP_JOB, or the
variable ``job_env`` names)."""

from __future__ import annotations

import json

import pytest

from rtl_matrix import SIMS
from hw_models.rtl.cocotb_run import build_hdl, run_tests
from hw_models.toolchain import REPO_ROOT, RTL_DIR

DP_SOURCES = ["nic_fp32_add.v", "nic_reduce_add.v", "nic_packetiser.v", "nic_depacketiser.v", "nic_datapath.v"]


def run_bench(sim, toplevel, bench, params, job, tmp_path, sources=DP_SOURCES, test_module="datapath_benches",
              build_tag=None, rtl_dir=None, build_root=None, job_env="HWM_DP_JOB", build_prefix="dp",
              top_ports_only=False, build_args=()):
    """Build ``toplevel`` from ``sources`` (file names in ``rtl_dir``, default rtl/, or paths)
    with ``params`` (once per tag, in ``build_root``, default sim_build/) and run one cocotb
    bench; return the simulation log; fail with its tail when the bench fails."""
    tag = (build_tag or "-".join(f"{k}{v}" for k, v in params.items())) + ("-top" if top_ports_only else "")
    build_dir = (build_root or REPO_ROOT / "sim_build") / f"{build_prefix}-{sim}-{toplevel}-{tag}"
    rtl_dir = rtl_dir or RTL_DIR
    runner = build_hdl(sim, toplevel, [rtl_dir / s if isinstance(s, str) else s for s in sources], params, build_dir,
                       build_args=["-Wno-fatal", *build_args] if sim == "verilator" else [],
                       top_ports_only=top_ports_only)
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps({**params, **job}))
    outcomes = run_tests(runner, toplevel=toplevel, test_module=test_module, build_dir=build_dir, work_dir=tmp_path,
                         parameters=params, testcase=bench, env={job_env: str(job_path)})
    log = (tmp_path / "sim.log").read_text() if (tmp_path / "sim.log").exists() else ""
    assert bench in outcomes and outcomes[bench] is None, log[-4000:]
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
