"""Our ASTRA-sim-semantics collective models recomputed for every stored ASTRA-sim 2 run
(bench/data/astrasim_collectives.csv, made by bench/astrasim_reference.py reference) and
compared within the deviations docs/validation.md states ("Against ASTRA-sim 2"): the closed
form (AstraAnalytical) and the message-level simulator run (message_run), on the
one-dimensional networks and on Ring(4) x Ring(4)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.astrasim_reference import MESSAGE_ALGORITHMS, ours, ours_message, read_reference  # noqa: E402

# (collective, algorithm) -> largest |deviation| in per cent over the four networks and the
# eleven sizes (docs/validation.md's table), closed form and message run. The closed form is
# ASTRA-sim's to the ns; the message run carries no whole-ns truncation (<= 0.2 %) and sends
# a direct all-reduce's all-gather after the last sum (2.1 %, test below).
EXACT = 0.0
BOUNDS = {("allreduce", "ring"): (EXACT, 0.2), ("allreduce", "halvingDoubling"): (EXACT, 0.2),
          ("allreduce", "doubleBinaryTree"): (EXACT, 0.2), ("allreduce", "direct"): (EXACT, 2.1),
          ("reduce_scatter", "ring"): (EXACT, 0.2), ("reduce_scatter", "direct"): (EXACT, 0.2),
          ("all_gather", "ring"): (EXACT, 0.2), ("all_gather", "direct"): (EXACT, 0.2)}
MULTI_DIM_BOUND = 1.2  # Ring(4) x Ring(4), every collective and algorithm


def _rows(multi_dim: bool | None = None):
    rows = [r for r in read_reference() if r["algorithm"] in MESSAGE_ALGORITHMS]
    if multi_dim is not None:
        rows = [r for r in rows if ("x" in r["npus"]) == multi_dim]
    return rows


def _dev(mine: float, r: dict) -> float:
    peer = float(r["astrasim_cycles"])
    return 100 * abs(mine - peer) / peer


@pytest.mark.parametrize("side", ["closed", "message"])
def test_every_collective_within_the_documented_deviation(side):
    calc = ours if side == "closed" else ours_message
    rows = _rows()
    assert len(rows) == 352 and {r["network"] for r in rows} == {"Ring8", "FullyConnected8", "Switch8", "Ring4xRing4"}
    exact = 0
    for r in rows:
        bound = BOUNDS[(r["collective"], r["algorithm"])][side == "message"]
        if bound == EXACT:
            assert calc(r) == float(r["astrasim_cycles"]), r
            exact += 1
        else:
            assert _dev(calc(r), r) <= bound, r
    assert exact == (352 if side == "closed" else 0)


@pytest.mark.parametrize("side", ["closed", "message"])
def test_multi_dimensional_rows_within_the_documented_deviation(side):
    """Ring(4) x Ring(4): chunks pipelined over the two dimensions, one active chunk each."""
    calc = ours if side == "closed" else ours_message
    rows = _rows(multi_dim=True)
    assert len(rows) == 88
    for r in rows:
        assert _dev(calc(r), r) <= MULTI_DIM_BOUND, r


def test_direct_all_reduce_sends_before_the_last_sum_on_a_ring():
    """ASTRA-sim's direct all-reduce frees one all-gather send per finished sum once every
    reduce-scatter message has arrived; on a ring (far peers' messages later) that is before
    the last sum once a sum takes longer than a link's latency. The message run (all-gather
    after the last sum) is slower there by a link latency per chunk at 16 MiB and two from
    64 MiB on Ring(8); the closed form is exact; on FullyConnected(8) both are."""
    rows = {(r["network"], int(r["size_bytes"])): r for r in read_reference()
            if r["collective"] == "allreduce" and r["algorithm"] == "direct"}
    for size, latencies in ((1 << 22, 0), (1 << 24, 1), (1 << 26, 2), (1 << 30, 2)):
        r = rows[("Ring8", size)]
        peer = float(r["astrasim_cycles"])
        assert ours(r) == peer
        assert ours_message(r) - peer == pytest.approx(4 * latencies * 500.0, abs=6.0)
    r = rows[("FullyConnected8", 1 << 26)]
    assert ours_message(r) == pytest.approx(float(r["astrasim_cycles"]), abs=6.0)


def test_every_stage_starts_with_an_endpoint_delay():
    """ASTRA-sim's first packet bundle of a chunk's stage goes through the memory bus: without
    that delay every point at 1 KiB misses (by 4 or 5 endpoint delays)."""
    r = next(r for r in read_reference() if r["network"] == "Ring8" and r["collective"] == "all_gather"
             and r["algorithm"] == "ring" and int(r["size_bytes"]) == 1024)
    assert ours(r) == float(r["astrasim_cycles"])
    assert ours(r, endpoint_delay_ns=0.0) < float(r["astrasim_cycles"]) - 8 * 10


def test_double_binary_tree_needs_overlapping_chunks():
    """Chunks one after the other (no overlap) miss by far: the overlap is ASTRA-sim's."""
    r = next(r for r in read_reference() if r["network"] == "FullyConnected8" and r["algorithm"] == "doubleBinaryTree"
             and int(r["size_bytes"]) == 1 << 30)
    assert _dev(ours(r, pipeline=False), r) > 10


