"""``hw-models train-system`` bounds --max-iterations and refuses, with an estimate, a run
estimated past 10 minutes unless --yes, before anything runs; the estimate's shape."""

from __future__ import annotations

import pytest

from cli_run import run
from hw_models.estimate import LONG_RUN_SECONDS, MAX_SYSTEM_ITERATIONS, format_duration
from hw_models.training.systems import SYSTEMS, System
from hw_models.training.systems.setup import convergence_runs, system_params

from tiny_workload import NET


@pytest.fixture()
def tiny(tmp_path):
    (tmp_path / "tiny.toml").write_text(NET)
    return ["-w", str(tmp_path / "tiny.toml"), "-t", "torus:2x2", "-b", "4", "-o", str(tmp_path / "o")]


@pytest.mark.parametrize("value", ["0", "-3", str(MAX_SYSTEM_ITERATIONS + 1)])
def test_max_iterations_past_the_bound_is_one_line_and_exit_2(tiny, capsys, value):
    code, _, err = run(["train-system", "ssd", *tiny, "--max-iterations", value], capsys)
    assert code == 2 and err == (f"error: --max-iterations {value}: must be an integer in 1..100,000 (the digits "
                                 "task reaches its targets in tens to hundreds of iterations)\n")


def test_a_long_run_is_refused_with_its_estimate_and_nothing_runs(tiny, capsys, tmp_path):
    code, _, err = run(["train-system", "ps", *tiny, "--max-iterations", "50000"], capsys)
    runs = 1 + 4 + 4  # the default modes sync, async, ssp:2
    secs = SYSTEMS["ps"].seconds_per_iteration * runs * 50_000  # 4 workers: the 16-worker figure
    assert code == 2 and err.startswith(f"error: {runs} ps convergence runs of up to 50,000 iterations on 4 workers "
                                        f"would take about {format_duration(secs)}") and "add --yes" in err
    assert err.count("\n") == 1 and not (tmp_path / "o").exists()


def test_task_none_is_never_refused_for_its_iterations(tiny, capsys, tmp_path):
    code, _, err = run(["train-system", "ssd", *tiny, "--task", "none", "--max-iterations", "100000"], capsys)
    assert code in (0, None), err


def test_estimate_is_linear_in_runs_and_iterations_and_grows_with_workers():
    for name, system in SYSTEMS.items():
        c = system.seconds_per_iteration
        assert system.seconds(3, 1000, 16) == pytest.approx(3 * 1000 * c, rel=1e-12)
        assert system.seconds(6, 1000, 16) == pytest.approx(2 * system.seconds(3, 1000, 16))
        assert system.seconds(3, 1000, 4) == system.seconds(3, 1000, 16)  # floor
        grow = 4 if name == "dlion" else 2  # all pairs of links against one gradient each
        assert system.seconds(3, 1000, 32) == pytest.approx(grow * 3 * 1000 * c, rel=1e-12)
        assert system.seconds(0, 1000, 16) == 0


def test_a_system_added_to_the_registry_gets_an_estimate(monkeypatch):
    monkeypatch.setitem(SYSTEMS, "dummy", System("a dummy", "Dummy: nothing.", 0.004, workers_power=3))
    assert SYSTEMS["dummy"].seconds(5, 200, 16) == pytest.approx(0.004 * 5 * 200, rel=1e-12)
    assert SYSTEMS["dummy"].seconds(5, 200, 32) == pytest.approx(0.004 * 5 * 200 * 2 ** 3, rel=1e-12)


@pytest.mark.parametrize("system, flags, runs", [
    ("compression", dict(compressors="topk:0.01,onebit"), 1 + 2 * 2),
    ("compression", dict(compressors="topk:0.01", fix="both"), 1 + 3),
    ("ps", dict(modes="sync,async"), 1 + 4),
    ("ssd", dict(delays="1,2,4"), 4),
    ("easgd", dict(variants="sync,async"), 3),
    ("easgd", dict(variants="sync,async", stragglers="slow:1:2"), 5),
    ("kfac", {}, 2),
    ("dlion", dict(techniques="none,priority"), 3 + 2),
    ("dlion", {}, 3 + 5),  # all: none, each alone, all three
])
def test_convergence_runs_count_the_rows_of_each_system(system, flags, runs):
    from hw_models.sweep.kinds.train_system import OPTIONS

    params = system_params(system, 4, *(flags.get(k) for k in OPTIONS))
    assert convergence_runs(system, params, "logreg") == runs
    assert convergence_runs(system, params, "none") == 0


def test_the_default_run_of_every_system_is_within_the_limit():
    """The commands the docs show (1,500 iterations, 16 workers, default options) run without --yes."""
    from hw_models.sweep.kinds.train_system import OPTIONS

    for name, system in SYSTEMS.items():
        params = system_params(name, 16, *(None for _ in OPTIONS))
        assert system.seconds(convergence_runs(name, params, "logreg"), 1500, 16) <= LONG_RUN_SECONDS


@pytest.mark.parametrize("system, flags, configs", [
    ("compression", dict(compressors="topk:0.01,onebit", fix="both", stragglers="walk:0.1"), (1 + 2 * 2, 0)),
    ("compression", dict(compressors="onebit", links="slow:1:2+lognormal:0.2"), (2, 0)),
    ("compression", dict(compressors="onebit", stragglers="slow:1:2+at:5:0:3"), (0, 0)),  # few distinct factors
    ("ssd", dict(delays="1,2", links="walk:0.2"), (1, 2)),
    ("kfac", dict(stragglers="lognormal:0.5"), (5, 0)),
    ("kfac", {}, (0, 0)),
    ("dlion", {}, (0, 0)),  # DLion's rounds are its convergence runs'
])
def test_profiled_configurations_counted_where_the_profile_drifts(system, flags, configs):
    from hw_models.sweep.kinds.train_system import OPTIONS
    from hw_models.training.systems.setup import profiled_configs

    params = system_params(system, 4, *(flags.get(k) for k in OPTIONS))
    assert profiled_configs(system, params, 4) == configs


def test_a_drifting_profile_adds_its_timelines_to_the_estimate(capsys, tmp_path):
    from hw_models.estimate import SECONDS_PER_PROFILED_LAYER_ITERATION, profiled_seconds
    from hw_models.training.workloads import get_workload

    layers = len(get_workload("resnet50").layers)
    assert profiled_seconds(6, 0, 5000, layers) == pytest.approx(
        6 * 5000 * layers * SECONDS_PER_PROFILED_LAYER_ITERATION["bsp"])
    assert profiled_seconds(1, 2, 10, 3) == pytest.approx(
        30 * (SECONDS_PER_PROFILED_LAYER_ITERATION["bsp"] + 2 * SECONDS_PER_PROFILED_LAYER_ITERATION["period"]))
    runs = 1 + 5 * 2  # the reference, the five default compressors with and without error feedback
    secs = SYSTEMS["compression"].seconds(runs, 5000, 4) + profiled_seconds(6, 0, 5000, layers)
    assert secs > LONG_RUN_SECONDS > SYSTEMS["compression"].seconds(runs, 5000, 4)
    code, _, err = run(["train-system", "compression", "-w", "resnet50", "-t", "torus:2x2", "-o", str(tmp_path / "o"),
                        "--max-iterations", "5000", "--stragglers", "walk:0.1"], capsys)
    assert code == 2 and err.startswith(f"error: {runs} compression convergence runs of up to 5,000 iterations on 4 "
                                        "workers and 6 configurations timed iteration by iteration on the profiles "
                                        f"would take about {format_duration(secs)}"), err
    assert err.count("\n") == 1 and not (tmp_path / "o").exists()
