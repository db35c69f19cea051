"""Functional verifier: execute a Schedule on exact integer data.

Each node starts with its own random int64 vector. Steps run in order; every transfer of a
step reads its sender's state as it was at the start of the step, then all of the step's
arrivals are applied (or, given a simulation's start and arrival cycles, every transfer
reads its sender's state when it starts and is applied when it arrives). A REDUCE adds the
sender's partial sum (and the set of nodes it contains) into the receiver's; a GATHER
copies the sender's final sum. The verifier tracks, per node and flow, exactly which nodes'
contributions a partial sum holds, so it can name the first transfer that breaks the
all-reduce:

* a REDUCE sent before all of the sender's children's REDUCEs of that flow arrived
  (a child's data arrives at or after the step the sender sent its partial sum);
* a GATHER of a sum that is not yet complete (sent before its children arrived);
* a contribution counted twice (two partial sums holding the same node meet);
* a contribution never counted / a chunk never delivered (checked at the end);

and finally compares every node's vector with the exact element-wise sum.

Two implementations run it: a compiled one that keeps, per node and flow, the number of
nodes a partial sum holds (every node sends its partial sum of a flow at most once and
receives none after that, both checked exactly, so partial sums that meet never share a
node and counting is exact), and the plain Python one with the full sets, which names the
first fault. The compiled one runs first; on any fault the Python one runs and raises
its message (a fault it does not find is an internal error).
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit

from nic.collectives.schedule import OP_NAMES, Schedule, ScheduleError
from nic.scheduler import OP_REDUCE


class VerificationError(ScheduleError):
    """The schedule does not compute a correct all-reduce; the message names the first bad transfer."""


@dataclass(frozen=True)
class VerifyReport:
    num_nodes: int
    num_elements: int
    transfers: int
    steps: int
    seed: int


def verifier_inputs(schedule: Schedule, num_elements: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The vectors :func:`verify` runs ``schedule`` on (int64[nodes, num_elements], each
    element in [-2^20, 2^20)) and the exact sums it checks every node against."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-(1 << 20), 1 << 20, size=(schedule.num_nodes, int(num_elements)), dtype=np.int64)
    return data, data.sum(axis=0)


def _describe(s: Schedule, i: int) -> str:
    return (f"transfer {i} (step {int(s.step[i])}: node {int(s.src[i])} -> node {int(s.dst[i])}, "
            f"{OP_NAMES[int(s.op[i])]} of flow {int(s.flow[i])})")


def _nodes(mask: int) -> str:
    out, n = [], 0
    while mask:
        if mask & 1:
            out.append(n)
        mask >>= 1
        n += 1
    shown = ", ".join(map(str, out[:8])) + (", ..." if len(out) > 8 else "")
    return f"node{'s' if len(out) != 1 else ''} {shown}"


def verify(schedule: Schedule, *, num_elements: int | None = None, seed: int = 0,
           times: tuple[np.ndarray, np.ndarray] | None = None) -> VerifyReport:
    """Run ``schedule`` on random integers; raise :class:`VerificationError` on the first fault.

    ``times = (start, arrive)``, per transfer (cycles, from a simulation), runs it in
    simulated time instead of step by step: each transfer reads its sender's state when it
    starts and is applied at the receiver when it arrives (arrivals before starts in the
    same cycle), so a simulation whose times do not perform the all-reduce fails here.
    """
    s = schedule
    m = 2 * s.num_flows + 1 if num_elements is None else int(num_elements)
    if m < s.num_flows:
        raise ScheduleError(f"num_elements={m} is smaller than the schedule's {s.num_flows} flows (a flow would be empty)")
    if times is None or timed_order_is_stepped(s, times):  # (the same events: a step's starts, then its arrivals)
        fault = _fast_fault(s, m, seed, None)
    else:
        fault = _fast_fault_timed(s, m, seed, times)
    if fault < 0:
        return VerifyReport(num_nodes=s.num_nodes, num_elements=m, transfers=s.num_transfers, steps=s.num_steps,
                            seed=seed)
    verify_exact(s, num_elements=m, seed=seed, times=times)
    raise RuntimeError("internal error: the compiled verifier found a fault in this schedule that the exact one "
                       "does not find")


def _instant(t: np.ndarray) -> np.ndarray:
    """Times within 1e-6 cycles are one instant (as in nic.allreduce.check_times):
    ``round(t * 1e6) / 1e6``, in one array."""
    x = np.multiply(t, 1e6, dtype=np.float64)
    np.round(x, out=x)
    x /= 1e6
    return x


def _check_times_shape(s: Schedule, times) -> tuple[np.ndarray, np.ndarray]:
    start, arr = (np.asarray(x, dtype=np.float64) for x in times)
    t = s.num_transfers
    if start.shape != (t,) or arr.shape != (t,):
        raise ScheduleError(f"times must be two arrays of {t} transfers, got shapes {start.shape} and {arr.shape}")
    if not (np.isfinite(start).all() and np.isfinite(arr).all()):
        raise ScheduleError("times must be finite cycle counts (a transfer that never started or arrived?)")
    return start, arr


def _event_order(s: Schedule, times) -> np.ndarray:
    """Events of a timed run in processing order, as ``i`` (a start) or ``~i`` (an arrival):
    by instant; in an instant arrivals first, then starts, then a transfer's own arrival
    in the instant it started. (:func:`verify` merges the starts and the arrivals, each
    sorted, without this array: :func:`_timed_streams`.)"""
    start, arr = _check_times_shape(s, times)
    t = s.num_transfers
    i_start, i_arr = _instant(start), _instant(arr)
    at = np.concatenate([i_start, i_arr])
    kind = np.concatenate([np.ones(t, np.int8), np.where(i_arr <= i_start, 2, 0).astype(np.int8)])
    ids = np.concatenate([np.arange(t), np.arange(t)])
    order = np.lexsort((ids, kind, at))
    ev = ids[order].astype(np.int64)
    return np.where(kind[order] == 1, ev, ~ev)


def timed_order_is_stepped(schedule: Schedule, times: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether the events of a timed run (``times = (start, arrive)``, as :func:`verify`
    orders them: by instant; in an instant arrivals, then starts, then a transfer's own
    arrival in the instant it started; ties by transfer) come in the stepped order: step
    after step, each step's starts, then its arrivals, each in transfer order. Then the
    timed replay runs the very events of the stepped one, on the same data (e.g. a lockstep
    run whose steps do not overlap)."""
    s = schedule
    start, arr = _check_times_shape(s, times)
    starts = np.searchsorted(s.step, np.arange(s.num_steps + 1)).astype(np.int64)
    return bool(_stepped_keys_increase(starts, _instant(start), _instant(arr)))


