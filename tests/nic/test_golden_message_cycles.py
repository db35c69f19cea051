"""The message-level model against its own stored figures, to the cycle.

tests/nic/data/golden_message_cycles.json holds, per run of a fixed matrix (the calibration
matrix, the main job's runs, the NIC options on each router kind, the MultiTree paper's
runs, the training tables' communication costs), the exact total and step-end cycles and a
digest of every transfer's times, written by ``python bench/golden_cycles.py`` from the
code before its event loop was restructured. A subset runs by default, the whole matrix
with ``-m slow``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("golden_cycles", ROOT / "bench" / "golden_cycles.py")
golden = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("golden_cycles", golden)
_spec.loader.exec_module(golden)

STORED = json.loads(golden.DATA.read_text())["runs"]
RUNS = {f"{g}: {name}": thunk for g, name, thunk in golden.runs()}

# the default subset: every group, small sizes, both NICs, each router kind and NIC option
FAST = [
    "calibration: torus:4x4:c4 multitree codesigned 32768",
    "calibration: torus:4x4 ring baseline 32768",
    "calibration: fattree:k4:l2 halving_doubling baseline 32768",
    "calibration: mesh:4x4 ring2d codesigned 32768",
    "main: torus:4x4:c4 multitree codesigned 1048576",
    "main: torus:4x4:c4 dbtree baseline 1048576",
    "options: torus:4x4:c4 multitree packet default 1048576",
    "options: torus:4x4:c4 multitree chunk-reduction 4vcs 1048576",
    "options: mesh:4x4 dbtree stream-reduction islip 1048576",
    "options: torus:4x4 ring2d tx-queue fluid 1048576",
    "paper: torus4x4 ring 32768",
    "paper: torus4x4 delta 32768",
    "paper: mesh4x4 beta 65536",
    "training: isca2021 multitree 65536",
]


def test_the_matrix_is_the_stored_one():
    assert set(RUNS) == set(STORED)
    assert set(FAST) <= set(RUNS)


def _check(key):
    assert golden.figures(*RUNS[key]()) == STORED[key], key


@pytest.mark.parametrize("key", FAST)
def test_reproduces_stored_cycles(key):
    _check(key)


@pytest.mark.slow
@pytest.mark.parametrize("key", [k for k in STORED if k not in FAST])
def test_reproduces_stored_cycles_whole_matrix(key):
    _check(key)
