"""The parts of a run that follow the schedule rather than the network, each against a
plain second implementation: per-pair routes against the full route table, the
dependency lists against a dictionary of arrivals, idle fractions against interval
unions."""

from __future__ import annotations

import numpy as np
import pytest

from nic.allreduce import NicConfig, _idle_fraction
from nic.preparation import dependencies, prepare, transfer_routes
from nic.collectives import build
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.routing import route, route_pairs, tie_variants
from noc.topology import parse_spec


_WRAPPED = ["torus:4x4", "torus:6x4:c4", "ring:7", "torus:3x4x2"]  # dateline and VC rules are options of these
_ROUTE_CASES = ([(spec, {}) for spec in _WRAPPED + ["mesh:5x3", "mesh:4x4:c2", "fattree:k4:l2", "hypercube:d3"]]
                + [(spec, opt) for spec in _WRAPPED for opt in ({"dateline": False}, {"vc_rule": "booksim"})])


@pytest.mark.parametrize("spec,options", _ROUTE_CASES)
def test_route_pairs_are_the_tables_rows(spec, options):
    t = parse_spec(spec)
    variants = tie_variants(t) if t.family == "torus" else [None]
    rng = np.random.default_rng(5)
    e = t.num_endpoints
    for ties in variants[:2]:
        extra = {} if ties is None else {"tie_signs": ties}
        full = route(t, **options, **extra)
        src = np.concatenate([np.arange(e), rng.integers(0, e, 400)])
        dst = np.concatenate([np.arange(e), rng.integers(0, e, 400)])  # the first e pairs go nowhere
        pr = route_pairs(t, src, dst, **options, **extra)
        assert (pr.algorithm, pr.num_vc_classes) == (full.algorithm, full.num_vc_classes)
        w = pr.max_links
        assert (pr.length == full.length[src, dst]).all()
        assert (pr.links == full.links[src, dst, :w]).all() and (full.links[src, dst, w:] == -1).all()
        assert (pr.vc_class == full.vc_class[src, dst, :w]).all()


def test_route_pairs_width_follows_the_pairs():
    t = parse_spec("torus:32x32:c4")
    ep = t.node_endpoints[:, 0]
    pr = route_pairs(t, ep[[0, 1, 2]], ep[[1, 2, 3]])  # neighbours
    assert pr.links.shape == (3, 3)


def _dependencies_by_dict(schedule):
    arrivals: dict = {}
    for j, (d, f, o) in enumerate(zip(schedule.dst.tolist(), schedule.flow.tolist(), schedule.op.tolist())):
        arrivals.setdefault((d, f, o), []).append(j)
    ptr, idx = [0], []
    for v, f, o in zip(schedule.src.tolist(), schedule.flow.tolist(), schedule.op.tolist()):
        deps = arrivals.get((v, f, OP_REDUCE), []) if o == OP_REDUCE else \
            (arrivals.get((v, f, OP_GATHER)) or arrivals.get((v, f, OP_REDUCE), []))
        idx.extend(deps)
        ptr.append(len(idx))
    return np.asarray(ptr), np.asarray(idx)


@pytest.mark.parametrize("spec", ["torus:4x4", "mesh:3x5:c2", "torus:8x8:c4", "ring:9"])
@pytest.mark.parametrize("algorithm", ["ring", "dbtree", "halving_doubling", "multitree", "bidir_ring"])
def test_dependencies_match_a_dictionary_of_arrivals(spec, algorithm):
    s = build(parse_spec(spec), algorithm)
    ptr, idx = dependencies(s)
    ref_ptr, ref_idx = _dependencies_by_dict(s)
    assert (ptr == ref_ptr).all() and (idx == ref_idx).all()


def test_idle_fraction_is_one_minus_the_union_of_busy_intervals():
    t = parse_spec("torus:4x4:c2")
    s = build(t, "multitree")
    prep = prepare(t, s, NicConfig(), 1 << 16)
    rng = np.random.default_rng(2)
    start = rng.uniform(0, 100, s.num_transfers).round()
    sent = start + rng.uniform(0, 30, s.num_transfers)
    total = float(sent.max())
    got = _idle_fraction(prep, start, sent, t.num_nodes, total)
    for v in range(t.num_nodes):
        ivs = sorted(zip(start[prep.src_node == v], sent[prep.src_node == v]))
        busy, cs, ce = 0.0, None, None
        for a, b in ivs:
            if ce is None or a > ce:
                busy += 0.0 if ce is None else ce - cs
                cs, ce = a, b
            else:
                ce = max(ce, b)
        busy += 0.0 if ce is None else ce - cs
        assert got[v] == pytest.approx(1 - busy / total, abs=2e-6)


def test_a_run_too_big_for_the_memory_limit_is_refused_with_its_estimate(monkeypatch):
    import nic.allreduce as allreduce
    from noc.base.errors import ConfigError

    t = parse_spec("torus:8x8:c4")
    s = build(t, "multitree")
    prep = prepare(t, s, NicConfig(), 1 << 20)
    paths = transfer_routes(t, prep, None)
    need = allreduce.message_run_bytes(s, paths)
    # the formula: per transfer, per path link, and the verifier's three vectors
    assert paths.max_links == 3
    assert need == s.num_transfers * (allreduce.MESSAGE_BYTES_PER_TRANSFER + 3 * allreduce.MESSAGE_BYTES_PER_PATH_LINK) \
        + 24 * 64 * (2 * 64 + 1)
    monkeypatch.setattr(allreduce, "MAX_RUN_BYTES", need - 1)
    with pytest.raises(ConfigError, match=r"multitree on torus:8x8:c4: 8,064 transfers; .* GiB \(limit 0 GiB\)"):
        allreduce.simulate_allreduce(t, s, NicConfig(), None, 1 << 20)
    monkeypatch.setattr(allreduce, "MAX_RUN_BYTES", need)
    assert allreduce.simulate_allreduce(t, s, NicConfig(), None, 1 << 20).verified