@njit(cache=True)
def _stepped_keys_increase(starts, i_start, i_arr):
    """Whether the events in the stepped order have strictly increasing keys (instant, kind,
    transfer), kinds 0 (an arrival), 1 (a start), 2 (a transfer's arrival in its own start's
    instant): then sorting the events by key (the timed order) leaves them in that order."""
    have = False
    pt = 0.0
    pk = 0
    pi = 0
    for s in range(starts.shape[0] - 1):
        for half in range(2):
            for i in range(starts[s], starts[s + 1]):
                if half == 0:
                    t = i_start[i]
                    k = 1
                else:
                    t = i_arr[i]
                    k = 2 if i_arr[i] <= i_start[i] else 0
                if have and not (t > pt or (t == pt and (k > pk or (k == pk and i > pi)))):
                    return False
                have = True
                pt = t
                pk = k
                pi = i
    return True


def _index_dtype(t: int):
    return np.int32 if t < 2**31 - 1 else np.int64


def _timed_streams(s: Schedule, times):
    """The events of a timed run as two sorted streams, for :func:`_merged_run`: the starts by
    (instant, transfer), the arrivals by (instant, kind, transfer) with kind 0 (before the
    instant's starts) or 2 (a transfer's own arrival in the instant it started, after them),
    and the instants themselves."""
    start, arr = _check_times_shape(s, times)
    i_start = _instant(start)
    i_arr = _instant(arr)
    late = i_arr <= i_start  # kind 2
    dt = _index_dtype(s.num_transfers)
    by_start = np.argsort(i_start, kind="stable").astype(dt)
    by_arrival = np.argsort(i_arr, kind="stable").astype(dt)
    _kinds_in_order(by_arrival, i_arr, late)  # (instant, kind, transfer): np.lexsort((late, i_arr))
    return i_start, i_arr, late, by_start, by_arrival


