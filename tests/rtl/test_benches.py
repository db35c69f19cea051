"""The cocotb benches (tests/rtl/nic_scheduler_bench.py) on both simulators and the HDL matrix.

All benches of one (simulator, parameter set) run in one simulator launch on one build
(the first test of the pair pays for it); each pytest test reports one bench's outcome.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rtl_matrix import HDL_PARAMS, SIMS, SLOW_TAGS
from hw_models.rtl.regress import bench_outcomes, build, run_job

BENCHES = ["reset", "load_and_read_back", "single_flow", "axis_hold_rule", "multitree_tables", "random_dependencies",
           "backpressure_and_gaps", "simultaneous_receives", "full_table", "unexpected_messages", "back_to_back"]

_RUNS: dict[tuple[str, str], dict[str, str | None]] = {}


def _bench_outcomes(sim: str, tag: str, tmp_root: Path) -> dict[str, str | None]:
    """Run every bench once for (sim, tag); bench name -> None (passed) or the failure text."""
    key = (sim, tag)
    if key not in _RUNS:
        params = HDL_PARAMS[tag]
        b = build(sim, params)
        work = tmp_root / f"bench-{sim}-{tag}"
        run_job(b, {"sim": sim, "params": params.__dict__.copy()}, work_dir=work,
                test_module="nic_scheduler_bench", log_name="bench.log", expect_result=False)
        outcomes = bench_outcomes(work / "results.xml")
        outcomes["_log"] = str(work / "bench.log")
        _RUNS[key] = outcomes
    return _RUNS[key]


# A 4x4 MultiTree node table has 38 rows and 16 flows: that bench runs on the parameter
# sets that hold it (the bench fails if given one that does not).
def _sim_name_marks(sim) -> tuple[str, tuple]:
    return (sim.values[0], tuple(sim.marks)) if hasattr(sim, "values") else (sim, ())


CASES = [pytest.param(b, name, t, marks=marks + ((pytest.mark.slow,) if t in SLOW_TAGS else ()), id=f"{b}-{name}-{t}")
         for b in BENCHES for name, marks in map(_sim_name_marks, SIMS) for t in HDL_PARAMS
         if not (b == "multitree_tables" and (HDL_PARAMS[t].depth < 38 or HDL_PARAMS[t].flow_w < 4))]


@pytest.mark.parametrize("bench,sim,tag", CASES)
def test_bench(bench, sim, tag, tmp_path_factory):
    outcomes = _bench_outcomes(sim, tag, tmp_path_factory.getbasetemp())
    assert bench in outcomes, f"bench {bench} did not run; log: {outcomes['_log']}"
    assert outcomes[bench] is None, f"{bench} failed on {sim} {tag}: {outcomes[bench]} (log: {outcomes['_log']})"
