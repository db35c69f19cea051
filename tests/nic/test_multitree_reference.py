"""The paper's runs here against the MultiTree paper's public simulator, run for run.

bench/data/multitree_reference.csv holds the peer's total cycles and reduction cycles
(bench/multitree_reference.py ran it; its commit, flags and settings are in
bench/data/multitree_reference.md). Each run is simulated here at flit level as
hw_models.paper sets it up (the isca2021 presets: the same routers, 150-cycle channels,
NIC variants, trees and reduction unit). Every case must be within 10 % of the peer's
total; the cases that are not are strict expected failures, grouped by what is known of
their cause (docs/allreduce.md, "Against the paper's simulator"). The suite runs the 4x4
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

# The peer's reported 2D ring is one simulated phase (its four-direction chains'
# reduce-scatter and all-gather) with every cycle count doubled, which stands for no
# all-reduce that a schedule can state; ring2d_4dir is the verified all-reduce whose outer
# stages are those chains. Below 1 MiB ours is faster by about the doubling; from 2 MiB
# ours is slower and the cause is not yet measured.
RING2D = "peer's 2D ring figure is one phase doubled; ring2d_4dir is another schedule (see docs)"
# MultiTree with four NIs per node: same trees, same reduction cycles, yet the peer is
# 10-40 % slower below 2 MiB (torus) or 1 MiB (mesh); its own reruns spread by up to 18 %
# (beta, 1 MiB). Cause not yet measured.
FOUR_NI = "four-NI MultiTree below 2 MiB: peer 10-40 % slower at equal trees and reduction; cause not yet measured"
DTREE = "double binary tree at 32 KiB and on the 8x8 torus: cause not yet measured"
KNOWN = {
    ("torus4x4", "dtree"): ({32}, DTREE), ("mesh4x4", "dtree"): ({32}, DTREE),
    ("torus8x8", "dtree"): ({32, 1024}, DTREE),
    ("torus4x4", "ring2d"): ({32, 64, 128, 256, 2048, 4096, 8192}, RING2D),
    ("mesh4x4", "ring2d"): ({32, 64, 128, 256, 512, 1024, 2048}, RING2D),
    ("torus8x8", "ring2d"): ({32, 1024}, RING2D),
    ("torus4x4", "beta"): ({32, 64, 128, 256, 512, 1024}, FOUR_NI),
    ("torus4x4", "delta"): ({32, 64, 128, 256, 512}, FOUR_NI),
    ("mesh4x4", "beta"): ({32, 64, 128, 256, 512, 1024}, FOUR_NI),
    ("mesh4x4", "delta"): ({32, 64, 128, 256, 512}, FOUR_NI),
    ("torus8x8", "beta"): ({32}, FOUR_NI), ("torus8x8", "delta"): ({1024}, FOUR_NI),
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
