"""Schedule -> the per-node tables a co-designed NIC scheduler loads (docs/nic_scheduler.md).

A row is ``[op, flow, peer, step, len, dep_op, dep_count]``:

* every transfer a node sends becomes a REDUCE or GATHER row; ``dep_op``/``dep_count``
  count the messages of that flow that must arrive first (all REDUCEs of the flow
  arriving at the node for a REDUCE, and for the root's GATHER; the one arriving GATHER
  for any other GATHER);
* a node that receives a GATHER of a flow but forwards nothing of it (a leaf) gets a RECV
  row, so the message is expected and ``done`` waits for it. RECV rows sit at the
  schedule's last step: they never hold back the node's own sends;
* rows are sorted by step (the scheduler's next step is the step of its lowest pending
  row), then in the schedule's canonical order.

The scheduler counts arrivals by (flow, op) only, not by source, so a table is faithful
only if every arrival of a (flow, op) at a node is a dependency of each row that counts
that (flow, op); :func:`check_representable` proves this for a schedule.
"""

from __future__ import annotations

import numpy as np

from nic.collectives.schedule import Schedule, ScheduleError
from nic.scheduler import OP_GATHER, OP_RECV, OP_REDUCE

COLUMNS = ("op", "flow", "peer", "step", "len", "dep_op", "dep_count")


def _arrival_counts(schedule: Schedule) -> dict[tuple[int, int, int], int]:
    """(node, flow, op) -> messages arriving."""
    counts: dict[tuple[int, int, int], int] = {}
    for d, f, o in zip(schedule.dst.tolist(), schedule.flow.tolist(), schedule.op.tolist()):
        counts[(d, f, o)] = counts.get((d, f, o), 0) + 1
    return counts


def node_tables(schedule: Schedule, num_elements: int | None = None) -> list[np.ndarray]:
    """int64[rows, 7] per node. ``len`` is the chunk length in elements of an
    ``num_elements`` vector (default: 256 elements per flow)."""
    return node_tables_with_transfers(schedule, num_elements)[0]


def node_tables_with_transfers(schedule: Schedule, num_elements: int | None = None):
    """(tables, transfers): the tables, and per node the transfer index of each row (-1 for RECV)."""
    m = 256 * schedule.num_flows if num_elements is None else int(num_elements)
    lengths = schedule.transfer_elements(m)
    arrivals = _arrival_counts(schedule)
    last = max(schedule.num_steps - 1, 0)
    rows: list[list[list[int]]] = [[] for _ in range(schedule.num_nodes)]
    forwards = {(int(v), int(f)) for v, f, o in zip(schedule.src, schedule.flow, schedule.op) if o == OP_GATHER}
    for i in range(schedule.num_transfers):
        v, f, o = int(schedule.src[i]), int(schedule.flow[i]), int(schedule.op[i])
        n_red = arrivals.get((v, f, OP_REDUCE), 0)
        n_gat = arrivals.get((v, f, OP_GATHER), 0)
        if o == OP_REDUCE or n_gat == 0:
            dep_op, dep_count = OP_REDUCE, n_red
        else:
            dep_op, dep_count = OP_GATHER, n_gat
        rows[v].append([o, f, int(schedule.dst[i]), int(schedule.step[i]), int(lengths[i]), dep_op, dep_count, i])
    for (d, f, o), n in sorted(arrivals.items()):
        if o == OP_GATHER and (d, f) not in forwards:
            rows[d].append([OP_RECV, f, 0, last, 0, OP_GATHER, n, -1])
    tables, transfers = [], []
    for r in rows:
        a = np.asarray(r, dtype=np.int64).reshape(-1, 8)
        a = a[np.argsort(a[:, 3], kind="stable")]
        tables.append(np.ascontiguousarray(a[:, :7]))
        transfers.append(np.ascontiguousarray(a[:, 7]))
    return tables, transfers


def expected_sources(schedule: Schedule, tables: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """Per node, int64[rows, 2]: the expected source and its check bit of each table row.

    A row whose counted messages (its flow and dep_op arriving at the node) all come from
    one node checks that source (a GATHER from the parent); a row that counts messages of
    several nodes (a REDUCE from several children) or none does not check (0, 0). Rows are
    those of ``tables`` (default :func:`node_tables` of ``schedule``).
    """
    tables = node_tables(schedule) if tables is None else tables
    srcs: dict[tuple[int, int, int], set[int]] = {}
    for s, d, f, o in zip(schedule.src.tolist(), schedule.dst.tolist(), schedule.flow.tolist(), schedule.op.tolist()):
        srcs.setdefault((d, f, o), set()).add(s)
    out = []
    for v, rows in enumerate(tables):
        cols = np.zeros((len(rows), 2), dtype=np.int64)
        for i, (_op, f, _peer, _step, _len, dep_op, dep_count) in enumerate(np.asarray(rows)[:, :7].tolist()):
            from_ = srcs.get((v, f, dep_op), set())
            if dep_count and len(from_) == 1:
                cols[i] = (next(iter(from_)), 1)
        out.append(cols)
    return out


def check_representable(schedule: Schedule) -> None:
    """Raise ScheduleError unless the counting rule of the tables matches the schedule.

    Every arrival must be counted by some row (else the NIC flags it unexpected), and a
    row's dependencies must have been sent in earlier steps than the row's own step.
    """
    tables = node_tables(schedule)
    arrivals = _arrival_counts(schedule)
    for (d, f, o), n in arrivals.items():
        rows = tables[d]
        counting = rows[(rows[:, 1] == f) & (rows[:, 5] == o)]
        if len(counting) == 0:
            raise ScheduleError(f"node {d}: {n} message(s) of flow {f} op {o} arrive but no table row counts them")
        if np.any(counting[:, 6] != n):
            raise ScheduleError(f"node {d}: a row of flow {f} waits for {counting[:, 6].tolist()} messages but {n} arrive")
    arrive_step: dict[tuple[int, int, int], int] = {}
    for s, d, f, o in zip(schedule.step.tolist(), schedule.dst.tolist(), schedule.flow.tolist(), schedule.op.tolist()):
        arrive_step[(d, f, o)] = max(arrive_step.get((d, f, o), -1), s)
    for v, rows in enumerate(tables):
        for op, f, _peer, step, _len, dep_op, dep_count in rows.tolist():
            if op != OP_RECV and dep_count and arrive_step[(v, f, dep_op)] >= step:
                raise ScheduleError(
                    f"node {v}: its step-{step} send of flow {f} depends on a message sent in step "
                    f"{arrive_step[(v, f, dep_op)]} (dependencies must come from earlier steps)")


def table_depth(tables: list[np.ndarray]) -> int:
    """The largest table: the scheduler DEPTH this schedule needs."""
    return max((len(t) for t in tables), default=0)
