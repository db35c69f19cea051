"""cocotb bench: an all-reduce on N RTL NICs (tests/rtl/hdl/nic_net.v: N nic_top, each a
scheduler and a data path) wired through a Python network model, on real data.

The job ($HWM_DP_JOB) names a schedule (nic.collectives, as JSON), the vector length,
the number format, the packet size and the backpressure. Each node's table is
``nic.nic_table.node_tables`` of the schedule, loaded through the schedulers' table-load
ports; each node's vector goes into its buffer through the host port; then ``start``.

The network model: every transmit stream's ``tready`` is random (probability
``p_ready``); a packet is forwarded whole once its last beat is in, after a random
latency (packets of one source to one destination stay in order); every receive stream
carries one packet at a time with random ``tvalid`` gaps (probability ``p_gap`` per
cycle). It records, per node and buffer word, the sources of the REDUCE beats in the
order they were delivered (the order the node sums them in).

With NIS NIs per node (the job's ``NIS``), every NI has its own transmit and receive
stream; a packet sent on NI q of its source goes to receive stream q of its destination
(so the packets of one message stay in order on one stream).

With ``lockstep`` in the job, every node's scheduler is also compared with the cycle model
(``hw_models.rtl.lockstep.ModelStepper``, one per node) on every cycle from reset: the
model gets the inputs the scheduler gets (the bench's table load and start, the data
path's ``send_ready``, ``ni_done`` and receive events) and every scheduler output must
equal the model's.

Checks, at the end: every node ``done`` with no scheduler error and no data-path error;
the messages sent are exactly the schedule's transfers, each in the packet sizes the
packet size asks for; every node's buffer equals, bit for bit,
``hw_models.rtl.datapath_ref.allreduce_reference`` in the recorded summation order; with
integers, also the exact sums of the functional verifier (``nic.collectives.verify``,
whose own run on the same data must pass). A summary line goes to the log.
"""

from __future__ import annotations

import heapq
import json
import os
import time
from collections import Counter

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

from hw_models.rtl.datapath_ref import FMT_INT32, allreduce_reference, packet_plan
from hw_models.rtl.lockstep import ModelStepper, compare
from nic.collectives import Schedule, verify
from nic.collectives.verify import verifier_inputs
from nic.nic_table import node_tables
from nic.scheduler import OUTPUT_NAMES, SchedulerParams


def _pack(values, width):
    out = 0
    for i, v in enumerate(values):
        out |= (int(v) & ((1 << width) - 1)) << (i * width)
    return out


def _field(vec, i, width):
    return (vec >> (i * width)) & ((1 << width) - 1)


def _bits(x):
    i = 0
    while x:
        if x & 1:
            yield i
        x >>= 1
        i += 1


class _Lockstep:
    """One cycle model per node, fed with what each RTL scheduler is fed, compared every cycle."""

    IN_PORTS = ("send_ready", "ni_done", "recv_valid", "recv_flow", "recv_op", "recv_src")

    def __init__(self, dut, n, params):
        self.models = [ModelStepper(params) for _ in range(n)]
        scheds = [dut.g_node[i].u_nic.u_sched for i in range(n)]
        self.outs = [[getattr(sc, name) for name in OUTPUT_NAMES] for sc in scheds]
        self.ins = [[getattr(sc, name) for name in self.IN_PORTS] for sc in scheds]
        self.fw, self.nw = params.flow_w, params.node_w
        self.cycle = 0
        self.compared = 0

    def step(self, drive):
        """Compare this cycle's outputs, then apply the edge with ``drive`` (per-node lists or shared values
        of the bench-driven inputs) and the data path's inputs as the scheduler sees them now."""
        for i, m in enumerate(self.models):
            rtl = dict(zip(OUTPUT_NAMES, (int(h.value) for h in self.outs[i])))
            diffs = compare(rtl, m.outputs())
            assert not diffs, f"node {i} cycle {self.cycle}: RTL scheduler differs from the model: {diffs}"
            ready, done, rv, rf, ro, rs = (int(h.value) for h in self.ins[i])
            inp = {k: (v[i] if isinstance(v, list) else v) for k, v in drive.items()}
            inp.update(send_ready=ready, ni_done=done,
                       recv=[(_field(rf, q, self.fw), (ro >> q) & 1, _field(rs, q, self.nw)) if (rv >> q) & 1 else None
                             for q in range(m.params.nis)])
            m.edge(inp)
        self.cycle += 1
        self.compared += len(self.models)


