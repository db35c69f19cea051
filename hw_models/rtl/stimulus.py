"""One stimulus generator for the NIC scheduler, consumed by the cycle model and the RTL.

An :class:`Environment` plays the world around one node's scheduler: it resets or clears
it, loads a table (with idle gaps, in random order, sometimes with bad loads), starts it,
accepts send requests with random backpressure, reports ``ni_done`` some random cycles
after each accepted send, delivers the messages the table waits for on random receive
ports at random times (optionally only once the node reached their step, optionally
early, before ``start``), reads entries back at random, and can inject errors
(unexpected messages, spurious ``ni_done``, bad loads).

It is *reactive*: each cycle's inputs are computed from the outputs observed during that
cycle (:meth:`Environment.next_inputs`). The regression feeds it the cycle model's
outputs and applies the same inputs to the model and to the RTL, so both consumers see
identical stimulus; every input vector is recorded (since the last reset/clear) so a
failure can be replayed without the environment (:class:`TraceSource`).

Every random choice comes from ``numpy.random.default_rng`` seeded by the episode seed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from nic.scheduler import OP_GATHER, OP_RECV, OP_REDUCE, SCALAR_INPUT_NAMES, SchedulerParams
from noc.base.errors import HwModelsError

#: Columns of a table row, as nic.nic_table produces them and SchedulerModel.load_table takes them.
ROW_FIELDS = ("op", "flow", "peer", "step", "len", "dep_op", "dep_count")
#: Optional columns after ROW_FIELDS: the expected source of the entry's messages and its check bit.
SRC_FIELDS = ("src", "src_chk")


class StimulusError(HwModelsError):
    """The environment cannot go on (a table that does not fit, or a scheduler that never finishes)."""


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------


def random_table(rng: np.random.Generator, params: SchedulerParams, n: int | None = None) -> np.ndarray:
    """A random table of ``n`` rows (random 1..DEPTH when None) in step order.

    Few flows, so entries share (flow, dep_op) and count the same messages, but flow ids
    drawn from the whole FLOW_W range; steps grow by 0, 1 or 2 (skipped steps) from a base
    drawn from all of STEP_W's range (upper half included) in 70 % of tables; dependency counts mostly 0..3, and
    in half of the tables 4..12 within CNT_W (the upper bits of a 4-bit count); peers and lengths
    over their whole ranges. Every bit of every field is driven both ways over a few
    tables (tests/rtl/test_stimulus_coverage.py checks it).
    """
    depth = params.depth
    if n is None:
        n = int(rng.integers(1, depth + 1))
    n = min(n, depth)
    step_max = (1 << params.step_w) - 1
    n_ids = 1 << params.flow_w
    nflows = int(rng.integers(1, min(n_ids, 8) + 1))
    flows = rng.choice(n_ids, size=nflows, replace=False) if rng.random() < 0.7 else np.arange(nflows)
    cnt_full = (1 << params.cnt_w) - 1
    cnt_max = min(3, cnt_full)
    cnt_big = min(12, cnt_full)
    len_max = (1 << params.len_w) - 1
    big = 0.4 if rng.random() < 0.5 else 1.0  # half of the tables: entries that wait for up to 12 messages
    if rng.random() < 0.7 and step_max > 2 * n:
        step = int(rng.integers(0, step_max - 2 * n + 1))  # anywhere, upper half included
    else:
        step = int(rng.integers(0, 3))
    rows = np.zeros((n, 7), dtype=np.int64)
    for i in range(n):
        if i:
            step += int(rng.choice([0, 0, 0, 1, 1, 2]))
        rows[i, 0] = int(rng.choice([OP_REDUCE, OP_GATHER, OP_RECV], p=[0.42, 0.42, 0.16]))
        rows[i, 1] = int(flows[int(rng.integers(0, nflows))])
        rows[i, 2] = int(rng.integers(0, 1 << params.node_w))
        rows[i, 3] = min(step, step_max)
        rows[i, 4] = int(rng.integers(0, len_max + 1)) if rng.random() < 0.3 else int(rng.integers(1, min(len_max, 64) + 1))
        rows[i, 5] = int(rng.integers(0, 2))
        r = rng.random()
        rows[i, 6] = 0 if r < 0.3 else (int(rng.integers(cnt_max + 1, cnt_big + 1)) if r > big and cnt_big > cnt_max else int(rng.integers(1, cnt_max + 1)))
    return rows


def with_sources(rows: np.ndarray, rng: np.random.Generator, params: SchedulerParams, p_chk: float = 0.5) -> np.ndarray:
    """``rows`` with the two source columns: each (flow, dep_op) group checks its source with
    probability ``p_chk``, one random source (over all of NODE_W) for the whole group."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1, 7)
    out = np.zeros((len(rows), 9), dtype=np.int64)
    out[:, :7] = rows
    groups: dict[tuple[int, int], tuple[int, int]] = {}
    for i, r in enumerate(rows.tolist()):
        key = (r[1], r[5])
        if key not in groups:
            chk = int(rng.random() < p_chk)
            groups[key] = (int(rng.integers(0, 1 << params.node_w)), chk)
        out[i, 7], out[i, 8] = groups[key]
    return out


