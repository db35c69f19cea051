"""nic.collectives.optimum: the exact all-gather / reduce-scatter / all-reduce optimum.

Checked against closed forms, a brute-force maximum over every cut of small networks, and
the injection and bisection bounds and real schedules' ideal times (which it must not exceed
and not undercut respectively).
"""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

import numpy as np
import pytest

from nic.collectives import bounds, build, ideal_cycles, optimal_bound
from nic.collectives.optimum import cut_graph
from noc.base.errors import SpecError
from noc.topology import Topology, parse_spec

M = 1 << 20


def with_bandwidths(t: Topology, bytes_per_cycle) -> Topology:
    return dataclasses.replace(t, link_bytes_per_cycle=np.asarray(bytes_per_cycle, dtype=np.float64))


def router_links(t: Topology, a: int, b: int) -> np.ndarray:
    """Ids of the links between routers a and b, both ways."""
    e = t.num_endpoints
    s, d = t.link_src, t.link_dst
    return np.nonzero(((s == e + a) & (d == e + b)) | ((s == e + b) & (d == e + a)))[0]


def brute_force_ag(t: Topology) -> Fraction:
    """max over every vertex set S of |S ∩ V_c| / B+(S), times 1/N: the formula, evaluated literally."""
    g = cut_graph(t)
    n, v = g.num_nodes, g.num_nodes + g.num_routers
    best = Fraction(0)
    for bits in itertools.product((0, 1), repeat=v):
        k = sum(bits[:n])
        if k == 0 or k == n:
            continue
        out = sum((c for (a, b), c in g.capacity.items() if bits[a] and not bits[b]), Fraction(0))
        best = max(best, Fraction(k) / out)
    return best / n


@pytest.mark.parametrize("n,c", [(4, 1), (8, 1), (8, 4), (5, 2), (6, 3)])
def test_ring_closed_form(n, c):
    # a node receives (N-1)/N of M through min(its c NI links, its router's 2 ring links)
    ob = optimal_bound(parse_spec(f"ring:{n}" + (f":c{c}" if c > 1 else "")))
    b = 16
    expected = Fraction(n - 1, n) / min(c * b, 2 * b)
    assert ob.all_gather_cycles_per_byte == expected
    assert ob.reduce_scatter_cycles_per_byte == expected
    assert ob.all_reduce_cycles(M) == 2 * expected * M


@pytest.mark.parametrize("n,c", [(8, 1), (8, 4), (4, 8), (3, 1)])
def test_fully_connected_closed_form(n, c):
    # cuts: everything but one node's NIs, (N-1)/(c b); everything but a node and its router, 1/b
    ob = optimal_bound(parse_spec(f"full:{n}" + (f":c{c}" if c > 1 else "")))
    b = 16
    assert ob.all_gather_cycles_per_byte == max(Fraction(n - 1, c * b), Fraction(1, b)) / n


@pytest.mark.parametrize("n", [2, 5, 16])
def test_switch_is_the_injection_bound(n):
    t = parse_spec(f"switch:{n}")
    ob = optimal_bound(t)
    assert ob.all_gather_cycles_per_byte == Fraction(n - 1, n * 16)
    assert float(ob.all_reduce_cycles(M)) == pytest.approx(bounds(t, M).injection_cycles, rel=1e-15)


@pytest.mark.parametrize("spec", ["torus:4x4:c4", "torus:4x4", "torus:8x8:c4"])
def test_torus_optimum_is_the_injection_bound(spec):
    t = parse_spec(spec)
    ob = optimal_bound(t)
    n, b_node = t.num_nodes, 16 * t.nis_per_node
    assert ob.all_reduce_cycles(M) == 2 * Fraction(n - 1, n) * M / b_node
    assert float(ob.all_reduce_cycles(M)) == pytest.approx(bounds(t, M).injection_cycles, rel=1e-15)


def test_thin_links_make_a_cut_binding_beyond_injection_and_bisection():
    t = parse_spec("ring:8:c4")
    bw = t.link_bytes_per_cycle.copy()
    bw[router_links(t, 1, 2)] = 4.0
    bw[router_links(t, 5, 6)] = 4.0
    t = with_bandwidths(t, bw)
    ob = optimal_bound(t)
    # S = routers 2..5 with their nodes: 4 of 8 nodes behind 4 + 4 B/cycle
    assert ob.all_gather_cycles_per_byte == Fraction(1, 8) * Fraction(4, 8)
    cut = ob.all_gather_cut
    assert set(cut.nodes) in ({2, 3, 4, 5}, {6, 7, 0, 1})
    assert cut.bytes_per_cycle == 8
    assert cut.ratio_cycles_per_byte == Fraction(4, 8)
    b = bounds(t, M)
    assert float(ob.all_reduce_cycles(M)) > b.bandwidth_cycles


