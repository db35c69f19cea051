"""The message-level event loop against hand-computed timings."""

from __future__ import annotations

import numpy as np
import pytest

from nic.message_sim import POLICY_BASELINE, POLICY_CODESIGNED, simulate_transfers
from noc.message import path_latency_cycles
from noc.routing import route
from noc.topology import parse_spec

T4 = parse_spec("ring:4")
RT4 = route(T4)
LAT4 = path_latency_cycles(T4, RT4, 2)  # one hop: 3 links + 2 routers = 7 cycles


def run(pairs, steps, deps, policy, wire_bytes=1600.0, nis=1, issue_delay=1.0, **kw):
    src = np.array([a for a, _ in pairs])
    dst = np.array([b for _, b in pairs])
    dep_ptr = np.zeros(len(pairs) + 1, dtype=np.int64)
    flat = []
    for i, d in enumerate(deps):
        flat += d
        dep_ptr[i + 1] = dep_ptr[i] + len(d)
    return simulate_transfers(
        src_node=src, step=np.array(steps), wire_bytes=np.full(len(pairs), wire_bytes), dep_ptr=dep_ptr,
        dep_idx=np.array(flat, dtype=np.int64), path_links=RT4.links[src, dst], path_len=RT4.length[src, dst],
        path_latency_cycles=LAT4[src, dst], link_bytes_per_cycle=T4.link_bytes_per_cycle, num_nodes=4,
        nis_per_node=nis, policy=policy, issue_delay_cycles=issue_delay, **kw,
    )


@pytest.mark.parametrize("policy", [POLICY_BASELINE, POLICY_CODESIGNED])
def test_one_transfer_is_serialisation_plus_path_latency(policy):
    r = run([(0, 1)], [0], [[]], policy)
    assert LAT4[0, 1] == 7
    assert (r.start_cycles[0], r.sent_cycles[0], r.arrive_cycles[0]) == (0, 100, 107)


def test_two_flows_on_one_link_share_it_fairly():
    r = run([(0, 2), (1, 2)], [0, 0], [[], []], POLICY_BASELINE)
    assert r.sent_cycles.tolist() == pytest.approx([200, 200])


def test_a_shared_resource_is_shared_like_a_link():
    # 0->1 and 2->3 use no common link; a shared 8 B/cycle resource gives each 4 B/cycle,
    # and a 12 B/cycle one, used by 0->1 only, leaves it the rest of its links' 16
    shared = dict(shared_resources=np.array([[0, -1], [0, 1]]), shared_capacity=np.array([8.0, 12.0]))
    r = run([(0, 1), (2, 3)], [0, 0], [[], []], POLICY_BASELINE, **shared)
    assert r.sent_cycles.tolist() == pytest.approx([400, 400])
    shared = dict(shared_resources=np.array([[1, -1], [-1, -1]]), shared_capacity=np.array([8.0, 12.0]))
    r = run([(0, 1), (2, 3)], [0, 0], [[], []], POLICY_BASELINE, **shared)
    assert r.sent_cycles.tolist() == pytest.approx([1600 / 12, 100])


@pytest.mark.parametrize("kw,msg", [
    (dict(shared_resources=np.zeros((2, 1), np.int64)), "give both or neither"),
    (dict(shared_resources=np.zeros((3, 1), np.int64), shared_capacity=np.ones(1)), "one row per transfer"),
    (dict(shared_resources=np.full((2, 1), 4), shared_capacity=np.ones(2)), "names resources 4..4"),
    (dict(shared_resources=np.full((2, 1), -2), shared_capacity=np.ones(2)), "use -1 for none"),
])
def test_bad_shared_resources_are_named(kw, msg):
    with pytest.raises(ValueError, match=msg):
        run([(0, 1), (2, 3)], [0, 0], [[], []], POLICY_BASELINE, **kw)


@pytest.mark.parametrize("kw,msg", [
    (dict(wire_bytes=-1.0), "wire_bytes must be finite and non-negative"),
    (dict(wire_bytes=float("nan")), "wire_bytes must be finite and non-negative"),
])
def test_bad_transfer_sizes_are_named(kw, msg):
    with pytest.raises(ValueError, match=msg):
        run([(0, 1), (2, 3)], [0, 0], [[], []], POLICY_BASELINE, **kw)


