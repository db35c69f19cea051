"""The flit level's source routes, cached per process (noc.topology_cache): a cached build
gives the arrays a fresh build gives, a hit never crosses topologies or routing keys, and
every router key outside the cache key leaves the routes alone."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import noc.flit as flit
from noc import topology_cache
from noc.base.errors import ConfigError
from noc.flit import ROUTE_KEY_FIELDS, FlitNetworkConfig, build_network
from noc.routing import nca_up_variants, route, tie_variants
from noc.topology import parse_spec

ROUTE_ARRAYS = ("route_links", "route_class", "route_len")
BOOKSIM = dict(vc_class_rule="booksim", tie_break="random")
CASES = [("torus:4x4", {}), ("torus:4x4", BOOKSIM), ("torus:4x6:c2", BOOKSIM), ("torus:3x4", BOOKSIM),
         ("mesh:3x5:c2", {}), ("ring:6", BOOKSIM), ("hypercube:d3", {}), ("fattree:k2:l3", {"tie_break": "random"}),
         ("fattree:k4:l2", {}), ("bigraph:3x4", {}), ("switch:5", {}), ("full:5", {}),
         ("torus:4x4", {"routing": "shortest"}), ("torus:4x4", {"dateline": False})]


@pytest.fixture(autouse=True)
def _empty_cache():
    topology_cache.clear()
    yield
    topology_cache.clear()


def _fresh(t, cfg):
    topology_cache.clear()
    return build_network(t, cfg)


def _same_routes(a, b) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k)) and getattr(a, k).dtype == getattr(b, k).dtype
               for k in ROUTE_ARRAYS)


def _rows_built(monkeypatch) -> list:
    calls = []
    original = flit._route_rows

    def counting(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(flit, "_route_rows", counting)
    return calls


@pytest.mark.parametrize("spec,router", CASES, ids=[f"{s}-{'-'.join(f'{k}={v}' for k, v in r.items()) or 'default'}"
                                                     for s, r in CASES])
def test_a_cached_build_equals_a_fresh_one_and_the_route_tables(spec, router, monkeypatch):
    t = parse_spec(spec)
    cfg = FlitNetworkConfig(**router)
    calls = _rows_built(monkeypatch)
    first = build_network(t, cfg)
    again = build_network(parse_spec(spec), cfg)  # another object, the same network
    assert len(calls) == 1  # built once
    assert _same_routes(first, again) and again.n_rows == first.n_rows
    # against the route tables themselves: variant v's rows are route() with v's tie directions
    e = t.num_endpoints
    rt = route(t, cfg.routing, dateline=cfg.dateline, vc_rule=cfg.vc_class_rule)
    tables = [rt]
    if cfg.tie_break == "random" and rt.algorithm.startswith("dor"):
        tables = [route(t, cfg.routing, dateline=cfg.dateline, vc_rule=cfg.vc_class_rule, tie_signs=signs)
                  for signs in tie_variants(t)]
    elif cfg.tie_break == "random" and rt.algorithm == "nca":
        tables = [route(t, "nca", up_variant=v) for v in range(nca_up_variants(t))]
    assert again.n_rows == len(tables)
    for v, tv in enumerate(tables):
        rows = slice(v * e, (v + 1) * e)
        off = ~np.eye(e, dtype=bool)
        assert (again.route_len[rows][off] == tv.length[off]).all()
        h = tv.links.shape[2]
        assert (again.route_links[rows, :, :h][off] == tv.links[off]).all()
        if cfg.vc_class_rule == "dateline":
            assert (again.route_class[rows, :, :h][off] == tv.vc_class[off]).all()
    # the kernel's arrays are the caller's own: writable, not the cache's
    assert all(getattr(again, k).flags.writeable and not np.shares_memory(getattr(again, k), getattr(first, k))
               for k in ROUTE_ARRAYS)


# per routing key: two values whose route rows differ on torus:4x4
KEY_VALUES = {"routing": ("dor", "shortest"), "dateline": (True, False), "vc_class_rule": ("dateline", "booksim"),
              "tie_break": ("plus", "random")}


@pytest.mark.parametrize("field", ROUTE_KEY_FIELDS)
def test_a_cache_hit_never_crosses_routing_keys(field):
    assert set(KEY_VALUES) == set(ROUTE_KEY_FIELDS)
    t = parse_spec("torus:4x4")
    a, b = (FlitNetworkConfig(**{field: v}) for v in KEY_VALUES[field])
    fresh_a, fresh_b = _fresh(t, a), _fresh(t, b)
    assert not _same_routes(fresh_a, fresh_b)  # the key matters here, so a leak would show
    topology_cache.clear()
    build_network(t, a)
    assert _same_routes(build_network(t, b), fresh_b)
    assert _same_routes(build_network(t, a), fresh_a)


def test_a_cache_hit_never_crosses_topologies():
    t = parse_spec("torus:4x4")
    # the same name, sizes and links, its links' directions labelled the other way: DOR goes
    # the other way round the rings (only the route tables are built here, nothing is run)
    flipped = dataclasses.replace(t, link_sign=(-t.link_sign).astype(t.link_sign.dtype))
    slower = t.with_latencies(router_cycles=2, inject_cycles=1, eject_cycles=1)
    cfg = FlitNetworkConfig()
    fresh = {k: _fresh(x, cfg) for k, x in (("t", t), ("flipped", flipped), ("slower", slower))}
    assert not _same_routes(fresh["t"], fresh["flipped"])
    topology_cache.clear()
    build_network(t, cfg)
    assert _same_routes(build_network(flipped, cfg), fresh["flipped"])
    assert _same_routes(build_network(slower, cfg), fresh["slower"])
    assert topology_cache.cached_count() == 3  # one entry each: the latencies are part of the key
    digests = {topology_cache.topology_digest(x) for x in (t, flipped, slower, parse_spec("mesh:4x4"))}
    assert len(digests) == 4
    assert topology_cache.topology_digest(parse_spec("torus:4x4")) == topology_cache.topology_digest(t)


def test_a_topology_changed_in_place_is_built_anew():
    t = parse_spec("torus:4x4")
    cfg = FlitNetworkConfig()
    before = build_network(t, cfg)
    t.link_sign[:] = -t.link_sign
    after = build_network(t, cfg)
    assert not _same_routes(before, after)
    assert _same_routes(after, _fresh(t, cfg))


# every router key outside ROUTE_KEY_FIELDS, with a value other than its default
OTHER_VALUES = {"num_vcs": 4, "vc_depth_flits": 3, "routing_delay_cycles": 2, "vc_alloc_delay_cycles": 2,
                "sw_alloc_delay_cycles": 2, "st_delay_cycles": 1, "credit_delay_cycles": 2, "flow_control": "vct",
                "allocator": "islip", "watchdog_cycles": 500, "debug": True, "arbiter_seed": 3,
                "vc_allocator": "islip", "sw_allocator": "separable_input_first", "vc_release": "tail_credit",
                "credit_adds_link_latency": True, "flit_bytes": 32}


@pytest.mark.parametrize("spec,router", [("torus:4x4", BOOKSIM), ("fattree:k2:l3", {"tie_break": "random"}),
                                         ("mesh:3x3", {})])
def test_every_other_router_key_leaves_the_routes_alone(spec, router):
    """A key the routes depend on must be in ROUTE_KEY_FIELDS; every key is classified here."""
    fields = set(FlitNetworkConfig.model_fields)
    assert fields == set(OTHER_VALUES) | set(ROUTE_KEY_FIELDS)
    t = parse_spec(spec)
    base = _fresh(t, FlitNetworkConfig(**router))
    for field, value in OTHER_VALUES.items():
        cfg = FlitNetworkConfig(**{**router, field: value})
        assert getattr(cfg, field) != getattr(FlitNetworkConfig(**router), field)
        assert _same_routes(_fresh(t, cfg), base), field


def test_a_cache_hit_still_checks_the_vc_count():
    t = parse_spec("torus:4x4")
    build_network(t, FlitNetworkConfig(num_vcs=2))
    with pytest.raises(ConfigError, match="num_vcs = 3"):
        build_network(t, FlitNetworkConfig(num_vcs=3))


def test_changing_one_runs_routes_does_not_reach_the_next():
    """bench/ring_head_of_line.py rewrites a route in its network's arrays."""
    t = parse_spec("ring:6")
    cfg = FlitNetworkConfig()
    net = build_network(t, cfg)
    net.route_links[0, 3, :] = -1
    net.route_len[0, 3] = 0
    assert _same_routes(build_network(t, cfg), _fresh(t, cfg))