def expected_sources(rows: np.ndarray) -> dict[tuple[int, int], int]:
    """(flow, op) -> the source a checking entry of that group expects (groups without a check are absent)."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.ndim != 2 or rows.shape[1] < 9:
        return {}
    return {(int(r[1]), int(r[5])): int(r[7]) for r in rows if r[8]}


def fits(rows: np.ndarray, params: SchedulerParams) -> str | None:
    """Why ``rows`` cannot be loaded into a scheduler with ``params`` (None when it fits)."""
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) > params.depth:
        return f"{len(rows)} entries > DEPTH = {params.depth}"
    if rows.ndim != 2 or rows.shape[1] not in (7, 9):
        return f"rows have {rows.shape[-1] if rows.ndim else 0} columns; expected 7 ({', '.join(ROW_FIELDS)}) or 9 (+ src, src_chk)"
    limits = {1: params.flow_w, 2: params.node_w, 3: params.step_w, 4: params.len_w, 6: params.cnt_w}
    if rows.shape[1] == 9:
        limits.update({7: params.node_w, 8: 1})
    for col, width in limits.items():
        if len(rows) and int(rows[:, col].max()) >= (1 << width):
            return f"{(ROW_FIELDS + SRC_FIELDS)[col]} = {int(rows[:, col].max())} needs more than {width} bits"
    if len(rows) and np.any(np.diff(rows[:, 3]) < 0):
        return "steps are not in non-decreasing order"
    return None


def expected_messages(rows: np.ndarray) -> list[tuple[int, int, int]]:
    """The messages a table waits for: (flow, op, first step that counts them), one per message.

    A group (flow, dep_op) needs as many messages as its largest dep_count: every message
    counts for every entry of the group.
    """
    need: dict[tuple[int, int], int] = {}
    first: dict[tuple[int, int], int] = {}
    for op, flow, _peer, step, _len, dep_op, dep_count in np.asarray(rows, dtype=np.int64)[:, :7].tolist():
        key = (flow, dep_op)
        need[key] = max(need.get(key, 0), dep_count)
        first[key] = min(first.get(key, step), step)
    return [(f, o, first[(f, o)]) for (f, o), k in sorted(need.items()) for _ in range(k)]


# --------------------------------------------------------------------------------------
# Episodes and the environment
# --------------------------------------------------------------------------------------


@dataclass
class Episode:
    """One table run by the scheduler, with the knobs of its environment.

    ``prep``: what comes before loading: ``"rst"``, ``"clear"`` or ``"none"`` (back-to-back
    without reset: the new table is loaded over the finished one).
    """

    name: str
    seed: int
    rows: np.ndarray
    prep: str = "clear"
    p_ready: float = 1.0  # send_ready probability per cycle
    p_recv: float = 0.5  # per port and cycle: probability that a deliverable message arrives
    ni_delay_max: int = 3  # ni_done comes 1 + U{0..ni_delay_max} cycles after the handshake
    p_gap: float = 0.0  # idle cycle probability between loads
    shuffle_load: bool = False
    early: bool = False  # messages may arrive between the load and start
    step_gated: bool = False  # a message only arrives once the node reached its first step
    p_read: float = 0.2  # random read-back probability per cycle
    p_err: float = 0.0  # per cycle: unexpected message / spurious done / bad load
    start_delay: int = 0
    tail: int = 2  # idle cycles after done
    srcs: list[int] | None = None  # source node of each expected message (default random)
    timeout_cycles: int = 0  # the timeout input during the episode (0: no timeout)
    p_wrong_src: float = 0.0  # per expected message of a checked group: sent from another source

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["rows"] = np.asarray(self.rows, dtype=np.int64).tolist()
        return d

    @classmethod
    def from_json(cls, d: dict) -> Episode:
        d = dict(d)
        rows = np.asarray(d["rows"], dtype=np.int64)
        d["rows"] = rows.reshape(len(rows), -1) if len(rows) else rows.reshape(0, 7)
        return cls(**d)


def random_episode(seed: int, params: SchedulerParams, *, prep: str | None = None, errors: bool | None = None,
                   rows: np.ndarray | None = None, name: str | None = None) -> Episode:
    """An episode whose table (unless given) and environment knobs all come from ``seed``.

    ``seed`` is any integer >= 0 (numpy's SeedSequence takes arbitrarily large ones, but no
    negative ones).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise StimulusError(f"episode seed {seed!r} is not an integer >= 0")
    rng = np.random.default_rng([seed, 0x5C4ED])
    random_rows = rows is None
    if rows is None:
        n = params.depth if rng.random() < 0.1 else None  # sometimes a full table
        rows = random_table(rng, params, n)
    if prep is None:
        prep = str(rng.choice(["rst", "clear", "none"], p=[0.2, 0.4, 0.4]))
    if errors is None:
        errors = rng.random() < 0.2
    # drawn from a stream of their own, so the knobs above are what they were before these
    # existed: expected sources, the timeout and wrong-source messages
    rng2 = np.random.default_rng([seed, 0x5A7C])
    rows = np.asarray(rows, dtype=np.int64)
    if random_rows and rng2.random() < 0.6:
        rows = with_sources(rows, rng2, params)
    # the timeout: short ones (they fire during stalls) only where errors are expected; a
    # clean episode runs without one or with the longest (which no stall of it reaches)
    r = rng2.random()
    tmo_max = (1 << params.tmo_w) - 1
    if errors:
        timeout = 0 if r < 0.3 else (int(rng2.integers(1, min(tmo_max, 12) + 1)) if r < 0.8
                                     else int(rng2.integers(1, tmo_max + 1)))
    else:
        timeout = tmo_max if r < 0.3 and tmo_max >= 4096 else 0
    p_wrong = float(rng2.uniform(0.05, 0.3)) if errors and rng2.random() < 0.7 else 0.0
    return Episode(
        timeout_cycles=timeout,
        p_wrong_src=p_wrong,
        name=name or f"random-{seed}",
        seed=int(seed),
        rows=rows,
        prep=prep,
        p_ready=1.0 if rng.random() < 0.3 else float(rng.uniform(0.2, 1.0)),
        p_recv=float(rng.uniform(0.05, 0.8)),
        ni_delay_max=int(rng.integers(0, 8)),
        p_gap=0.0 if rng.random() < 0.5 else 0.3,
        shuffle_load=bool(rng.random() < 0.3),
        early=bool(rng.random() < 0.3),
        step_gated=bool(rng.random() < 0.5),
        p_read=0.2,
        p_err=0.03 if errors else 0.0,
        start_delay=int(rng.integers(0, 4)),
        tail=int(rng.integers(0, 4)),
    )