@njit(cache=True)
def _kinds_in_order(order, at, late):
    """In ``order`` (sorted by ``at``, ties in index order), put each run of one instant's
    kind-0 arrivals before its kind-2 ones, each in index order."""
    t = order.shape[0]
    lo = 0
    while lo < t:
        hi = lo + 1
        mixed = False
        while hi < t and at[order[hi]] == at[order[lo]]:
            if late[order[hi]] != late[order[lo]]:
                mixed = True
            hi += 1
        if mixed:
            run = order[lo:hi].copy()
            k = lo
            for j in range(run.shape[0]):
                if not late[run[j]]:
                    order[k] = run[j]
                    k += 1
            for j in range(run.shape[0]):
                if late[run[j]]:
                    order[k] = run[j]
                    k += 1
        lo = hi


# What the compiled replay reads and writes (namedtuples of arrays, one per role).
# The transfers' columns.
Transfers = namedtuple("Transfers", ("src", "dst", "flow", "op"))
# Where the events come from: ``mode`` _STEPPED (``starts``: the steps' first transfers),
# _ORDERED (``order``: ``i`` a start, ``~i`` an arrival) or _MERGED (the sorted streams of
# :func:`_timed_streams`); the arrays of the other modes are empty.
Events = namedtuple("Events", ("mode", "starts", "order", "i_start", "i_arr", "late", "by_start", "by_arrival"))
# The data: each node's vector ``acc`` (summed into in place), the flows' element bounds,
# their number, the payload slots (the most transfers in flight) and the widest chunk.
Data = namedtuple("Data", ("acc", "bounds", "num_flows", "slots", "width"))
# Per node and flow: nodes its partial sum holds, final value, has one, sent its partial
# sum; per transfer: its payload's slot once it started (-1 before).
ReplayState = namedtuple("ReplayState", ("count", "final", "has_final", "sent_reduce", "slot_of"))


def _verifier_data(s: Schedule, m: int, seed: int, slots: int) -> tuple[Data, ReplayState]:
    if s.num_transfers >= 2**31 - 1:
        raise ScheduleError(f"{s.num_transfers:,} transfers are more than the compiled verifier's 32-bit indices hold")
    acc, _ = verifier_inputs(s, m, seed)
    bounds = s.chunk_bounds(m).astype(np.int64)
    width = int(np.diff(bounds).max(initial=1))
    n, nf = s.num_nodes, s.num_flows
    # (allocated here, where large arrays get huge pages: the replay reaches them at random)
    state = ReplayState(np.ones((n, nf), np.int32), np.zeros((n, m), np.int64), np.zeros((n, nf), np.bool_),
                        np.zeros((n, nf), np.bool_), np.full(s.num_transfers, -1, np.int32))
    return Data(acc, bounds, nf, slots, width), state


def _transfers(s: Schedule) -> Transfers:
    return Transfers(s.src, s.dst, s.flow, s.op)


def _fast_fault(s: Schedule, m: int, seed: int, order: np.ndarray | None) -> int:
    """-1 when the schedule (in ``order``, or step by step) is a correct all-reduce, else
    the index of the event where the compiled run found a fault."""
    if order is None:  # a step's sends, then its arrivals
        starts = np.searchsorted(s.step, np.arange(s.num_steps + 1)).astype(np.int64)
        slots = max(int(np.diff(starts).max(initial=0)), 1)
        events = Events(_STEPPED, starts, _NONE, *_NO_STREAMS)
    else:
        in_flight = np.cumsum(np.where(order >= 0, 1, -1))
        slots = max(int(in_flight.max(initial=0)), 1)
        events = Events(_ORDERED, _NONE, np.asarray(order, np.int64), *_NO_STREAMS)
    data, state = _verifier_data(s, m, seed, slots)
    return int(_events_run(_transfers(s), events, data, state))


def _fast_fault_timed(s: Schedule, m: int, seed: int, times) -> int:
    """:func:`_fast_fault` in simulated time (``times = (start, arrive)``), merging the sorted
    starts and arrivals (:func:`_timed_streams`) rather than sorting all events at once."""
    streams = _timed_streams(s, times)
    slots = max(int(_most_in_flight(*streams)), 1)
    data, state = _verifier_data(s, m, seed, slots)
    return int(_events_run(_transfers(s), Events(_MERGED, _NONE, _NONE, *streams), data, state))


_STEPPED, _ORDERED, _MERGED = 0, 1, 2  # where _events_run takes its events from
_NONE = np.zeros(0, np.int64)
_NO_STREAMS = (np.zeros(0), np.zeros(0), np.zeros(0, np.bool_), np.zeros(0, np.int32), np.zeros(0, np.int32))


