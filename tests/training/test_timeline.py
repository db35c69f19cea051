"""The training-iteration timeline: hand-worked schedules, invariants over random layer lists
(hypothesis), the optimiser step, bad input, and the trace and Gantt outputs."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hw_models.training.comm import AlphaBeta
from hw_models.training.costs import LayerCost, OptimizerCost, as_layer_costs
from hw_models.training.policies import (DeAR, MGWFBP, Collective, Piece, Policy, PolicyError, PriorityPartition,
                                         Prophet, Sequential, TensorFusion, WaitFreeBackprop)
from hw_models.training.timeline import simulate
from hw_models.report.timeline import plot_gantt, trace_document, write_trace
from noc.base.errors import ConfigError, HwModelsError

MIB = 1 << 20


def all_policies():
    return [Sequential(), Sequential(fused=True), WaitFreeBackprop(), TensorFusion(0), TensorFusion(MIB), MGWFBP(),
            PriorityPartition(256 << 10), Prophet(), Prophet(256 << 10), Prophet(strict=True), DeAR(0), DeAR(MIB)]


layer_st = st.builds(
    LayerCost, name=st.sampled_from(["conv", "fc", "norm"]),
    fwd_s=st.one_of(st.just(0.0), st.floats(1e-6, 2e-3)),
    bwd_s=st.one_of(st.just(0.0), st.floats(1e-6, 4e-3)),
    grad_bytes=st.one_of(st.just(0), st.integers(1, 4 * MIB)))
layers_st = st.lists(layer_st, min_size=1, max_size=7)
comm_st = st.builds(AlphaBeta, latency_s=st.one_of(st.just(0.0), st.floats(1e-7, 1e-4)),
                    bytes_per_s=st.floats(1e8, 1e11), num_workers=st.integers(2, 16))
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def compute_total(layers, upd=0.0):
    return sum(x.fwd_s + x.bwd_s for x in layers) + upd


def synced_from_events(result):
    """(iteration, layer) -> when the last all-reduce or all-gather covering it ended,
    recomputed from the collectives (independently of the engine's own bookkeeping)."""
    done = defaultdict(float)
    for e in result.comm_events:
        if e.kind != "reduce_scatter":
            for p in e.pieces:
                done[(e.iteration, p.layer)] = max(done[(e.iteration, p.layer)], e.end_s)
    return done


def check_invariants(layers, comm, result):
    L = len(layers)
    ce, ne = result.compute_events, result.comm_events
    # each resource runs one thing at a time
    for evs in (ce, ne):
        for a, b in zip(evs, evs[1:]):
            assert b.start_s >= a.end_s - 1e-12
    # program order: forward 0..L-1, backward L-1..0
    fwd = {(e.iteration, e.layer): e for e in ce if e.op == "forward"}
    bwd = {(e.iteration, e.layer): e for e in ce if e.op == "backward"}
    k = len(result.iterations)
    for it in range(k):
        for i in range(L - 1):
            assert fwd[(it, i + 1)].start_s >= fwd[(it, i)].end_s - 1e-12
            assert bwd[(it, i)].start_s >= bwd[(it, i + 1)].end_s - 1e-12
    # every gradient's bytes move exactly once: all-reduce + reduce-scatter bytes == grad_bytes,
    # all-gather bytes == reduce-scatter bytes, per layer and iteration
    moved = defaultdict(lambda: defaultdict(int))
    for e in ne:
        for p in e.pieces:
            moved[(e.iteration, p.layer)][e.kind] += p.nbytes
            # a collective of a layer starts after its gradient appeared
            assert e.start_s >= bwd[(e.iteration, p.layer)].end_s - 1e-12
    for it in range(k):
        for i, layer in enumerate(layers):
            m = moved[(it, i)]
            assert m["allreduce"] + m["reduce_scatter"] == layer.grad_bytes
            assert m["all_gather"] == m["reduce_scatter"]
        assert result.iterations[it].comm_bytes == sum(x.grad_bytes for x in layers)
    # gating: layer i's next forward pass after its gradient is synchronised
    done = synced_from_events(result)
    for it in range(k):
        for i, layer in enumerate(layers):
            if layer.grad_bytes:
                assert fwd[(it + 1, i)].start_s >= done[(it, i)] - 1e-12
    # steady state: iterations after the first are alike; the compute waits only for the network
    steady = result.iterations[1:]
    for s in steady:
        assert s.iteration_s == pytest.approx(steady[0].iteration_s, rel=1e-9, abs=1e-15)
        assert s.idle_s == pytest.approx(s.exposed_comm_s, rel=1e-9, abs=1e-12)
        assert s.iteration_s == pytest.approx(s.compute_s + s.exposed_comm_s, rel=1e-9, abs=1e-12)
    # no policy beats the bound: the compute, and the cheapest way to all-reduce all bytes
    # (alpha-beta costs are subadditive, and RS + AG costs one all-reduce)
    bound = max(compute_total(layers), comm.allreduce_s(sum(x.grad_bytes for x in layers)))
    assert result.iteration_s >= bound * (1 - 1e-9) - 1e-15


@FAST
@given(layers=layers_st, comm=comm_st)
def test_invariants_hold_for_every_policy(layers, comm):
    for policy in all_policies():
        check_invariants(layers, comm, simulate(layers, comm, policy))


@FAST
@given(layers=layers_st, n=st.integers(2, 64))
def test_free_network_iteration_is_the_compute(layers, n):
    comm = AlphaBeta(0.0, math.inf, n)
    for policy in all_policies():
        r = simulate(layers, comm, policy)
        assert r.iteration_s == pytest.approx(compute_total(layers), rel=1e-9, abs=1e-15)
        assert r.exposed_comm_s == 0.0


@FAST
@given(sizes=st.lists(st.integers(0, 8 * MIB), min_size=1, max_size=8), comm=comm_st)
def test_zero_compute_sequential_is_the_sum_of_allreduces(sizes, comm):
    layers = [LayerCost(f"l{i}", 0.0, 0.0, b) for i, b in enumerate(sizes)]
    r = simulate(layers, comm, Sequential())
    assert r.iteration_s == pytest.approx(sum(comm.allreduce_s(b) for b in sizes if b), rel=1e-9, abs=1e-15)
    fused = simulate(layers, comm, Sequential(fused=True))
    assert fused.iteration_s == pytest.approx(comm.allreduce_s(sum(sizes)), rel=1e-9, abs=1e-15)
    for policy in all_policies():  # nothing to overlap with: the iteration is the network's busy time
        res = simulate(layers, comm, policy)
        assert res.iteration_s == pytest.approx(res.comm_s, rel=1e-9, abs=1e-15)


# ---- schedules worked out by hand ---------------------------------------------------------
# Two layers, forward 1 s, backward 2 s each; layer 0 has 1 byte of gradient, layer 1 3 bytes;
# 2 workers, alpha 0, 1 B/s: an all-reduce of b bytes takes b s, a reduce-scatter b/2 s.
HAND = [LayerCost("a", 1.0, 2.0, 1), LayerCost("b", 1.0, 2.0, 3)]
HAND_COMM = AlphaBeta(0.0, 1.0, 2)


def test_hand_wfbp():
    # it. 1: fwd [8,10], bwd b [10,12] -> AR b [12,15]; bwd a [12,14] -> AR a [15,16]; next fwd at 16
    r = simulate(HAND, HAND_COMM, WaitFreeBackprop())
    assert [s.start_s for s in r.iterations] == [0.0, 8.0, 16.0]
    assert r.iteration_s == 8.0 and r.compute_s == 6.0 and r.comm_s == 4.0
    assert r.exposed_comm_s == 2.0 and r.overlap_ratio == 0.5 and r.idle_s == 2.0
    assert [(e.start_s, e.end_s) for e in r.comm_events[2:4]] == [(12.0, 15.0), (15.0, 16.0)]


def test_hand_sequential():
    r = simulate(HAND, HAND_COMM, Sequential())
    assert r.iteration_s == 10.0 and r.exposed_comm_s == 4.0 and r.overlap_ratio == 0.0


def test_hand_priority_slices():
    # 1-byte slices: at 6 s (it. 0) a's gradient overtakes b's last slice; it. 1 ends at 14 s
    r = simulate(HAND, HAND_COMM, PriorityPartition(1))
    assert [s.start_s for s in r.iterations] == [0.0, 7.0, 14.0]
    assert [(e.layers, e.start_s) for e in r.comm_events[:4]] == [((1,), 4.0), ((1,), 5.0), ((0,), 6.0), ((1,), 7.0)]


def test_hand_dear():
    # RS b [11.5,13], RS a [13.5,14], then AG a [14,14.5] (front first), AG b [14.5,16]
    r = simulate(HAND, HAND_COMM, DeAR(0))
    assert [s.start_s for s in r.iterations] == [0.0, 7.0, 14.5]
    it1 = [(e.kind, e.layers, e.start_s, e.end_s) for e in r.comm_events if e.iteration == 1]
    assert it1 == [("reduce_scatter", (1,), 11.5, 13.0), ("reduce_scatter", (0,), 13.5, 14.0),
                   ("all_gather", (0,), 14.0, 14.5), ("all_gather", (1,), 14.5, 16.0)]
    assert r.iterations[1].comm_s == 4.0 and r.iterations[1].exposed_comm_s == 1.5


def test_layer_events():
    r = simulate(HAND, HAND_COMM, WaitFreeBackprop())
    ev = {(e.iteration, e.layer): e for e in r.layer_events}
    b1 = ev[(1, 1)]
    assert (b1.name, b1.forward_start_s, b1.backward_start_s, b1.backward_end_s, b1.comm_start_s, b1.synced_s) == (
        "b", 9.0, 10.0, 12.0, 12.0, 15.0)
    assert ev[(1, 0)].synced_s == 16.0


# ---- the optimiser step ---------------------------------------------------------------------


@FAST
@given(layers=layers_st, u=st.floats(1e-6, 1e-3), g=st.floats(0.0, 1e-3))
def test_optimizer_cost_on_a_free_network(layers, u, g):
    free = AlphaBeta(0.0, math.inf, 8)
    per = simulate(layers, free, WaitFreeBackprop(), optimizer=OptimizerCost(per_layer_s=u))
    assert per.iteration_s == pytest.approx(compute_total(layers, len(layers) * u), rel=1e-9)
    glob = simulate(layers, free, WaitFreeBackprop(), optimizer=OptimizerCost(global_s=g))
    assert glob.iteration_s == pytest.approx(compute_total(layers, g), rel=1e-9, abs=1e-15)


@FAST
@given(layers=layers_st, comm=comm_st)
def test_optimizer_gating(layers, comm):
    per = simulate(layers, comm, Prophet(), optimizer=OptimizerCost(per_layer_s=tuple(
        1e-5 * (i + 1) for i in range(len(layers)))))
    done = synced_from_events(per)
    upd = {(e.iteration, e.layer): e for e in per.compute_events if e.op == "update"}
    fwd = {(e.iteration, e.layer): e for e in per.compute_events if e.op == "forward"}
    for (it, i), e in upd.items():
        assert e.end_s - e.start_s == pytest.approx(1e-5 * (i + 1))
        assert e.start_s >= done[(it, i)] - 1e-12 and fwd[(it + 1, i)].start_s >= e.end_s - 1e-12
    glob = simulate(layers, comm, Prophet(), optimizer=OptimizerCost(global_s=1e-4))
    done = synced_from_events(glob)
    for e in (x for x in glob.compute_events if x.op == "global_update"):
        assert e.start_s >= max([done[(e.iteration, i)] for i in range(len(layers))] + [0.0]) - 1e-12
        assert min(x.start_s for x in glob.compute_events
                   if x.op == "forward" and x.iteration == e.iteration + 1) >= e.end_s - 1e-12


# ---- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, msg", [
    ({"fwd_s": -1.0}, r"LayerCost\('x'\).fwd_s = -1.0: must be a finite number of seconds >= 0"),
    ({"bwd_s": math.inf}, r"bwd_s = inf"),
    ({"grad_bytes": 1.5}, r"grad_bytes = 1.5: must be an integer"),
    ({"grad_bytes": -1}, r"grad_bytes = -1"),
    ({"name": ""}, r"LayerCost.name = ''"),
])
def test_layer_cost_rejects_bad_values(kwargs, msg):
    args = {"name": "x", "fwd_s": 1.0, "bwd_s": 1.0, "grad_bytes": 4, **kwargs}
    with pytest.raises(ConfigError, match=msg):
        LayerCost(**args)