def _compact(inp: dict) -> dict:
    """Only the non-zero inputs (the trace format)."""
    return {k: v for k, v in inp.items() if v}


class _EpisodeRun:
    """The environment's state during one episode."""

    def __init__(self, ep: Episode, params: SchedulerParams) -> None:
        self.ep = ep
        self.params = params
        self.rng = np.random.default_rng([ep.seed, 0xE2F])
        self.outs: dict[str, int] = {}
        self.cycle = 0
        self.loaded = False
        self.started = False
        msgs = expected_messages(ep.rows)
        if ep.srcs is not None and len(ep.srcs) == len(msgs):
            srcs = list(ep.srcs)
        else:
            srcs = [int(self.rng.integers(0, 1 << params.node_w)) for _ in msgs]
        checked = expected_sources(ep.rows)
        srcs = [checked.get((f, o), s) for (f, o, _), s in zip(msgs, srcs)]
        order = self.rng.permutation(len(msgs))
        # (flow, op, src, release step)
        self.msgs = [(msgs[i][0], msgs[i][1], srcs[i], msgs[i][2]) for i in order]
        self.checked = checked
        self.done_at: dict[int, int] = {}  # NI -> cycle of its ni_done
        self.sends = 0
        self.limit = 4000 + 40 * (len(ep.rows) + 1) * (ep.ni_delay_max + 4)

    # ---- the script: what the episode does, phase by phase ---------------------------
    def script(self) -> Iterator[dict]:
        ep, rng = self.ep, self.rng
        if ep.prep == "rst":
            yield {"rst": 1}
        elif ep.prep == "clear":
            yield {"clear": 1}
        rows = np.asarray(ep.rows, dtype=np.int64)
        order = rng.permutation(len(rows)) if ep.shuffle_load else np.arange(len(rows))
        for addr in order.tolist():
            while ep.p_gap and rng.random() < ep.p_gap:
                yield {}
            if ep.p_err and rng.random() < 4 * ep.p_err:
                yield self._bad_load()
            op, flow, peer, step, length, dep_op, dep_count = rows[addr, :7].tolist()
            load = {"load_valid": 1, "load_addr": addr, "load_op": op, "load_flow": flow, "load_peer": peer,
                    "load_step": step, "load_len": length, "load_dep_op": dep_op, "load_dep_count": dep_count}
            if rows.shape[1] >= 9:
                load["load_src"], load["load_src_chk"] = int(rows[addr, 7]), int(rows[addr, 8])
            yield load
        self.loaded = True
        for _ in range(ep.start_delay):
            yield {}
        yield {"start": 1}
        self.started = True
        n = 0
        while not (self.outs.get("done") and not self.msgs and not self.done_at):
            n += 1
            if n > self.limit:
                raise StimulusError(
                    f"episode {ep.name} (seed {ep.seed}) did not finish in {self.limit} cycles: "
                    f"{len(self.msgs)} messages undelivered, outputs {self.outs}")
            extra = {}
            if self.outs.get("running") and rng.random() < 0.01:
                extra["start"] = 1  # ignored while RUN
            yield extra
        for _ in range(ep.tail):
            yield {}

    def _bad_load(self) -> dict:
        p, rng = self.params, self.rng
        if p.depth < (1 << p.addr_w) and rng.random() < 0.5:
            return {"load_valid": 1, "load_addr": int(rng.integers(p.depth, 1 << p.addr_w)), "load_op": 0}
        return {"load_valid": 1, "load_addr": int(rng.integers(0, p.depth)), "load_op": 3,
                "load_flow": int(rng.integers(0, 1 << p.flow_w))}

    # ---- every cycle: backpressure, NI completions, receives, reads, errors ---------
    def compose(self, phase: dict) -> dict:
        ep, p, rng, o = self.ep, self.params, self.rng, self.outs
        inp = dict(phase)
        if ep.timeout_cycles:
            inp.setdefault("timeout_cycles", ep.timeout_cycles)
        cyc = self.cycle
        self.cycle += 1
        if inp.get("rst") or inp.get("clear"):
            self.done_at.clear()
            return inp
        if self.started and "send_ready" not in inp:
            inp["send_ready"] = int(ep.p_ready >= 1.0 or rng.random() < ep.p_ready)
        # NI completions that are due
        done_mask = 0
        for ni, t in list(self.done_at.items()):
            if cyc >= t:
                done_mask |= 1 << ni
                del self.done_at[ni]
        # the handshake of this cycle (outputs during the cycle, inputs of the cycle)
        if o.get("send_valid") and inp.get("send_ready"):
            ni = o["send_ni"]
            self.done_at[ni] = cyc + 1 + int(rng.integers(0, ep.ni_delay_max + 1))
            self.sends += 1
        # spurious done on an idle NI
        if ep.p_err and rng.random() < ep.p_err:
            idle = [i for i in range(p.nis) if not (o.get("ni_busy", 0) >> i) & 1 and i not in self.done_at]
            if idle:
                done_mask |= 1 << int(rng.choice(idle))
        if done_mask:
            inp["ni_done"] = done_mask
        # receives
        recv: list = [None] * p.nis
        any_recv = False
        if self.msgs and (self.started or (ep.early and self.loaded)):
            for port in range(p.nis):
                if not self.msgs or rng.random() >= ep.p_recv:
                    continue
                for k, (flow, op, src, rel) in enumerate(self.msgs):
                    if not ep.step_gated or not self.started or o.get("done") or o.get("step", 0) >= rel:
                        if ep.p_wrong_src and (flow, op) in self.checked and rng.random() < ep.p_wrong_src:
                            src ^= int(rng.integers(1, 1 << p.node_w)) if p.node_w else 0  # another source
                        recv[port] = (flow, op, src)
                        any_recv = True
                        del self.msgs[k]
                        break
        if ep.p_err and self.loaded and rng.random() < ep.p_err:
            port = int(rng.integers(0, p.nis))
            if recv[port] is None:
                recv[port] = (int(rng.integers(0, 1 << p.flow_w)), int(rng.integers(0, 2)),
                              int(rng.integers(0, 1 << p.node_w)))
                any_recv = True
        if any_recv:
            inp["recv"] = recv
        # random read-back (addresses beyond DEPTH included)
        if "rd_en" not in inp and rng.random() < ep.p_read:
            inp["rd_en"] = 1
            inp["rd_addr"] = int(rng.integers(0, 1 << p.addr_w))
        return inp


