"""The ``Schedule`` value: an all-reduce as the transfers a co-designed NIC would make.

Every algorithm here is a set of **flows**. A flow owns one equal part of the vector
(flow ``f`` of ``F`` covers elements ``[f*M//F, (f+1)*M//F)`` of an ``M``-element vector)
and moves it over a tree: REDUCE transfers carry partial sums towards the flow's root,
GATHER transfers carry the final sum away from it. A transfer is ``(step, src, dst, flow,
op)``; its chunk follows from the flow and the vector length, so one schedule serves
every size.

Dependencies are implied, exactly as the NIC scheduler counts them
(docs/nic_scheduler.md): a node's REDUCE of flow ``f`` waits for every REDUCE of ``f``
that arrives at the node (its children in that tree); its GATHER of ``f`` waits for the
GATHER of ``f`` arriving at the node, or, at the root (which receives no GATHER), for every
REDUCE of ``f`` arriving there. Steps are 0-based and a transfer may only depend on
transfers of earlier steps; :func:`nic.collectives.verify` checks all of that on data.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.base.errors import HwModelsError

#: the largest vector a schedule splits: its bytes at 16 bytes an element fit an int64
MAX_VECTOR_ELEMENTS = (2**63 - 1) // 16

OP_NAMES = {OP_REDUCE: "reduce", OP_GATHER: "gather"}


class ScheduleError(HwModelsError):
    """A schedule that is malformed (bad ids, steps, ops) or not a correct all-reduce."""


@dataclass(frozen=True)
class TableEntry:
    """One row of a node's schedule table, as a co-designed NIC holds it."""

    op: int  # OP_REDUCE (send my partial sum up) or OP_GATHER (send the final value down)
    flow: int  # the flow (tree) id
    peer: int  # destination node
    step: int
    children: tuple[int, ...]  # nodes whose messages of this flow must arrive first
    dep_op: int  # the op of those messages
    offset: int  # chunk, in elements
    length: int

    @property
    def op_name(self) -> str:
        return OP_NAMES[self.op]


