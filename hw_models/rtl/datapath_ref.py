"""Python references of the NIC data path (rtl/nic_reduce_add.v, rtl/nic_datapath.v).

* :func:`f32_add` / :func:`int32_add`: the reduction adder's arithmetic, element-wise on
  bit patterns (uint32): numpy float32 addition with the adder's stated number handling
  (subnormal inputs and results flushed to a zero of their sign, NaN canonical
  0x7FC00000), and 32-bit two's complement addition modulo 2^32.
* :func:`packet_plan`: the packets the packetiser makes of one message.
* :class:`ReceiveTiming`: the receive side's cycle model at an adder latency
  ``add_lat``: when ``rx_tready`` is low (a beat whose word is still in the adder's
  pipeline waits), when each beat is written and when each receive event appears.
* :func:`allreduce_reference`: a schedule executed on a node x element array of bit
  patterns, in the order the functional verifier uses (a step's sends read their sender's
  state at the start of the step, then the step's arrivals are applied), with the REDUCE
  arrivals at each node and word applied in a given order: what the data path must end
  with, bit for bit.
"""

from __future__ import annotations

import numpy as np

from nic.collectives.schedule import Schedule
from nic.scheduler import OP_REDUCE

QNAN = np.uint32(0x7FC00000)
SIGN = np.uint32(0x80000000)
FMT_INT32, FMT_FP32 = 0, 1


def _flush(bits: np.ndarray) -> np.ndarray:
    """Subnormals (exponent field 0) to a zero of their sign."""
    bits = np.asarray(bits, np.uint32)
    return np.where((bits >> 23) & 0xFF == 0, bits & SIGN, bits).astype(np.uint32)


def f32_add(a_bits, b_bits) -> np.ndarray:
    """uint32 bit patterns of float32 ``a + b`` (round to nearest even), subnormals flushed, NaN canonical."""
    a = _flush(a_bits).view(np.float32)
    b = _flush(b_bits).view(np.float32)
    with np.errstate(all="ignore"):
        r = np.add(a, b, dtype=np.float32)
    out = _flush(r.view(np.uint32))
    return np.where(np.isnan(r), QNAN, out).astype(np.uint32)


def int32_add(a_bits, b_bits) -> np.ndarray:
    """uint32 bit patterns of ``a + b`` modulo 2^32 (two's complement int32)."""
    return ((np.asarray(a_bits, np.uint64) + np.asarray(b_bits, np.uint64)) & 0xFFFFFFFF).astype(np.uint32)


def add(fmt: int, a_bits, b_bits) -> np.ndarray:
    return f32_add(a_bits, b_bits) if fmt == FMT_FP32 else int32_add(a_bits, b_bits)


def packet_plan(beats: int, pkt_beats: int) -> list[tuple[int, int]]:
    """(first beat, beats) of each packet of a message of ``beats`` beats; ``pkt_beats`` 0 =
    one packet for the whole message."""
    if beats <= 0:
        return []
    size = beats if pkt_beats <= 0 else pkt_beats
    return [(b, min(size, beats - b)) for b in range(0, beats, size)]


#: the adder latencies (ADD_LAT, pipeline registers) the RTL offers: rtl/nic_fp32_add.v
ADD_LATS = (0, 1, 2, 3, 4, 5, 6, 7)


class ReceiveTiming:
    """Cycle model of nic_depacketiser's receive side (rtl/nic_depacketiser.v, "Timing").

    A beat taken at an edge enters the apply register, where its word is read; it goes on
    into the adder's ``add_lat`` stages unless one of them holds the same word (then it
    waits, and ``rx_tready`` is low); it is written as it leaves the last stage (at once
    for ``add_lat`` 0), and the receive event of a message-ending beat is presented in the
    cycle after its write. Call :meth:`cycle` once per clock cycle, before the edge.
    """

    def __init__(self, add_lat: int):
        if add_lat not in ADD_LATS:
            raise ValueError(f"add_lat = {add_lat}: allowed {ADD_LATS[0]}..{ADD_LATS[-1]}")
        self.add_lat = add_lat
        self.apply = None               # (word, ends a message) in the apply register
        self.stages = [None] * add_lat  # the adder's pipeline, stage 1 first
        self.event = False              # a receive event presented in this cycle

    def _hazard(self) -> bool:
        return self.apply is not None and any(s is not None and s[0] == self.apply[0] for s in self.stages)

    def ready(self) -> bool:
        """``rx_tready`` in this cycle (a function of the registers only)."""
        return not self._hazard()

    def cycle(self, beat=None):
        """One clock edge with ``beat`` = (word, ends a message) on offer, or None.

        Returns (taken, written word or None) for this cycle."""
        hazard = self._hazard()
        taken = beat is not None and not hazard
        leaving = self.stages[-1] if self.add_lat else self.apply
        if self.add_lat:
            self.stages = [None if hazard else self.apply] + self.stages[:-1]
        if not hazard:
            self.apply = beat if taken else None
        self.event = leaving is not None and leaving[1]
        return taken, (leaving[0] if leaving is not None else None)


