"""``hw-models train`` bounds its iterations and refuses, with an estimate, a run estimated
past 10 minutes unless --yes, before anything runs."""

from __future__ import annotations

from cli_run import run
from hw_models.estimate import MAX_TRAINING_ITERATIONS, SECONDS_PER_TRAINING_ITERATION


def test_iterations_past_the_bound_are_one_line_and_exit_2(tmp_path, capsys):
    code, _, err = run(["train", "--iterations", str(MAX_TRAINING_ITERATIONS + 1), "--out", str(tmp_path / "o")],
                       capsys)
    assert code == 2 and err == (f"error: --iterations {MAX_TRAINING_ITERATIONS + 1}: must be 2..100,000 (the first "
                                 "iteration is not steady state; the figures are steady-state means)\n")


def test_a_long_training_run_is_refused_with_its_estimate_and_nothing_runs(tmp_path, capsys):
    out = tmp_path / "o"
    code, _, err = run(["train", "--iterations", "100000", "--workloads", "resnet50", "--policy", "wfbp",
                        "--algorithms", "ring", "--out", str(out)], capsys)
    minutes = SECONDS_PER_TRAINING_ITERATION * 100_000 / 60  # one run
    assert code == 2 and err.startswith("error: 1 training runs of 100,000 iterations would take about "
                                        f"{minutes:.3g} minutes") and "add --yes" in err
    assert err.count("\n") == 1 and not (out / "runs.sqlite").exists()


def test_the_help_of_yes_names_both_refusals(capsys):
    """Both checks above and the flit level's estimate say "add --yes": the flag's help names
    each of them, on one line."""
    import re

    code, out, _ = run(["train", "--help"], capsys)
    assert code == 0
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", out).split())
    help_of_yes = text[text.index("--yes"):text.index("--fresh")]
    assert "flit-level all-reduces" in help_of_yes and "--iterations" in help_of_yes, help_of_yes