class Environment:
    """The reactive stimulus over a list of episodes.

    Call :meth:`next_inputs` once per cycle with the outputs during that cycle; it returns
    that cycle's inputs (a dict of scalar inputs named as in docs/nic_scheduler.md plus
    ``recv``: a list of ``(flow, op, src)`` or ``None`` per port), or ``None`` when every
    episode is over. :attr:`trace` holds the inputs since the last reset/clear.
    """

    def __init__(self, params: SchedulerParams, episodes: Sequence[Episode]) -> None:
        self.params = params
        self.episodes = list(episodes)
        if self.episodes and self.episodes[0].prep == "none":
            self.episodes[0].prep = "rst"
        for ep in self.episodes:
            why = fits(ep.rows, params)
            if why:
                raise StimulusError(f"episode {ep.name}: table does not fit the scheduler: {why}")
        self.index = -1  # current episode
        self.run: _EpisodeRun | None = None
        self.trace: list[dict] = []
        self.trace_start = 0  # cycle of trace[0]
        self.cycle = 0
        self.episode_start = 0
        self.finished: list[dict] = []  # per finished episode: name, seed, cycles, sends, errors
        self._script: Iterator[dict] | None = None

    @property
    def episode(self) -> Episode | None:
        return self.episodes[self.index] if 0 <= self.index < len(self.episodes) else None

    def next_inputs(self, outs: dict[str, int]) -> dict | None:
        while True:
            if self._script is None:
                if self.run is not None:
                    self.finished.append({"name": self.run.ep.name, "seed": self.run.ep.seed,
                                          "entries": len(self.run.ep.rows),
                                          "cycles": self.cycle - self.episode_start, "sends": self.run.sends,
                                          "err_count": int(outs.get("err_count", 0))})
                self.index += 1
                if self.index >= len(self.episodes):
                    self.run = None
                    return None
                self.run = _EpisodeRun(self.episodes[self.index], self.params)
                self._script = self.run.script()
                self.episode_start = self.cycle
            self.run.outs = outs
            try:
                phase = next(self._script)
            except StopIteration:
                self._script = None
                continue
            inp = self.run.compose(phase)
            if inp.get("rst") or inp.get("clear"):
                self.trace = []
                self.trace_start = self.cycle
            self.trace.append(_compact(inp))
            self.cycle += 1
            return inp


