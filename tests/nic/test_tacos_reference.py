"""TACOS's stored all-gather times (bench/data/tacos_reference.csv, bench/tacos_reference.py)
beside ours, computed live under the same α–β link model."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.tacos_reference import CASES, DEFAULT_CSV, links_sha256, our_links, ours, read_reference  # noqa: E402
from nic.collectives import build  # noqa: E402
from nic.collectives.alphabeta import all_gather_time  # noqa: E402
from nic.collectives.schedule import Schedule, ScheduleError  # noqa: E402
from nic.scheduler import OP_GATHER  # noqa: E402
from noc.topology import parse_spec  # noqa: E402

ROWS = read_reference(DEFAULT_CSV)
FAST = [r for r in ROWS if int(r["nodes"]) <= 16]


def test_every_case_and_both_chunk_counts_are_stored():
    cases = {r["case"] for r in ROWS}
    assert cases == set(CASES)
    for r in ROWS:
        assert int(r["chunks_per_npu"]) in (1, int(r["ours_chunks_per_npu"]))
        assert int(r["chunk_bytes"]) == int(r["buffer_bytes"]) // (int(r["nodes"]) * int(r["chunks_per_npu"]))


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['case']}-{int(r['buffer_bytes']) >> 20}MiB-c{r['chunks_per_npu']}")
def test_tacos_links_are_our_router_links(row):
    assert links_sha256(our_links(parse_spec(row["our_topology"]))) == row["tacos_links_sha256"]


@pytest.mark.parametrize("row", FAST, ids=lambda r: f"{r['case']}-{int(r['buffer_bytes']) >> 20}MiB-c{r['chunks_per_npu']}")
def test_ours_reproduces_and_no_side_beats_the_cut_bound(row):
    size = int(row["buffer_bytes"])
    mine = ours(row["our_topology"], size, float(row["bandwidth_gibps"]), float(row["latency_us"]))
    assert mine["chunks_per_npu"] == int(row["ours_chunks_per_npu"])
    assert mine["time_us"] == pytest.approx(float(row["ours_time_us"]), rel=1e-12)
    # the cut bound holds for any schedule, TACOS's too; the α of at least one hop comes on top
    alpha = float(row["latency_us"])
    for t in (mine["time_us"], float(row["tacos_time_us_min"])):
        assert t >= mine["bound_us"] + alpha - 1e-9
    assert float(row["tacos_time_us_min"]) <= float(row["tacos_time_us_median"]) <= float(row["tacos_time_us_max"])


def test_alpha_beta_ring_formula():
    """The ring's all-gather on a ring of N: N-1 hops of one chunk each, α + (M/N)/B apiece."""
    t = parse_spec("ring:6")
    s = build(t, "ring")
    m, alpha, rate = 6 * 1000.0, 0.5, 10.0
    assert all_gather_time(s, t, m, alpha=alpha, bytes_per_time=rate) == pytest.approx(
        (6 - 1) * (alpha + (m / s.num_flows) / rate), rel=1e-12)


def test_alpha_beta_chain_by_hand():
    """Two flows on a 3-node line 0-1-2: exact times worked by hand, link sharing included."""
    t = parse_spec("mesh:3")
    # flow 0 rooted at 0: 0->1 (step 0), 1->2 (step 1); flow 1 rooted at 2: 2->1 (step 0), 1->0 (step 1)
    # chunk = 100/2 = 50 bytes at 10 bytes/unit: 5 + alpha 1 = 6 per hop; the two flows in parallel
    s = Schedule.from_transfers("x", t.name, 3, 1, 2, [(0, 0, 1, 0, OP_GATHER), (1, 1, 2, 0, OP_GATHER),
                                                       (0, 2, 1, 1, OP_GATHER), (1, 1, 0, 1, OP_GATHER)])
    assert all_gather_time(s, t, 100.0, alpha=1.0, bytes_per_time=10.0) == pytest.approx(12.0)
    # both flows over the one link 0->1 serialise: flow 0 then flow 1 (held at 0 from the start)
    s2 = Schedule.from_transfers("x", t.name, 3, 1, 2, [(0, 0, 1, 0, OP_GATHER), (1, 0, 1, 1, OP_GATHER),
                                                        (2, 1, 2, 0, OP_GATHER), (3, 1, 2, 1, OP_GATHER)])
    # 0->1 flow0 [0,6], 0->1 flow1 [6,12], 1->2 flow0 [6,12], 1->2 flow1 [12,18]
    assert all_gather_time(s2, t, 100.0, alpha=1.0, bytes_per_time=10.0) == pytest.approx(18.0)


def test_alpha_beta_rejects_a_non_neighbour_transfer():
    t = parse_spec("mesh:3")
    s = Schedule.from_transfers("x", t.name, 3, 1, 1, [(0, 0, 2, 0, OP_GATHER), (1, 0, 1, 0, OP_GATHER)])
    with pytest.raises(ScheduleError, match="not one router link"):
        all_gather_time(s, t, 100.0, alpha=1.0, bytes_per_time=10.0)


def test_stored_tacos_times_are_finite_and_positive():
    for r in ROWS:
        assert math.isfinite(float(r["tacos_time_us_min"])) and float(r["tacos_time_us_min"]) > 0
