"""check_deadlock_free's one-pass turn flags give the dependencies the sort of every
path step gives (same sorted array), so the same verdict, counts and cycle; a path whose
links do not join up, or flags beyond the limit, take the sort."""

from __future__ import annotations

import numpy as np
import pytest

import noc.routing as routing
from noc.routing import check_deadlock_free, route, route_pairs
from noc.topology import parse_spec

CASES = [("torus:8x8:c4", True), ("torus:8x8:c2", False), ("torus:4x4x4", False), ("mesh:4x5:c2", True),
         ("ring:7:c2", False), ("ring:6", True), ("hypercube:d4", True), ("full:5:c2", True),
         ("fattree:k4:l2", True), ("bigraph:3x4", True), ("switch:6", True), ("torus:3x3x2", True)]


def _flat(rt):
    h = rt.links.shape[-1]
    return rt.links.reshape(-1, h), rt.vc_class.reshape(-1, h)


@pytest.mark.parametrize("spec,dateline", CASES)
def test_turn_flags_equal_the_sorted_dependencies(spec, dateline):
    t = parse_spec(spec)
    rt = route(t, dateline=dateline)
    links, vcls = _flat(rt)
    c = rt.num_vc_classes
    fast = routing._turn_dependencies(t, links, vcls, c)
    assert fast is not None
    assert np.array_equal(fast, routing._sorted_dependencies(links, vcls, c, t.num_links * c))


@pytest.mark.parametrize("spec,dateline", [("torus:8x8:c2", False), ("torus:4x4x4", False), ("torus:6x6:c4", True)])
def test_the_report_is_the_sorts_report(spec, dateline, monkeypatch):
    t = parse_spec(spec)
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, t.num_endpoints, size=(2, 3000))
    keep = src != dst
    for routes in (route(t, dateline=dateline), route_pairs(t, src[keep], dst[keep], dateline=dateline)):
        fast = check_deadlock_free(t, routes)
        monkeypatch.setattr(routing, "_turn_dependencies", lambda *a: None)
        slow = check_deadlock_free(t, routes)
        monkeypatch.undo()
        assert fast == slow
        assert fast.deadlock_free == dateline


def test_paths_that_do_not_join_up_and_too_many_flags_fall_back_to_the_sort(monkeypatch):
    t = parse_spec("torus:4x4")
    links, vcls = _flat(route(t))
    broken = links.copy()
    row = int(np.nonzero((broken >= 0).sum(axis=1) >= 3)[0][0])
    broken[row, 1] = broken[row, 2]  # a link then one that does not start where it ends
    assert routing._turn_dependencies(t, broken, vcls, 2) is None
    monkeypatch.setattr(routing, "MAX_TURN_SLOTS", 10)
    assert routing._turn_dependencies(t, links, vcls, 2) is None
