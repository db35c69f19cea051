"""The paper's runs here against the MultiTree paper's public simulator, run for run.

bench/data/multitree_reference.csv holds the peer's total cycles and reduction cycles
(bench/multitree_reference.py ran it; its commit, flags and settings are in
bench/data/multitree_reference.md). Each run is simulated here at flit level as
hw_models.paper sets it up (the isca2021 presets: the same routers, 150-cycle channels, transmit queue,
NIC variants, trees and reduction unit). Every case must be within 10 % of the peer's
total; the cases that are not are strict expected failures, grouped by what is known of
their cause (docs/allreduce.md, "The paper's set-up and its public simulator"). The suite runs the 4x4
networks up to 256 KiB; ``-m slow`` runs the rest.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from multitree_compare import our_run_name, read_reference  # noqa: E402

ROWS = read_reference()
KIB = 1024
ALL = frozenset(r["size_bytes"] // KIB for r in ROWS)

# Each group of strict expected failures names its mechanism (docs/allreduce.md, "The
# paper's set-up and its public simulator").
RING2D = ("the peer reports one simulated phase of its 2D ring doubled; ring2d_4dir, the all-reduce whose outer "
          "stages are those chains, takes about (1 + 1/k)/2 of that at large sizes on a k x k grid")
BETA = ("MultiTree-beta: the peer's own reruns of this run spread by up to 18 % (the order of its same-cycle "
        "events)")
DTREE = ("double binary tree on the 8x8 torus: the peer's NCCL trees on node ids, its wait for the whole reduce "
         "phase before broadcasting and its in-step-order NI (measured on the 4x4 torus)")
EIGHT = ("MultiTree beta and delta on the 8x8 torus from 2 MiB: the peer sends each transfer to the receiver's NI "
         "by a per-step counter in tree order, ours in sender order, which on a torus keeps one neighbour on one NI. "
         "Steps overlap (an NI is free once its message's rest fits the 848-flit transmit queue), so there a "
         "neighbour's tail and another's next-step head share one ejection channel for 21 % of transfer time (here "
         "3 %), and for messages longer than that queue the back-pressure holds the sender's next step. Measured at "
         "delta 2 MiB: ours with the peer's receive NIs takes 113,333 cycles against its 110,576, and the peer with "
         "ours' 98,914 against ours' 97,704 (docs/allreduce.md)")
KNOWN = {
    ("torus4x4", "ring2d"): (ALL, RING2D), ("mesh4x4", "ring2d"): (ALL, RING2D),
    ("torus8x8", "ring2d"): (ALL, RING2D),
    ("torus4x4", "beta"): ({1024, 2048}, BETA), ("mesh4x4", "beta"): ({512, 1024}, BETA),
    ("torus8x8", "dtree"): ({32, 256, 512, 1024, 2048, 4096, 8192}, DTREE),
    ("torus8x8", "beta"): ({2048, 4096, 8192}, EIGHT), ("torus8x8", "delta"): ({2048, 4096, 8192}, EIGHT),
    ("torus8x8", "delta_nolock"): ({2048}, EIGHT),
}


def _params():
    out = []
    for r in ROWS:
        kib = r["size_bytes"] // KIB
        marks = []
        sizes, reason = KNOWN.get((r["topology"], r["variant"]), (set(), ""))
        if kib in sizes:
            marks.append(pytest.mark.xfail(strict=True, reason=reason))
        if r["topology"] == "torus8x8" or kib > 256:
            marks.append(pytest.mark.slow)
        out.append(pytest.param(r, marks=marks, id=f"{r['topology']}-{r['variant']}-{kib}KiB"))
    return out


@pytest.fixture(scope="module")
def paper_run():
    from hw_models.paper import paper_run as run

    return run


@pytest.mark.parametrize("row", _params())
def test_the_papers_runs_agree_with_its_simulator(row, paper_run):
    res = paper_run(row["topology"], our_run_name(row["variant"]), row["size_bytes"], "flit")
    assert res.verified
    dev = res.total_cycles / row["total_cycles"] - 1
    assert abs(dev) <= 0.10, f"ours {res.total_cycles:.0f}, peer {row['total_cycles']} ({dev:+.1%})"


@pytest.mark.parametrize("variant", ["ring", "dtree", "alpha", "delta"])
def test_the_busiest_nodes_reduction_cycles_are_the_peers(variant, paper_run):
    # the peer reports the largest per-node sum of reduction cycles; with the same trees
    # (or ring, or double binary tree) and its NPU's formula, ours must be the same number
    for r in ROWS:
        if r["variant"] == variant and r["topology"] != "torus8x8" and r["size_bytes"] <= 256 * KIB:
            res = paper_run(r["topology"], our_run_name(variant), r["size_bytes"], "flit")
            assert res.extra["reduce_busy_cycles_max"] == r["computation_cycles"], (r["topology"], r["size_bytes"])