@dataclass(frozen=True, eq=False)
class Schedule:
    """An all-reduce over ``num_nodes`` nodes as flat, step-ordered transfer arrays."""

    algorithm: str
    topology: str
    num_nodes: int
    nis_per_node: int
    num_flows: int
    step: np.ndarray  # int32[T]
    src: np.ndarray  # int32[T] node
    dst: np.ndarray  # int32[T] node
    flow: np.ndarray  # int32[T]
    op: np.ndarray  # int8[T]: OP_REDUCE | OP_GATHER
    params: dict = field(default_factory=dict)

    # ---- construction ------------------------------------------------------------
    @classmethod
    def from_transfers(cls, algorithm: str, topology: str, num_nodes: int, nis_per_node: int,
                       num_flows: int, transfers, params: dict | None = None) -> "Schedule":
        """Build from an iterable (or ``int[T, 5]`` array) of ``(step, src, dst, flow, op)``.

        Transfers are put in canonical order (step, src, flow, op, dst) and checked for
        ranges; correctness as an all-reduce is :func:`nic.collectives.verify`'s job.
        """
        arr = np.asarray(list(transfers) if not isinstance(transfers, np.ndarray) else transfers, dtype=np.int64)
        arr = arr.reshape(-1, 5)
        return cls.from_columns(algorithm, topology, num_nodes, nis_per_node, num_flows, arr[:, 0], arr[:, 1],
                                arr[:, 2], arr[:, 3], arr[:, 4], params)

    @classmethod
    def from_columns(cls, algorithm: str, topology: str, num_nodes: int, nis_per_node: int, num_flows: int,
                     step: np.ndarray, src: np.ndarray, dst: np.ndarray, flow: np.ndarray, op: np.ndarray,
                     params: dict | None = None) -> "Schedule":
        """:meth:`from_transfers` from the five columns (integer arrays of one length): put in
        canonical order one column at a time, so a large schedule is built without a copy of
        all its transfers at once."""
        cols = [np.asarray(c).reshape(-1) for c in (step, src, dst, flow, op)]
        if len({c.shape[0] for c in cols}) != 1:
            raise ScheduleError(f"step, src, dst, flow and op must have one length, got {[c.shape[0] for c in cols]}")
        _check_ranges(cols, num_nodes, num_flows)
        order = _canonical_order(cols, num_nodes, num_flows)
        out = []
        for c, dt in zip(cols, (np.int32, np.int32, np.int32, np.int32, np.int8)):
            out.append(np.asarray(c, dtype=dt) if order is None else np.asarray(c[order], dtype=dt))
        return cls(algorithm=algorithm, topology=topology, num_nodes=int(num_nodes),
                   nis_per_node=int(nis_per_node), num_flows=int(num_flows),
                   step=out[0], src=out[1], dst=out[2], flow=out[3], op=out[4], params=dict(params or {}))

    # ---- sizes -------------------------------------------------------------------
    @property
    def num_transfers(self) -> int:
        return int(self.step.shape[0])

    @property
    def num_steps(self) -> int:
        return int(self.step.max()) + 1 if self.num_transfers else 0

    def chunk(self, flow: int, num_elements: int) -> tuple[int, int]:
        """(offset, length) in elements of ``flow``'s part of an ``num_elements`` vector."""
        lo = flow * num_elements // self.num_flows
        hi = (flow + 1) * num_elements // self.num_flows
        return lo, hi - lo

    def chunk_bounds(self, num_elements: int) -> np.ndarray:
        """int64[F+1]: flow ``f`` covers elements ``[b[f], b[f+1])``, ``b[f] = f * n // F``.

        Computed as ``f * (n // F) + f * (n % F) // F`` so no product leaves int64; ``n`` is at
        most :data:`MAX_VECTOR_ELEMENTS`, so its byte count (up to 16 bytes an element) fits too."""
        n = int(num_elements)
        if not 0 <= n <= MAX_VECTOR_ELEMENTS:
            raise HwModelsError(f"vector of {num_elements} elements: allowed 0..{MAX_VECTOR_ELEMENTS:,} elements "
                                f"(its bytes must fit a 64-bit count)")
        f = np.arange(self.num_flows + 1, dtype=np.int64)
        q, r = divmod(n, self.num_flows)
        return f * q + f * r // self.num_flows

    def transfer_elements(self, num_elements: int) -> np.ndarray:
        """int64[T]: elements each transfer carries for an ``num_elements`` vector."""
        return np.diff(self.chunk_bounds(num_elements))[self.flow]

    # ---- views -------------------------------------------------------------------
    def transfers(self, num_elements: int | None = None) -> list[dict]:
        """The flat view: one dict per transfer (step, src, dst, flow, op, offset, length)."""
        n = self.num_flows if num_elements is None else num_elements
        bounds = self.chunk_bounds(n)
        return [
            {"step": int(s), "src": int(a), "dst": int(b), "flow": int(f), "op": OP_NAMES[int(o)],
             "offset": int(bounds[f]), "length": int(bounds[f + 1] - bounds[f])}
            for s, a, b, f, o in zip(self.step, self.src, self.dst, self.flow, self.op)
        ]

    def node_table(self, node: int, num_elements: int | None = None) -> list[TableEntry]:
        """Node ``node``'s entries in step order, with the children each one waits for."""
        n = self.num_flows if num_elements is None else num_elements
        bounds = self.chunk_bounds(n)
        arrivals = self._arrivals_by_flow(node)
        out = []
        for i in np.nonzero(self.src == node)[0]:
            f, o = int(self.flow[i]), int(self.op[i])
            reduce_from, gather_from = arrivals.get(f, ((), ()))
            if o == OP_REDUCE or not gather_from:
                children, dep_op = reduce_from, OP_REDUCE
            else:
                children, dep_op = gather_from, OP_GATHER
            out.append(TableEntry(op=o, flow=f, peer=int(self.dst[i]), step=int(self.step[i]),
                                  children=tuple(children), dep_op=dep_op,
                                  offset=int(bounds[f]), length=int(bounds[f + 1] - bounds[f])))
        return out

    def _arrivals_by_flow(self, node: int) -> dict[int, tuple[tuple[int, ...], tuple[int, ...]]]:
        res: dict[int, tuple[list[int], list[int]]] = {}
        for i in np.nonzero(self.dst == node)[0]:
            red, gat = res.setdefault(int(self.flow[i]), ([], []))
            (red if self.op[i] == OP_REDUCE else gat).append(int(self.src[i]))
        return {f: (tuple(r), tuple(g)) for f, (r, g) in res.items()}

    def steps_summary(self) -> list[dict]:
        """Per step: transfers, and how many of them reduce / gather."""
        rows = []
        for s in range(self.num_steps):
            m = self.step == s
            rows.append({"step": s, "transfers": int(m.sum()),
                         "reduce": int((m & (self.op == OP_REDUCE)).sum()),
                         "gather": int((m & (self.op == OP_GATHER)).sum())})
        return rows

    # ---- serialisation -----------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "format": "hw-models.schedule/1",
            "algorithm": self.algorithm, "topology": self.topology, "num_nodes": self.num_nodes,
            "nis_per_node": self.nis_per_node, "num_flows": self.num_flows, "params": self.params,
            "transfers": np.stack([self.step, self.src, self.dst, self.flow, self.op.astype(np.int32)],
                                  axis=1).tolist(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict) -> "Schedule":
        if d.get("format") != "hw-models.schedule/1":
            raise ScheduleError(f"not a hw-models schedule (format={d.get('format')!r}, expected 'hw-models.schedule/1')")
        try:
            return cls.from_transfers(d["algorithm"], d["topology"], d["num_nodes"], d["nis_per_node"],
                                      d["num_flows"], np.asarray(d["transfers"], dtype=np.int64).reshape(-1, 5),
                                      d.get("params", {}))
        except KeyError as exc:
            raise ScheduleError(f"schedule JSON is missing key {exc.args[0]!r}") from None

    @classmethod
    def from_json(cls, text: str) -> "Schedule":
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScheduleError(f"schedule JSON does not parse: {exc}") from None
        return cls.from_dict(d)

    def _meta(self) -> tuple:
        return (self.algorithm, self.topology, self.num_nodes, self.nis_per_node, self.num_flows)

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return (self.step, self.src, self.dst, self.flow, self.op)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return False
        if self is other:
            return True
        return self._meta() == other._meta() and all(
            a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(self._arrays(), other._arrays()))

    def __hash__(self) -> int:
        # the transfers' digest, computed once (without copying them: a schedule may be large)
        h = self.__dict__.get("_hash")
        if h is None:
            d = hashlib.blake2b(repr(self._meta()).encode(), digest_size=8)
            for a in self._arrays():
                d.update(str(a.dtype).encode())
                d.update(memoryview(np.ascontiguousarray(a)).cast("B"))
            h = int.from_bytes(d.digest(), "little", signed=True)
            object.__setattr__(self, "_hash", h)
        return h

    def __repr__(self) -> str:
        return (f"Schedule({self.algorithm!r} on {self.topology!r}: {self.num_nodes} nodes, "
                f"{self.num_flows} flows, {self.num_steps} steps, {self.num_transfers} transfers)")


