"""Python references of the NIC data path (rtl/nic_reduce_add.v, rtl/nic_datapath.v).

* :func:`f32_add` / :func:`int32_add`: the reduction adder's arithmetic, element-wise on
  bit patterns (uint32): numpy float32 addition with the adder's stated number handling
  (subnormal inputs and results flushed to a zero of their sign, NaN canonical
  0x7FC00000), and 32-bit two's complement addition modulo 2^32.
* :func:`packet_plan`: the packets the packetiser makes of one message.
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


def allreduce_reference(schedule: Schedule, data_bits: np.ndarray, lanes: int, fmt: int,
                        reduce_order: dict[tuple[int, int], list[int]] | None = None) -> np.ndarray:
    """Bit patterns every node ends with: ``data_bits`` (uint32[nodes, elements], element
    ``e`` in word ``e // lanes``) reduced by ``schedule`` (flow ``f`` is the ``f``-th equal
    chunk). ``reduce_order[(node, word)]``: the sources whose REDUCE beats of that word
    were summed at ``node``, in the order they were summed (default: the schedule's
    order); each step's share of it must be exactly that step's REDUCE senders to the
    node of that word's flow, and all of it must be used."""
    s = schedule
    n, m = data_bits.shape
    words = m // lanes
    if m % (lanes * s.num_flows):
        raise ValueError(f"{m} elements are not {s.num_flows} equal chunks of whole {lanes}-element words")
    wpf = words // s.num_flows  # words per flow
    acc = np.asarray(data_bits, np.uint32).reshape(n, words, lanes).copy()
    starts = np.searchsorted(s.step, np.arange(s.num_steps + 1))
    used: dict[tuple[int, int], int] = {}
    for step in range(s.num_steps):
        idx = range(int(starts[step]), int(starts[step + 1]))
        pay = {i: acc[int(s.src[i]), int(s.flow[i]) * wpf:(int(s.flow[i]) + 1) * wpf].copy() for i in idx}
        reduces: dict[tuple[int, int], dict[int, np.ndarray]] = {}
        for i in idx:
            d, f = int(s.dst[i]), int(s.flow[i])
            if int(s.op[i]) == OP_REDUCE:
                reduces.setdefault((d, f), {})[int(s.src[i])] = pay[i]
            else:
                acc[d, f * wpf:(f + 1) * wpf] = pay[i]
        for (d, f), by_src in sorted(reduces.items()):
            for w in range(wpf):
                word = f * wpf + w
                if reduce_order is None:
                    order = list(by_src)
                else:  # this step's share of the word's summation order
                    k = used.get((d, word), 0)
                    order = reduce_order.get((d, word), [])[k:k + len(by_src)]
                    used[(d, word)] = k + len(by_src)
                if sorted(order) != sorted(by_src):
                    raise ValueError(f"node {d} word {word}: REDUCEs summed from {order}, the schedule sends "
                                     f"them from {sorted(by_src)} in step {step}")
                for src in order:
                    acc[d, word] = add(fmt, acc[d, word], by_src[src][w])
    if reduce_order is not None:
        for key, srcs in reduce_order.items():
            if used.get(key, 0) != len(srcs):
                raise ValueError(f"node {key[0]} word {key[1]}: {len(srcs)} REDUCEs summed, the schedule sends "
                                 f"{used.get(key, 0)}")
    return acc.reshape(n, m)
