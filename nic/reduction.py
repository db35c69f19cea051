"""The node's reduction unit: when a received REDUCE's data has been summed.

A REDUCE message carries a partial sum that the receiving node adds to its own before it
can forward the result; a GATHER carries a final value and needs no work. Each node has
one reduction unit that takes received REDUCE messages in arrival order (a FIFO).
:class:`nic.allreduce.NicConfig` describes it:

* ``reduction = "free"``: no cost; the data is usable when the message has arrived.
* ``"chunk"``: the unit starts on a message when the whole message is in (and the unit is
  free) and is busy for :meth:`~nic.allreduce.NicConfig.reduce_cycles` of its elements.
* ``"stream"``: the unit works on the data as it arrives, so after the tail only the last
  packet's share (``packet_bytes`` of payload) is left, unless the unit is still busy
  with earlier messages, in which case it finishes this one its whole work after them.

The summed data is usable ``reduce_latency_cycles`` after the unit is done. Both
all-reduce models call :func:`reduce_done` at every arrival, so they agree on the rule.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from nic.scheduler import OP_REDUCE

MODE_FREE, MODE_CHUNK, MODE_STREAM = 0, 1, 2
MODES = {"free": MODE_FREE, "chunk": MODE_CHUNK, "stream": MODE_STREAM}


@njit(cache=True)
def reduce_done(unit_free, node, arrived, work, last_work, latency, mode):
    """When the data of a message that arrived at ``arrived`` is usable at ``node``.
    ``unit_free[node]`` is when that node's unit finishes its earlier work; it is updated."""
    if mode == MODE_FREE or work == 0:
        return arrived
    if mode == MODE_CHUNK:
        end = max(arrived, unit_free[node]) + work
    else:
        end = max(arrived + last_work, unit_free[node] + work)
    unit_free[node] = end
    return end + latency


def reduction_work(nic, op: np.ndarray, payload_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per transfer: the unit's cycles for the whole message and for its last packet's
    share (both 0 for GATHERs and with ``reduction = "free"``)."""
    n = len(op)
    work = np.zeros(n, np.int64)
    last = np.zeros(n, np.int64)
    if nic.reduction == "free":
        return work, last
    elems = np.asarray(payload_bytes, np.int64) // nic.element_bytes
    block = max(1, nic.packet_bytes // nic.element_bytes)
    cache: dict[int, int] = {}

    def cycles(e: int) -> int:
        if e not in cache:
            cache[e] = nic.reduce_cycles(e)
        return cache[e]

    for i in np.nonzero(np.asarray(op) == OP_REDUCE)[0].tolist():
        e = int(elems[i])
        work[i] = cycles(e)
        last[i] = cycles(min(e, block))
    return work, last
