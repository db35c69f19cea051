"""The optimum's two max-flow back ends (scipy's Dinic on int32 capacities, networkx for
capacities too large for it) give the same flow value and the same cut for every sink,
and a topology whose scaled capacities overflow int32 takes the networkx path to the
value the brute force finds."""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from nic.collectives import optimal_bound
from nic.collectives.optimum import _sink_cuts_networkx, _sink_cuts_scipy, cut_graph, max_cut_ratio
from noc.topology import parse_spec


@pytest.mark.parametrize("spec,seed", [("torus:4x4:c4", 0), ("mesh:2x3", 1), ("fattree:k4:l2", 2), ("full:3:c2", 3)])
def test_both_back_ends_find_the_same_flows_and_cuts(spec, seed):
    t = parse_spec(spec)
    rng = np.random.default_rng(seed)
    t = dataclasses.replace(t, link_bytes_per_cycle=rng.integers(1, 13, size=t.num_links) / rng.choice([1, 2, 4]))
    g = cut_graph(t)
    x, _ = max_cut_ratio(g)
    for probe in (x, x * 2, x * 3 / 2):  # at the optimum (no cut short) and above it (some cut short)
        scale = math.lcm(probe.denominator, *(c.denominator for c in g.capacity.values()))
        caps = {ab: int(c * scale) for ab, c in g.capacity.items()}
        src_cap = int(probe * scale)
        vertices = g.num_nodes + g.num_routers
        a = [(v, side()) for v, side in _sink_cuts_networkx(g.num_nodes, vertices, caps, src_cap)]
        b = [(v, side()) for v, side in _sink_cuts_scipy(g.num_nodes, vertices, caps, src_cap)]
        assert a == b


def _brute_force_ag(t) -> Fraction:
    """max over every vertex set S of |S ∩ V_c| / B+(S), times 1/N, evaluated literally."""
    g = cut_graph(t)
    n, v = g.num_nodes, g.num_nodes + g.num_routers
    best = Fraction(0)
    for bits in itertools.product((0, 1), repeat=v):
        k = sum(bits[:n])
        if 0 < k < n:
            out = sum((c for (a, b), c in g.capacity.items() if bits[a] and not bits[b]), Fraction(0))
            best = max(best, Fraction(k) / out)
    return best / n


def test_capacities_beyond_int32_take_the_networkx_path(monkeypatch):
    import nic.collectives.optimum as optimum

    t = parse_spec("ring:4")
    rng = np.random.default_rng(7)
    # 16.1 and friends are binary fractions with 2**-48 steps: scaled capacities far beyond int32
    t = dataclasses.replace(t, link_bytes_per_cycle=rng.integers(1, 13, size=t.num_links) + 0.1)
    monkeypatch.setattr(optimum, "_sink_cuts_scipy", None)  # called, it would fail
    ob = optimal_bound(t)
    assert ob.all_gather_cycles_per_byte == _brute_force_ag(t)
    assert ob.all_gather_cut.ratio_cycles_per_byte / ob.num_nodes == ob.all_gather_cycles_per_byte
