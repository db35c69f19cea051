"""The data path's Python references (hw_models.rtl.datapath_ref) against hand-derived
IEEE-754 cases and the functional verifier: the benches trust them, so they are checked
on their own here (no simulator)."""

from __future__ import annotations

import numpy as np
import pytest

from hw_models.rtl.datapath_ref import (FMT_FP32, FMT_INT32, ReceiveTiming, allreduce_reference, f32_add, int32_add,
                                       packet_plan)
from nic.collectives import build
from nic.collectives.verify import verifier_inputs
from noc.topology import parse_spec


def bits(x):
    return np.array([x], np.float32).view(np.uint32)


@pytest.mark.parametrize("a,b,want", [
    (bits(1.0), bits(2.0 ** -24), 0x3F800000),            # exactly half an ulp: tie to even (down)
    (bits(1.0 + 2.0 ** -23), bits(2.0 ** -24), 0x3F800002),  # tie to even (up)
    (bits(1.0), bits(3 * 2.0 ** -25), 0x3F800001),        # above half: up
    (np.uint32(0x00000001), bits(0.0), 0x00000000),       # subnormal input flushed
    (np.uint32(0x80400000), bits(0.0), 0x00000000),       # -subnormal + +0 = +0
    (np.uint32(0x00800001), np.uint32(0x80800000), 0x00000000),  # result 2^-149: flushed to +0
    (np.uint32(0x80800001), np.uint32(0x00800000), 0x80000000),  # ... and to -0
    (bits(-0.0), bits(-0.0), 0x80000000),
    (bits(3.0), bits(-3.0), 0x00000000),
    (np.uint32(0x7F7FFFFF), np.uint32(0x7F7FFFFF), 0x7F800000),  # overflow to +Inf
    (np.uint32(0x7F800000), np.uint32(0xFF800000), 0x7FC00000),  # Inf - Inf
    (np.uint32(0x7F800001), bits(1.0), 0x7FC00000),       # NaN payload not kept
    (np.uint32(0xFF800000), bits(1e38), 0xFF800000),
])
def test_f32_add_on_hand_derived_cases(a, b, want):
    assert int(f32_add(np.atleast_1d(a), np.atleast_1d(b))[0]) == want


def test_int32_add_wraps_modulo_2_to_32():
    a = np.array([0x7FFFFFFF, 0xFFFFFFFF, 5], np.uint32)
    b = np.array([1, 1, 0xFFFFFFFE], np.uint32)
    assert int32_add(a, b).tolist() == [0x80000000, 0, 3]