@njit(cache=True, inline="always")
def _start_is_next(p, q, t, by_start, by_arrival, i_start, i_arr, late):
    """Whether the next event of a timed run is the start ``by_start[p]`` rather than the
    arrival ``by_arrival[q]`` (``t`` events of each kind; see :func:`_most_in_flight`)."""
    if q == t:
        return True
    if p == t:
        return False
    a = by_start[p]
    b = by_arrival[q]
    return i_start[a] < i_arr[b] or (i_start[a] == i_arr[b] and late[b])


@njit(cache=True)
def _most_in_flight(i_start, i_arr, late, by_start, by_arrival):
    """The most payloads in flight at once in a timed run (the verifier's slots). Events go
    by (instant, kind, transfer), kinds 0 (an arrival), 1 (a start), 2 (a transfer's
    arrival in its own start's instant): the start ``by_start[p]`` goes before the arrival
    ``by_arrival[q]`` unless that one's instant is earlier, or the same with kind 0."""
    t = by_start.shape[0]
    p = 0
    q = 0
    in_flight = 0
    most = 0
    while p < t or q < t:
        if _start_is_next(p, q, t, by_start, by_arrival, i_start, i_arr, late):
            p += 1
            in_flight += 1
            most = max(most, in_flight)
        else:
            q += 1
            in_flight -= 1
    return most


# The payload pool: ``slots`` payloads (values and the nodes they hold) and a stack of the
# free ones.
Pool = namedtuple("Pool", ("pay", "pay_count", "free", "n_free"))

_stage = njit(cache=True, inline="always")


@_stage
def _new_pool(slots, width):
    return Pool(np.zeros((slots, width), dtype=np.int64), np.zeros(slots, dtype=np.int64),
                np.arange(slots)[::-1].copy(), np.zeros(1, dtype=np.int64) + slots)


@_stage
def _start(tr, data, st, pool, i):
    """A start captures its sender's state in a free payload slot: a REDUCE its partial sum
    (once per node and flow), a GATHER the final sum (or the complete partial sum).
    Returns False on a fault (no slot, a second REDUCE, a GATHER of an incomplete sum)."""
    n = data.acc.shape[0]
    v, f = tr.src[i], tr.flow[i]
    lo, hi = data.bounds[f], data.bounds[f + 1]
    if pool.n_free[0] == 0:
        return False
    pool.n_free[0] -= 1
    sl = pool.free[pool.n_free[0]]
    st.slot_of[i] = sl
    if tr.op[i] == 0:  # REDUCE (nic.scheduler.OP_REDUCE)
        if st.sent_reduce[v, f]:
            return False
        st.sent_reduce[v, f] = True
        for e in range(hi - lo):
            pool.pay[sl, e] = data.acc[v, lo + e]
        pool.pay_count[sl] = st.count[v, f]
    elif st.has_final[v, f]:
        for e in range(hi - lo):
            pool.pay[sl, e] = st.final[v, lo + e]
        pool.pay_count[sl] = n
    elif st.count[v, f] == n:
        for e in range(hi - lo):
            pool.pay[sl, e] = data.acc[v, lo + e]
        pool.pay_count[sl] = n
    else:
        return False
    return True


@_stage
def _arrive(tr, data, st, pool, i):
    """An arrival applies its payload at the receiver: a REDUCE adds it (unless the receiver
    sent its own partial sum already, or nodes would be counted twice), a GATHER stores the
    final sum. Returns False on a fault (also: the transfer never started)."""
    n = data.acc.shape[0]
    sl = st.slot_of[i]
    if sl < 0:
        return False
    d, f = tr.dst[i], tr.flow[i]
    lo, hi = data.bounds[f], data.bounds[f + 1]
    if tr.op[i] == 0:
        if st.sent_reduce[d, f] or st.count[d, f] + pool.pay_count[sl] > n:
            return False
        for e in range(hi - lo):
            data.acc[d, lo + e] += pool.pay[sl, e]
        st.count[d, f] += pool.pay_count[sl]
    else:
        for e in range(hi - lo):
            st.final[d, lo + e] = pool.pay[sl, e]
        st.has_final[d, f] = True
    pool.free[pool.n_free[0]] = sl
    pool.n_free[0] += 1
    return True


