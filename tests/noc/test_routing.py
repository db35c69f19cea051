"""Routing tables: paths are contiguous and minimal, DOR keeps dimension order, and the
channel-dependency check separates deadlock-free routings from deadlocking ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from noc.base.errors import ConfigError
from noc.routing import check_deadlock_free, route
from noc.topology import Topology, mesh, parse_spec, torus

ALL_SPECS = ["torus:4x4", "mesh:3x5:c2", "ring:7", "hypercube:d3", "full:5", "fattree:k4:l2", "fattree:k2:l3",
             "bigraph:3x4", "switch:6", "torus:3x3x2"]


def _assert_paths_contiguous(t: Topology, rt) -> None:
    e = t.num_endpoints
    for s in range(e):
        for d in range(e):
            p = rt.path(s, d)
            if s == d:
                assert p.size == 0
                continue
            assert p.size >= 2
            assert t.link_src[p[0]] == s and t.link_dst[p[-1]] == d
            assert (t.link_dst[p[:-1]] == t.link_src[p[1:]]).all(), (s, d, p)


@pytest.mark.parametrize("spec", ALL_SPECS)
def test_every_pair_is_reachable_by_a_contiguous_minimal_path(spec):
    t = parse_spec(spec)
    rt = route(t)
    _assert_paths_contiguous(t, rt)
    # Every default routing is minimal: its hop count is the BFS distance.
    assert (rt.hops == t.endpoint_distances).all()


def _torus_distance(a, b, dims, wrap):
    out = 0
    for x, y, k in zip(a, b, dims):
        d = abs(x - y)
        out += min(d, k - d) if wrap else d
    return out


@settings(max_examples=20, deadline=None)
@given(dims=st.lists(st.integers(2, 6), min_size=1, max_size=3), wrap=st.booleans())
def test_dor_length_is_the_manhattan_or_torus_distance(dims, wrap):
    t = torus(tuple(dims)) if wrap else mesh(tuple(dims))
    rt = route(t, "dor")
    c = t.router_coords
    for s in range(t.num_endpoints):
        for d in range(t.num_endpoints):
            assert rt.hops[s, d] == _torus_distance(c[s], c[d], dims, wrap)
            hops = rt.path(s, d)[1:-1]
            dims_seq = t.link_dim[hops]
            assert (np.diff(dims_seq) >= 0).all()  # dimension order: never go back to a lower dimension
            for dim in set(dims_seq.tolist()):  # one direction per dimension
                assert len(set(t.link_sign[hops][dims_seq == dim].tolist())) == 1


def test_shortest_path_routing_is_minimal_on_a_torus():
    t = torus((5, 4))
    assert (route(t, "shortest").hops == route(t, "dor").hops).all()


def test_fat_tree_nca_climbs_to_the_lowest_common_level():
    k, levels = 3, 3
    t = parse_spec(f"fattree:k{k}:l{levels}")
    rt = route(t, "nca")
    for a in range(t.num_endpoints):
        for b in range(t.num_endpoints):
            if a == b:
                continue
            # the lowest level whose subtrees contain both: first digit position where a//k^j agree
            j = 1
            while a // k**j != b // k**j:
                j += 1
            assert rt.hops[a, b] == 2 * (j - 1)


def test_dateline_classes_switch_after_the_wrap_link():
    t = torus((4,))
    rt = route(t, "dor")
    # 3 -> 0 goes + through the wrap link 3->0: class 1 on the wrap hop.
    p, v = rt.path(3, 0), rt.vcs(3, 0)
    assert t.link_src[p[1]] - t.num_endpoints == 3 and v[1] == 1
    # 0 -> 1 never wraps: class 0.
    assert (rt.vcs(0, 1) == 0).all()


@pytest.mark.parametrize("spec", ["mesh:4x4", "mesh:3x3x3", "torus:4x4", "torus:5x3", "ring:8", "fattree:k4:l3",
                                  "bigraph:4x4", "hypercube:d4", "full:6"])
def test_default_routings_are_deadlock_free(spec):
    t = parse_spec(spec)
    report = check_deadlock_free(t, route(t), vcs=2)
    assert report.deadlock_free and report.cycle == ()


@pytest.mark.parametrize("dims", [(4,), (4, 4), (5, 3)])
def test_torus_without_dateline_has_a_dependency_cycle(dims):
    t = torus(dims)
    rt = route(t, "dor", dateline=False)
    report = check_deadlock_free(t, rt, vcs=1)
    assert not report.deadlock_free
    cycle = report.cycle
    assert len(cycle) >= 2
    # The evidence is a real cycle: consecutive channels are adjacent links, and each
    # dependency is taken by some route.
    used = set()
    for s in range(t.num_endpoints):
        for d in range(t.num_endpoints):
            p = rt.path(s, d)
            used.update(zip(p[:-1].tolist(), p[1:].tolist()))
    for (l1, _), (l2, _) in zip(cycle, cycle[1:] + cycle[:1]):
        assert t.link_dst[l1] == t.link_src[l2]
        assert (l1, l2) in used
    # All the cycle's links lie in one ring (one dimension, one direction).
    links = [lid for lid, _ in cycle]
    assert len(set(t.link_dim[links].tolist())) == 1 and len(set(t.link_sign[links].tolist())) == 1
    assert "deadlock possible" in report.describe(t)


def test_too_few_vcs_for_the_dateline_is_an_error():
    t = torus((4, 4))
    with pytest.raises(ConfigError, match="2 VC classes"):
        check_deadlock_free(t, route(t), vcs=1)


def test_unknown_or_mismatched_routing_is_an_error():
    with pytest.raises(ConfigError, match="unknown"):
        route(torus((4, 4)), "xy")
    with pytest.raises(ConfigError, match="dor"):
        route(parse_spec("fattree:k4:l2"), "dor")
    with pytest.raises(ConfigError, match="nca"):
        route(torus((4, 4)), "nca")


# --------------------------------------------------------------------------------------
# Size limits: route tables (and the deadlock check) too large are refused from estimates
# --------------------------------------------------------------------------------------

_LIMITED = r'''
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # each table below needs more than this
from noc.routing import check_deadlock_free, route
from noc.topology import parse_spec
for arg in sys.argv[1:]:
    spec, algorithm = arg.split("/")
    try:
        t = parse_spec(spec)
        check_deadlock_free(t, route(t, algorithm))
        out = ["routed", ""]
    except Exception as exc:  # noqa: BLE001
        out = [type(exc).__name__, str(exc)]
    print(json.dumps([arg, *out]), flush=True)
'''


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.1f} GiB"


# spec/algorithm -> the estimate the error must give, from the closed-form diameter D:
# E*E pairs of (D + 2) links of 5 bytes (int32 link + int8 VC class) plus a 2-byte length
ROUTE_TOO_LARGE = {
    "torus:64x64/auto": _gib(4096**2 * (5 * (64 + 2) + 2)),  # 5.2 GiB, D = 32 + 32
    "torus:100x100/auto": _gib(10000**2 * (5 * (100 + 2) + 2)),
    "mesh:64x64/dor": _gib(4096**2 * (5 * (126 + 2) + 2)),  # D = 63 + 63
    "hypercube:d14/auto": _gib(16384**2 * (5 * (14 + 2) + 2)),
    "torus:64x64/shortest": _gib(4096**2 * (5 * (64 + 2) + 2)),  # from the distances, before the paths
    "hypercube:d14/shortest": "at least " + _gib(16384**2 * (5 * 3 + 2)),  # on the lower bound, before any BFS
    "fattree:k2:l11/shortest": "shortest-path tables for 11,264 routers",  # 11 levels of 2**10 switches
    "switch:19000/auto": "19,000 endpoints",  # no route table fits: refused by parse_spec
}


def test_too_large_route_tables_are_refused_before_building_them():
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])  # this checkout first, as in the parent process
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    args = list(ROUTE_TOO_LARGE)
    res = subprocess.run([sys.executable, "-c", _LIMITED, *args], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    results = {row[0]: row[1:] for row in map(json.loads, res.stdout.splitlines())}
    for arg in args:
        kind, msg = results[arg]  # a MemoryError under the 2 GiB limit would mean it started building
        assert kind == ("TopologySizeError" if arg.startswith("switch") else "ConfigError"), (arg, kind, msg)
        assert ROUTE_TOO_LARGE[arg] in msg and "limit" in msg and "\n" not in msg, msg


def test_a_switch_whose_table_fits_but_whose_deadlock_check_does_not(monkeypatch):
    from noc.routing import check_deadlock_size, plan_route

    t = parse_spec("switch:12000")
    assert plan_route(t) == ("nca", 2, 1)  # 1.6 GiB of table: routable
    # a single switch: every injection link depends on every ejection link, 12000**2 of them
    with pytest.raises(ConfigError, match="144,000,000 channel dependencies"):
        check_deadlock_size(t, 1, 2)


@pytest.mark.parametrize("spec", ALL_SPECS + ["bigraph:1x3", "fattree:k3:l1", "torus:8x8:c4", "mesh:8x8"])
@pytest.mark.parametrize("algorithm", ["auto", "shortest"])
def test_the_planned_table_is_the_built_one(spec, algorithm):
    from noc.routing import dependency_bound, plan_route
    from noc.topology import route_table_bytes

    t = parse_spec(spec)
    alg, width, classes = plan_route(t, algorithm)
    rt = route(t, algorithm)
    assert rt.num_vc_classes == classes and rt.algorithm.startswith(alg)
    assert width == rt.max_links  # also for one switch per BiGraph layer: no switch hop, 2 links
    assert route_table_bytes(t.num_endpoints, rt.max_links) == rt.links.nbytes + rt.vc_class.nbytes + rt.length.nbytes
    assert check_deadlock_free(t, rt).dependencies <= dependency_bound(t, classes, width)


def test_the_deadlock_check_gives_the_same_answer_in_blocks(monkeypatch):
    import noc.routing as routing

    for t, rt in [(torus((5, 3)), None), (torus((4, 4), 2), None), (parse_spec("fattree:k3:l3"), None)]:
        for dateline in (True, False):
            rt = route(t, dateline=dateline)
            whole = check_deadlock_free(t, rt)
            monkeypatch.setattr(routing, "_DEP_BLOCK_ENTRIES", 7)  # a source endpoint per block
            assert check_deadlock_free(t, rt) == whole
            monkeypatch.undo()
