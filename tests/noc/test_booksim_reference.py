"""The flit level against BookSim2's own output, point by point.

bench/data/booksim_reference.csv holds BookSim2's final statistics (its "Overall Traffic
Statistics" block) on 588 points: 4x4 and 8x8 mesh and torus, five patterns, 1-, 4- and
20-flit packets, 2 VCs x 8, 4 x 4 and 16 x 32 flits, loads 0.02 .. 0.7 flits/node/cycle,
seeds 0 and 1; BookSim2's commit is in the file's header, and bench/booksim_validate.py
made it. Each point runs here from the same BookSim2 keys (noc.booksim_config), so with
BookSim2's semantics and methodology, and packets to their own source on both sides. The
suite runs the points with 1- and 20-flit packets and seed 0; ``-m slow`` runs the rest.

What is held (docs/validation.md explains each rule and shows the table):

* the stability verdict agrees, except where the run that stayed stable ended within 10 %
  of latency_thres (500 cycles): there the verdict turns on one sample period, and
  BookSim2's own two seeds disagree on such a point;
* below the knee (BookSim2's latency at most 1.5 x the zero-load latency): packet latency
  within 5 % and accepted rate within 2 %, or within three combined standard errors of the
  two runs' sampling where that is wider (few packets: 4x4 networks at low load, 20-flit
  packets; the latency's by batch means, noc.flit_traffic.latency_standard_error);
* in the knee (above 1.5 x zero-load, still stable in both): within a factor of 2. There
  the latency curve is nearly vertical; BookSim2's own seeds 0 and 1 differ by up to 64 %.

bench/data/booksim_reference_trees.csv is the second matrix, held to the same rules: the
concentrated mesh (cmesh 4x4, 4 nodes per router, dor_no_express) and the fat trees
(fattree k = 4, n = 2 and 3, nca with its random up port), uniform and
hotspot({{0,5,10,15},{2,1,1,1}}) traffic, bernoulli and on_off injection, four loads, seeds
0, 1 and 2 (0 in the suite, 1 and 2 with ``-m slow``).
"""

from __future__ import annotations

import math
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from booksim_validate import KEYS, TREES_KEYS, booksim_values, read_reference, trees_matrix  # noqa: E402

REFERENCE = ROOT / "bench" / "data" / "booksim_reference.csv"
TREES = ROOT / "bench" / "data" / "booksim_reference_trees.csv"
LATENCY_THRES = 500.0
KNEE = 1.5
# Points whose deviation is inside BookSim2's own spread over seeds, measured with seeds 0-3
# in both simulators (their sampling is wider than the batch-means estimate: few, long,
# heavily contended packets)
SEED_SPREAD = {
    "torus8-tornado-20f-2x8-0.1-s0": "BookSim2's seeds 0-3 give 91.5, 124.2, 115.1, 120.1 cycles; "
                                     "ours 111.4, 97.9, 99.9, 98.8",
}


def _rows() -> list[dict]:
    return read_reference(REFERENCE)


def _id(row: dict) -> str:
    return (f"{row['topology']}{row['k']}-{row['traffic']}-{row['packet_size']}f-{row['num_vcs']}x{row['vc_buf_size']}-"
            f"{row['injection_rate']}-s{row['seed']}")


@cache
def _zero_load(key: tuple, keys: tuple = tuple(KEYS)) -> float:
    from noc.booksim_config import from_booksim
    from noc.flitsim_sweep import zero_load_latency_cycles

    run = from_booksim(booksim_values(dict(zip(keys, key))), "reference row")
    return zero_load_latency_cycles(run.topology, run.network, run.traffic)


def test_reference_file_names_booksims_commit_and_covers_the_matrix():
    header = REFERENCE.read_text().splitlines()[0]
    assert "commit 28f43299f1706a3160ffac721ca461d74eb6e618" in header
    rows = _rows()
    assert len(rows) == 588
    assert {r["topology"] + r["k"] for r in rows} == {"mesh4", "mesh8", "torus4", "torus8"}
    assert {r["traffic"] for r in rows} == {"uniform", "transpose", "bitcomp", "tornado", "neighbor"}
    assert {r["packet_size"] for r in rows} == {"1", "4", "20"} and {r["seed"] for r in rows} == {"0", "1"}
    assert {(r["num_vcs"], r["vc_buf_size"]) for r in rows} == {("2", "8"), ("4", "4"), ("16", "32")}
    verdicts = {r["verdict"] for r in rows}
    assert verdicts == {"stable", "unstable"}  # from zero load to past saturation


def _slow(row: dict) -> bool:
    """The 4-flit and seed-1 points run with -m slow (the suite keeps 1- and 20-flit packets,
    seed 0: every network, pattern, router and load)."""
    return row["packet_size"] == "4" or row["seed"] == "1"


