"""The communication-scheduling policies: each one's rule, checked on the collectives it
produced, and the direction of its paper's gain on a small synthetic set-up."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hw_models.training.comm import AlphaBeta
from hw_models.training.costs import LayerCost
from hw_models.training.policies import (POLICIES, DeAR, MGWFBP, PriorityPartition, Prophet, Sequential,
                                         TensorFusion, WaitFreeBackprop, fusion_buckets, gradient_ready_s,
                                         make_policy, mgwfbp_groups)
from hw_models.training.timeline import simulate
from noc.base.errors import ConfigError

MIB = 1 << 20
KIB = 1 << 10

layer_st = st.builds(
    LayerCost, name=st.just("l"), fwd_s=st.floats(0.0, 2e-3), bwd_s=st.one_of(st.just(0.0), st.floats(1e-6, 4e-3)),
    grad_bytes=st.one_of(st.just(0), st.integers(1, 4 * MIB)))
layers_st = st.lists(layer_st, min_size=1, max_size=8)
comm_st = st.builds(AlphaBeta, latency_s=st.one_of(st.just(0.0), st.floats(1e-7, 1e-4)),
                    bytes_per_s=st.floats(1e8, 1e11), num_workers=st.integers(2, 16))
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def grad_ready(result):
    """(iteration, layer) -> when the backward pass produced the gradient."""
    return {(e.iteration, e.layer): e.end_s for e in result.compute_events if e.op == "backward"}


def backward_end(result, it):
    return max(e.end_s for e in result.compute_events if e.op == "backward" and e.iteration == it)


# ---- plans -------------------------------------------------------------------------------------


def test_fusion_buckets():
    layers = [LayerCost(f"l{i}", 0, 0, b) for i, b in enumerate([5, 0, 3, 4, 10])]
    assert fusion_buckets(layers, 0) == ((4,), (3,), (2,), (0,))
    assert fusion_buckets(layers, 7) == ((4,), (3, 2), (0,))  # closes once it holds >= 7 bytes
    assert fusion_buckets(layers, 1000) == ((4, 3, 2, 0),)


def test_mgwfbp_extremes():
    layers = [LayerCost(f"l{i}", 1e-3, 1e-3, MIB) for i in range(6)]
    # no start-up cost and all-reduces shorter than the gaps: nothing to merge
    assert mgwfbp_groups(layers, AlphaBeta(0.0, 1e10, 8)) == tuple((i,) for i in reversed(range(6)))
    # a start-up cost far above the gaps: everything merges
    assert mgwfbp_groups(layers, AlphaBeta(1.0, 1e10, 8)) == (tuple(reversed(range(6))),)


def predicted_comm_end(layers, comm, groups):
    """MG-WFBP's model of one backward pass: a group's all-reduce starts when the previous one
    ended and its last gradient is there; the time the last one ends."""
    ready = gradient_ready_s(layers)
    end = 0.0
    for g in groups:
        end = max(end, max(ready[i] for i in g)) + comm.allreduce_s(sum(layers[i].grad_bytes for i in g))
    return end


@settings(max_examples=60, deadline=None)
@given(layers=layers_st, comm=comm_st)
def test_mgwfbp_merges_never_delay_the_communication(layers, comm):
    """Under the linear cost model each merge the rule makes ends the backward pass's
    communication no later than sending every gradient on its own (WFBP)."""
    groups = mgwfbp_groups(layers, comm)
    with_grad = [i for i in reversed(range(len(layers))) if layers[i].grad_bytes]
    assert [i for g in groups for i in g] == with_grad  # a partition, in backward order
    alone = tuple((i,) for i in with_grad)
    assert predicted_comm_end(layers, comm, groups) <= predicted_comm_end(layers, comm, alone) * (1 + 1e-12) + 1e-15


# ---- each policy's rule, on its collectives ------------------------------------------------------


@FAST
@given(layers=layers_st, comm=comm_st)
def test_sequential_waits_for_the_backward_pass(layers, comm):
    r = simulate(layers, comm, Sequential())
    for e in r.comm_events:
        assert e.start_s >= backward_end(r, e.iteration) and len(e.pieces) == 1


@FAST
@given(layers=layers_st, comm=comm_st)
def test_fusion_with_no_threshold_is_wfbp(layers, comm):
    a, b = simulate(layers, comm, TensorFusion(0)), simulate(layers, comm, WaitFreeBackprop())
    assert [(e.kind, e.pieces, e.start_s, e.end_s) for e in a.comm_events] == [
        (e.kind, e.pieces, e.start_s, e.end_s) for e in b.comm_events]


@FAST
@given(layers=layers_st, comm=comm_st, threshold=st.integers(0, 8 * MIB))
def test_fusion_sends_whole_buckets_once_complete(layers, comm, threshold):
    r = simulate(layers, comm, TensorFusion(threshold))
    buckets = fusion_buckets(layers, threshold)
    ready = grad_ready(r)
    for it in range(len(r.iterations)):
        mine = [e for e in r.comm_events if e.iteration == it]
        assert [e.layers for e in mine] == list(buckets)
        for e in mine:
            assert e.start_s >= max(ready[(it, i)] for i in e.layers)


@FAST
@given(layers=layers_st, comm=comm_st, slice_bytes=st.integers(32 * KIB, 2 * MIB))
def test_priority_partition_takes_the_front_layer(layers, comm, slice_bytes):
    """Every slice is at most ``slice_bytes``, and no slice of a back layer starts while a
    front layer's gradient is waiting (produced, not yet all sent)."""
    r = simulate(layers, comm, PriorityPartition(slice_bytes))
    ready = grad_ready(r)
    for it in range(len(r.iterations)):
        mine = [e for e in r.comm_events if e.iteration == it]
        assert len(mine) == sum(math.ceil(x.grad_bytes / slice_bytes) for x in layers)
        last_start = {}
        for e in mine:
            assert e.nbytes <= slice_bytes
            last_start[e.layers[0]] = e.start_s
        for e in mine:
            (a,) = e.layers
            for b in range(a):
                waiting = layers[b].grad_bytes and ready[(it, b)] <= e.start_s < last_start[b]
                assert not waiting, f"slice of layer {a} at {e.start_s} while layer {b} waited"


