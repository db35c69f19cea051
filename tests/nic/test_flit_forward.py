"""The co-simulation's fast-forward (``nic.flit_cosim_forward``) against stepping every
cycle: on a seeded set of co-simulations (both NIC designs, bulk and per-packet flow
control, several routers and topologies) the run with jumps must end in the same network
state, every field and counter, with the same per-transfer times and link bytes, as the run
without them; and the co-designed (bulk) runs must actually jump."""

from __future__ import annotations

import numpy as np
import pytest

from nic.allreduce import NicConfig
from nic.collectives import build
from nic.flit_cosim import run_flit
from nic.preparation import prepare
from noc.flit import FlitNetworkConfig
from noc.topology import parse_spec

_BOOKSIM = dict(vc_allocator="islip", sw_allocator="islip", vc_class_rule="booksim", credit_adds_link_latency=True,
                vc_release="tail_credit", routing_delay_cycles=1)
# (topology, algorithm, NIC, size, router): the main job's set-up and variations around it
CASES = {
    "ring_codesigned": ("torus:4x4:c4", "ring", dict(design="codesigned"), 64 << 10, {}),
    "multitree_codesigned": ("torus:4x4:c4", "multitree", dict(design="codesigned"), 128 << 10, {}),
    "ring2d_codesigned": ("torus:4x4:c4", "ring2d", dict(design="codesigned"), 96 << 10, {}),
    "dbtree_codesigned": ("torus:4x4:c4", "dbtree", dict(design="codesigned"), 64 << 10, {}),
    "ring_baseline": ("torus:4x4:c4", "ring", dict(design="baseline"), 32 << 10, {}),
    "ring_baseline_bulk": ("torus:4x4:c4", "ring", dict(design="baseline", flow_control="bulk"), 64 << 10, {}),
    "multitree_reduce_unit": ("torus:4x4:c4", "multitree", dict(design="codesigned", reduction="chunk",
                                                                 reduce_latency_cycles=40), 64 << 10, {}),
    "ring_tx_queue": ("torus:4x4:c4", "ring", dict(design="codesigned", tx_buffer_flits=64), 64 << 10, {}),
    "mesh_deep_vcs": ("mesh:3x3", "multitree", dict(design="codesigned"), 48 << 10,
                      dict(num_vcs=4, vc_depth_flits=32, sw_alloc_delay_cycles=2, credit_delay_cycles=3)),
    "torus_booksim_rules": ("torus:4x4", "ring", dict(design="codesigned"), 32 << 10, _BOOKSIM),
    "fattree_packets": ("fattree:k4:l2", "dbtree", dict(design="codesigned", flow_control="packet",
                                                         packet_bytes=2048), 32 << 10, {}),
}


def _run(case, fast_forward):
    spec, algorithm, nic_keys, size, router = case
    t = parse_spec(spec)
    schedule = build(t, algorithm)
    nic = NicConfig(**nic_keys)
    out = {}
    timing = run_flit(t, schedule, prepare(t, schedule, nic, size), nic, FlitNetworkConfig(**router),
                      fast_forward=fast_forward, state_out=out)
    return timing, out


@pytest.mark.parametrize("name", list(CASES))
def test_jumps_end_in_the_state_of_every_cycle_stepped(name):
    stepped, s_out = _run(CASES[name], False)
    jumped, j_out = _run(CASES[name], True)
    assert s_out["jumped"] == 0
    assert stepped.extra == jumped.extra
    for f in ("start_cycles", "sent_cycles", "arrive_cycles", "ready_cycles", "link_bytes"):
        np.testing.assert_array_equal(getattr(jumped, f), getattr(stepped, f), err_msg=f)
    differ = [f for f in s_out["state"]._fields
              if not np.array_equal(getattr(s_out["state"], f), getattr(j_out["state"], f))]
    assert differ == []
    if name.endswith("codesigned"):  # bulk transfers stream: the comparison covers jumps
        assert j_out["jumped"] > 0


def test_packets_shorter_than_a_jump_are_stepped():
    """256 B packets put a head into route computation at every router every 17 cycles:
    no stretch reaches the shortest jump, so nothing is jumped (a window that ignored the
    heads would jump here)."""
    _, out = _run(CASES["ring_baseline"], True)
    assert out["jumped"] == 0
