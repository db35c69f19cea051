"""The NIC data path's benches (tests/rtl/datapath_benches.py): the reduction adder over a
lane/format matrix, and the packetiser/depacketiser round trip through the buffer.
Icarus runs the matrix; Verilator one set of each (the rest with ``-m slow``).
"""

from __future__ import annotations

import json
import logging

import pytest

from rtl_matrix import SIMS
from hw_models.toolchain import REPO_ROOT, RTL_DIR, require_simulator

DP_SOURCES = ["nic_fp32_add.v", "nic_reduce_add.v", "nic_packetiser.v", "nic_depacketiser.v", "nic_datapath.v"]


def run_bench(sim, toplevel, bench, params, job, tmp_path, sources=DP_SOURCES, test_module="datapath_benches",
              build_tag=None):
    """Build ``toplevel`` from ``sources`` with ``params`` (once per tag) and run one cocotb bench;
    return the simulation log; fail with its tail when the bench fails."""
    from cocotb_tools.runner import get_runner

    require_simulator(sim)
    tag = build_tag or "-".join(f"{k}{v}" for k, v in params.items())
    build_dir = REPO_ROOT / "sim_build" / f"dp-{sim}-{toplevel}-{tag}"
    runner = get_runner(sim)
    runner.log.setLevel(logging.ERROR)
    runner.build(sources=[RTL_DIR / s if isinstance(s, str) else s for s in sources], hdl_toplevel=toplevel,
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


ADDER = [(1, lanes) for lanes in (1, 2, 4, 16)] + [(0, lanes) for lanes in (1, 4)]
ADDER_VERILATOR_DEFAULT = {(1, 4), (0, 4)}
ROUNDTRIP = [{"LANES": 1, "FMT": 0, "BUF_WORDS": 32}, {"LANES": 2, "FMT": 1, "BUF_WORDS": 64},
             {"LANES": 4, "FMT": 1, "BUF_WORDS": 16}]
ROUNDTRIP_VERILATOR_DEFAULT = {2}


def _sim_cases(items, default_verilator, key, label):
    out = []
    for sim in SIMS:
        name = sim.values[0] if hasattr(sim, "values") else sim
        marks = tuple(sim.marks) if hasattr(sim, "values") else ()
        for it in items:
            slow = name == "verilator" and key(it) not in default_verilator
            out.append(pytest.param(name, it, id=f"{name}-{label(it)}", marks=marks + ((pytest.mark.slow,) if slow else ())))
    return out


@pytest.mark.parametrize("sim,case", _sim_cases(ADDER, ADDER_VERILATOR_DEFAULT, lambda c: c,
                                                  lambda c: f"{('int32', 'fp32')[c[0]]}-lanes{c[1]}"))
def test_reduction_adder_matches_numpy_float32_and_exact_int32(sim, case, tmp_path):
    fmt, lanes = case
    log = run_bench(sim, "nic_reduce_add", "adder_bench", {"LANES": lanes, "FMT": fmt}, {"random": 6000}, tmp_path,
                    sources=["nic_fp32_add.v", "nic_reduce_add.v"])
    assert "pairs over" in log


@pytest.mark.parametrize("sim,case", _sim_cases(ROUNDTRIP, ROUNDTRIP_VERILATOR_DEFAULT, lambda c: c["LANES"],
                                                  lambda c: f"lanes{c['LANES']}-fmt{c['FMT']}"))
def test_packetiser_and_depacketiser_round_trip(sim, case, tmp_path):
    params = {**case, "FLOW_W": 4, "NODE_W": 4, "STEP_W": 3, "LEN_W": 12}
    log = run_bench(sim, "nic_datapath", "roundtrip_bench", params, {"trials": 24, "seed": case["LANES"]}, tmp_path)
    assert "round trip:" in log