# the canonical order is found by counting transfers per (step, src) while there are at most
# four such groups per transfer plus this many (else by sorting keys)
_COUNTING_SLACK = 1 << 20


def _canonical_order(cols: list[np.ndarray], num_nodes: int, num_flows: int) -> np.ndarray | None:
    """The stable order by (step, src, flow, op, dst), or None when the transfers are in it
    already: a counting sort by (step, src) with each such group sorted by the rest when
    the groups are few enough, else one sort of a combined key when it fits in 63 bits,
    else a sort by the five columns."""
    step, src, dst, flow, op = cols
    t = step.shape[0]
    if t == 0:
        return None
    steps = int(step.max()) + 1
    groups = steps * num_nodes
    if groups <= 4 * t + _COUNTING_SLACK:
        order = np.empty(t, np.int32 if t < 2**31 - 1 else np.int64)
        start = np.zeros(groups + 1, np.int64)
        if _group_order(step, src, dst, flow, op, num_nodes, num_flows, start, order):
            return None
        return order
    if steps * num_nodes * num_flows * 2 * num_nodes < 1 << 62:
        a = [c.astype(np.int64) for c in cols]
        key = (((a[0] * num_nodes + a[1]) * num_flows + a[3]) * 2 + a[4]) * num_nodes + a[2]
        return np.argsort(key, kind="stable")
    return np.lexsort((dst, op, flow, src, step))