def test_reduce_scatter_uses_the_reversed_links():
    # one endpoint of a switch receives at 4 B/cycle but sends at 16: in the all-gather it
    # receives 3/4 of M through that link, in the reduce-scatter only its own quarter
    t = parse_spec("switch:4")
    bw = t.link_bytes_per_cycle.copy()
    bw[t.eject_link[2]] = 4.0
    ob = optimal_bound(with_bandwidths(t, bw))
    assert ob.all_gather_cycles_per_byte == Fraction(1, 4) * Fraction(3, 4)
    assert ob.reduce_scatter_cycles_per_byte == Fraction(1, 4) * Fraction(1, 4)
    assert ob.all_gather_cut.nodes == (0, 1, 3)
    assert ob.all_gather_cut.vertices == (0, 1, 3, 4)  # the three endpoints and the switch
    assert ob.reduce_scatter_cut.nodes == (2,) and ob.reduce_scatter_cut.bytes_per_cycle == 4


def test_several_nis_merge_into_the_node():
    # torus:4x4:c4: a node's 4 NI links (64 B/cycle) match its router's 4 links; one NI per
    # node would make the NI link (16) the limit, four times slower
    one = optimal_bound(parse_spec("torus:4x4"))
    four = optimal_bound(parse_spec("torus:4x4:c4"))
    assert one.all_gather_cycles_per_byte == 4 * four.all_gather_cycles_per_byte
    cut = four.all_gather_cut
    assert len(cut.nodes) == 15 and cut.bytes_per_cycle == 64
    t = parse_spec("torus:4x4:c4")
    assert all(int(t.endpoint_node[v]) in cut.nodes for v in cut.vertices if v < t.num_endpoints)


@pytest.mark.parametrize("seed", range(12))
def test_matches_brute_force_on_random_heterogeneous_bandwidths(seed):
    rng = np.random.default_rng(seed)
    spec = ["torus:2x2", "ring:4:c2", "fattree:k2:l2", "switch:5", "mesh:2x3", "full:3:c2"][seed % 6]
    t = parse_spec(spec)
    bw = rng.integers(1, 13, size=t.num_links) / rng.choice([1, 2, 4, 8])
    t = with_bandwidths(t, bw)
    ob = optimal_bound(t)
    assert ob.all_gather_cycles_per_byte == brute_force_ag(t)
    rev = dataclasses.replace(t, link_src=t.link_dst, link_dst=t.link_src)
    assert ob.reduce_scatter_cycles_per_byte == brute_force_ag(rev)
    # the reported cut attains the value
    n = ob.num_nodes
    assert ob.all_gather_cut.ratio_cycles_per_byte / n == ob.all_gather_cycles_per_byte
    assert ob.reduce_scatter_cut.ratio_cycles_per_byte / n == ob.reduce_scatter_cycles_per_byte


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:4x4:c4", "mesh:4x4", "mesh:4x4:c4", "ring:8:c4", "hypercube:d4",
                                  "full:8", "fattree:k4:l2", "bigraph:4x4", "switch:8", "mesh:2x8:c4"])
def test_never_below_the_injection_and_bisection_bounds(spec):
    t = parse_spec(spec)
    ob = optimal_bound(t)
    assert float(ob.all_reduce_cycles(M)) >= bounds(t, M).bandwidth_cycles * (1 - 1e-15)


@pytest.mark.parametrize("spec,algorithm", [("torus:4x4:c4", "multitree"), ("torus:4x4:c4", "ring"),
                                            ("mesh:4x4", "multitree"), ("ring:8", "ring"), ("fattree:k4:l2", "ring")])
def test_real_reduce_scatter_all_gather_schedules_do_not_beat_it(spec, algorithm):
    # ring and MultiTree are reduce-scatter (to ring positions / tree roots) then all-gather
    t = parse_spec(spec)
    ob = optimal_bound(t)
    ideal = ideal_cycles(build(t, algorithm), t, M)
    assert Fraction(ideal) >= ob.all_reduce_cycles(M)


def test_a_disconnected_network_is_refused_with_the_cut():
    t = parse_spec("switch:3")
    keep = t.link_src != 0  # endpoint 0 cannot send
    t = dataclasses.replace(t, link_src=t.link_src[keep], link_dst=t.link_dst[keep],
                            link_bytes_per_cycle=t.link_bytes_per_cycle[keep])
    with pytest.raises(SpecError, match="not connected"):
        optimal_bound(t)
