"""A fixed matrix of all-reduce runs against cycle counts stored from the code before the
co-simulation and ``nic.allreduce`` were restructured (``python bench/golden_flit_cycles.py
--write``, tests/nic/data/golden_flit_cycles.json): flit level (the co-simulation) on tori,
a mesh and a fat tree, with both NIC designs, 4 and 1 NIs, the isca2021 preset; and a few
message-level points. Each run is compared on its total, its per-step ends and a digest of
every transfer's start, sent and arrive cycles; each case's NIC and router key fields too."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("golden_flit_cycles", ROOT / "bench" / "golden_flit_cycles.py")
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)

STORED = json.loads(golden.DATA.read_text())["cases"]
CASES = {c[0]: c for c in golden.CASES}


def test_every_case_is_stored():
    assert set(STORED) == set(CASES)


def _params(fast: bool):
    return [pytest.param(name, id=name) if fast else pytest.param(name, id=name, marks=pytest.mark.slow)
            for name, c in CASES.items() if c[-1] == fast]


@pytest.mark.parametrize("name", _params(True) + _params(False))
def test_runs_reproduce_the_stored_cycles(name):
    got = golden.run_case(CASES[name])
    want = STORED[name]
    assert got["topology"] == want["topology"]
    assert set(got["runs"]) == set(want["runs"])
    for run, figures in want["runs"].items():
        assert got["runs"][run] == figures, run


@pytest.mark.parametrize("name", sorted(CASES))
def test_keys_of_stored_results_are_unchanged(name):
    # the config key fields stored results are keyed by, without simulating anything: a run
    # stored before a refactor must still be found
    exp, _ = golden.resolve_case(CASES[name])
    want = STORED[name]
    assert {d: exp.nics[d].key_fields() for d in want["nic_key_fields"]} == want["nic_key_fields"]
    assert exp.router.key_fields() == want["router_key_fields"]