def test_duck_typed_layers_and_bad_lists():
    duck = [SimpleNamespace(name="a", fwd_s=1.0, bwd_s=2.0, grad_bytes=4)]
    assert as_layer_costs(duck) == (LayerCost("a", 1.0, 2.0, 4),)
    with pytest.raises(ConfigError, match="at least one layer"):
        as_layer_costs([])
    with pytest.raises(ConfigError, match=r"layers\[0\] = 3: not a layer cost"):
        as_layer_costs([3])


def test_optimizer_cost_bad_input():
    with pytest.raises(ConfigError, match="not both"):
        OptimizerCost(per_layer_s=1.0, global_s=1.0)
    with pytest.raises(ConfigError, match=r"per_layer_s has 1 values; the model has 2 layers"):
        simulate(HAND, HAND_COMM, WaitFreeBackprop(), optimizer=OptimizerCost(per_layer_s=(1.0,)))
    with pytest.raises(ConfigError, match=r"global_s = -2"):
        OptimizerCost(global_s=-2)


def test_iterations_checked():
    with pytest.raises(ConfigError, match="iterations = 1: must be an integer >= 2"):
        simulate(HAND, HAND_COMM, WaitFreeBackprop(), iterations=1)


class _Wrong(Policy):
    name = "wrong"

    def next_collective(self, view):
        p = view.pending[0]
        return Collective("allreduce", (Piece(p.layer, p.offset_bytes + 1, 1),))


