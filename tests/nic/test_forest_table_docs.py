"""docs/collectives.md's forest tables and target lines are what bench/forest_table.py
makes from the stored CSVs (bench/data/forest_table_<model>.csv): generated == stored."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from forest_table import ALGORITHMS, FIELDS, check, csv_path, table  # noqa: E402

DOC = (ROOT / "docs" / "collectives.md").read_text()


@pytest.mark.parametrize("model", ["message", "flit"])
def test_the_docs_table_is_the_one_the_csv_makes(model):
    made = table(model)
    assert made.count("\n") > 20
    assert made in DOC, f"regenerate with: bench/forest_table.py --table --model {model}"


@pytest.mark.parametrize("model", ["message", "flit"])
def test_the_docs_target_lines_are_the_ones_the_csv_makes(model):
    lines = check(model)
    assert lines and all(line in DOC for line in lines), f"bench/forest_table.py --check --model {model}"


@pytest.mark.parametrize("model", ["message", "flit"])
def test_the_csv_rows_are_whole_and_unique(model):
    """Every stored run has every field, a verified result, its own key, and a % of the
    optimum that is the stored optimum over the stored cycles."""
    with csv_path(model).open() as f:
        rows = list(csv.DictReader(f))
    keys = [(r["topology"], r["size_bytes"], r["algorithm"]) for r in rows]
    assert len(keys) == len(set(keys))
    for r in rows:
        assert list(r) == list(FIELDS) and r["model"] == model and r["algorithm"] in ALGORITHMS
        assert r["verified"] == "True"
        assert float(r["optimum_percent"]) == pytest.approx(100 * float(r["optimum_cycles"]) / float(r["cycles"]),
                                                            abs=0.006)
        assert float(r["cycles"]) >= float(r["optimum_cycles"])  # nothing beats the exact optimum