class TraceSource:
    """Replays recorded inputs (a reproducer's trace), ignoring the outputs."""

    def __init__(self, trace: Sequence[dict]) -> None:
        self._trace = list(trace)
        self.cycle = 0
        self.trace = self._trace
        self.trace_start = 0
        self.finished: list[dict] = []
        self.episode = None

    def next_inputs(self, outs: dict[str, int]) -> dict | None:
        if self.cycle >= len(self._trace):
            return None
        inp = dict(self._trace[self.cycle])
        if "recv" in inp:
            inp["recv"] = [tuple(x) if x is not None else None for x in inp["recv"]]
        self.cycle += 1
        return inp


# --------------------------------------------------------------------------------------
# Inputs as pin values
# --------------------------------------------------------------------------------------

PIN_INPUTS = tuple(n for n in SCALAR_INPUT_NAMES if n != "recv_valid") + (
    "recv_valid", "recv_flow", "recv_op", "recv_src")


def pin_values(inp: dict, params: SchedulerParams) -> dict[str, int]:
    """The value of every input pin of rtl/nic_scheduler.v for one cycle's inputs."""
    pins = {name: int(inp.get(name, 0)) for name in SCALAR_INPUT_NAMES if name != "recv_valid"}
    valid = flow = op = src = 0
    for port, item in enumerate(inp.get("recv") or ()):
        if item is None:
            continue
        f, o, s = item
        valid |= 1 << port
        flow |= (int(f) & ((1 << params.flow_w) - 1)) << (port * params.flow_w)
        op |= (int(o) & 1) << port
        src |= (int(s) & ((1 << params.node_w) - 1)) << (port * params.node_w)
    pins.update(recv_valid=valid, recv_flow=flow, recv_op=op, recv_src=src)
    return pins