@pytest.mark.parametrize("model", ["message", "flit"])
def test_a_routing_that_can_deadlock_is_named_before_either_model_runs(model):
    """A torus without dateline classes: halving-doubling's two-hop exchanges around each
    4-node ring close a cycle of channel dependencies. Both models run the dependency check
    first and warn the same way; a run that then stops is a DeadlockError at both levels
    (bulk transfers' heads hold their VCs around the cycle); neighbour-only schedules close
    none (one router link per path)."""
    import warnings

    from nic.allreduce import simulate_allreduce
    from noc.base.errors import DeadlockError, DeadlockRiskWarning
    from noc.flit import FlitNetworkConfig

    t = parse_spec("torus:4x4")
    net = FlitNetworkConfig(num_vcs=1, dateline=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeadlockRiskWarning)
        assert simulate_allreduce(t, build(t, "multitree"), NicConfig(), net, 1 << 16, model=model).verified
    s = build(t, "halving_doubling")
    with pytest.warns(DeadlockRiskWarning, match=r"can deadlock on this schedule's paths: .*cycle \(link \d+ class 0"):
        try:
            res = simulate_allreduce(t, s, NicConfig(), net, 1 << 16, model=model)
            assert res.extra["deadlock_risk"].startswith("halving_doubling on torus:4x4")
        except DeadlockError as exc:  # it may then really stop: heads hold VCs around the cycle
            assert str(exc).startswith("halving_doubling on torus:4x4: the routing")


def test_pair_routes_have_the_full_tables_dependency_verdict():
    from noc.routing import check_deadlock_free

    for dateline in (True, False):
        t = parse_spec("torus:4x4")
        full = route(t, dateline=dateline)
        e = t.num_endpoints
        src, dst = np.meshgrid(np.arange(e), np.arange(e), indexing="ij")
        pairs = route_pairs(t, src.ravel(), dst.ravel(), dateline=dateline)
        a, b = check_deadlock_free(t, full), check_deadlock_free(t, pairs)
        assert a.deadlock_free == b.deadlock_free == dateline and a.dependencies == b.dependencies


def test_the_event_loop_ends_with_a_clear_error_past_its_bound(monkeypatch):
    """No input can keep the compiled loop (which Ctrl-C cannot stop) going: past its
    event bound it returns and the run fails with a message naming the bound."""
    import nic.message_sim as message_sim
    from nic.allreduce import simulate_allreduce

    t = parse_spec("torus:4x4")
    s = build(t, "ring")
    assert simulate_allreduce(t, s, NicConfig(), None, 1 << 16).verified  # well inside the default bound
    monkeypatch.setattr(message_sim, "EVENTS_PER_TRANSFER_LIMIT", 0)
    monkeypatch.setattr(message_sim, "EVENTS_LIMIT_BASE", 3)
    with pytest.raises(RuntimeError, match=r"did not finish within 3 events \(480 transfers, 16 nodes\)"):
        simulate_allreduce(t, s, NicConfig(), None, 1 << 16)


@pytest.mark.parametrize("spec,algorithm", [("torus:4x4:c4", "multitree"), ("torus:4x4:c4", "ring"),
                                            ("mesh:4x4", "multitree"), ("fattree:k4:l2", "ring")])
def test_distinct_routes_give_every_transfer_its_row(spec, algorithm):
    """distinct_routes' rows, taken per transfer, are transfer_routes' one row per transfer;
    each distinct endpoint pair has one row, in order of first appearance."""
    from nic.preparation import distinct_routes
    from noc.flit import FlitNetworkConfig

    t = parse_spec(spec)
    prep = prepare(t, build(t, algorithm), NicConfig(), 1 << 16)
    for network in (None, FlitNetworkConfig()):
        one = transfer_routes(t, prep, network)
        rows, route_of = distinct_routes(t, prep, network)
        assert route_of.dtype == np.int32 and route_of.shape == (len(prep.src_ep),)
        assert (rows.links[route_of][:, :one.max_links] == one.links).all()
        assert (rows.links[route_of][:, one.max_links:] == -1).all()
        assert (rows.length[route_of] == one.length).all()
        assert (rows.vc_class[route_of][:, :one.max_links] == one.vc_class).all()
        pairs = list(zip(prep.src_ep.tolist(), prep.dst_ep.tolist()))
        assert rows.links.shape[0] == len(set(pairs))
        assert route_of.tolist() == [list(dict.fromkeys(pairs)).index(p) for p in pairs]


def test_distinct_pair_rows_number_many_pairs_by_first_appearance():
    """More distinct pairs than the hash table starts with (it doubles several times)."""
    from nic.preparation import _distinct_pair_rows

    rng = np.random.default_rng(3)
    src = rng.integers(0, 300, 60_000).astype(np.int32)
    dst = rng.integers(0, 300, 60_000).astype(np.int32)
    row = np.empty(src.size, np.int32)
    pairs = _distinct_pair_rows(src, dst, row)
    first = {}
    for p, key in enumerate(zip(src.tolist(), dst.tolist())):
        first.setdefault(key, len(first))
    assert pairs.tolist() == [list(k) for k in first]
    assert row.tolist() == [first[k] for k in zip(src.tolist(), dst.tolist())]