@njit(cache=True)
def _group_order(step, src, dst, flow, op, n, nf, start, order):
    """Fill ``order`` with the canonical order (counting sort by (step, src), then each group
    by (flow, op, dst), stable); returns True (and leaves ``order`` unset) when the
    transfers are in that order already."""
    t = step.shape[0]
    in_order = True
    for i in range(1, t):
        a = ((step[i - 1] * n + src[i - 1]) * nf + flow[i - 1]) * 2 + op[i - 1]
        b = ((step[i] * n + src[i]) * nf + flow[i]) * 2 + op[i]
        if a > b or (a == b and dst[i - 1] > dst[i]):
            in_order = False
            break
    if in_order:
        return True
    for i in range(t):
        start[step[i] * n + src[i] + 1] += 1
    for g in range(start.shape[0] - 1):
        start[g + 1] += start[g]
    for i in range(t):
        g = step[i] * n + src[i]
        order[start[g]] = i
        start[g] += 1
    lo = 0
    for g in range(start.shape[0] - 1):  # start[g] is now the end of group g
        hi = start[g]
        if hi - lo <= 16:  # insertion sort by (flow, op, dst), stable
            for a in range(lo + 1, hi):
                x = order[a]
                kx = (flow[x] * 2 + op[x]) * n + dst[x]
                b = a - 1
                while b >= lo and (flow[order[b]] * 2 + op[order[b]]) * n + dst[order[b]] > kx:
                    order[b + 1] = order[b]
                    b -= 1
                order[b + 1] = x
        else:
            key = np.empty(hi - lo, np.int64)
            for a in range(lo, hi):
                x = order[a]
                key[a - lo] = (flow[x] * 2 + op[x]) * n + dst[x]
            perm = np.argsort(key, kind="mergesort")
            seg = order[lo:hi].copy()
            for a in range(hi - lo):
                order[lo + a] = seg[perm[a]]
        lo = hi
    return False


def _check_ranges(cols: list[np.ndarray], num_nodes: int, num_flows: int) -> None:
    if num_nodes < 1 or num_flows < 1:
        raise ScheduleError(f"a schedule needs num_nodes >= 1 and num_flows >= 1 (got {num_nodes}, {num_flows})")
    names = ("step", "src", "dst", "flow", "op")
    limits = (1 << 31, num_nodes, num_nodes, num_flows, 2)

    def row(i: int) -> tuple:
        return tuple(int(c[i]) for c in cols)

    for name, v, hi in zip(names, cols, limits):
        bad = np.nonzero((v < 0) | (v >= hi))[0] if v.size else []
        if len(bad):
            i = int(bad[0])
            allowed = f"0..{hi - 1}" if name != "step" else ">= 0 (and < 2**31)"
            raise ScheduleError(f"transfer {i} {row(i)}: {name}={int(v[i])} out of range ({allowed})")
    self_sends = np.nonzero(cols[1] == cols[2])[0]
    if len(self_sends):
        i = int(self_sends[0])
        raise ScheduleError(f"transfer {i} {row(i)}: src == dst")