def test_a_transfer_without_a_route_is_named():
    with pytest.raises(ValueError, match="transfer 1 has no route"):
        run([(0, 1), (2, 2)], [0, 0], [[], []], POLICY_BASELINE)


def test_codesigned_transfers_out_of_step_order_are_named():
    with pytest.raises(ValueError, match="node 0 lists step 0 after step 1"):
        run([(0, 1), (0, 2)], [1, 0], [[], []], POLICY_CODESIGNED)


def test_codesigned_priority_lets_the_earlier_step_go_first():
    r = run([(0, 2), (1, 2)], [0, 1], [[], []], POLICY_CODESIGNED)
    assert r.sent_cycles.tolist() == pytest.approx([100, 200])


def test_a_dependent_transfer_starts_after_arrival_plus_issue_delay():
    r = run([(0, 1), (1, 2)], [0, 1], [[], [0]], POLICY_BASELINE, issue_delay=3.0)
    assert r.start_cycles[1] == r.arrive_cycles[0] + 3.0


@pytest.mark.parametrize("policy", [POLICY_BASELINE, POLICY_CODESIGNED])
def test_the_nics_own_cycle_delays(policy):
    # one NI at node 0 sends 0->1 then 0->2 (step 1, lockstep for the co-designed NIC);
    # node 1 forwards 1->2 once 0->1 has arrived. 100 cycles of serialisation each, 7 and
    # 14 cycles of latency, counted from the start of the tail's 1-cycle slot
    pairs, steps, deps = [(0, 1), (0, 2), (1, 2)], [0, 1, 1], [[], [], [0]]
    kw = dict(first_start_cycles=3.0, ni_free_delay_cycles=2.0, step_advance_cycles=1.0 if policy else 0.0,
              wormhole=_fluid_wormhole(3, tail_slot=1.0))
    r = run(pairs, steps, deps, policy, issue_delay=5.0, **kw)
    first_sent = 3 + 100
    assert r.start_cycles[0] == 3 and r.sent_cycles[0] == first_sent
    assert r.arrive_cycles[0] == first_sent - 1 + LAT4[0, 1]
    # the NI takes its next transfer 2 cycles after its last byte left (+1 for the step advance)
    assert r.start_cycles[1] == first_sent + 2 + (1 if policy == POLICY_CODESIGNED else 0)
    assert r.start_cycles[2] == r.arrive_cycles[0] + 5


def _fluid_wormhole(t, tail_slot):
    """A wormhole description that changes nothing but the tail flit's slot."""
    from nic.message_sim import Wormhole

    h = RT4.links.shape[1]
    return Wormhole(np.zeros((t, h), np.int64), np.zeros((t, h)), np.full((t, h), -1, np.int64), 1, 0, False, 0.0,
                    tail_slot_cycles=np.full(t, tail_slot))


def test_not_before_holds_a_transfer_back_and_its_dependents_follow():
    # 0->2 and 1->2 share link 1->2 (16 B/cycle): together each is sent at 200; with 1->2
    # held back to cycle 150, 0->2 has the link alone (sent at 100) and so does 1->2 (250)
    free = run([(0, 2), (1, 2), (2, 3)], [0, 0, 1], [[], [], [1]], POLICY_BASELINE)
    assert free.sent_cycles[:2].tolist() == pytest.approx([200, 200])
    held = run([(0, 2), (1, 2), (2, 3)], [0, 0, 1], [[], [], [1]], POLICY_BASELINE,
               not_before=np.array([0.0, 150.0, 0.0]))
    assert held.start_cycles[:2].tolist() == [0, 150]
    assert held.sent_cycles[:2].tolist() == pytest.approx([100, 250])
    assert held.start_cycles[2] == held.arrive_cycles[1] + 1.0
    # the start times a run chose anyway change nothing
    again = run([(0, 2), (1, 2), (2, 3)], [0, 0, 1], [[], [], [1]], POLICY_BASELINE, not_before=free.start_cycles)
    for a, b in ((again.start_cycles, free.start_cycles), (again.sent_cycles, free.sent_cycles),
                 (again.arrive_cycles, free.arrive_cycles)):
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize("bad", [np.zeros(2), np.array([0.0, -1.0, 0.0]), np.array([0.0, np.inf, 0.0])])
def test_a_bad_not_before_is_named(bad):
    with pytest.raises(ValueError, match="not_before must be 3 finite cycle counts"):
        run([(0, 2), (1, 2), (2, 3)], [0, 0, 1], [[], [], [1]], POLICY_BASELINE, not_before=bad)


