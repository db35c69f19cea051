"""The optimum with symmetry (one max-flow per orbit of verified automorphisms) equals the
general algorithm (a max-flow to every sink): the same exact values and the same cuts, on
symmetric networks, on networks whose bandwidths break some or all of the symmetry, and
with several NIs per node."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nic.collectives import optimal_bound
from nic.collectives.optimum import automorphisms, cut_graph, sink_representatives
from noc.topology import Topology, parse_spec


def per_dimension(t: Topology, widths: tuple[float, ...]) -> Topology:
    """Router links of dimension d at ``widths[d]`` bytes/cycle (NI links unchanged)."""
    bw = t.link_bytes_per_cycle.copy()
    for d, w in enumerate(widths):
        bw[t.link_dim == d] = w
    return dataclasses.replace(t, link_bytes_per_cycle=bw)


def random_widths(t: Topology, seed: int) -> Topology:
    rng = np.random.default_rng(seed)
    return dataclasses.replace(t, link_bytes_per_cycle=rng.integers(1, 13, size=t.num_links) / rng.choice([1, 2, 4]))


def one_thin_link(t: Topology) -> Topology:
    bw = t.link_bytes_per_cycle.copy()
    bw[np.nonzero(t.is_router_link)[0][3]] /= 4
    return dataclasses.replace(t, link_bytes_per_cycle=bw)


CASES = [
    ("torus:4x4", None), ("torus:4x4:c4", None), ("torus:6x4:c2", None), ("torus:8x8:c4", None),
    ("torus:3x3x3", None), ("torus:2x4", None), ("ring:7:c3", None), ("mesh:5x4:c2", None),
    ("mesh:8x8", None), ("hypercube:d4:c2", None), ("full:5:c2", None), ("fattree:k4:l2", None),
    ("switch:6", None),
    ("torus:8x8:c4", (2.0, 16.0)), ("torus:6x6:c4", (1.0, 3.0)), ("torus:4x4x2:c2", (4.0, 2.0, 16.0)),
    ("mesh:6x6:c4", (1.0, 2.0)), ("hypercube:d4:c4", (1.0, 2.0, 4.0, 8.0)),
    ("torus:8x8:c4", "thin"), ("mesh:4x4:c2", "thin"), ("full:4:c2", "thin"),
    ("torus:4x4:c4", 0), ("torus:6x6", 1), ("mesh:4x4", 2), ("ring:8:c2", 3),
]


def _topology(spec, widths) -> Topology:
    t = parse_spec(spec)
    if widths == "thin":
        return one_thin_link(t)
    if isinstance(widths, int):
        return random_widths(t, widths)
    return t if widths is None else per_dimension(t, widths)


@pytest.mark.parametrize("spec,widths", CASES)
def test_symmetry_gives_the_general_algorithms_values_and_cuts(spec, widths):
    t = _topology(spec, widths)
    assert optimal_bound(t) == optimal_bound(t, symmetry=False)


@pytest.mark.parametrize("spec,widths,orbits", [
    ("torus:8x8:c4", None, 1),  # translations: vertex-transitive
    ("torus:8x8:c4", (2.0, 16.0), 1),  # per-dimension widths keep every translation
    ("hypercube:d4:c2", None, 1),  # reflections are the XOR of one bit
    ("full:5:c2", None, 1),
    ("mesh:8x8", None, 16),  # reflections only (no transposition candidate): 4 x 4 classes
    ("mesh:5x4:c2", None, 6),  # 3 x 2 classes of coordinates under the two reflections
    ("torus:8x8:c4", "thin", 64),  # one thin link breaks every translation and reflection
    ("fattree:k4:l2", None, 16),  # switched network: no candidates, every sink
])
def test_orbits_are_what_the_symmetries_that_hold_give(spec, widths, orbits):
    t = _topology(spec, widths)
    g = cut_graph(t)
    assert len(sink_representatives(g.num_nodes, automorphisms(t, g))) == orbits


def test_a_translation_of_a_mesh_is_refused_and_its_reflections_kept():
    t = parse_spec("mesh:4x3")
    g = cut_graph(t)
    found = automorphisms(t, g)
    assert len(found) == 2  # of the 4 candidates, the two reflections
    for sigma in found:
        for (a, b), c in g.capacity.items():
            assert g.capacity[sigma[a], sigma[b]] == c