@pytest.mark.parametrize("beats,pkt", [(1, 0), (7, 0), (7, 1), (7, 3), (6, 3), (3, 8)])
def test_packet_plan_covers_the_message_once_in_order(beats, pkt):
    plan = packet_plan(beats, pkt)
    assert [f for f, _ in plan] == list(np.cumsum([0] + [n for _, n in plan])[:-1])
    assert sum(n for _, n in plan) == beats
    assert len(plan) == (1 if pkt == 0 else -(-beats // pkt))


@pytest.mark.parametrize("algo", ["ring", "multitree", "dbtree"])
def test_the_int32_reference_gives_the_verifiers_sums_in_any_delivery_order(algo):
    s = build(parse_spec("torus:4x4"), algo)
    lanes, m = 2, s.num_flows * 2 * 2
    data, expected = verifier_inputs(s, m, seed=3)
    u = data.astype(np.int32).view(np.uint32)
    out = allreduce_reference(s, u, lanes, FMT_INT32)
    assert np.array_equal(out.view(np.int32).astype(np.int64), np.broadcast_to(expected, out.shape))
    # a shuffled summation order per word: the same integers
    default = {}
    ref_order = _orders(s, lanes, m)
    rng = np.random.default_rng(0)
    for key, srcs in ref_order.items():
        default[key] = list(rng.permutation(srcs))
    out2 = allreduce_reference(s, u, lanes, FMT_INT32, reduce_order=default)
    assert np.array_equal(out, out2)


def _orders(s, lanes, m):
    """(node, word) -> REDUCE senders of that word, in the schedule's order."""
    wpf = m // lanes // s.num_flows
    out = {}
    for a, d, f, o in zip(s.src.tolist(), s.dst.tolist(), s.flow.tolist(), s.op.tolist()):
        if o == 0:
            for w in range(f * wpf, (f + 1) * wpf):
                out.setdefault((d, w), []).append(a)
    return out


def test_the_fp32_reference_depends_on_the_order_and_refuses_a_wrong_one():
    s = build(parse_spec("torus:4x4"), "multitree")
    lanes, m = 1, s.num_flows
    rng = np.random.default_rng(1)
    u = (rng.standard_normal((16, m)) * 2.0 ** rng.integers(-20, 20, (16, m))).astype(np.float32).view(np.uint32)
    orders = _orders(s, lanes, m)
    reversed_orders = {k: v[::-1] for k, v in orders.items()}
    a = allreduce_reference(s, u, lanes, FMT_FP32, reduce_order=orders)
    assert np.array_equal(a, allreduce_reference(s, u, lanes, FMT_FP32))  # the default is the schedule's order
    assert not np.array_equal(a, allreduce_reference(s, u, lanes, FMT_FP32, reduce_order=reversed_orders))
    key = next(k for k, v in orders.items() if len(v) > 1)
    wrong = dict(orders)
    wrong[key] = orders[key][:-1] + [orders[key][0]]
    with pytest.raises(ValueError, match=f"node {key[0]} word {key[1]}"):
        allreduce_reference(s, u, lanes, FMT_FP32, reduce_order=wrong)


def _run_timing(add_lat, words, cycles):
    """Offer the (word, ends a message) beats back to back; per cycle (ready, written word, event next cycle)."""
    t, i, out = ReceiveTiming(add_lat), 0, []
    for _ in range(cycles):
        ready = t.ready()
        taken, written = t.cycle((words[i], True) if i < len(words) else None)
        i += taken
        out.append((int(ready), written, int(t.event)))
    return out


def test_receive_timing_of_two_beats_to_one_word_derived_from_the_rtl_contract():
    # contract (rtl/nic_depacketiser.v): a beat taken at edge k is written at edge k+1+ADD_LAT,
    # its event presented in cycle k+2+ADD_LAT; a beat whose word is in the pipeline waits.
    # ADD_LAT 2: beat 0 taken at edge 0 -> written at edge 3; beat 1 taken at edge 1 is in the
    # apply register from cycle 2, reads word 5 only after edge 3 (cycle 4), so rx_tready is
    # low in cycles 2 and 3; it enters the pipeline at edge 4 and is written at edge 6.
    got = _run_timing(2, [5, 5, 6], 9)
    assert [r for r, _, _ in got] == [1, 1, 0, 0, 1, 1, 1, 1, 1]
    assert [w for _, w, _ in got] == [None, None, None, 5, None, None, 5, 6, None]
    # ADD_LAT 0: read-modify-write within a cycle, always ready, written one edge after taken
    got = _run_timing(0, [5, 5, 6], 5)
    assert [r for r, _, _ in got] == [1] * 5
    assert [w for _, w, _ in got] == [None, 5, 5, 6, None]
    assert [e for _, _, e in got] == [0, 1, 1, 1, 0]
    # different words never wait: written 1 + ADD_LAT edges after being taken, one per cycle
    got = _run_timing(1, [1, 2, 3], 6)
    assert [r for r, _, _ in got] == [1] * 6 and [w for _, w, _ in got] == [None, None, 1, 2, 3, None]


def test_receive_timing_refuses_an_unknown_latency():
    with pytest.raises(ValueError, match=r"add_lat = 8: allowed 0\.\.7"):
        ReceiveTiming(8)
