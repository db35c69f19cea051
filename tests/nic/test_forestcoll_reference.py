"""Our optimum equals ForestColl's, exactly, on every topology of bench/data/forestcoll_reference.csv.

The CSV holds ForestColl's own output (bench/forestcoll_reference.py ran the peer, from its
public sources outside the repo, on our topologies converted to its graph input); the test
rebuilds each topology, checks it is the one the peer saw (JSON digest), and compares.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from forestcoll_reference import (  # noqa: E402
    capacity_scale, peer_cycles_per_byte, read_reference, topologies, topology_sha256,
)

from nic.collectives import optimal_bound  # noqa: E402

ROWS = read_reference()
TOPOLOGIES = topologies()


@lru_cache(maxsize=None)
def _optimum(name: str):
    return optimal_bound(TOPOLOGIES[name])


def test_every_topology_of_the_bench_has_both_collectives_stored():
    stored = {(r["topology"], r["collective"]) for r in ROWS}
    assert stored == {(name, c) for name in TOPOLOGIES for c in ("all_gather", "reduce_scatter")}


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['topology']}-{r['collective']}" for r in ROWS])
def test_optimum_equals_forestcoll_exactly(row):
    t = TOPOLOGIES[row["topology"]]
    assert row["topology_sha256"] == topology_sha256(t), "the topology changed since ForestColl ran on it"
    assert int(row["nodes"]) == t.num_nodes and int(row["capacity_scale"]) == capacity_scale(t)
    peer = Fraction(row["forestcoll_cycles_per_byte"])
    # the stored fraction is the peer's U / (k N) (in scaled capacities), not a number of ours
    assert peer == peer_cycles_per_byte(row["forestcoll_U"], row["forestcoll_k"], t.num_nodes,
                                        int(row["capacity_scale"]))
    ob = _optimum(row["topology"])
    ours = ob.all_gather_cycles_per_byte if row["collective"] == "all_gather" else ob.reduce_scatter_cycles_per_byte
    assert ours == peer
