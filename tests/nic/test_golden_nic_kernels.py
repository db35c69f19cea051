"""Three `nic` kernels against figures stored from the code before they were restructured.

tests/nic/data/golden_nic_kernels.json (written by ``python bench/golden_nic_kernels.py
--write``) holds digests of the MultiTree trees and schedules on a fixed list of topologies,
of a seeded random stimulus of the scheduler's cycle model (every cycle's outputs and the
final state) and the compiled verifier's fault indices on damaged schedules and jittered
times. The large tori run with ``-m slow``.
"""

from __future__ import annotations

import importlib
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


@pytest.mark.parametrize("spec,nis,order", [("torus:8x8:c4", None, "ours"), ("mesh:7x5:c2", None, "paper"),
                                            ("fattree:k4:l2", None, "ours")])
def test_multitree_columns_come_out_in_canonical_order(spec, nis, order):
    """The kernel lays the columns out in the Schedule's canonical order itself, so the
    Schedule takes them as they are (its check of the order finds nothing to sort)."""
    from nic.collectives.multitree_growth import schedule_columns
    from nic.collectives.schedule import _canonical_order
    from noc.topology import parse_spec

    mt = importlib.import_module("nic.collectives.multitree")  # the module (the package exports the function)
    t = parse_spec(spec)
    edges, steps = mt._grow(t, t.nis_per_node if nis is None else nis, order)
    cols = list(schedule_columns(edges, steps, t.num_nodes))
    assert _canonical_order(cols, t.num_nodes, t.num_nodes) is None
    shuffled = [c[::-1].copy() for c in cols]  # and the check is not blind
    assert _canonical_order(shuffled, t.num_nodes, t.num_nodes) is not None