@_stage
def _all_hold_the_sum(data, st, expected):
    """At the end, every node holds the exact sum of every flow's chunk (its final value,
    or its complete partial sum)."""
    n = data.acc.shape[0]
    for f in range(data.num_flows):
        lo, hi = data.bounds[f], data.bounds[f + 1]
        for v in range(n):
            for e in range(lo, hi):
                if st.has_final[v, f]:
                    got = st.final[v, e]
                elif st.count[v, f] == n:
                    got = data.acc[v, e]
                else:
                    return False
                if got != expected[e]:
                    return False
    return True


@njit(cache=True, nogil=True)  # it may run beside a simulation (nic.allreduce.simulate_allreduce)
def _events_run(tr, ev, data, st):
    """Run the all-reduce's events on exact integers: a start captures its sender's state, an
    arrival applies it at the receiver. The events come step by step (``_STEPPED``: each
    step's starts, then its arrivals), from ``order`` (``_ORDERED``) or from the sorted
    starts and arrivals of a timed run (``_MERGED``, merged as in :func:`_most_in_flight`);
    see :data:`Events`. ``st`` (from :func:`_verifier_data`) is updated in place. Returns
    -1, or the index of the event where a fault was found (``2T`` at the final check)."""
    t = tr.src.shape[0]
    n, m = data.acc.shape
    expected = np.zeros(m, dtype=np.int64)
    for v in range(n):
        for e in range(m):
            expected[e] += data.acc[v, e]
    pool = _new_pool(data.slots, data.width)
    ks = 0  # stepped: the step, whether in its arrivals, the next transfer
    arrivals = False
    pos = ev.starts[0] if ev.mode == _STEPPED and ev.starts.shape[0] > 0 else 0
    p = 0  # merged: next start, next arrival
    q = 0
    for k in range(2 * t):
        if ev.mode == _STEPPED:
            while pos == ev.starts[ks + 1]:
                if arrivals:
                    ks += 1
                    arrivals = False
                else:
                    arrivals = True
                pos = ev.starts[ks]
            i = pos
            pos += 1
            is_start = not arrivals
        elif ev.mode == _ORDERED:
            is_start = ev.order[k] >= 0
            i = ev.order[k] if is_start else ~ev.order[k]
        else:
            is_start = _start_is_next(p, q, t, ev.by_start, ev.by_arrival, ev.i_start, ev.i_arr, ev.late)
            if is_start:
                i = ev.by_start[p]
                p += 1
            else:
                i = ev.by_arrival[q]
                q += 1
        if is_start:
            ok = _start(tr, data, st, pool, i)
        else:
            ok = _arrive(tr, data, st, pool, i)
        if not ok:
            return k
    return -1 if _all_hold_the_sum(data, st, expected) else 2 * t