# --------------------------------------------------------------------------------------
# Node tables of MultiTree all-reduces
# --------------------------------------------------------------------------------------


def multitree_node_tables(spec: str, *, sources: bool = False) -> tuple[list[np.ndarray], int, str]:
    """Node tables of MultiTree on topology ``spec``: (tables, NIs per node, their source).

    The tables are ``nic.nic_table.node_tables`` of ``nic.collectives.multitree``: exactly
    what the co-designed NIC of each node loads in the all-reduce simulations. With
    ``sources``, each row also has its expected source and check bit
    (``nic.nic_table.expected_sources``: rows waiting for one node check it).
    """
    from nic.collectives import multitree  # noqa: PLC0415
    from nic.nic_table import expected_sources as table_sources  # noqa: PLC0415
    from nic.nic_table import node_tables  # noqa: PLC0415
    from noc.topology import parse_spec  # noqa: PLC0415

    topo = parse_spec(spec)
    sched = multitree(topo)
    tables = node_tables(sched)
    if sources:
        tables = [np.concatenate([t, c], axis=1) for t, c in zip(tables, table_sources(sched, tables))]
    return tables, topo.nis_per_node, "nic.collectives.multitree"


def params_for_tables(tables: Sequence[np.ndarray], nis: int, **kw) -> SchedulerParams:
    """The smallest power-of-two DEPTH (and wide-enough fields) that holds every table."""
    rows = np.concatenate([np.asarray(t).reshape(-1, 7) for t in tables]) if tables else np.zeros((0, 7), np.int64)
    n = max((len(t) for t in tables), default=1)
    depth = 1 << max(0, (n - 1).bit_length())

    def bits(col: int, lo: int) -> int:
        return max(lo, int(rows[:, col].max()).bit_length()) if len(rows) else lo

    return SchedulerParams(depth=max(depth, 1), nis=nis, flow_w=bits(1, kw.get("flow_w", 8)),
                           node_w=max(bits(2, kw.get("node_w", 8)), 1), step_w=bits(3, kw.get("step_w", 8)),
                           len_w=bits(4, kw.get("len_w", 24)), cnt_w=bits(6, kw.get("cnt_w", 4)), err_w=kw.get("err_w", 16))


def table_episodes(tables: Sequence[np.ndarray], name: str, seed: int = 0, *, prep: str = "clear") -> list[Episode]:
    """One episode per node table; environment knobs random from ``seed`` + node."""
    eps = []
    for node, rows in enumerate(tables):
        ep = random_episode(seed * 100_003 + node, _NO_PARAMS, rows=rows, prep=prep, errors=False, name=f"{name}/node{node}")
        eps.append(ep)
    return eps


_NO_PARAMS = SchedulerParams(depth=4096, nis=16, flow_w=16, node_w=16, step_w=16, len_w=32, cnt_w=8, err_w=32)
