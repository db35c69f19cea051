"""cocotb benches of the NIC data path (run by tests/rtl/test_datapath.py; parameters and
the bench's knobs from the JSON file named by $HWM_DP_JOB).

* ``adder_bench`` (``nic_reduce_add``): every lane of the adder against
  hw_models.rtl.datapath_ref (numpy float32 with the stated subnormal/NaN handling, or
  exact int32 modulo 2^32): all pairs of a list of edge values, then random vectors of
  several kinds (uniform bit patterns; near cancellation; exponent gaps around the guard,
  round and sticky bits; exact ties; near overflow and underflow).
* ``roundtrip_bench`` (``nic_datapath``): send requests straight into the packetiser,
  packets collected under random ``tready`` and checked (packet count and sizes, tlast,
  the sideband, the data read from the buffer), then fed back into the receive stream
  with random ``tvalid`` gaps (as GATHERs to another chunk: a copy; as REDUCEs: a sum),
  the buffer read back through the host port and compared with the reference.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, Timer

from hw_models.rtl.datapath_ref import FMT_FP32, ReceiveTiming, add, packet_plan

MASK32 = 0xFFFFFFFF


def _job():
    with open(os.environ["HWM_DP_JOB"]) as fh:
        return json.load(fh)


def _pack(words, lanes):
    return sum(int(x) << (32 * i) for i, x in enumerate(words[:lanes]))


def _unpack(v, lanes):
    return [(int(v) >> (32 * i)) & MASK32 for i in range(lanes)]


FP_EDGES = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000, 0x00800001, 0x00FFFFFF,
            0x01000000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
            0xFFC00001, 0x3F800000, 0xBF800000, 0x3F800001, 0xBF7FFFFF, 0x33800000, 0x33800001, 0xB3800000,
            0x34000000, 0x4B800000, 0x4B800001, 0x3FFFFFFF, 0xBFFFFFFF, 0x00800002]
INT_EDGES = [0, 1, MASK32, 0x7FFFFFFF, 0x80000000, 0x80000001, 0x7FFFFFFE, 0x00010000, 0xFFFF0000]


def _daz(bits):
    return np.where((bits >> 23) & 0xFF == 0, bits & 0x80000000, bits).astype(np.uint32)


def fp_random_pairs(rng, n):
    """Random float32 pairs of several kinds, as uint32 bit patterns."""
    out = []
    for k in range(n):
        kind = k % 7
        sa, sb = (int(x) for x in rng.integers(0, 2, 2))
        ea = int(rng.integers(1, 255))
        fa, fb = (int(x) for x in rng.integers(0, 1 << 23, 2))
        if kind == 0:  # uniform bit patterns
            a, b = (int(x) for x in rng.integers(0, 1 << 32, 2, dtype=np.uint64))
        elif kind == 1:  # near cancellation: opposite signs, exponents 0..2 apart
            eb = min(254, max(1, ea + int(rng.integers(-2, 3))))
            a, b = (sa << 31) | (ea << 23) | fa, ((1 - sa) << 31) | (eb << 23) | (fa ^ int(rng.integers(0, 64)))
        elif kind == 2:  # exponent gap around the guard/round/sticky bits and beyond
            gap = int(rng.integers(0, 30))
            eb = max(1, ea - gap)
            a, b = (sa << 31) | (ea << 23) | fa, (sb << 31) | (eb << 23) | fb
        elif kind == 3:  # exact ties: the smaller operand's lowest kept bit is half an ulp
            gap = int(rng.integers(1, 24))
            eb = max(1, ea - gap)
            fb = (fb >> gap) << gap  # only the bit at the tie position may remain below
            a, b = (sa << 31) | (ea << 23) | fa, (sb << 31) | (eb << 23) | fb
        elif kind == 4:  # near overflow
            ea, eb = int(rng.integers(250, 255)), int(rng.integers(250, 255))
            a, b = (sa << 31) | (ea << 23) | fa, (sb << 31) | (eb << 23) | fb
        elif kind == 5:  # near underflow (results around the smallest normal)
            ea, eb = int(rng.integers(1, 4)), int(rng.integers(1, 4))
            a, b = (sa << 31) | (ea << 23) | fa, (sb << 31) | (eb << 23) | fb
        else:  # ordinary magnitudes
            eb = min(254, max(1, ea + int(rng.integers(-8, 9))))
            a, b = (sa << 31) | (ea << 23) | fa, (sb << 31) | (eb << 23) | fb
        out.append((a & MASK32, b & MASK32))
    return out


@cocotb.test()
async def adder_bench(dut):
    j = _job()
    lanes, fmt = j["LANES"], j["FMT"]
    rng = np.random.default_rng(j.get("seed", 0) + 17 * lanes + fmt)
    edges = FP_EDGES if fmt == FMT_FP32 else INT_EDGES
    pairs = [(a, b) for a in edges for b in edges]
    if fmt == FMT_FP32:
        pairs += fp_random_pairs(rng, j.get("random", 6000))
    else:
        pairs += [(int(a), int(b)) for a, b in rng.integers(0, 1 << 32, (j.get("random", 6000), 2), dtype=np.uint64)]
    # spread the pairs over the lanes; each lane gets pairs from every part of the list
    order = rng.permutation(len(pairs))
    pairs = [pairs[i] for i in order]
    steps = -(-len(pairs) // lanes)
    pairs += pairs[:steps * lanes - len(pairs)]
    checked = {"nan": 0, "inf": 0, "zero": 0, "flushed": 0, "subnormal_in": 0}
    lat = j.get("ADD_LAT", 0)
    if lat:  # pipelined: a new pair every cycle, its sum lat edges later
        Clock(dut.clk, 10, unit="ns").start()
        await FallingEdge(dut.clk)
    else:
        dut.clk.value = 0
    in_flight = []
    for s in range(steps + max(lat - 1, 0)):
        if s < steps:
            chunk = pairs[s * lanes:(s + 1) * lanes]
            in_flight.append((np.array([p[0] for p in chunk], np.uint32), np.array([p[1] for p in chunk], np.uint32)))
            dut.a.value = _pack(in_flight[-1][0], lanes)
            dut.b.value = _pack(in_flight[-1][1], lanes)
        else:
            dut.a.value, dut.b.value = 0, 0  # drained: zeros in, nothing checked for them
        if lat:
            await FallingEdge(dut.clk)
            if s < lat - 1:
                continue
            # y now is the sum of the pair presented lat edges ago (step s - lat + 1)
        else:
            await Timer(1, unit="ns")
        a, b = in_flight.pop(0)
        want = add(fmt, a, b)
        got = _unpack(dut.y.value, lanes)
        for lane in range(lanes):
            assert got[lane] == int(want[lane]), (
                f"lane {lane}: {a[lane]:#010x} + {b[lane]:#010x} = {got[lane]:#010x}, reference {int(want[lane]):#010x}")
        if fmt == FMT_FP32:
            w = want.astype(np.uint32)
            checked["nan"] += int((w == 0x7FC00000).sum())
            checked["inf"] += int(((w & 0x7FFFFFFF) == 0x7F800000).sum())
            checked["zero"] += int(((w & 0x7FFFFFFF) == 0).sum())
            with np.errstate(all="ignore"):  # exact sums below the smallest normal: flushed
                r = (_daz(a).view(np.float32) + _daz(b).view(np.float32)).view(np.uint32)
            checked["flushed"] += int(((((r >> 23) & 0xFF) == 0) & ((r & 0x7FFFFF) != 0)).sum())
            checked["subnormal_in"] += int(((((a >> 23) & 0xFF) == 0) & ((a & 0x7FFFFF) != 0)).sum())
    if fmt == FMT_FP32:
        assert all(v > 0 for v in checked.values()), checked
    dut._log.info(f"adder: {len(pairs)} pairs over {lanes} lanes checked, fmt {fmt}: {checked}")


@cocotb.test()
async def roundtrip_bench(dut):
    j = _job()
    lanes, fmt, words = j["LANES"], j["FMT"], j["BUF_WORDS"]
    flow_w, node_w, step_w = j["FLOW_W"], j["NODE_W"], j["STEP_W"]
    seed = j.get("seed", 0)
    rng = np.random.default_rng(seed)
    Clock(dut.clk, 10, unit="ns").start()
    node = int(rng.integers(0, 1 << node_w))

    def zero_inputs():
        for name in ("send_valid", "send_op", "send_flow", "send_peer", "send_len", "send_step", "tx_tready",
                     "rx_tvalid", "rx_tdata", "rx_tlast", "rx_tid", "rx_tuser", "host_we", "host_addr", "host_wdata"):
            getattr(dut, name).value = 0

    zero_inputs()
    dut.node_id.value = node
    dut.rst.value = 1
    await FallingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0

    def rand_word():
        if fmt == FMT_FP32:  # finite normal floats of moderate range
            v = (rng.standard_normal(lanes) * 2.0 ** rng.integers(-8, 8, lanes)).astype(np.float32)
            return [int(x) for x in v.view(np.uint32)]
        return [int(x) for x in rng.integers(0, 1 << 32, lanes, dtype=np.uint64)]

    mem = [rand_word() for _ in range(words)]
    for a in range(words):  # host writes, then reads every word back
        dut.host_we.value, dut.host_addr.value, dut.host_wdata.value = 1, a, _pack(mem[a], lanes)
        await FallingEdge(dut.clk)
    dut.host_we.value = 0

    async def read_all():
        out = []
        for a in range(words):
            dut.host_addr.value = a
            await FallingEdge(dut.clk)
            out.append(_unpack(dut.host_rdata.value, lanes))
        return out

    assert await read_all() == mem, "host write/read-back"

    p_ready, p_gap = j.get("p_ready", 0.4), j.get("p_gap", 0.4)
    messages = 0
    packets_seen = 0
    for trial in range(j.get("trials", 24)):
        # a chunk: flows of len elements; whole words; fits in the buffer
        beats = int(rng.integers(1, min(9, words // 2) + 1))
        nflows = words // beats
        f_src, f_dst = (int(x) for x in rng.choice(nflows, 2, replace=False))
        if f_src >= 1 << flow_w or f_dst >= 1 << flow_w:
            continue
        pkt = int(rng.choice([0, 1, 2, 3, beats, beats + 2]))
        op = int(rng.integers(0, 2))
        step = int(rng.integers(0, 1 << step_w))
        peer = int(rng.integers(0, 1 << node_w))
        dut.cfg_pkt_beats.value = pkt
        # --- transmit: the request, then packets under random tready
        dut.send_valid.value, dut.send_op.value, dut.send_flow.value = 1, op, f_src
        dut.send_peer.value, dut.send_len.value, dut.send_step.value = peer, beats * lanes, step
        packets, cur, done_seen, cycles = [], [], 0, 0
        accepted = False
        while True:
            ready = int(rng.random() < p_ready)
            dut.tx_tready.value = ready
            await Timer(1, unit="ns")
            if not accepted and int(dut.send_ready.value):
                accepted = True
            tv = int(dut.tx_tvalid.value)
            if tv and ready:
                user = int(dut.tx_tuser.value)
                cur.append((_unpack(dut.tx_tdata.value, lanes), user, int(dut.tx_tdest.value), int(dut.tx_tid.value)))
                if int(dut.tx_tlast.value):
                    packets.append(cur)
                    cur = []
            await FallingEdge(dut.clk)
            if accepted:
                dut.send_valid.value = 0
            done_seen += int(dut.ni_done.value)
            cycles += 1
            if done_seen:
                break
            assert cycles < 40 * beats + 100, f"trial {trial}: message of {beats} beats not finished"
        assert not cur, "a packet without tlast"
        plan = packet_plan(beats, pkt)
        assert [len(p) for p in packets] == [n for _, n in plan], (trial, pkt, beats, [len(p) for p in packets])
        base = f_src * beats
        for (first, n), p in zip(plan, packets):
            last = first + n == beats
            want_user = (((base + first) << (step_w + flow_w + 2)) | (step << (flow_w + 2)) | (f_src << 2)
                         | (op << 1) | int(last))
            for k, (data, user, dest, tid) in enumerate(p):
                assert (user, dest, tid) == (want_user, peer, node), (trial, k, hex(user), hex(want_user))
                assert data == mem[base + first + k], (trial, first + k)
        messages += 1
        packets_seen += len(packets)
        assert int(dut.req_err.value) == 0
        # --- receive: the same packets back, to chunk f_dst, with tvalid gaps
        dst_base = f_dst * beats
        rx_op = int(rng.integers(0, 2))
        src = int(rng.integers(0, 1 << node_w))
        events = []
        beats_in = [(data, ((dst_base + first) << (step_w + flow_w + 2)) | (step << (flow_w + 2)) | (f_dst << 2)
                     | (rx_op << 1) | int(first + n == beats), k == n - 1)
                    for (first, n), p in zip(plan, packets) for k, (data, _u, _d, _t) in enumerate(p)]
        i = 0
        for _ in range(len(beats_in) * 40 + 10):
            if i < len(beats_in) and rng.random() >= p_gap:
                data, user, last = beats_in[i]
                dut.rx_tvalid.value, dut.rx_tdata.value, dut.rx_tuser.value = 1, _pack(data, lanes), user
                dut.rx_tlast.value, dut.rx_tid.value = int(last), src
                await Timer(1, unit="ns")
                assert int(dut.rx_tready.value) == 1
                i += 1
            else:
                dut.rx_tvalid.value = 0
                dut.rx_tdata.value = int(rng.integers(0, 1 << 31))  # garbage while not valid
            await FallingEdge(dut.clk)
            if int(dut.recv_valid.value):
                events.append((int(dut.recv_flow.value), int(dut.recv_op.value), int(dut.recv_src.value)))
            if i == len(beats_in) and events:
                break
        dut.rx_tvalid.value = 0
        for _ in range(3):
            await FallingEdge(dut.clk)
            assert not int(dut.recv_valid.value), "a second receive event for one message"
        assert events == [(f_dst, rx_op, src)], (trial, events)
        for k in range(beats):
            sent = np.array(mem[base + k], np.uint32)
            old = np.array(mem[dst_base + k], np.uint32)
            mem[dst_base + k] = [int(x) for x in (sent if rx_op == 1 else add(fmt, old, sent))]
        assert await read_all() == mem, f"trial {trial}: buffer after the receive (op {rx_op})"
        assert int(dut.rx_err.value) == 0
    assert messages >= 10 and packets_seen > messages
    dut._log.info(f"round trip: {messages} messages, {packets_seen} packets")


@cocotb.test()
async def hazard_bench(dut):
    """Receive side under back-to-back beats to a few words: ``rx_tready`` and every
    receive event cycle by cycle against :class:`ReceiveTiming` at the bench's ``ADD_LAT``,
    the source holding a beat (and its payload) while ``tready`` is low and idling at random
    (``p_gap``); the buffer read back against the beats applied in the order taken."""
    j = _job()
    lanes, fmt, words = j["LANES"], j["FMT"], j["BUF_WORDS"]
    flow_w, step_w = j["FLOW_W"], j["STEP_W"]
    lat = j.get("ADD_LAT", 0)
    rng = np.random.default_rng(j.get("seed", 0))
    Clock(dut.clk, 10, unit="ns").start()
    for name in ("send_valid", "send_op", "send_flow", "send_peer", "send_len", "send_step", "tx_tready",
                 "rx_tvalid", "rx_tdata", "rx_tlast", "rx_tid", "rx_tuser", "host_we", "host_addr", "host_wdata",
                 "node_id", "cfg_pkt_beats"):
        getattr(dut, name).value = 0
    dut.rst.value = 1
    await FallingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0

    def rand_word():
        if fmt == FMT_FP32:
            v = (rng.standard_normal(lanes) * 2.0 ** rng.integers(-8, 8, lanes)).astype(np.float32)
            return [int(x) for x in v.view(np.uint32)]
        return [int(x) for x in rng.integers(0, 1 << 32, lanes, dtype=np.uint64)]

    mem = [rand_word() for _ in range(words)]
    for a in range(words):
        dut.host_we.value, dut.host_addr.value, dut.host_wdata.value = 1, a, _pack(mem[a], lanes)
        await FallingEdge(dut.clk)
    dut.host_we.value = 0

    # messages of one packet, 1-2 beats, to a word among the first three: back-to-back reuse of a word
    beats = []  # (word, data, tuser, tlast, op, ends the message)
    for m in range(j.get("messages", 60)):
        n = int(rng.integers(1, 3))
        base = int(rng.integers(0, 3))
        op = int(rng.random() < 0.2)  # mostly REDUCE
        user = (base << (step_w + flow_w + 2)) | ((m % (1 << flow_w)) << 2) | (op << 1) | 1
        for k in range(n):
            beats.append((base + k, rand_word(), user, int(k == n - 1), op, k == n - 1))
    model = ReceiveTiming(lat)
    p_gap = j.get("p_gap", 0.3)
    i, held, stalls, events, cycles = 0, False, 0, 0, 0
    while i < len(beats) or model.apply is not None or any(model.stages) or model.event:
        cycles += 1
        assert cycles < 40 * len(beats) + 100, "the receive side never finished"
        offer = held or (i < len(beats) and rng.random() >= p_gap)
        if offer:
            word, data, user, last, _op, _ev = beats[i]
            dut.rx_tvalid.value, dut.rx_tdata.value, dut.rx_tuser.value = 1, _pack(data, lanes), user
            dut.rx_tlast.value, dut.rx_tid.value = last, 1
        else:
            dut.rx_tvalid.value = 0
            dut.rx_tdata.value = int(rng.integers(0, 1 << 31))  # garbage while not valid
        await Timer(1, unit="ns")
        ready = int(dut.rx_tready.value)
        assert ready == int(model.ready()), f"cycle {cycles}: rx_tready {ready}, model {int(model.ready())}"
        taken, _written = model.cycle((beats[i][0], beats[i][5]) if offer else None)
        if offer and taken:
            word, data, _u, _l, op, _ev = beats[i]
            mem[word] = list(data) if op else [int(x) for x in add(fmt, np.array(mem[word], np.uint32),
                                                                 np.array(data, np.uint32))]
            i += 1
            held = False
        elif offer:
            stalls += 1
            held = True  # AXI-Stream: the beat and its payload stay on offer until taken
        await FallingEdge(dut.clk)
        rv = int(dut.recv_valid.value)
        assert rv == int(model.event), f"cycle {cycles}: recv_valid {rv}, model {int(model.event)}"
        events += rv
    dut.rx_tvalid.value = 0
    out = []
    for a in range(words):
        dut.host_addr.value = a
        await FallingEdge(dut.clk)
        out.append(_unpack(dut.host_rdata.value, lanes))
    assert out == mem, "buffer after the receive: a beat lost, applied twice or out of order"
    assert events == j.get("messages", 60) and int(dut.rx_err.value) == 0
    assert (stalls > 0) == (lat > 0), f"ADD_LAT {lat}: {stalls} cycles with a beat held"
    dut._log.info(f"hazard: {len(beats)} beats, {events} events, {stalls} stall cycles, {cycles} cycles, "
                  f"ADD_LAT {lat}")


@cocotb.test()
async def pause_bench(dut):
    """Two NIs (tests/rtl/hdl/nic_dp_axis2.v) under cocotbext-axi pause patterns: REDUCE
    messages from two AXI-Stream sources into four receive chunks while both packetisers
    send four other chunks to two AXI-Stream sinks. The job's ``idle`` pauses the sources
    (tvalid gaps), ``backpressure`` the sinks (tready low); both together are the crossed
    case. Checks: every received beat summed exactly once (int32, the buffer read back
    equals the Python sums), one receive event per message, every sent packet's data and
    fields as planned and in order per NI, no error flag; the pauses and the receive
    arbiter really held beats (counted)."""
    import itertools

    from cocotb.triggers import ReadOnly, RisingEdge, with_timeout
    from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

    j = _job()
    lanes, words = j["LANES"], j["BUF_WORDS"]
    flow_w, node_w, step_w = j["FLOW_W"], j["NODE_W"], j["STEP_W"]
    ba_w = max(1, (words - 1).bit_length())
    rng = np.random.default_rng(j.get("seed", 0))
    chunk = j.get("chunk_beats", 4)
    n_rx_flows = words // chunk // 2  # flows [0, n_rx_flows) are received into, the rest are sent
    pkt = j.get("pkt_beats", 2)
    Clock(dut.clk, 10, unit="ns").start()
    for name in ("send_valid", "send_op", "send_flow", "send_peer", "send_len", "send_step", "send_ni", "host_we",
                 "host_addr", "host_wdata"):
        getattr(dut, name).value = 0
    node = int(rng.integers(0, 1 << node_w))
    dut.node_id.value = node
    dut.cfg_pkt_beats.value = pkt
    srcs = [AxiStreamSource(AxiStreamBus.from_prefix(dut, f"rx{q}"), dut.clk, dut.rst) for q in range(2)]
    sinks = [AxiStreamSink(AxiStreamBus.from_prefix(dut, f"tx{q}"), dut.clk, dut.rst) for q in range(2)]
    for q in range(2):
        srcs[q].log.setLevel("WARNING")
        sinks[q].log.setLevel("WARNING")
        if j.get("idle"):
            srcs[q].set_pause_generator(itertools.cycle(j["idle"][q:] + j["idle"][:q]))
        if j.get("backpressure"):
            sinks[q].set_pause_generator(itertools.cycle(j["backpressure"][q:] + j["backpressure"][:q]))
    dut.rst.value = 1
    for _ in range(3):
        await FallingEdge(dut.clk)
    dut.rst.value = 0

    mem = [[int(x) for x in rng.integers(0, 1 << 32, lanes, dtype=np.uint64)] for _ in range(words)]
    for a in range(words):
        dut.host_we.value, dut.host_addr.value, dut.host_wdata.value = 1, a, _pack(mem[a], lanes)
        await FallingEdge(dut.clk)
    dut.host_we.value = 0
    want = [list(w) for w in mem]

    def user(addr, step, flow, op, last):
        return (((addr << step_w | step) << flow_w | flow) << 2) | (op << 1) | last

    def to_bytes(words_):
        return b"".join(int(x).to_bytes(4, "little") for w in words_ for x in w)

    # ---- receive: REDUCE messages on both sources, split into packets of 1..chunk beats
    want_events = Counter()
    for q in range(2):
        for _ in range(j.get("messages", 10)):
            flow, src, step = int(rng.integers(0, n_rx_flows)), int(rng.integers(0, 1 << node_w)), int(rng.integers(0, 1 << step_w))
            data = [[int(x) for x in rng.integers(0, 1 << 32, lanes, dtype=np.uint64)] for _ in range(chunk)]
            for b in range(chunk):
                w = flow * chunk + b
                want[w] = [(x + y) & MASK32 for x, y in zip(want[w], data[b])]
            b = 0
            while b < chunk:
                size = int(rng.integers(1, chunk - b + 1))
                last = int(b + size == chunk)
                srcs[q].send_nowait(AxiStreamFrame(to_bytes(data[b:b + size]), tid=src,
                                                   tuser=user(flow * chunk + b, step, flow, 0, last)))
                b += size
            want_events[(flow, 0, src)] += 1

    # ---- transmit: send requests of the other chunks, alternating NIs
    plan = [b for _, b in packet_plan(chunk, pkt)]
    want_tx = [[], []]
    counts = {"rx_held": [0, 0], "rx_gaps": [0, 0], "tx_held": [0, 0], "events": Counter(), "cycles": 0}
    finished = False

    async def monitor():
        in_pkt = [False, False]
        while not finished:
            await RisingEdge(dut.clk)
            await ReadOnly()
            counts["cycles"] += 1
            for q in range(2):
                tv, tr = int(getattr(dut, f"rx{q}_tvalid").value), int(getattr(dut, f"rx{q}_tready").value)
                counts["rx_held"][q] += tv and not tr
                counts["rx_gaps"][q] += in_pkt[q] and not tv
                if tv and tr:
                    in_pkt[q] = not int(getattr(dut, f"rx{q}_tlast").value)
                counts["tx_held"][q] += int(getattr(dut, f"tx{q}_tvalid").value) and not int(getattr(dut, f"tx{q}_tready").value)
            if int(dut.recv_valid.value):
                counts["events"][(int(dut.recv_flow.value), int(dut.recv_op.value), int(dut.recv_src.value))] += 1

    mon = cocotb.start_soon(monitor())
    for k in range(j.get("sends", 12)):
        ni = k % 2
        flow = n_rx_flows + int(rng.integers(0, words // chunk - n_rx_flows))
        op, peer, step = int(rng.integers(0, 2)), int(rng.integers(0, 1 << node_w)), int(rng.integers(0, 1 << step_w))
        dut.send_valid.value, dut.send_ni.value, dut.send_op.value, dut.send_flow.value = 1, ni, op, flow
        dut.send_peer.value, dut.send_step.value, dut.send_len.value = peer, step, chunk * lanes
        for _ in range(10000):
            await ReadOnly()
            taken = int(dut.send_ready.value)
            await FallingEdge(dut.clk)
            if taken:
                break
        else:
            raise AssertionError(f"send request {k} to NI {ni} not accepted in 10,000 cycles")
        dut.send_valid.value = 0
        b = 0
        for size in plan:
            b += size
            want_tx[ni].append((to_bytes(mem[flow * chunk + b - size:flow * chunk + b]), peer,
                                user(flow * chunk + b - size, step, flow, op, int(b == chunk))))
    for q in range(2):
        got = []
        for _ in want_tx[q]:
            f = await with_timeout(sinks[q].recv(), 50, "us")  # the sink compacts the sideband to one value when it held for the packet
            assert all(isinstance(x, int) for x in (f.tid, f.tdest, f.tuser)), f"NI {q}: sideband changed: {f}"
            assert f.tid == node, f"NI {q}: tid {f.tid} is not the node {node}"
            got.append((bytes(f.tdata), f.tdest, f.tuser))
        assert got == want_tx[q], f"NI {q}: sent packets differ from the plan"
        assert sinks[q].empty(), f"NI {q}: more packets than requested"
    for s in srcs:
        await with_timeout(s.wait(), 50, "us")
    for _ in range(8):  # the last beats leave the adder
        await FallingEdge(dut.clk)
    finished = True
    await mon
    await FallingEdge(dut.clk)  # the monitor ended in a read-only phase
    got_mem = []
    for a in range(words):
        dut.host_addr.value = a
        await FallingEdge(dut.clk)
        got_mem.append(_unpack(dut.host_rdata.value, lanes))
    bad = [a for a in range(words) if got_mem[a] != want[a]]
    assert not bad, f"{len(bad)} buffer words differ from the exact sums; first word {bad[0]}"
    assert counts["events"] == want_events, f"receive events {counts['events']} != messages {want_events}"
    assert not int(dut.rx_err.value) and not int(dut.req_err.value)
    dut._log.info("PAUSE " + json.dumps({k: v for k, v in counts.items() if k != "events"}))
