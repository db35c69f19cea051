"""The NI's transmit queue (NicConfig.tx_buffer_flits) at both all-reduce levels."""

from __future__ import annotations

import numpy as np
import pytest

from nic.allreduce import NicConfig, run_message
from nic.preparation import prepare
from nic.collectives import build
from nic.flit_cosim import run_flit
from noc.flit import FlitNetworkConfig
from noc.topology import parse_spec

NET = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32)


def _times(model, t, s, nic, size):
    prep = prepare(t, s, nic, size)
    if model == "flit":
        tm = run_flit(t, s, prep, nic, NET)
        return tm.start_cycles, tm.sent_cycles, tm.arrive_cycles
    tm, _ = run_message(t, prep, nic, NET)
    return tm.start_cycles, tm.sent_cycles, tm.arrive_cycles


@pytest.mark.parametrize("model", ["message", "flit"])
@pytest.mark.parametrize("flow_control", ["bulk", "packet"])
def test_the_ni_is_free_when_the_rest_fits_in_its_queue(model, flow_control):
    # ring: every send waits for the previous step's arrival, and each link carries one
    # transfer at a time, so a queue of B flits frees each NI exactly B flit-cycles sooner
    # and changes no arrival
    t = parse_spec("torus:4x4")
    s = build(t, "ring")
    size = 256 << 10  # 16 KiB transfers: 1025 (bulk) or 1088 (packet) flits
    base = _times(model, t, s, NicConfig(flow_control=flow_control), size)
    for b in (100, 500):
        q = _times(model, t, s, NicConfig(flow_control=flow_control, tx_buffer_flits=b), size)
        np.testing.assert_array_equal(q[0], base[0])
        np.testing.assert_array_equal(q[2], base[2])
        # per-packet: the packetiser queues whole 17-flit packets, so the NI frees when the
        # queue's unsent flits first drop to B or fewer: within one packet of B
        early = base[1] - q[1]
        if flow_control == "bulk" or model == "message":
            assert np.allclose(early, b)
        else:
            assert (early >= b - 17).all() and (early <= b).all()


def test_a_queue_longer_than_the_message_frees_the_ni_at_once():
    t = parse_spec("torus:4x4")
    s = build(t, "ring")
    start, sent, _ = _times("flit", t, s, NicConfig(tx_buffer_flits=5000), 64 << 10)
    assert (sent - start <= 1).all()


def test_default_is_no_queue_and_keys_like_before():
    assert NicConfig().tx_buffer_flits == 0
    assert "tx_buffer_flits" not in NicConfig().key_fields()
    assert NicConfig(tx_buffer_flits=8).key_fields()["tx_buffer_flits"] == 8
