"""Model-vs-RTL regression: the cycle model and the RTL get identical stimulus, every output
is compared on every cycle (hw_models.rtl). Default run: 20 random schedules per HDL
parameter set and every node table of the 4x4 torus (1 and 4 NIs) and 4x4 mesh, on both
simulators. ``-m slow``: 200 random schedules per set and the 8x8 torus.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from rtl_matrix import HDL_PARAMS, SIMS, tag_params
from hw_models.rtl.lockstep import Fault, ModelStepper, run_model
from hw_models.rtl.regress import random_episodes, regress, replay
from hw_models.rtl.stimulus import (Environment, multitree_node_tables, params_for_tables, random_episode,
                                    table_episodes)
from hw_models.rtl.lint import lint_warnings
from hw_models.toolchain import have_icarus, rtl_sources
from nic.scheduler import SchedulerParams


def _assert_clean(r):
    assert r.error is None, r.error
    assert r.mismatches == 0, r.mismatch_text
    assert r.violations == [], r.violations
    assert r.cycles > 0


@pytest.mark.parametrize("tag", tag_params())
@pytest.mark.parametrize("sim", SIMS)
def test_random_schedules_match_the_model(sim, tag, tmp_path):
    params = HDL_PARAMS[tag]
    r = regress(sim, params, random_episodes(params, range(20)), out_dir=tmp_path)
    _assert_clean(r)
    assert r.schedules == 20


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:4x4:c4", "mesh:4x4"])
@pytest.mark.parametrize("sim", SIMS)
def test_every_4x4_multitree_node_table_matches_the_model(sim, spec, tmp_path):
    tables, nis, _src = multitree_node_tables(spec)
    params = params_for_tables(tables, nis)
    assert params in (HDL_PARAMS["d64n1"], HDL_PARAMS["d64n4"])  # reuses the benches' builds
    r = regress(sim, params, table_episodes(tables, spec), out_dir=tmp_path)
    _assert_clean(r)
    assert r.schedules == len(tables) == 16
    assert all(e["err_count"] == 0 for e in r.episodes)


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMS)
def test_every_4x4_c4_multitree_node_table_matches_the_pipelined_model(sim, tmp_path):
    """SCHED_PIPE 1 on the 4-NI MultiTree tables: lockstep, and no error."""
    tables, nis, _src = multitree_node_tables("torus:4x4:c4")
    params = HDL_PARAMS["d64n4p1"]
    assert params_for_tables(tables, nis) == SchedulerParams(**{**params.__dict__, "pipe": 0})
    r = regress(sim, params, table_episodes(tables, "torus:4x4:c4"), out_dir=tmp_path)
    _assert_clean(r)
    assert r.schedules == 16 and all(e["err_count"] == 0 for e in r.episodes)


@pytest.mark.slow
@pytest.mark.parametrize("tag", list(HDL_PARAMS))
@pytest.mark.parametrize("sim", SIMS)
def test_200_random_schedules_match_the_model(sim, tag, tmp_path):
    params = HDL_PARAMS[tag]
    r = regress(sim, params, random_episodes(params, range(200)), out_dir=tmp_path)
    _assert_clean(r)
    assert r.schedules == 200


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMS)
def test_every_8x8_torus_multitree_node_table_matches_the_model(sim, tmp_path):
    tables, nis, _src = multitree_node_tables("torus:8x8")
    params = params_for_tables(tables, nis)
    r = regress(sim, params, table_episodes(tables, "torus:8x8"), out_dir=tmp_path)
    _assert_clean(r)
    assert r.schedules == 64


# ---- the regression can fail ---------------------------------------------------------


def _fault_at_a_send(params, episodes, nth=40):
    """A fault that hides the model's nth offered send for one cycle; (fault, seed of its episode)."""
    env = Environment(params, episodes)
    m = ModelStepper(params)
    k = 0
    while True:
        o = m.outputs()
        inp = env.next_inputs(o)
        assert inp is not None, "not enough sends in the episodes"
        if o["send_valid"]:
            k += 1
            if k == nth:
                return Fault(cycle=m.cycle, signal="send_valid"), env.episode.seed
        m.edge(inp)


@pytest.mark.parametrize("sim", SIMS)
def test_a_one_cycle_model_deviation_is_reported_with_cycle_signal_values_and_seed(sim, tmp_path):
    params = HDL_PARAMS["d6n3narrow"]
    episodes = random_episodes(params, range(30, 40))
    fault, seed = _fault_at_a_send(params, episodes)
    r = regress(sim, params, random_episodes(params, range(30, 40)), out_dir=tmp_path, fault=fault)
    assert r.mismatches == 1
    m = r.mismatch
    assert (m["cycle"], m["signal"], m["rtl"], m["model"], m["seed"]) == (fault.cycle, "send_valid", 1, 0, seed)
    assert f"cycle {fault.cycle}" in r.mismatch_text and "send_valid rtl=1 model=0" in r.mismatch_text
    # the reproducer replays the stimulus: without the fault RTL and model agree on it...
    doc = json.loads(open(m["reproducer"]).read())
    assert doc["trace"][0].get("rst") or doc["trace"][0].get("clear")
    assert doc["replay_mismatch_cycle"] == len(doc["trace"])  # the trace ends just before the failing cycle
    again = replay(sim, m["reproducer"], out_dir=tmp_path / "replay")
    assert again.mismatches == 0 and again.cycles == len(doc["trace"]) + 1
    # ...and the model alone, stepped through it, offers the send the fault hid
    src, model = _Trace(doc["trace"]), ModelStepper(params)
    while (inp := src.next_inputs(model.outputs())) is not None:
        model.edge(inp)
    assert model.outputs()["send_valid"] == 1


class _Trace:
    def __init__(self, trace):
        self.trace, self.k = trace, 0

    def next_inputs(self, outs):
        if self.k >= len(self.trace):
            return None
        self.k += 1
        return {k: ([tuple(x) if x else None for x in v] if k == "recv" else v) for k, v in self.trace[self.k - 1].items()}


# ---- the stimulus and the RTL's static checks -----------------------------------------


def test_the_stimulus_is_deterministic_and_seeded():
    params = HDL_PARAMS["d64n4"]

    def trace(seeds):
        env = Environment(params, random_episodes(params, seeds))
        run_model(params, env)
        return env.finished

    assert trace(range(3)) == trace(range(3))
    assert trace([1]) != trace([2])
    ep = random_episode(7, params)
    assert np.array_equal(ep.rows, random_episode(7, params).rows)


@pytest.mark.parametrize("tag", list(HDL_PARAMS))
def test_verilator_lint_is_clean(tag):
    assert lint_warnings(rtl_sources(), "nic_scheduler", HDL_PARAMS[tag].verilog_parameters()) is None


@pytest.mark.skipif(not have_icarus(), reason="Icarus Verilog (iverilog) is not installed")
@pytest.mark.parametrize("bad", ["NIS=17", "CNT_W=9", "ERR_W=33", "LEN_W=33", "TMO_W=33"])
def test_impossible_parameters_stop_the_simulation(bad, tmp_path):
    vvp = tmp_path / "x.vvp"
    subprocess.run(["iverilog", "-g2012", f"-Pnic_scheduler.{bad}", "-o", str(vvp), *map(str, rtl_sources())],
                   check=True, capture_output=True)
    p = subprocess.run([shutil.which("vvp"), str(vvp)], capture_output=True, text=True)
    assert f"{bad.split('=')[0]} = {bad.split('=')[1]} out of range" in p.stdout + p.stderr