def test_lockstep_waits_for_the_ni_but_baseline_does_not():
    # node 0 sends twice: step 0 to node 1 and step 1 to node 3 (no dependency), 2 NIs.
    base = run([(0, 1), (0, 3)], [0, 1], [[], []], POLICY_BASELINE, nis=2)
    assert base.start_cycles.tolist() == [0, 0]
    lock = run([(0, 1), (0, 3)], [0, 1], [[], []], POLICY_CODESIGNED, nis=2)
    assert lock.start_cycles.tolist() == [0, 101]  # after the NI frees at 100, plus one cycle


def test_a_dependency_cycle_is_reported():
    with pytest.raises(RuntimeError, match="never arrived"):
        run([(0, 1), (1, 0)], [0, 0], [[1], [0]], POLICY_BASELINE)


# ---- the wormhole mechanisms (nic.flow_control.message_flow_control), on a 4x4 torus row:
# routers 16..19 in a ring, DOR with dateline VC classes, 16 B/cycle links

def _transfers(pairs):
    """The torus and an (unverified) schedule of (step, src, dst) transfers, one flow each."""
    from nic.collectives import Schedule
    from nic.scheduler import OP_REDUCE
    from noc.topology import parse_spec

    t = parse_spec("torus:4x4")
    return t, Schedule.from_transfers("t", t.name, 16, 1, len(pairs),
                                      [(st, a, b, k, OP_REDUCE) for k, (st, a, b) in enumerate(pairs)])


def _wormhole_run(pairs, nic, network, size):
    """The transfers timed by the message model."""
    from nic.allreduce import run_message
    from nic.preparation import prepare

    t, s = _transfers(pairs)
    prep = prepare(t, s, nic, size)
    times, _ = run_message(t, prep, nic, network)
    return prep, times


def _flit_run(pairs, nic, network, size):
    """The same transfers at flit level."""
    from nic.preparation import prepare
    from nic.flit_cosim import run_flit

    t, s = _transfers(pairs)
    return run_flit(t, s, prepare(t, s, nic, size), nic, network)


def _tail_latency(src, dst, network):
    """From a transfer's last byte leaving the NI (or its bottleneck) to its arrival: the
    route's head latency counted from the start of the tail flit's slot, which on these
    16 B/cycle links begins one cycle before the last byte has left."""
    from noc.topology import parse_spec

    t = parse_spec("torus:4x4")
    return path_latency_cycles(t, route(t), network.router_delay_cycles)[src, dst] - 1.0


def test_bulk_transfers_holding_the_only_vc_of_their_class_serialise_in_a_chain():
    from nic.allreduce import NicConfig
    from noc.flit import FlitNetworkConfig

    # distance-2 exchange around the ring, every transfer one packet (bulk). Each head takes
    # the VC of its first router-to-router link, then waits for the next one, held by the
    # transfer injected there: only 3->1 (whose second link is in the other class after the
    # dateline) can go; the others follow one after the other.
    ring = [(0, 0, 2), (0, 1, 3), (0, 2, 0), (0, 3, 1)]
    prep, one = _wormhole_run(ring, NicConfig(), FlitNetworkConfig(num_vcs=2), 4 * 16384)
    serial = prep.wire_bytes[0] / 16
    assert np.argsort(one.arrive_cycles).tolist() == [3, 2, 1, 0]
    assert one.arrive_cycles.max() == pytest.approx(4 * serial, rel=0.01)
    # with two VCs per class all four share the links: two flows per link at 8 B/cycle
    _, two = _wormhole_run(ring, NicConfig(), FlitNetworkConfig(num_vcs=4), 4 * 16384)
    assert two.arrive_cycles.tolist() == pytest.approx([2 * serial] * 4, rel=0.01)
    # without a network config the model is a pure fluid
    _, fluid = _wormhole_run(ring, NicConfig(), None, 4 * 16384)
    assert fluid.arrive_cycles.max() < 2.01 * serial


