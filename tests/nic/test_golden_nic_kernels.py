"""Three `nic` kernels against figures stored from the code before they were restructured.

tests/nic/data/golden_nic_kernels.json (written by ``python bench/golden_nic_kernels.py
--write``) holds digests of the MultiTree trees and schedules on a fixed list of topologies,
of a seeded random stimulus of the scheduler's cycle model (every cycle's outputs and the
final state) and the compiled verifier's fault indices on damaged schedules and jittered
times. The large tori run with ``-m slow``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("golden_nic_kernels", ROOT / "bench" / "golden_nic_kernels.py")
golden = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("golden_nic_kernels", golden)
_spec.loader.exec_module(golden)

STORED = json.loads(golden.DATA.read_text())


def test_the_stored_cases_are_the_listed_ones():
    assert set(STORED["schedules"]) == {golden.schedule_key(s, n, o) for s, n, o, _ in golden.SCHEDULES}
    assert set(STORED["schedulers"]) == {c[0] for c in golden.SCHEDULERS}
    assert set(STORED["verifier"]) == {f"{s} {a}" for s, a in golden.VERIFIER}


def _schedule_params(fast):
    return [pytest.param(s, n, o, id=golden.schedule_key(s, n, o), marks=() if f else pytest.mark.slow)
            for s, n, o, f in golden.SCHEDULES if f == fast]


@pytest.mark.parametrize("spec,nis,order", _schedule_params(True) + _schedule_params(False))
def test_multitree_reproduces_stored_trees_and_schedule(spec, nis, order):
    assert golden.schedule_figures(spec, nis, order) == STORED["schedules"][golden.schedule_key(spec, nis, order)]


@pytest.mark.parametrize("case", golden.SCHEDULERS, ids=[c[0] for c in golden.SCHEDULERS])
def test_scheduler_cycle_model_reproduces_stored_trace(case):
    got = golden.scheduler_figures(*case)
    assert got == STORED["schedulers"][case[0]]
    assert got["sends"] > 20 and got["timeouts"] > 0 and got["done"] > 0  # the trace exercises them


@pytest.mark.parametrize("spec,algorithm", golden.VERIFIER, ids=[f"{s} {a}" for s, a in golden.VERIFIER])
def test_compiled_verifier_reproduces_stored_fault_indices(spec, algorithm):
    got = golden.verifier_figures(spec, algorithm)
    assert got == STORED["verifier"][f"{spec} {algorithm}"]
    assert got["merged"] == got["ordered"]  # two event sources, one order
