"""Max-min fair rates checked against the definition of max-min fairness."""

from __future__ import annotations

import numpy as np
import pytest

from noc.message import max_min_rates, path_latency_cycles
from noc.routing import route
from noc.topology import parse_spec


def _rates(paths, caps, prio=None):
    n = len(paths)
    h = max(len(p) for p in paths)
    pl = np.full((n, h), -1, dtype=np.int64)
    ln = np.array([len(p) for p in paths], dtype=np.int64)
    for i, p in enumerate(paths):
        pl[i, : len(p)] = p
    caps = np.asarray(caps, dtype=np.float64)
    rates = np.zeros(n)
    pr = np.zeros(n, dtype=np.int64) if prio is None else np.asarray(prio, dtype=np.int64)
    max_min_rates(np.arange(n, dtype=np.int64), pr, pl, ln, caps, rates, np.empty(caps.size), np.empty(caps.size, dtype=np.int64))
    return rates


def test_textbook_example():
    # links 0 (cap 10) and 1 (cap 4): flow A on 0, flow B on 0+1, flow C on 1.
    r = _rates([[0], [0, 1], [1]], [10, 4])
    assert r == pytest.approx([8, 2, 2])


@pytest.mark.parametrize("seed", range(30))
def test_random_rates_satisfy_the_max_min_characterisation(seed):
    rng = np.random.default_rng(seed)
    nl = int(rng.integers(2, 8))
    caps = rng.integers(1, 20, size=nl).astype(float)
    paths = [sorted(set(rng.choice(nl, size=int(rng.integers(1, nl + 1))).tolist())) for _ in range(int(rng.integers(1, 10)))]
    r = _rates(paths, caps)
    load = np.zeros(nl)
    for p, x in zip(paths, r):
        load[p] += x
    assert (load <= caps + 1e-9).all()  # feasible
    for p, x in zip(paths, r):
        # every flow has a bottleneck: a saturated link where no flow gets more than it
        ok = False
        for link in p:
            on_link = [y for q, y in zip(paths, r) if link in q]
            if abs(load[link] - caps[link]) < 1e-9 and x >= max(on_link) - 1e-9:
                ok = True
        assert ok, (paths, caps, r)


def test_strict_priority_serves_the_urgent_class_first():
    r = _rates([[0], [0], [0, 1]], [12, 100], prio=[0, 1, 1])
    assert r == pytest.approx([12, 0, 0])
    r = _rates([[0], [1]], [5, 7], prio=[3, 0])
    assert r == pytest.approx([5, 7])  # no shared link: priority changes nothing


def test_path_latency_counts_links_and_routers():
    t = parse_spec("mesh:4").with_links(latency_cycles=3)
    rt = route(t)
    lat = path_latency_cycles(t, rt, router_delay_cycles=2)
    # 0 -> 3: inject + 3 hops + eject = 5 links of 3 cycles, 4 routers crossed
    assert lat[0, 3] == 5 * 3 + 4 * 2
    assert lat[2, 2] == 0