def test_an_ni_is_free_once_the_rest_of_its_transfer_fits_in_the_buffers_before_the_bottleneck():
    from nic.allreduce import NicConfig
    from noc.flit import FlitNetworkConfig

    net = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32)  # 2 VCs per class x 32 flits x 16 B = 1 KiB per hop
    # 0->2 and 1->2 share 17>18 and the ejection link (8 B/cycle each); 0->2 is held back on
    # its third link and may fill two hops of buffers, 1->2 one
    prep, r = _wormhole_run([(0, 0, 2), (0, 1, 2)], NicConfig(design="baseline"), net, 2 * 16384)
    w = prep.wire_bytes
    assert r.sent_cycles.tolist() == pytest.approx([(w[0] - 2048) / 8, (w[1] - 1024) / 8])
    assert r.arrive_cycles.tolist() == pytest.approx([w[0] / 8 + _tail_latency(0, 2, net), w[1] / 8 + _tail_latency(1, 2, net)])


def test_the_next_transfer_of_an_ni_queues_behind_the_tail_of_the_previous_one():
    from nic.allreduce import NicConfig
    from noc.flit import FlitNetworkConfig

    net = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32)
    # node 0 sends 0->2 (slowed by 1->2 on 17>18), then 0->1: it starts when the NI is free,
    # but its packets are behind the first transfer's in the buffers of 0>16 and 16>17
    prep, r = _wormhole_run([(0, 0, 2), (0, 1, 2), (1, 0, 1)], NicConfig(design="baseline"), net, 3 * 16384)
    w = prep.wire_bytes
    # the baseline NI looks for its next transfer the cycle after its last flit left
    assert r.start_cycles[2] == pytest.approx(r.sent_cycles[0] + 1)
    # its packets follow the first transfer's tail, so that cycle does not add to its arrival
    assert r.arrive_cycles[2] == pytest.approx(w[0] / 8 + w[2] / 16 + _tail_latency(0, 1, net))


def test_a_bulk_transfer_passes_its_nis_draining_predecessor_in_another_vc():
    from nic.allreduce import NicConfig
    from noc.flit import FlitNetworkConfig

    # as above, but one packet per transfer: 0->2 holds one VC per hop while it drains, and
    # with two VCs per class 0->1 takes the other one instead of queueing behind its tail
    net, nic = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32), NicConfig(design="baseline", flow_control="bulk")
    pairs = [(0, 0, 2), (0, 1, 2), (1, 0, 1)]
    prep, r = _wormhole_run(pairs, nic, net, 3 * 16384)
    w = prep.wire_bytes
    assert r.start_cycles[2] == pytest.approx(r.sent_cycles[0] + 1)
    queued = w[0] / 8 + w[2] / 16 + _tail_latency(0, 1, net)  # behind the tail, as a packet stream would be
    assert r.arrive_cycles[2] < queued - 50
    flit = _flit_run(pairs, nic, net, 3 * 16384)
    assert r.arrive_cycles.tolist() == pytest.approx(flit.arrive_cycles.tolist(), rel=0.005)


def test_packets_on_a_single_vc_per_class_lose_the_allocation_cycle_each():
    from nic.allreduce import NicConfig
    from noc.flit import FlitNetworkConfig

    net = FlitNetworkConfig(num_vcs=2)  # one VC per class on a torus
    prep, r = _wormhole_run([(0, 0, 1)], NicConfig(design="baseline"), net, 16384)
    # 17-flit packets, the next head re-allocates the VC after the tail: 17 flits in 18 cycles
    assert r.arrive_cycles[0] == pytest.approx(prep.wire_bytes[0] / 16 * 18 / 17 + _tail_latency(0, 1, net))


