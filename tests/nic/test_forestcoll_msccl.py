"""ForestColl's own all-reduce programs (MSCCL XML the peer wrote, bench/data/forestcoll_msccl/)
import as schedules of our topologies and verify on exact sums.

bench/forestcoll_msccl.py ran the peer from its public sources outside the repo; the
provenance CSV holds its commit and a digest of the topology it was given.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from forestcoll_msccl import OUT, forestcoll_schedule, not_expressible, topology_of, xml_path  # noqa: E402
from forestcoll_reference import capacity_scale, peer_cycles_per_byte, topology_sha256  # noqa: E402

from nic.collectives import optimal_bound, ideal_cycles, verify  # noqa: E402
from nic.nic_table import check_representable  # noqa: E402
from noc.topology import parse_spec  # noqa: E402

ROWS = list(csv.DictReader((OUT / "provenance.csv").open()))


@pytest.mark.parametrize("row", ROWS, ids=[r["topology"] for r in ROWS])
def test_forestcolls_program_is_a_verified_allreduce_of_our_topology(row):
    t = topology_of(row["topology"])
    assert topology_sha256(t) == row["topology_sha256"]  # the topology the peer was given
    s = forestcoll_schedule(row["topology"])
    assert s.num_flows == int(row["forestcoll_k"]) * t.num_nodes  # k one-chunk trees per root
    assert (s.num_transfers, s.num_steps) == (int(row["transfers"]), int(row["steps"]))
    verify(s, seed=5)
    check_representable(s)
    size = 4 * 1024 * s.num_flows
    assert ideal_cycles(s, t, size) >= float(optimal_bound(t).all_reduce_cycles(size)) * (1 - 1e-12)


FAILED = list(csv.DictReader((OUT / "not_expressible.csv").open()))


@pytest.mark.parametrize("row", ROWS + FAILED, ids=[r["topology"] for r in ROWS + FAILED])
def test_the_peers_trees_are_at_our_optimum(row):
    """The U and k of the trees the peer packed (for a program, or before its XML writer
    stopped) give its all-gather time per byte, U / (k N): our exact optimum."""
    t = topology_of(row["topology"])
    assert topology_sha256(t) == row["topology_sha256"]
    peer = peer_cycles_per_byte(row["forestcoll_U"], row["forestcoll_k"], t.num_nodes, capacity_scale(t))
    assert peer == optimal_bound(t).all_gather_cycles_per_byte


@pytest.mark.parametrize("row", FAILED, ids=[r["topology"] for r in FAILED])
def test_a_network_without_a_program_names_the_peers_failing_line(row):
    assert not xml_path(row["topology"]).exists()
    assert row["topology"] in not_expressible()
    assert re.fullmatch(r"\w+\.py:\d+: `.+` \(\w+.*\)", row["reason"])