def test_the_cache_keeps_within_its_byte_budget(monkeypatch):
    cfg = FlitNetworkConfig()
    one = _fresh(parse_spec("torus:4x4"), cfg)
    size = sum(getattr(one, k).nbytes for k in ROUTE_ARRAYS)
    topology_cache.clear()
    monkeypatch.setattr(topology_cache, "MAX_CACHE_BYTES", 2 * size)
    t = parse_spec("torus:4x4")
    tops = [t, t.with_latencies(router_cycles=2, inject_cycles=1, eject_cycles=1),
            t.with_latencies(router_cycles=3, inject_cycles=1, eject_cycles=1)]  # three results of one size
    nets = [build_network(x, cfg) for x in tops]
    assert topology_cache.cached_count() == 2  # the oldest dropped
    calls = _rows_built(monkeypatch)
    assert _same_routes(build_network(tops[2], cfg), nets[2]) and not calls  # kept: a hit
    assert _same_routes(build_network(tops[0], cfg), nets[0]) and len(calls) == 1  # dropped: rebuilt
    monkeypatch.setattr(topology_cache, "MAX_CACHE_BYTES", size // 2)
    topology_cache.clear()
    assert _same_routes(build_network(tops[0], cfg), nets[0])
    assert topology_cache.cached_count() == 0  # larger than the budget: built, not kept