@pytest.mark.parametrize("pairs,shared_class", [
    ([(0, 0, 2), (0, 1, 2)], True),   # share 17>18 and the ejection link, both in class 0
    ([(0, 3, 1), (0, 0, 1)], True),   # share 16>17 in classes 1 and 0, and the ejection link in class 0
    ([(0, 3, 1), (0, 0, 2)], False),  # share only 16>17, in classes 1 and 0
])
def test_packets_of_one_class_share_its_single_vcs_allocation_cycles(pairs, shared_class):
    from nic.allreduce import NicConfig
    from noc.flit import FlitNetworkConfig

    # with one VC per class every packet re-allocates its class's VC on every link, so the
    # packets of one class move 17 flits in 18 cycles per link whichever flows they belong
    # to; two classes on a link fill each other's allocation cycles
    net, nic = FlitNetworkConfig(num_vcs=2), NicConfig(design="baseline")
    prep, r = _wormhole_run(pairs, nic, net, 2 * 65536)
    w = prep.wire_bytes[0]
    rate = 16 * 17 / 18 / 2 if shared_class else 16 / 2
    want = [w / rate + _tail_latency(a, b, net) for a, b in zip(prep.src_node, prep.dst_node)]
    assert r.arrive_cycles.tolist() == pytest.approx(want)
    # and the flit level agrees within 0.3 %
    flit = _flit_run(pairs, nic, net, 2 * 65536)
    assert flit.arrive_cycles.tolist() == pytest.approx(want, rel=0.003)


RING_EXCHANGE = [(0, 0, 2), (0, 1, 3), (0, 2, 0), (0, 3, 1)]  # distance 2 around routers 16..19, all +x


def test_inputs_head_of_line_blocked_around_a_loop_carry_three_quarters_of_their_link():
    from nic.allreduce import NicConfig
    from nic.message_sim import HEAD_OF_LINE_LIMIT
    from noc.flit import FlitNetworkConfig

    # every router input of the ring holds a flow that ejects there and one that goes on to
    # an output shared with the router's own NI's flow, and that one's next input is the
    # same again: each input carries 0.75 of its link (Karol et al.'s 2x2 switch), so each
    # flow gets 0.375 of a link (6 B/cycle) where max-min alone gives it 0.5
    net, nic = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32), NicConfig(design="baseline")
    size = 4 * 256 * 1024
    prep, r = _wormhole_run(RING_EXCHANGE, nic, net, size)
    w = prep.wire_bytes[0]
    assert HEAD_OF_LINE_LIMIT == 0.75
    want = [w / (16 * 0.75 / 2) + _tail_latency(a, b, net) for _, a, b in RING_EXCHANGE]
    assert r.arrive_cycles.tolist() == pytest.approx(want)
    # the flit level delivers 0.38-0.49 flits/cycle per flow (bench/ring_head_of_line.py):
    # its last flow arrives within 5 % of the model's (max-min alone would be 25 % early)
    flit = _flit_run(RING_EXCHANGE, nic, net, size)
    assert r.total_cycles == pytest.approx(flit.arrive_cycles.max(), rel=0.05)
    # bulk transfers are one packet each: no line forms behind a head, no cap
    _, bulk = _wormhole_run(RING_EXCHANGE, NicConfig(design="baseline", flow_control="bulk"), net, size)
    assert bulk.total_cycles < 0.8 * r.total_cycles


def test_with_one_vc_per_class_the_loop_is_capped_too_and_the_flit_level_loses_more():
    from nic.allreduce import NicConfig
    from noc.flit import FlitNetworkConfig

    # 2 VCs on a torus: one per dateline class. Packets re-allocate their VC (17 flits in 18
    # cycles), so max-min gives each flow 17/36 of a link; a link loaded to 17/18 counts as
    # saturated, and the loop's ports are capped at 0.75 as with more VCs: 0.375 per flow.
    # The flit level gives 1/3: the model is 11 % fast here, max-min alone 29 %
    net, nic = FlitNetworkConfig(num_vcs=2, vc_depth_flits=8), NicConfig(design="baseline")
    size = 4 * 256 * 1024
    prep, r = _wormhole_run(RING_EXCHANGE, nic, net, size)
    w = prep.wire_bytes[0]
    assert r.arrive_cycles.tolist() == pytest.approx([w / 6 + _tail_latency(a, b, net) for _, a, b in RING_EXCHANGE])
    flit_rate = w / _flit_run(RING_EXCHANGE, nic, net, size).arrive_cycles.max() / 16
    assert flit_rate == pytest.approx(1 / 3, rel=0.02)
    # the open chain keeps max-min's 17/36 at both levels
    prep, chain = _wormhole_run(RING_EXCHANGE[:3], nic, net, 3 * 256 * 1024)
    assert chain.arrive_cycles.tolist() == pytest.approx(
        [w / (16 * 17 / 36) + _tail_latency(a, b, net) for _, a, b in RING_EXCHANGE[:3]])
    flit = _flit_run(RING_EXCHANGE[:3], nic, net, 3 * 256 * 1024)
    assert flit.arrive_cycles.tolist() == pytest.approx(chain.arrive_cycles.tolist(), rel=0.01)