def _params():
    return [pytest.param(r, id=_id(r), marks=[*([pytest.mark.slow] if _slow(r) else []),
                                              *([pytest.mark.xfail(reason=SEED_SPREAD[_id(r)], strict=True)]
                                                if _id(r) in SEED_SPREAD else [])]) for r in _rows()]


@pytest.mark.parametrize("row", _params())
def test_flit_level_agrees_with_booksim(row):
    from booksim_validate import compare_point

    _check_against_booksim(row, compare_point(row), KEYS)


def _check_against_booksim(row: dict, stats, keys: list[str]) -> None:
    """The rules of the module docstring, for one reference row and this model's run of it."""
    theirs_stable = row["verdict"] == "stable"
    if stats.stable != theirs_stable:
        latency = float(row["packet_latency_avg"]) if theirs_stable else stats.latency_avg
        assert latency >= 0.9 * LATENCY_THRES, (
            f"verdicts differ (BookSim2 {row['verdict']}, ours {'stable' if stats.stable else stats.verdict}) "
            f"with the stable run's latency {latency:.1f} far from latency_thres")
        return
    if not theirs_stable:
        return
    lat_b, acc_b = float(row["packet_latency_avg"]), float(row["accepted_flit_rate"])
    key = tuple(row[k] for k in keys)
    if lat_b > KNEE * _zero_load(key, tuple(keys)):
        assert 0.5 <= stats.latency_avg / lat_b <= 2.0, (stats.latency_avg, lat_b)
        return
    # sampling: the standard error of each run's mean latency (batch means of ours, as the
    # estimate for both), and of its accepted rate (packets counted over at least 3 periods)
    se_lat = math.sqrt(2) * stats.latency_se
    nodes = int(row.get("c") or 1) * int(row["k"]) ** int(row["n"])
    packets = acc_b / int(row["packet_size"]) * nodes * 3000
    se_acc = math.sqrt(2 / max(packets, 1)) * acc_b
    assert abs(stats.latency_avg - lat_b) <= max(0.05 * lat_b, 3 * se_lat), (stats.latency_avg, lat_b, se_lat)
    assert abs(stats.accepted_flits - acc_b) <= max(0.02 * acc_b, 3 * se_acc), (stats.accepted_flits, acc_b, se_acc)


def test_final_block_parser_reads_booksims_own_output():
    """bench/booksim_validate.py reads BookSim2's final block, not a per-sample one: on the
    stored output of runfiles/meshconfig (bench/data/booksim_examples.txt)."""
    from booksim_validate import parse_final_block

    text = (ROOT / "bench" / "data" / "booksim_examples.txt").read_text()
    mesh = text[text.index("## runfiles/meshconfig"):text.index("## src/examples/mesh88_lat")]
    per_sample = "Class 0:\nPacket latency average = 99.0\n\tminimum = 6\n\tmaximum = 68\n"
    got = parse_final_block(per_sample + mesh)
    assert got["verdict"] == "stable"
    assert got["packet_latency_avg"] == 27.7941 and got["packet_latency_min"] == 6 and got["packet_latency_max"] == 66
    assert got["accepted_flit_rate"] == 0.200172 and got["flit_latency_avg"] == 27.813 and got["hops_avg"] == 6.2543
    unstable = per_sample + "Average latency for class 0 exceeded 500 cycles. Aborting simulation.\n" \
                            "Simulation unstable, ending ...\n"
    assert parse_final_block(unstable) == {"verdict": "unstable"}


def _trees_id(row: dict) -> str:
    traffic = "hotspot" if row["traffic"].startswith("hotspot") else row["traffic"]
    return (f"{row['topology']}{row['k']}n{row['n']}-{traffic}-{row['injection_process']}-{row['injection_rate']}-"
            f"s{row['seed']}")


def test_trees_reference_names_booksims_commit_and_covers_its_matrix():
    header = TREES.read_text().splitlines()[0]
    assert "commit 28f43299f1706a3160ffac721ca461d74eb6e618" in header
    rows = read_reference(TREES)
    assert [tuple(r[k] for k in TREES_KEYS) for r in rows] == \
        [tuple(str(p[k]) for k in TREES_KEYS) for p in trees_matrix()]  # the script's matrix, in its order
    assert {(r["topology"], r["n"]) for r in rows} == {("cmesh", "2"), ("fattree", "2"), ("fattree", "3")}
    assert {r["injection_process"] for r in rows} == {"bernoulli", "on_off"} and {r["seed"] for r in rows} == {"0", "1", "2"}
    assert {r["verdict"] for r in rows} == {"stable"}  # loads below saturation, from near zero load


@pytest.mark.parametrize("row", [pytest.param(r, id=_trees_id(r), marks=[pytest.mark.slow] if r["seed"] != "0" else [])
                                 for r in read_reference(TREES)])
def test_cmesh_fattree_hotspot_on_off_agree_with_booksim(row):
    from booksim_validate import compare_point

    _check_against_booksim(row, compare_point(row), TREES_KEYS)