@cocotb.test()
async def allreduce_bench(dut):
    with open(os.environ["HWM_DP_JOB"]) as fh:
        j = json.load(fh)
    s = Schedule.from_json(j["schedule"])
    n, m, lanes, fmt = s.num_nodes, j["M"], j["LANES"], j["FMT"]
    depth, flow_w, node_w, step_w, len_w, cnt_w = (j[k] for k in ("DEPTH", "FLOW_W", "NODE_W", "STEP_W", "LEN_W",
                                                                    "CNT_W"))
    words = j["BUF_WORDS"]
    ba_w = max(1, (words - 1).bit_length())
    addr_w = max(1, (depth - 1).bit_length())
    dw = 32 * lanes
    tu_w = ba_w + step_w + flow_w + 2
    seed, pkt = j["seed"], j["pkt_beats"]
    p_ready, p_gap, max_lat = j["p_ready"], j["p_gap"], j["max_latency"]
    nis = j.get("NIS", 1)
    ns = n * nis                              # streams: node i's NI q is stream i * nis + q
    assert n == j["N"] and m == words * lanes and m % (s.num_flows * lanes) == 0
    beats_per_chunk = m // s.num_flows // lanes
    rng = np.random.default_rng(seed)

    # ---- the data
    if fmt == FMT_INT32:
        data64, expected = verifier_inputs(s, m, seed)
        verify(s, num_elements=m, seed=seed)  # the verifier's own run on these vectors passes
        data = data64.astype(np.int32).view(np.uint32)
    else:
        f = rng.standard_normal((n, m)) * 2.0 ** rng.integers(-12, 12, (n, m))
        data = f.astype(np.float32).view(np.uint32)
    tables = node_tables(s, m)
    assert max(len(t) for t in tables) <= depth

    lock = (_Lockstep(dut, n, SchedulerParams(depth=depth, nis=nis, flow_w=flow_w, node_w=node_w, step_w=step_w,
                                              len_w=len_w, cnt_w=cnt_w, err_w=j["ERR_W"],
                                              pipe=j.get("SCHED_PIPE", 0)))
            if j.get("lockstep") else None)
    drive = {"rst": 1, "clear": 0, "start": 0, "load_valid": 0, "load_addr": 0, "load_op": 0, "load_flow": 0,
             "load_peer": 0, "load_step": 0, "load_len": 0, "load_dep_op": 0, "load_dep_count": 0}

    async def tick():
        """End the cycle (the next falling edge); the models step with this cycle's inputs."""
        if lock is not None:
            lock.step(drive)
        await FallingEdge(dut.clk)

    Clock(dut.clk, 10, unit="ns").start()
    for name in ("clear", "start", "load_valid", "load_addr", "load_op", "load_flow", "load_peer", "load_step",
                 "load_len", "load_dep_op", "load_dep_count", "tx_tready", "rx_tvalid", "rx_tdata", "rx_tlast",
                 "rx_tid", "rx_tuser", "host_we", "host_addr", "host_wdata"):
        getattr(dut, name).value = 0
    dut.cfg_pkt_beats.value = pkt
    dut.rst.value = 1
    await FallingEdge(dut.clk)
    await FallingEdge(dut.clk)  # a rising edge with rst: the RTL is in its reset state, as a new model
    dut.rst.value = drive["rst"] = 0

    # ---- load the tables (all nodes at once, one row per cycle) and the vectors
    for r in range(max(len(t) for t in tables)):
        rows = [t[r] if r < len(t) else None for t in tables]
        drive["load_valid"] = [int(x is not None) for x in rows]
        dut.load_valid.value = _pack(drive["load_valid"], 1)
        drive["load_addr"] = r
        dut.load_addr.value = _pack([r] * n, addr_w)
        for k, (name, w) in enumerate((("load_op", 2), ("load_flow", flow_w), ("load_peer", node_w),
                                       ("load_step", step_w), ("load_len", len_w), ("load_dep_op", 1),
                                       ("load_dep_count", cnt_w))):
            drive[name] = [0 if x is None else int(x[k]) for x in rows]
            getattr(dut, name).value = _pack(drive[name], w)
        await tick()
    dut.load_valid.value = drive["load_valid"] = 0
    word_vals = data.reshape(n, words, lanes)
    for a in range(words):
        dut.host_we.value = (1 << n) - 1
        dut.host_addr.value = _pack([a] * n, ba_w)
        dut.host_wdata.value = _pack([_pack(word_vals[v, a], 32) for v in range(n)], dw)
        await tick()
    dut.host_we.value = 0
    dut.start.value = drive["start"] = 1
    await tick()
    dut.start.value = drive["start"] = 0

    # ---- the network
    cur = [[] for _ in range(ns)]             # beats of the packet being sent, per source stream
    queues = [[] for _ in range(ns)]          # per destination stream: heap of (ready cycle, seq, src, packet)
    last_ready = {}                           # (src stream, dst) -> ready cycle of its last packet
    rx_pkt = [None] * ns                      # packet being delivered, per destination stream
    rx_pos = [0] * ns
    rx_held = [False] * ns                    # a beat on offer, not taken yet
    order: dict[tuple[int, int], list[int]] = {}
    messages = Counter()                      # (src, dst, flow, op) -> messages
    pkt_sizes: dict[tuple, list[int]] = {}
    seq = 0
    # with in_order, each node is given its messages in the schedule's order (by step, then
    # the schedule's canonical order): the summation order the stepped reference uses
    in_order = bool(j.get("in_order", False))
    assert not (in_order and nis > 1), "in_order delivery is for one NI per node"
    expected_msgs = [[] for _ in range(n)]
    for a, b, fl, o in zip(s.src.tolist(), s.dst.tolist(), s.flow.tolist(), s.op.tolist()):
        expected_msgs[b].append((a, fl, o))
    next_msg = [0] * n

    def _msg(src, p):
        user = p[0][1]
        return (src, (user >> 2) & ((1 << flow_w) - 1), (user >> 1) & 1)

    stalls = gaps = beats_sent = packets = rx_waits = 0
    ni_packets = [0] * nis
    all_done = (1 << n) - 1
    all_streams = (1 << ns) - 1
    cycle = 0
    quiet = 0
    t0 = time.perf_counter()
    while True:
        cycle += 1
        assert cycle < j.get("max_cycles", 20000), f"no completion after {cycle} cycles (done={int(dut.done.value):#x})"
        if cycle % 16 == 0:  # an error stops the run early (it is checked again at the end)
            assert not (int(dut.err.value) | int(dut.rx_err.value) | int(dut.req_err.value)), \
                f"cycle {cycle}: error flags err={int(dut.err.value):#x} rx_err={int(dut.rx_err.value):#x} " \
                f"req_err={int(dut.req_err.value):#x}"
        tv = int(dut.tx_tvalid.value)
        ready = _pack([rng.random() < p_ready for _ in range(ns)], 1)
        stalls += bin(tv & ~ready & all_streams).count("1")
        hs = tv & ready
        if hs:
            td, tl = int(dut.tx_tdata.value), int(dut.tx_tlast.value)
            tdest, tid, tuser = int(dut.tx_tdest.value), int(dut.tx_tid.value), int(dut.tx_tuser.value)
            for st in _bits(hs):
                i = st // nis
                user = _field(tuser, st, tu_w)
                assert _field(tid, st, node_w) == i
                cur[st].append((_field(td, st, dw), user))
                beats_sent += 1
                if (tl >> st) & 1:
                    dst = _field(tdest, st, node_w)
                    p = cur[st]
                    cur[st] = []
                    packets += 1
                    ni_packets[st % nis] += 1
                    flow, op, last = (user >> 2) & ((1 << flow_w) - 1), (user >> 1) & 1, user & 1
                    key = (i, dst, flow, op)
                    pkt_sizes.setdefault(key, []).append(len(p))
                    if last:
                        messages[key] += 1
                    at = max(cycle + int(rng.integers(1, max_lat + 1)), last_ready.get((st, dst), 0))
                    last_ready[(st, dst)] = at
                    seq += 1
                    heapq.heappush(queues[dst * nis + st % nis], (at, seq, i, p))
        dut.tx_tready.value = ready
        # receive side: one packet at a time per destination, random gaps; a beat on offer
        # stays (payload and all) until the node's rx_tready takes it (rx_tready is a
        # function of the NIC's registers, so it is read here, before this cycle's edge)
        rv = 0
        rdy = int(dut.rx_tready.value)
        rdata, rlast, rtid, ruser = [0] * ns, [0] * ns, [0] * ns, [0] * ns
        for d in range(ns):
            if rx_pkt[d] is None and queues[d] and queues[d][0][0] <= cycle:
                if in_order:  # the next packet of the next message in the schedule's order, once it is here
                    want_msg = expected_msgs[d][next_msg[d]] if next_msg[d] < len(expected_msgs[d]) else None
                    cands = [(q[1], k) for k, q in enumerate(queues[d]) if q[0] <= cycle
                             and _msg(q[2], q[3]) == want_msg]  # its packets in the order they were sent
                    k = min(cands)[1] if cands else None
                    if k is not None:
                        _, _, src, p = queues[d].pop(k)
                        heapq.heapify(queues[d])
                        rx_pkt[d], rx_pos[d] = (src, p), 0
                        if p[0][1] & 1:  # its last packet
                            next_msg[d] += 1
                else:
                    _, _, src, p = heapq.heappop(queues[d])
                    rx_pkt[d], rx_pos[d] = (src, p), 0
            if rx_pkt[d] is None:
                continue
            if not rx_held[d] and rng.random() < p_gap:
                gaps += 1
                continue
            src, p = rx_pkt[d]
            data_word, user = p[rx_pos[d]]
            rv |= 1 << d
            rdata[d], ruser[d], rtid[d] = data_word, user, src
            rlast[d] = int(rx_pos[d] == len(p) - 1)
            rx_held[d] = not (rdy >> d) & 1
            if rx_held[d]:
                rx_waits += 1
                continue
            if (user >> 1) & 1 == 0:  # a REDUCE beat: record the summation order of its word
                addr = user >> (step_w + flow_w + 2)
                order.setdefault((d // nis, addr + rx_pos[d]), []).append(src)
            rx_pos[d] += 1
            if rx_pos[d] == len(p):
                rx_pkt[d] = None
        dut.rx_tvalid.value = rv
        dut.rx_tdata.value = _pack(rdata, dw)
        dut.rx_tlast.value = _pack(rlast, 1)
        dut.rx_tid.value = _pack(rtid, node_w)
        dut.rx_tuser.value = _pack(ruser, tu_w)
        await tick()
        idle = (int(dut.done.value) == all_done and not any(queues) and all(p is None for p in rx_pkt)
                and not any(cur))
        quiet = quiet + 1 if idle else 0
        if quiet > 8:
            break
    run_seconds = time.perf_counter() - t0
    dut.rx_tvalid.value = 0
    dut.tx_tready.value = 0
    assert int(dut.tx_tvalid.value) == 0, "a NIC sends after the all-reduce is done"
    assert int(dut.err.value) == 0, f"scheduler errors: err_count {int(dut.err_count.value):#x}"
    assert int(dut.rx_err.value) == 0 and int(dut.req_err.value) == 0

    # ---- the messages are the schedule's transfers, in the expected packets
    want = Counter(zip(s.src.tolist(), s.dst.tolist(), s.flow.tolist(), s.op.tolist()))
    assert messages == want, f"messages sent differ from the schedule's transfers: {(messages - want) or (want - messages)}"
    plan = [b for _, b in packet_plan(beats_per_chunk, pkt)]
    for key, sizes in pkt_sizes.items():
        assert sizes == plan * want[key], (key, sizes, plan)

    # ---- the buffers
    final = np.zeros((n, words, lanes), np.uint32)
    for a in range(words):
        dut.host_addr.value = _pack([a] * n, ba_w)
        await FallingEdge(dut.clk)
        rd = int(dut.host_rdata.value)
        for v in range(n):
            final[v, a] = [_field(_field(rd, v, dw), li, 32) for li in range(lanes)]
    final = final.reshape(n, m)
    ref = allreduce_reference(s, data, lanes, fmt, reduce_order=order)
    bad = np.argwhere(final != ref)
    assert not len(bad), (f"{len(bad)} elements differ from the reference; first: node {bad[0][0]} element "
                          f"{bad[0][1]}: rtl {int(final[tuple(bad[0])]):#010x}, reference {int(ref[tuple(bad[0])]):#010x}")
    if fmt == FMT_INT32:
        assert np.array_equal(final.view(np.int32).astype(np.int64), np.broadcast_to(expected, (n, m))), \
            "integer sums differ from the functional verifier's"
    else:
        assert all(np.array_equal(final[0], final[v]) for v in range(n)), "nodes end with different fp32 vectors"
    canonical = allreduce_reference(s, data, lanes, fmt)
    if in_order:
        assert np.array_equal(final, canonical), "in the schedule's order, the sums differ from the stepped reference"
    reordered = sum(1 for (d, w), srcs in order.items() if len(srcs) > 1)
    summary = {"cycles": cycle, "nis": nis, "lockstep_node_cycles": lock.compared if lock else 0,
               "packets_per_ni": ni_packets, "packets": packets, "beats": beats_sent, "tx_stall_cycles": stalls,
               "rx_gap_cycles": gaps, "rx_wait_cycles": rx_waits, "words_with_several_reduces": reordered,
               "elements_differing_from_schedule_order": int((canonical != final).sum()),
               "elements": int(n * m), "run_seconds": round(run_seconds, 3),
               "cycles_per_second": round(cycle / run_seconds, 1)}
    dut._log.info("ALLREDUCE " + json.dumps(summary))
