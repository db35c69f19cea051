"""The ring schedules, built as numpy columns, against the transfers listed one by one."""

from __future__ import annotations

import numpy as np
import pytest

from nic.collectives import build
from nic.collectives.baselines import ring_order
from nic.collectives.schedule import Schedule
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.topology import parse_spec


def _listed(order, flow_base, direction):
    """Flow c's reduce-scatter chain ends at its owner order[c], then its all-gather runs on."""
    n = len(order)
    out = []
    for c in range(n):
        for s in range(n - 1):
            a, b = (c + direction * (1 + s)) % n, (c + direction * (2 + s)) % n
            out.append((s, order[a], order[b], flow_base + c, OP_REDUCE))
        for s in range(n - 1):
            a, b = (c + direction * s) % n, (c + direction * (s + 1)) % n
            out.append((n - 1 + s, order[a], order[b], flow_base + c, OP_GATHER))
    return out


@pytest.mark.parametrize("spec", ["ring:2", "ring:9", "torus:4x4", "mesh:3x5:c2", "torus:8x8:c4", "fattree:k4:l2"])
def test_ring_and_bidirectional_ring_are_the_listed_transfers(spec):
    t = parse_spec(spec)
    order = ring_order(t)
    n = t.num_nodes
    for name, listed, flows in (("ring", _listed(order, 0, +1), n),
                                ("bidir_ring", _listed(order, 0, +1) + _listed(order, n, -1), 2 * n)):
        want = Schedule.from_transfers(name, t.name, n, t.nis_per_node, flows, listed)
        got = build(t, name)
        for col in ("step", "src", "dst", "flow", "op"):
            np.testing.assert_array_equal(getattr(got, col), getattr(want, col), err_msg=f"{name} {col}")
            assert getattr(got, col).dtype == getattr(want, col).dtype
        assert got.num_flows == want.num_flows and got.params == {"order": order}