def verify_exact(schedule: Schedule, *, num_elements: int | None = None, seed: int = 0,
                 times: tuple[np.ndarray, np.ndarray] | None = None) -> VerifyReport:
    """:func:`verify` with the full contribution sets, in Python: slower, and names the
    first fault."""
    s = schedule
    n, nf = s.num_nodes, s.num_flows
    m = 2 * nf + 1 if num_elements is None else int(num_elements)
    if m < nf:
        raise ScheduleError(f"num_elements={m} is smaller than the schedule's {nf} flows (a flow would be empty)")
    data, expected = verifier_inputs(s, m, seed)
    bounds = s.chunk_bounds(m)
    everyone = (1 << n) - 1

    acc = data.copy()  # partial sums (REDUCE side)
    contrib = [[1 << v for _ in range(nf)] for v in range(n)]  # nodes held in acc[v, flow f]
    final = np.zeros((n, m), dtype=np.int64)
    has_final = np.zeros((n, nf), dtype=bool)
    reduce_sent_at = np.full((n, nf), -1, dtype=np.int64)  # index of the node's REDUCE of a flow
    payloads: dict[int, tuple[np.ndarray, int]] = {}

    def when(i: int) -> str:
        return "" if times is None else f" (started at cycle {float(times[0][i]):g})"

    def send(i: int) -> None:  # read the sender's state as it is now
        v, f, o = int(s.src[i]), int(s.flow[i]), int(s.op[i])
        lo, hi = int(bounds[f]), int(bounds[f + 1])
        if o == OP_REDUCE:
            if reduce_sent_at[v, f] >= 0:
                raise VerificationError(
                    f"{_describe(s, i)}: node {v} already sent its partial sum of flow {f} in "
                    f"{_describe(s, int(reduce_sent_at[v, f]))}; its contributions would be counted twice")
            reduce_sent_at[v, f] = i
            payloads[i] = (acc[v, lo:hi].copy(), contrib[v][f])
        elif has_final[v, f]:
            payloads[i] = (final[v, lo:hi].copy(), everyone)
        elif contrib[v][f] == everyone:
            payloads[i] = (acc[v, lo:hi].copy(), everyone)
        else:
            missing = everyone & ~contrib[v][f]
            raise VerificationError(
                f"{_describe(s, i)}{when(i)}: sent before its children arrived: node {v}'s sum of flow {f} "
                f"still lacks the contributions of {_nodes(missing)}")

    def arrive(i: int) -> None:
        v, d, f, o = int(s.src[i]), int(s.dst[i]), int(s.flow[i]), int(s.op[i])
        lo, hi = int(bounds[f]), int(bounds[f + 1])
        value, mask = payloads.pop(i)
        if o == OP_REDUCE:
            twice = contrib[d][f] & mask
            if twice:
                raise VerificationError(
                    f"{_describe(s, i)}: contribution of {_nodes(twice)} to flow {f} counted twice at node {d}")
            if reduce_sent_at[d, f] >= 0:
                k = int(reduce_sent_at[d, f])
                raise VerificationError(
                    f"{_describe(s, k)}{when(k)}: sent before its children arrived: "
                    f"node {v}'s data of flow {f} reaches node {d} only in {_describe(s, i)}")
            acc[d, lo:hi] += value
            contrib[d][f] |= mask
        else:
            final[d, lo:hi] = value
            has_final[d, f] = True

    if times is None:
        starts = np.searchsorted(s.step, np.arange(s.num_steps + 1))
        for step in range(s.num_steps):
            idx = range(int(starts[step]), int(starts[step + 1]))
            for i in idx:  # sends read the state at the start of the step
                send(i)
            for i in idx:  # then the step's arrivals
                arrive(i)
    else:
        start, arr = (np.asarray(x, dtype=np.float64) for x in times)
        if start.shape != (s.num_transfers,) or arr.shape != (s.num_transfers,):
            raise ScheduleError(f"times must be two arrays of {s.num_transfers} transfers, got shapes "
                                f"{start.shape} and {arr.shape}")
        # times within 1e-6 cycles are one instant (as in nic.allreduce.check_times); in an
        # instant, arrivals come before starts, except a transfer's own arrival after its start
        def instant(t: float) -> float:
            return round(t * 1e6) / 1e6

        events = [(instant(t), 1, i) for i, t in enumerate(start.tolist())]
        events += [(instant(t), 2 if instant(t) <= instant(start[i]) else 0, i) for i, t in enumerate(arr.tolist())]
        for at, kind, i in sorted(events):
            if kind == 2 and at < instant(start[i]):
                raise VerificationError(f"{_describe(s, i)}: arrives (cycle {float(arr[i]):g}) before it starts"
                                        f"{when(i)}")
            (send if kind == 1 else arrive)(i)

    for f in range(nf):
        lo, hi = int(bounds[f]), int(bounds[f + 1])
        complete = [v for v in range(n) if contrib[v][f] == everyone]
        if not complete and not has_final[:, f].any():
            best = max(range(n), key=lambda v: bin(contrib[v][f]).count("1"))
            raise VerificationError(
                f"flow {f}: no node ever holds the complete sum; the contribution of "
                f"{_nodes(everyone & ~contrib[best][f])} is never counted (best: node {best})")
        for v in range(n):
            if has_final[v, f]:
                got = final[v, lo:hi]
            elif contrib[v][f] == everyone:
                got = acc[v, lo:hi]
            else:
                raise VerificationError(f"flow {f}: chunk [{lo}, {hi}) is never delivered to node {v}")
            if not np.array_equal(got, expected[lo:hi]):
                bad = int(np.nonzero(got != expected[lo:hi])[0][0]) + lo
                raise VerificationError(
                    f"flow {f}: node {v} ends with element {bad} = {int(got[bad - lo])}, exact sum is {int(expected[bad])}")
    return VerifyReport(num_nodes=n, num_elements=m, transfers=s.num_transfers, steps=s.num_steps, seed=seed)