def test_an_open_chain_of_such_inputs_loses_nothing():
    from nic.allreduce import NicConfig
    from noc.flit import FlitNetworkConfig

    # without 3->1 the input of router 16 carries 2->0 only, which ejects: the chain is open,
    # the last input drains, and the flit level gives every flow 0.5 flits/cycle as max-min does
    pairs = RING_EXCHANGE[:3]
    net, nic = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32), NicConfig(design="baseline")
    size = 3 * 256 * 1024
    prep, r = _wormhole_run(pairs, nic, net, size)
    w = prep.wire_bytes[0]
    assert r.arrive_cycles.tolist() == pytest.approx([w / 8 + _tail_latency(a, b, net) for _, a, b in pairs])
    flit = _flit_run(pairs, nic, net, size)
    assert flit.arrive_cycles.tolist() == pytest.approx(r.arrive_cycles.tolist(), rel=0.01)


def test_a_bad_tail_slot_is_named():
    with pytest.raises(ValueError, match="tail_slot_cycles must be 1 finite"):
        run([(0, 1)], [0], [[]], POLICY_BASELINE, wormhole=_fluid_wormhole(1, tail_slot=-1.0))


def test_bad_head_of_line_settings_are_named():
    from nic.message_sim import Wormhole

    shape = (1, 3)
    w = Wormhole(np.zeros(shape, np.int64), np.zeros(shape), np.full(shape, -1, np.int64), 1, 2, False, 0.0, 1.5)
    with pytest.raises(ValueError, match="head_of_line_limit must be a share of a link in \\[0, 1\\], got 1.5"):
        run([(0, 2)], [0], [[]], POLICY_BASELINE, wormhole=w)
    w = Wormhole(np.zeros(shape, np.int64), np.zeros(shape), np.full(shape, -1, np.int64), 1, 2, False, 0.0, 0.75, -1)
    with pytest.raises(ValueError, match="saturated_share must be a share of a link in \\[0, 1\\], got -1"):
        run([(0, 2)], [0], [[]], POLICY_BASELINE, wormhole=w)
    # bulk transfers (hold_vcs) are one packet each: a head-of-line limit for them is a mistake
    w = Wormhole(np.zeros(shape, np.int64), np.zeros(shape), np.full(shape, -1, np.int64), 1, 2, True, 0.0, 0.75)
    with pytest.raises(ValueError, match="head_of_line_limit is for per-packet flows"):
        run([(0, 2)], [0], [[]], POLICY_BASELINE, wormhole=w)


def test_the_event_loop_compiles_once_whatever_integer_types_the_caller_uses():
    # the loop takes its index arrays in one dtype each (nic.message_sim._narrow): callers
    # building int64, int32 or narrower arrays share one compiled loop, and get the same times
    from nic.message_loop import run as event_loop

    pairs, steps, deps = [(0, 1), (1, 2), (2, 3)], [0, 1, 1], [[], [0], []]
    wide = run(pairs, steps, deps, POLICY_CODESIGNED)
    src = np.array([a for a, _ in pairs], np.int32)
    dst = np.array([b for _, b in pairs], np.int32)
    narrow = simulate_transfers(
        src_node=src, step=np.array(steps, np.int16), wire_bytes=np.full(3, 1600.0),
        dep_ptr=np.array([0, 0, 1, 1], np.int32), dep_idx=np.array([0], np.int32),
        path_links=RT4.links[src, dst].astype(np.int32), path_len=RT4.length[src, dst].astype(np.int8),
        path_latency_cycles=LAT4[src, dst], link_bytes_per_cycle=T4.link_bytes_per_cycle, num_nodes=4,
        nis_per_node=1, policy=POLICY_CODESIGNED, issue_delay_cycles=1.0)
    assert narrow.arrive_cycles.tolist() == wide.arrive_cycles.tolist()
    assert len(event_loop.signatures) == 1, event_loop.signatures
