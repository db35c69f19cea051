"""The eight paper workloads as Chakra ETs run by ASTRA-sim 2 (bench/data/astrasim_training.csv,
made by bench/astrasim_training.py reference) beside our timeline on the same ETs read back:
iteration time and exposed communication (ASTRA-sim's: the end minus the compute ticks)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.astrasim_training import ours, read_reference, side_by_side, workload_costs  # noqa: E402


def test_every_workload_within_the_documented_deviation():
    """Ring, direct and halving-doubling to the ns; the double binary tree within 1.2 %
    (ours slower: docs/validation.md)."""
    rows = read_reference()
    assert len(rows) == 32 and [(r["workload"], r["algorithm"]) for r in rows if r["astrasim_error"]] == \
        [("alphago_zero", "halvingDoubling")]  # ASTRA-sim asserts on a message of no bytes there
    table = side_by_side(rows)
    assert len(table) == 31
    for t in table:
        if t["algorithm"] == "doubleBinaryTree":
            assert -1e-9 <= t["ours_s"] - t["astrasim_s"] <= 0.012 * t["astrasim_s"], t
            continue
        # to the ns (ASTRA-sim's cycle; ours in float seconds)
        assert abs(t["ours_s"] - t["astrasim_s"]) <= 1e-9, t
        # exposed: the same end minus the same compute (both sides round durations to whole µs)
        assert abs(t["ours_exposed_s"] - t["astrasim_exposed_s"]) <= 1e-9, t


def test_a_deviation_is_not_hidden():
    """AlexNet's last gradients wait behind its fully connected layers' all-reduces: ms of
    exposed communication on both sides. Without ASTRA-sim's local reduction (a write and
    two reads per summed message) ours misses by far more than the bound."""
    row = next(t for t in side_by_side(read_reference()) if t["workload"] == "alexnet" and t["algorithm"] == "ring")
    assert row["astrasim_exposed_s"] > 4e-3 and row["ours_exposed_s"] > 4e-3
    end, _ = ours(workload_costs()["alexnet"], local_mem_GBps=None)
    assert abs(end - row["astrasim_s"]) > 5e-3 * row["astrasim_s"]