class _Never(Policy):
    name = "never"

    def next_collective(self, view):
        return None


def test_policy_errors():
    with pytest.raises(PolicyError, match="policy wrong: allreduce piece .* is not the front of a waiting"):
        simulate(HAND, HAND_COMM, _Wrong())
    with pytest.raises(PolicyError, match="policy never left 4 gradient bytes waiting"):
        simulate(HAND, HAND_COMM, _Never())


# ---- trace and Gantt ---------------------------------------------------------------------------


def check_chrome_trace(doc):
    """The Chrome trace event format (JSON object form), checked by hand: the checks
    ui.perfetto.dev's JSON importer relies on (the trace processor itself needs a download)."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    tracks = defaultdict(list)
    for ev in doc["traceEvents"]:
        assert ev["ph"] in ("X", "M", "i")
        assert isinstance(ev["name"], str) and isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        if ev["ph"] == "M":
            assert ev["name"] in ("process_name", "thread_name", "thread_sort_index")
            assert isinstance(ev["args"], dict) and ev["args"]
        else:
            assert isinstance(ev["ts"], (int, float)) and math.isfinite(ev["ts"]) and ev["ts"] >= 0
        if ev["ph"] == "i":
            assert ev["s"] in ("g", "p", "t")
        if ev["ph"] == "X":
            assert isinstance(ev["dur"], (int, float)) and ev["dur"] >= 0
            tracks[(ev["pid"], ev["tid"])].append((ev["ts"], ev["ts"] + ev["dur"]))
    for spans in tracks.values():  # slices on one track nest or follow each other: here, follow
        spans.sort()
        for a, b in zip(spans, spans[1:]):
            assert b[0] >= a[1] - 1e-6
    json.dumps(doc)  # plain JSON values only
    return tracks


def test_trace_document_and_files(tmp_path):
    r = simulate(HAND, HAND_COMM, DeAR(0))
    doc = trace_document(r)
    tracks = check_chrome_trace(doc)
    assert len(tracks[(1, 1)]) == len(r.compute_events) and len(tracks[(1, 2)]) == len(r.comm_events)
    names = {(ev["tid"], ev["args"]["name"]) for ev in doc["traceEvents"] if ev["name"] == "thread_name"}
    assert names == {(1, "compute"), (2, "network")}
    net = [ev for ev in doc["traceEvents"] if ev["ph"] == "X" and ev["tid"] == 2]
    assert [ev["dur"] for ev in net] == [pytest.approx((e.end_s - e.start_s) * 1e6) for e in r.comm_events]
    per_iter = defaultdict(int)
    for ev in net:
        if ev["cat"] != "all_gather":
            per_iter[ev["args"]["iteration"]] += ev["args"]["bytes"]
    assert set(per_iter.values()) == {4}
    out = write_trace(r, tmp_path / "t.json")
    assert json.loads(out.read_text()) == json.loads(json.dumps(doc))
    with pytest.raises(HwModelsError, match="exists"):
        write_trace(r, out)
    write_trace(r, out, overwrite=True)
    png = plot_gantt(r, tmp_path / "g.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(HwModelsError, match="exists"):
        plot_gantt(r, png)