def test_multi_dimensional_rows_need_the_pipeline():
    """Without chunks overlapping over the dimensions the small sizes miss by far: the
    pipeline is what makes the multi-dimensional rows match, not a loose bound."""
    r = next(r for r in _rows(multi_dim=True) if r["collective"] == "allreduce" and r["algorithm"] == "ring"
             and int(r["size_bytes"]) == 1024)
    assert _dev(ours(r, pipeline=False), r) > 20
    assert _dev(ours(r), r) <= MULTI_DIM_BOUND


def test_message_model_is_the_closed_form_run_message_by_message():
    """Two implementations of the same semantics: the message run never beats the closed form
    (which truncates each message to whole ns) and is within 0.2 % of it, but for the direct
    all-reduce's early all-gather on a ring (the test above)."""
    for r in _rows():
        if r["collective"] == "allreduce" and r["algorithm"] == "direct" and "Ring" in r["topologies"]:
            continue
        closed, msg = ours(r), ours_message(r)
        assert closed <= msg <= closed * 1.002, r


def test_a_deviation_is_not_hidden():
    """The comparison can fail: a wrong latency gives deviations far past the bounds."""
    r = next(r for r in read_reference() if r["network"] == "Ring8" and r["algorithm"] == "ring"
             and r["collective"] == "allreduce" and int(r["size_bytes"]) == 1024)
    peer = float(r["astrasim_cycles"])
    for calc in (ours, ours_message):
        assert abs(calc(dict(r, latency_ns="250")) - peer) / peer > 0.3
        assert calc(r) == pytest.approx(peer, rel=0.004)


AWARE_CSV = Path(__file__).resolve().parents[2] / "bench" / "data" / "astrasim_collectives_aware.csv"


def test_congestion_aware_runs_where_our_link_sharing_is_astrasims():
    """ASTRA-sim's congestion-aware backend (one dimension; 72 stored runs) against our
    message run with shared links: where every message has a link to itself (FullyConnected,
    ring on a ring, halving-doubling on Ring(8)) within 0.2 %; on a switch's two-link paths
    only when messages cross link by link (store-and-forward), as ASTRA-sim moves a chunk."""
    rows = read_reference(AWARE_CSV)
    assert len(rows) == 72 and not [r for r in rows if "x" in r["npus"]]
    for r in rows:
        peer = float(r["astrasim_cycles"])
        one_link = r["network"] == "FullyConnected8" or (
            r["network"] == "Ring8" and r["algorithm"] in ("ring", "halvingDoubling"))
        if one_link:
            assert _dev(ours_message(r, "aware"), r) <= 0.2, r
        if r["network"] == "Switch8" and r["algorithm"] in ("ring", "halvingDoubling"):
            assert _dev(ours_message(r, "store-and-forward"), r) <= 0.2, r
            if int(r["size_bytes"]) == 1 << 30:  # cut-through: one serialisation where ASTRA-sim has two
                assert ours_message(r, "aware") < 0.55 * peer, r