@FAST
@given(layers=layers_st, comm=comm_st, part=st.sampled_from([None, 64 * KIB, MIB]), strict=st.booleans())
def test_prophet_blocks_fit_the_gap_to_the_next_gradient(layers, comm, part, strict):
    r = simulate(layers, comm, Prophet(part, strict=strict))
    ready = grad_ready(r)
    for it in range(len(r.iterations)):
        arrivals = sorted(ready[(it, i)] for i in range(len(layers)) if layers[i].grad_bytes)
        for e in (x for x in r.comm_events if x.iteration == it):
            nxt = [t for t in arrivals if t > e.start_s]
            assert [p.layer for p in e.pieces] == sorted(p.layer for p in e.pieces)  # priority order
            if not nxt:  # the backward pass is over: one gradient (or partition) at a time
                assert len(e.pieces) == 1
                continue
            fits = e.end_s <= nxt[0] * (1 + 1e-12)
            single = len(e.pieces) == 1 and (part is None or e.nbytes <= part)
            assert fits or (single and not strict)


@FAST
@given(layers=layers_st, comm=comm_st, threshold=st.integers(0, 8 * MIB))
def test_dear_reduce_scatters_in_backward_all_gathers_after(layers, comm, threshold):
    r = simulate(layers, comm, DeAR(threshold))
    buckets = fusion_buckets(layers, threshold)
    for it in range(len(r.iterations)):
        mine = [e for e in r.comm_events if e.iteration == it]
        rs = [e for e in mine if e.kind == "reduce_scatter"]
        ag = [e for e in mine if e.kind == "all_gather"]
        assert [e.layers for e in rs] == list(buckets)
        assert sorted(e.layers for e in ag) == sorted(buckets)
        assert [min(e.layers) for e in ag] == sorted(min(e.layers) for e in ag)  # front bucket first
        if ag:
            assert min(e.start_s for e in ag) >= max(e.end_s for e in rs)  # one stream: RS queued first
            assert min(e.start_s for e in ag) >= backward_end(r, it)
        assert all(e.kind in ("reduce_scatter", "all_gather") for e in mine)


def test_make_policy():
    assert isinstance(make_policy("p3", slice_bytes=4096), PriorityPartition)
    assert set(POLICIES) == {"sequential", "wfbp", "fusion", "mgwfbp", "p3", "prophet", "dear"}
    for cls in POLICIES.values():  # every policy names its source
        assert cls.source and cls.__doc__
    with pytest.raises(ConfigError, match="policy 'horovod' is unknown"):
        make_policy("horovod")
    with pytest.raises(ConfigError, match="policy p3: bad option"):
        make_policy("p3", threshold_bytes=3)
    with pytest.raises(ConfigError, match=r"PriorityPartition.slice_bytes = 0: must be an integer number of bytes >= 1"):
        PriorityPartition(0)
    with pytest.raises(ConfigError, match=r"TensorFusion.threshold_bytes = -1"):
        TensorFusion(-1)


# ---- the direction of the papers' gains, on small synthetic set-ups -----------------------------
# 32 alike layers (forward 0.5 ms, backward 1 ms, 2 MiB of gradient each), 16 workers, ring
# all-reduce with a per-step start-up cost: communication-bound, start-ups matter.
UNIFORM = [LayerCost(f"l{i}", 0.5e-3, 1e-3, 2 * MIB) for i in range(32)]


def steady(policy, comm, layers=UNIFORM):
    return simulate(layers, comm, policy).iteration_s


@pytest.mark.parametrize("alpha, bw", [(5e-6, 3e9), (2e-5, 3e9), (5e-5, 12.5e9)])
def test_prophet_beats_priority_and_wfbp_with_start_up_costs(alpha, bw):
    """Prophet (ICPP 2021) against ByteScheduler-style priority scheduling with partitions and
    against first-come-first-served (WFBP): blocks save start-ups and keep priority."""
    comm = AlphaBeta(alpha, bw, 16)
    prophet = steady(Prophet(), comm)
    for other in (PriorityPartition(256 * KIB), PriorityPartition(MIB), WaitFreeBackprop()):
        assert prophet < steady(other, comm), other.label


@pytest.mark.parametrize("alpha, bw", [(5e-6, 1.25e9), (5e-5, 1.25e9), (5e-5, 3e9)])
def test_dear_beats_wfbp(alpha, bw):
    """DeAR (ICDCS 2023) against WFBP: decoupling alone (one bucket per layer) hides the
    all-gathers behind the next forward pass, and fusion saves start-ups on top."""
    comm = AlphaBeta(alpha, bw, 16)
    wfbp = steady(WaitFreeBackprop(), comm)
    assert steady(DeAR(0), comm) < wfbp
    assert steady(DeAR(8 * MIB), comm) < wfbp


def test_mgwfbp_beats_wfbp_on_many_small_layers():
    """MG-WFBP (INFOCOM 2019): many small gradients and a start-up cost, merged wisely."""
    layers = [LayerCost(f"l{i}", 0.1e-3, 0.2e-3, 64 * KIB) for i in range(64)]
    comm = AlphaBeta(2e-5, 3e9, 16)
    assert steady(MGWFBP(), comm, layers) < 0.8 * steady(WaitFreeBackprop(), comm, layers)
