"""The flit-level kernel against every counter stored from the kernel before its cost was
made to follow the activity (``python bench/golden_flit_counters.py --write``,
tests/noc/data/golden_flit_counters.json): synthetic traffic over meshes, tori, a
concentrated mesh and fat trees at low, middle and saturating loads, with the default
router and BookSim2's semantics; packet lists with priorities; all-reduce co-simulations.
Each run must give the same statistics (floats to the bit), counters, per-packet cycles,
latency and hop histograms, flits per link and network state at the end."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("golden_flit_counters", ROOT / "bench" / "golden_flit_counters.py")
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)

STORED = json.loads(golden.DATA.read_text())["cases"]
CASES = golden.cases()


def test_every_case_is_stored():
    assert set(STORED) == set(CASES)


def test_a_changed_counter_is_reported():
    name = "mesh4_1f_low"
    changed = json.loads(json.dumps(STORED[name]))
    changed["counters"][0] += 1
    changed["state"]["credit"] = "0" * 20
    assert golden.differences(changed, STORED[name]) == ["counters", "state.credit"]
    assert golden.differences(STORED[name], STORED[name]) == []


@pytest.mark.parametrize("name", [pytest.param(n, id=n, marks=() if c[2] else pytest.mark.slow)
                                  for n, c in CASES.items()])
def test_run_reproduces_every_stored_counter(name):
    got = golden.run_case(CASES[name])
    assert golden.differences(got, STORED[name]) == []