def allreduce_reference(schedule: Schedule, data_bits: np.ndarray, lanes: int, fmt: int,
                        reduce_order: dict[tuple[int, int], list[int]] | None = None) -> np.ndarray:
    """Bit patterns every node ends with: ``data_bits`` (uint32[nodes, elements], element
    ``e`` in word ``e // lanes``) reduced by ``schedule`` (flow ``f`` is the ``f``-th equal
    chunk).

    A send carries its sender's chunk as complete as the schedule makes it: the REDUCEs a
    node has received for a word are summed into it (in the order given) before the node
    sends anything of that word, or at the end. ``reduce_order[(node, word)]``: the sources
    whose REDUCE beats of that word ``node`` summed, in order (default: the schedule's
    order, by step, then canonical order). Nodes run their steps independently in
    hardware, so REDUCEs sent in different steps may arrive in any order; the order must
    hold exactly the REDUCE senders of the word, each once.
    """
    s = schedule
    n, m = data_bits.shape
    words = m // lanes
    if m % (lanes * s.num_flows):
        raise ValueError(f"{m} elements are not {s.num_flows} equal chunks of whole {lanes}-element words")
    wpf = words // s.num_flows  # words per flow
    acc = np.asarray(data_bits, np.uint32).reshape(n, words, lanes).copy()
    pending: dict[tuple[int, int], dict[int, np.ndarray]] = {}
    used: dict[tuple[int, int], int] = {}

    def settle(d: int, word: int) -> None:
        got = pending.pop((d, word), None)
        if not got:
            return
        if reduce_order is None:
            order = list(got)
        else:
            k = used.get((d, word), 0)
            order = reduce_order.get((d, word), [])[k:k + len(got)]
            used[(d, word)] = k + len(got)
        if sorted(order) != sorted(got):
            raise ValueError(f"node {d} word {word}: REDUCEs summed from {order}, the schedule sends them "
                             f"from {sorted(got)}")
        for src in order:
            acc[d, word] = add(fmt, acc[d, word], got[src])

    starts = np.searchsorted(s.step, np.arange(s.num_steps + 1))
    for step in range(s.num_steps):
        idx = range(int(starts[step]), int(starts[step + 1]))
        pay = {}
        for i in idx:
            v, f = int(s.src[i]), int(s.flow[i])
            for word in range(f * wpf, (f + 1) * wpf):
                settle(v, word)
            pay[i] = acc[v, f * wpf:(f + 1) * wpf].copy()
        for i in idx:
            d, f, v = int(s.dst[i]), int(s.flow[i]), int(s.src[i])
            for w in range(wpf):
                if int(s.op[i]) == OP_REDUCE:
                    slot = pending.setdefault((d, f * wpf + w), {})
                    if v in slot:
                        raise ValueError(f"node {v} sends word {f * wpf + w} to node {d} twice")
                    slot[v] = pay[i][w]
                else:
                    acc[d, f * wpf + w] = pay[i][w]
    for d, word in list(pending):
        settle(d, word)
    if reduce_order is not None:
        for key, srcs in reduce_order.items():
            if used.get(key, 0) != len(srcs):
                raise ValueError(f"node {key[0]} word {key[1]}: {len(srcs)} REDUCEs summed, the schedule sends "
                                 f"{used.get(key, 0)}")
    return acc.reshape(n, m)
