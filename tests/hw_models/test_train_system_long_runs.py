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
