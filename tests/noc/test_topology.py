"""Topology builders against closed forms (counts, diameter, hops, bisection) and specs."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from noc.base.errors import SpecError
from noc.topology import (
    Topology,
    bigraph,
    fat_tree,
    fully_connected,
    hypercube,
    mesh,
    parse_spec,
    ring,
    switch,
    torus,
    with_concentration,
)


def _router_links(t: Topology) -> int:
    return int(np.count_nonzero(t.is_router_link))


def _grid_distance_sum(dims, wrap) -> int:
    """Sum of hop distances over all ordered router pairs, by brute force over coordinates."""
    coords = list(itertools.product(*[range(k) for k in dims]))
    total = 0
    for a in coords:
        for b in coords:
            for x, y, k in zip(a, b, dims):
                dx = abs(x - y)
                total += min(dx, k - dx) if wrap else dx
    return total


@settings(max_examples=25, deadline=None)
@given(dims=st.lists(st.integers(2, 7), min_size=1, max_size=3), c=st.integers(1, 3))
def test_torus_counts_and_distances(dims, c):
    t = torus(tuple(dims), c)
    r = int(np.prod(dims))
    assert t.num_routers == r and t.num_endpoints == r * c
    assert _router_links(t) == 2 * len(dims) * r  # k-ary n-cube: 2n links out of every router
    assert t.diameter == sum(k // 2 for k in dims)
    n = r * c
    # NIs on the same router are 0 hops apart; pairs across routers are weighted by c*c.
    expected = _grid_distance_sum(dims, wrap=True) * c * c / (n * (n - 1)) if n > 1 else 0.0
    assert t.average_hops == pytest.approx(expected)
    assert (t.router_degree == 2 * len(dims)).all()


@settings(max_examples=25, deadline=None)
@given(dims=st.lists(st.integers(2, 7), min_size=1, max_size=3))
def test_mesh_counts_and_distances(dims):
    t = mesh(tuple(dims))
    r = int(np.prod(dims))
    assert _router_links(t) == 2 * sum((k - 1) * r // k for k in dims)
    assert t.diameter == sum(k - 1 for k in dims)
    assert t.average_hops == pytest.approx(_grid_distance_sum(dims, wrap=False) / (r * (r - 1)))


@pytest.mark.parametrize("k", [2, 3, 4, 5, 8])
def test_square_torus_and_mesh_closed_forms(k):
    t = torus((k, k))
    assert _router_links(t) == 4 * k * k
    assert t.diameter == 2 * (k // 2)
    m = mesh((k, k))
    assert _router_links(m) == 4 * k * (k - 1)
    assert m.diameter == 2 * (k - 1)
    if k % 2 == 0:  # even k: a clean halving cut
        assert t.bisection_links == 2 * k  # k rows, each cut twice (middle and wrap)
        assert m.bisection_links == k


@pytest.mark.parametrize("k,levels", [(2, 2), (4, 2), (8, 2), (2, 3), (4, 3), (3, 2)])
def test_fat_tree_closed_forms(k, levels):
    t = fat_tree(k, levels)
    assert t.num_endpoints == k**levels
    assert t.num_routers == levels * k ** (levels - 1)
    assert _router_links(t) == 2 * (levels - 1) * k**levels
    assert t.diameter == 2 * (levels - 1)
    if k % 2 == 0:
        assert t.bisection_links == k**levels // 2  # full bisection bandwidth
    # Every switch below the top has k up-links and k endpoints or down-links.
    deg = t.router_degree
    per_level = k ** (levels - 1)
    assert (deg[:per_level] == (k if levels > 1 else 0)).all()


@pytest.mark.parametrize("m,n", [(2, 4), (4, 16), (6, 3)])
def test_bigraph_closed_forms(m, n):
    t = bigraph(m, n)
    assert t.num_endpoints == m * n and t.num_routers == 2 * m
    assert _router_links(t) == 2 * m * m
    assert t.diameter == 2
    assert t.bisection_links == m * m // 2
    assert (t.endpoint_router < m).all()  # endpoints hang off the lower layer only


@pytest.mark.parametrize("d", [1, 2, 3, 4, 6])
def test_hypercube_closed_forms(d):
    t = hypercube(d)
    assert t.num_routers == 2**d
    assert _router_links(t) == d * 2**d
    assert t.diameter == d
    assert t.bisection_links == 2 ** (d - 1)
    # average distance of a d-cube over distinct pairs: d*2^(d-1) / (2^d - 1)
    assert t.average_hops == pytest.approx(d * 2 ** (d - 1) / (2**d - 1))


@pytest.mark.parametrize("n", [2, 5, 8])
def test_fully_connected_and_switch_and_ring(n):
    f = fully_connected(n)
    assert _router_links(f) == n * (n - 1) and f.diameter == 1
    assert f.bisection_links == (n // 2) * (n - n // 2)
    s = switch(n)
    assert s.num_routers == 1 and _router_links(s) == 0 and s.diameter == 0
    assert s.bisection_links == n - n // 2  # the endpoints on the far side, each through one link
    r = ring(n)
    assert _router_links(r) == 2 * n and r.diameter == n // 2


def test_every_endpoint_has_one_injection_and_one_ejection_link():
    for spec in ["torus:4x4:c4", "fattree:k4:l3", "bigraph:4x16", "switch:8", "full:5:c2", "hypercube:d3"]:
        t = parse_spec(spec)
        e = t.num_endpoints
        assert np.bincount(t.link_src[t.link_src < e], minlength=e).tolist() == [1] * e
        assert np.bincount(t.link_dst[t.link_dst < e], minlength=e).tolist() == [1] * e
        assert (t.link_src[t.inject_link] == np.arange(e)).all()
        assert (t.link_dst[t.eject_link] == np.arange(e)).all()
        assert (t.link_dst[t.inject_link] == e + t.endpoint_router).all()


def test_nodes_group_nis_on_direct_networks_only():
    t = parse_spec("torus:4x4:c4")
    assert t.num_nodes == 16 and t.nis_per_node == 4
    assert t.node_endpoints.shape == (16, 4)
    assert (t.endpoint_node[t.node_endpoints] == np.arange(16)[:, None]).all()
    f = parse_spec("fattree:k4:l2")
    assert f.num_nodes == f.num_endpoints == 16 and f.nis_per_node == 1
    assert with_concentration(parse_spec("torus:4x4"), 4).num_endpoints == 64
    with pytest.raises(SpecError):
        with_concentration(f, 4)


@pytest.mark.parametrize(
    "spec", ["torus:4x4", "mesh:8x8:c4", "fattree:k8:l2", "bigraph:4x16", "switch:16", "full:8", "hypercube:d4", "ring:8"]
)
def test_json_round_trip_and_hash(spec):
    t = parse_spec(spec)
    back = Topology.from_json(t.to_json())
    assert back == t and hash(back) == hash(t)
    assert back.summary() == t.summary()
    assert {t, back} == {t}


def test_distinct_topologies_differ():
    assert parse_spec("torus:4x4") != parse_spec("mesh:4x4")
    assert parse_spec("torus:4x4") != parse_spec("torus:4x4").with_links(bytes_per_cycle=32)


def test_spec_names_are_canonical():
    assert parse_spec("TORUS:4x4").name == "torus:4x4"
    assert parse_spec("mesh:8x8:c4").name == "mesh:8x8:c4"
    assert parse_spec("fattree:k8:l2").name == "fattree:k8:l2"
    assert parse_spec(parse_spec("hypercube:3").name) == parse_spec("hypercube:d3")


@pytest.mark.parametrize(
    "spec,fragment",
    [
        ("", "empty spec"),
        ("donut:4x4", "unknown family 'donut'"),
        ("torus", "needs sizes"),
        ("torus:4xx4", "needs sizes"),
        ("torus:1x4", "at least 2" if False else ">= 2"),
        ("mesh:4x4:k4", "concentration"),
        ("mesh:4x4:c0", "concentration c must be >= 1"),
        ("fattree:k8", "fattree needs"),
        ("bigraph:4", "bigraph needs"),
        ("switch:1", ">= 2"),
    ],
)
def test_bad_specs_get_one_line_errors_with_the_accepted_forms(spec, fragment):
    with pytest.raises(SpecError) as info:
        parse_spec(spec)
    msg = str(info.value)
    assert fragment in msg
    assert "accepted forms" in msg and "\n" not in msg


def test_bad_link_parameters_are_rejected():
    with pytest.raises(SpecError, match="link_bytes_per_cycle"):
        torus((4, 4), link_bytes_per_cycle=0)
    with pytest.raises(SpecError, match="link_latency_cycles"):
        mesh((4, 4), link_latency_cycles=0)


# --------------------------------------------------------------------------------------
# Size limits: too-large specs are refused from closed-form counts, before any allocation
# --------------------------------------------------------------------------------------

_LIMITED = r'''
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # every spec below needs far more
from noc.topology import parse_spec
for spec in sys.argv[1:]:
    t0 = time.perf_counter()
    try:
        parse_spec(spec)
        out = ["built", ""]
    except Exception as exc:  # noqa: BLE001
        out = [type(exc).__name__, str(exc)]
    print(json.dumps([spec, *out, time.perf_counter() - t0]), flush=True)
'''

# spec -> the count that is over its limit, worked out by hand from the family's formula
TOO_LARGE = {
    "switch:100000": "100,000 endpoints",
    "bigraph:1000x1000": "1,000,000 endpoints",
    "torus:99999x99999": "9,999,800,001 endpoints",
    "torus:64x64:c8": "32,768 endpoints",
    "hypercube:d16": "65,536 endpoints",
    "fattree:k64:l6": "68,719,476,736 endpoints",  # 64**6
    "ring:100000000": "100,000,000 endpoints",
    "fattree:k2:l12": "24,576 routers",  # 12 levels of 2**11 switches, 4096 endpoints
    "full:5000": "25,005,000 directed links",  # 5000*4999 router links + 2*5000 NI links
    "bigraph:2000x1": "8,004,000 directed links",  # 2*2000**2 + 2*2000
    "full:2048": "4,196,352 directed links",  # the smallest fully connected network over the limit
    "hypercube:d100000": "more than 1e300 endpoints",
}


def _run_limited(script: str, args: list[str]) -> dict:
    import json
    import os
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[2])  # this checkout first, as in the parent process
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    res = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    return {row[0]: row[1:] for row in map(json.loads, res.stdout.splitlines())}


def test_too_large_specs_are_refused_before_allocating():
    results = _run_limited(_LIMITED, list(TOO_LARGE))
    for spec, count in TOO_LARGE.items():
        kind, msg, seconds = results[spec]
        assert kind == "TopologySizeError", (spec, kind, msg)
        assert count in msg and "too large" in msg and "limit" in msg and "\n" not in msg, msg
        assert seconds < 5, (spec, seconds)


def test_size_limits_follow_from_the_route_table_limit():
    from noc.topology import MAX_ENDPOINTS, MAX_TABLE_BYTES, route_table_bytes

    # the most endpoints whose smallest possible route table (2-link paths) fits
    assert 12 * MAX_ENDPOINTS**2 <= MAX_TABLE_BYTES < 12 * (MAX_ENDPOINTS + 1) ** 2
    assert route_table_bytes(MAX_ENDPOINTS, 2) == 12 * MAX_ENDPOINTS**2
    assert switch(MAX_ENDPOINTS).num_endpoints == MAX_ENDPOINTS
    with pytest.raises(SpecError, match=f"{MAX_ENDPOINTS + 1:,} endpoints"):
        switch(MAX_ENDPOINTS + 1)


@pytest.mark.parametrize(
    "spec",
    ["torus:4x4", "torus:2x3x4:c3", "torus:2x2", "mesh:3x5:c2", "mesh:2x7x3", "ring:7:c4", "hypercube:d5:c2", "full:6:c3",
     "fattree:k3:l3", "fattree:k2:l1", "fattree:k4:l2", "bigraph:3x5", "bigraph:1x4", "switch:9"],
)
def test_the_size_estimates_are_the_built_sizes(spec, monkeypatch):
    import noc.topology as topo

    seen = []
    real = topo.check_size
    monkeypatch.setattr(topo, "check_size", lambda *a: (seen.append(a[1:]), real(*a)))
    t = parse_spec(spec)
    assert seen and set(seen) == {(t.num_endpoints, t.num_routers, t.num_links)}


@pytest.mark.parametrize(
    "spec",
    ["torus:8x8", "torus:8x8:c4", "torus:16x16", "torus:32x32:c4", "mesh:8x8:c4", "fattree:k8:l2", "fattree:k8:l3",
     "fattree:k4:l3", "bigraph:4x16", "full:66", "switch:80", "hypercube:d6", "hypercube:d14", "ring:6:c2"],
)
def test_sizes_in_use_still_build(spec):
    assert parse_spec(spec).num_endpoints > 0


def test_numbers_too_long_for_a_spec_are_one_line_errors():
    with pytest.raises(SpecError, match="more than 18 digits"):
        parse_spec("ring:" + "9" * 5000)
