"""Collective costs with ASTRA-sim 2's analytical (congestion-unaware) semantics.

:class:`AstraAnalytical` is our model of a collective set up the way ASTRA-sim's analytical
backend sees a network, so that its figures can be set beside ASTRA-sim's run for run
(bench/astrasim_reference.py, docs/validation.md "Against ASTRA-sim 2"):

* a network is a list of dimensions, each a ``Ring``, ``FullyConnected`` or ``Switch`` of
  ``npus`` NPUs with one link bandwidth (GB/s, 1 GB = 2^30 B, as ASTRA-sim converts it) and
  one link latency (ns);
* a message of ``m`` bytes from ``a`` to ``b`` in one dimension takes ``hops * latency +
  m / bandwidth`` ns, truncated to whole ns, with no contention: no routers, no virtual
  channels, no NIC, and two messages on one link do not share it (congestion-unaware).
  Hops: a bidirectional ring's shorter way round; 1 on a fully connected dimension; 2
  through a switch;
* a collective of ``S`` bytes is split into ``splits`` chunks of ``S // splits`` bytes
  (ASTRA-sim's ``preferred-dataset-splits``; at least one byte per NPU, except for an
  all-gather), run one after the other;
* an all-gather's size is each NPU's input (ASTRA-sim's ``comm_size``), its result that
  times the NPU count; a reduce-scatter's and an all-reduce's size is the whole vector;
* per chunk and dimension, the algorithm's steps: ring (``N-1`` steps of ``c/N`` per
  reduce-scatter or all-gather phase), direct (one step of ``c/N`` to every peer at once),
  halving-doubling (``log2 N`` steps of ``c/2, c/4, ...`` to partners ``1, 2, 4, ...``
  away); ``endpoint_delay_ns`` is added once per step, and once more per chunk and
  dimension (ASTRA-sim's first packet bundle goes through the memory bus before the first
  send);
* the double binary tree (all-reduce only; ``N`` a power of two) is ASTRA-sim's: a root
  with one child over a complete binary tree of the other ``N-1`` NPUs, numbered in order
  (:func:`binary_tree`); even chunks take the tree whose root is the last NPU, odd chunks
  the one whose root is the first. Each step sends the whole chunk: leaves send up after
  the endpoint delay, a node sums its children's chunks (endpoint delay and local
  reduction after the later one arrives) and sends up, the root sums and sends down, each
  node below sums what it gets, sends it to its children and is done, and a leaf is done
  an endpoint delay after the chunk reaches it. The chunks overlap: an NPU starts a chunk
  on a dimension once it is done with the one before there (and with this chunk on the
  dimension before), so chunk ``k+1`` climbs its tree while chunk ``k`` is still coming
  down the other;
* a received message that is summed (a reduce-scatter step, the reduce-scatter half of an
  all-reduce) costs ASTRA-sim's local reduction: one write and two reads of the message at
  ``local_mem_GBps`` (its ``local-mem-bw``, GB of 10^9 B), each truncated to whole ns
  (``local_mem_GBps=None``: no such cost). Halving-doubling's all-reduce is charged none
  for its first step, as measured;
* on several dimensions ASTRA-sim's ``baseline`` runs the same collective on each
  dimension in turn, first to last (an all-reduce of the whole chunk per dimension; a
  reduce-scatter's chunk shrinks by each ``N``, an all-gather's grows), and each
  dimension serves one chunk at a time, so chunk ``k`` runs on dimension ``d`` once it
  has left ``d-1`` and chunk ``k-1`` has left ``d``: the chunks pipeline over the
  dimensions (``pipeline=False``: one chunk after the other).

The figures it was checked against, and by how much it differs where, are in
docs/validation.md.
"""

from __future__ import annotations

import math

import numpy as np
from dataclasses import dataclass

from hw_models.training.costs import whole
from noc.base.errors import ConfigError

TOPOLOGIES = ("Ring", "FullyConnected", "Switch")
ALGORITHMS = ("ring", "direct", "halvingDoubling", "doubleBinaryTree")
COLLECTIVES = ("allreduce", "reduce_scatter", "all_gather")
GIB = float(1 << 30)

# the system configuration the comparisons use (an ASTRA-sim system .json)
ASTRA_SYSTEM = {
    "scheduling-policy": "LIFO",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 4,
    "collective-optimization": "baseline",
    "local-mem-bw": 1600,
    "boost-mode": 0,
}


@dataclass(frozen=True)
class AstraAnalytical:
    """Nanoseconds of a collective on an ASTRA-sim analytical network (module docstring)."""

    topologies: tuple[str, ...]
    npus: tuple[int, ...]
    bandwidth_GBps: float
    latency_ns: float
    algorithm: str = "ring"
    splits: int = 4
    endpoint_delay_ns: float = ASTRA_SYSTEM["endpoint-delay"]
    local_mem_GBps: float | None = ASTRA_SYSTEM["local-mem-bw"]
    pipeline: bool = True

    def __post_init__(self) -> None:
        if len(self.topologies) != len(self.npus) or not self.topologies:
            raise ConfigError(f"topologies {self.topologies!r} and npus {self.npus!r}: one NPU count per dimension")
        for t in self.topologies:
            if t not in TOPOLOGIES:
                raise ConfigError(f"topology = {t!r}: must be one of {', '.join(TOPOLOGIES)}")
        for n in self.npus:
            if isinstance(n, bool) or not isinstance(n, int) or n < 2:
                raise ConfigError(f"npus = {n!r}: must be an integer >= 2 per dimension")
        if self.algorithm not in ALGORITHMS:
            raise ConfigError(f"algorithm = {self.algorithm!r}: must be one of {', '.join(ALGORITHMS)}")
        if self.algorithm in ("halvingDoubling", "doubleBinaryTree") and any(n & (n - 1) for n in self.npus):
            raise ConfigError(f"npus = {self.npus}: {self.algorithm} needs powers of two")
        if not (self.bandwidth_GBps > 0 and math.isfinite(self.bandwidth_GBps)):
            raise ConfigError(f"bandwidth_GBps = {self.bandwidth_GBps!r}: must be a finite number > 0")
        if not (self.latency_ns >= 0 and math.isfinite(self.latency_ns)):
            raise ConfigError(f"latency_ns = {self.latency_ns!r}: must be a finite number >= 0")
        if self.local_mem_GBps is not None and not (self.local_mem_GBps > 0 and math.isfinite(self.local_mem_GBps)):
            raise ConfigError(f"local_mem_GBps = {self.local_mem_GBps!r}: must be a finite number > 0, or None")
        whole("splits", self.splits)

    @property
    def bytes_per_ns(self) -> float:
        return self.bandwidth_GBps * GIB / 1e9

    def hops(self, dim: int, distance: int) -> int:
        t, n = self.topologies[dim], self.npus[dim]
        if t == "Ring":
            d = distance % n
            return min(d, n - d)
        return 1 if t == "FullyConnected" else 2

    def send_ns(self, dim: int, distance: int, nbytes: float) -> float:
        """One message: ``hops * latency + bytes / bandwidth``, whole ns."""
        return float(math.floor(self.hops(dim, distance) * self.latency_ns + nbytes / self.bytes_per_ns))

    def reduce_ns(self, nbytes: float) -> float:
        """ASTRA-sim's local reduction of a received message: a write and two reads, whole ns each."""
        if self.local_mem_GBps is None:
            return 0.0
        return 3.0 * math.floor(nbytes / self.local_mem_GBps)

    def phase_ns(self, dim: int, kind: str, chunk_bytes: float) -> float:
        """One chunk's reduce-scatter, all-gather or all-reduce in one dimension."""
        n, alg, e = self.npus[dim], self.algorithm, self.endpoint_delay_ns
        if kind == "allreduce" and alg != "doubleBinaryTree":
            rs = self.phase_ns(dim, "reduce_scatter", chunk_bytes)
            if alg == "halvingDoubling":  # measured: no reduction charged for the first step
                rs -= self.reduce_ns(chunk_bytes / 2)
            if alg == "direct":
                return self.direct_allreduce_ns(dim, chunk_bytes)
            return rs + self.phase_ns(dim, "all_gather", chunk_bytes)  # the all-gather mirrors it
        red = self.reduce_ns if kind == "reduce_scatter" else (lambda m: 0.0)
        if alg == "ring":
            return (n - 1) * (e + self.send_ns(dim, 1, chunk_bytes / n) + red(chunk_bytes / n))
        if alg == "direct":
            return e + max(self.send_ns(dim, k, chunk_bytes / n) for k in range(1, n)) + red(chunk_bytes / n)
        if alg == "halvingDoubling":
            steps = int(round(math.log2(n)))
            return sum(e + self.send_ns(dim, 1 << s, chunk_bytes / (2 << s)) + red(chunk_bytes / (2 << s))
                       for s in range(steps))
        raise ConfigError(f"algorithm = {alg!r}: no per-chunk phase (the tree's chunks overlap; see tree_ns)")

    def direct_allreduce_ns(self, dim: int, chunk_bytes: float) -> float:
        """A direct all-reduce's chunk on one dimension as ASTRA-sim runs it: every NPU sends
        ``c/N`` to each peer at once; each received message is summed (endpoint delay and
        local reduction), and each finished sum frees one send. The all-gather's messages
        (to the peers ``1, 2, ..., N-1`` away, in that order) wait until every reduce-scatter
        message has arrived; then the sums finished by then free that many sends at once and
        each later sum one more. On a ring, where far peers' messages arrive later, this
        can send before the last sum is done; a leaf's end is an endpoint delay after the last
        message reaches it."""
        n, e = self.npus[dim], self.endpoint_delay_ns
        m = chunk_bytes / n
        arrive = [self.send_ns(dim, k, m) for k in range(1, n)]
        sums = sorted(a + e + self.reduce_ns(m) for a in arrive)
        first = min(c for c in sums if c >= max(arrive))  # the first sum once all have arrived
        return e + max(max(c, first) + self.send_ns(dim, j + 1, m) for j, c in enumerate(sums))

    def tree_ns(self, chunk: float) -> float:
        """The double binary tree all-reduce of ``splits`` chunks of ``chunk`` bytes (module
        docstring): per NPU, when it is done with each chunk on each dimension."""
        e, red = self.endpoint_delay_ns, self.reduce_ns(chunk)
        done_dim = [0.0] * self.num_workers  # when each NPU is done with the chunk before on dimension d
        done = {}  # (npu, dim) -> when it is done with the chunk before there
        end = 0.0
        for k in range(self.splits):
            for d, n in enumerate(self.npus):
                root, kids = binary_tree(n, root_max=k % 2 == 0)
                for rank in _lines(self, d):
                    if self.pipeline:
                        start = [max(done_dim[r] if d else 0.0, done.get((r, d), 0.0)) for r in rank]
                    else:
                        start = [end if d == 0 else done_dim[r] for r in rank]
                    for i, t in enumerate(self._tree_once(d, root, kids, start, chunk, e, red)):
                        done[(rank[i], d)] = done_dim[rank[i]] = t
            end = max(end, max(done_dim))
        return float(end)

    def _tree_once(self, d: int, root: int, kids: dict, start: list[float], chunk: float, e: float,
                   red: float) -> list[float]:
        """One chunk up and down one tree of a line: when each NPU of it is done."""
        up = {}

        def climb(v):  # when v sends its (summed) chunk up
            for c in kids[v]:
                climb(c)
            if not kids[v]:
                up[v] = start[v] + e
            else:
                got = max(up[c] + self.send_ns(d, v - c, chunk) for c in kids[v])
                up[v] = max(start[v], got) + e + red
        climb(root)
        out = [0.0] * len(start)
        todo = [root]
        while todo:
            v = todo.pop()
            out[v] = up[v]  # the root's is the time it sends down
            for c in kids[v]:
                got = out[v] + self.send_ns(d, c - v, chunk)
                if kids[c]:
                    up[c] = got + e + red  # reused: when c sends down
                    todo.append(c)
                else:
                    out[c] = got + e
        return out

    def dim_chunks(self, kind: str, chunk: float) -> list[float]:
        """One chunk's bytes on each dimension, in the order it visits them: a reduce-scatter's
        shrinks by each dimension's NPU count after it, an all-gather's grows before it."""
        sizes = []
        if kind == "all_gather":
            chunk /= self.num_workers
        for n in self.npus:
            if kind == "all_gather":
                chunk *= n
            sizes.append(chunk)
            if kind == "reduce_scatter":
                chunk /= n
        return sizes

    def stages_ns(self, kind: str, chunk: float) -> list[float]:
        """One chunk's time on each dimension, in the order it visits them."""
        return [self.endpoint_delay_ns + self.phase_ns(d, kind, c)  # the first bundle's trip
                for d, c in enumerate(self.dim_chunks(kind, chunk))]

    def chunk_bytes(self, kind: str, nbytes: int) -> int:
        """The bytes of each of ``splits`` chunks of a collective of ``nbytes`` (an all-gather's
        size is each NPU's input), as ASTRA-sim cuts it; the double binary tree runs
        all-reduces only."""
        if self.algorithm == "doubleBinaryTree" and kind != "allreduce":
            raise ConfigError(f"collective kind {kind!r}: doubleBinaryTree is an all-reduce only")
        if kind == "all_gather":
            return nbytes * self.num_workers // self.splits
        return max(nbytes // self.splits, self.num_workers)  # ASTRA-sim's smallest chunk: one byte per NPU

    def collective_ns(self, kind: str, nbytes: int) -> float:
        """Nanoseconds of one collective of ``kind`` (:data:`COLLECTIVES`) moving ``nbytes``."""
        if kind not in COLLECTIVES:
            raise ConfigError(f"collective kind {kind!r}: must be one of {', '.join(COLLECTIVES)}")
        if nbytes <= 0:
            return 0.0
        chunk = self.chunk_bytes(kind, nbytes)
        if self.algorithm == "doubleBinaryTree":
            return self.tree_ns(chunk)
        stages = self.stages_ns(kind, chunk)
        if not self.pipeline:
            return float(self.splits * sum(stages))
        free = [0.0] * len(stages)  # when each dimension is done with the chunk before
        for _ in range(self.splits):
            t = 0.0
            for d, s in enumerate(stages):
                t = max(t, free[d]) + s
                free[d] = t
        return float(free[-1])

    # the timeline's CommModel: seconds
    @property
    def num_workers(self) -> int:
        return math.prod(self.npus)

    def allreduce_s(self, nbytes: int) -> float:
        return self.collective_ns("allreduce", nbytes) * 1e-9

    def reduce_scatter_s(self, nbytes: int) -> float:
        return self.collective_ns("reduce_scatter", nbytes) * 1e-9

    def all_gather_s(self, nbytes: int) -> float:
        return self.collective_ns("all_gather", nbytes) * 1e-9

    def describe(self) -> str:
        return (f"ASTRA-sim analytical {'x'.join(f'{t}({n})' for t, n in zip(self.topologies, self.npus))}, "
                f"{self.algorithm}, {self.bandwidth_GBps:g} GB/s, {self.latency_ns:g} ns, {self.splits} splits")


def binary_tree(n: int, root_max: bool) -> tuple[int, dict[int, list[int]]]:
    """ASTRA-sim's binary tree of ``n`` NPUs (a power of two): a root with one child, the
    root of a complete binary tree of the other ``n - 1``, every node numbered in order
    (left subtree, node, right subtree). ``root_max``: the root is NPU ``n - 1`` (its child
    the tree on ``0 .. n-2``); else NPU 0 (over ``1 .. n-1``). Returns the root and each
    node's children."""
    if n < 2 or n & (n - 1):
        raise ConfigError(f"npus = {n!r}: a binary tree needs a power of two >= 2")
    kids: dict[int, list[int]] = {}
    ids = iter(range(n))

    def build(depth: int) -> int:  # in order: the subtree's nodes take the next ids
        if depth == 1:
            me = next(ids)
            kids[me] = []
            return me
        left = build(depth - 1)
        me = next(ids)
        kids[me] = [left, build(depth - 1)]
        return me

    depth = n.bit_length() - 1  # the complete tree under the root holds n - 1 = 2^depth - 1 NPUs
    if root_max:
        child = build(depth)
        root = next(ids)
    else:
        root = next(ids)
        child = build(depth)
    kids[root] = [child]
    return root, kids


# ---------------------------------------------------------------------------------------------
# The same collectives on our message-level simulator (nic.message_sim), set up with ASTRA-sim's
# analytical semantics: one cycle = 1 ns, links in bytes/ns from GB/s of 2^30 B, its chunking.

CONGESTION = ("unaware", "aware", "store-and-forward")


def _group_steps(alg: str, kind: str, n: int, chunk: float) -> list[list[tuple[int, int, float, bool]]]:
    """One chunk's phase on one line of ``n`` NPUs: per step, (src, dst, bytes, summed) by
    local index. Ring sends to the next NPU; direct to every other at once; halving-doubling
    to the partner ``1, 2, 4, ...`` away (XOR), then back."""
    def ring(summed):
        return [[(i, (i + 1) % n, chunk / n, summed) for i in range(n)] for _ in range(n - 1)]

    def direct(summed):
        return [[(i, j, chunk / n, summed) for i in range(n) for j in range(n) if j != i]]

    steps_hd = int(round(math.log2(n))) if n & (n - 1) == 0 else 0

    def hd(rs: bool, first_summed: bool = True):
        order = range(steps_hd) if rs else reversed(range(steps_hd))
        return [[(i, i ^ (1 << s), chunk / (2 << s), rs and (s > 0 or first_summed)) for i in range(n)]
                for s in order]

    build = {"ring": ring, "direct": direct}
    if alg == "halvingDoubling":
        if kind == "allreduce":  # as measured: no reduction charged for the first step
            return hd(True, first_summed=False) + hd(False)
        return hd(kind == "reduce_scatter")
    if alg not in build:
        raise ConfigError(f"algorithm = {alg!r}: the step messages are ring, direct and halvingDoubling")
    if kind == "allreduce":
        return build[alg](True) + build[alg](False)
    return build[alg](kind == "reduce_scatter")


class _Messages:
    """The transfers of a :func:`message_run` as they are built: per message its source, bytes,
    path latency, links and the messages it waits for."""

    def __init__(self, model: AstraAnalytical, congestion: str):
        self.model, self.congestion = model, congestion
        self.links: dict[tuple, int] = {}
        self.src, self.nb, self.lat, self.paths, self.deps = [], [], [], [], []

    def _link(self, key) -> int:
        return self.links.setdefault(key, len(self.links))

    def add(self, d: int, rank: list[int], a: int, b: int, nbytes: float, summed: bool, wait: list[int]) -> int:
        """A message of dimension ``d`` from ``rank[a]`` to ``rank[b]`` (local indices of one
        line); ``summed``: the receiver reduces it. Returns its index."""
        m, n = self.model, len(rank)
        u, v = rank[a], rank[b]
        hops = m.hops(d, b - a)
        if self.congestion == "unaware":
            path = [self._link(("own", len(self.src)))]
        elif m.topologies[d] == "Ring":
            way = 1 if (b - a) % n <= n // 2 else -1
            path = [self._link((d, rank[(a + way * h) % n], rank[(a + way * (h + 1)) % n])) for h in range(hops)]
        elif m.topologies[d] == "FullyConnected":
            path = [self._link((d, u, v))]
        else:
            path = [self._link((d, u, "up")), self._link((d, "down", v))]
        red = m.reduce_ns(nbytes) if summed else 0.0
        if self.congestion != "store-and-forward" or len(path) == 1:
            return self._append(u, nbytes, hops * m.latency_ns + red, path, wait)
        # link by link, each sending the whole message once the one before has it; the next
        # hop's issue delay is taken off its latency (a hop is no endpoint)
        e = float(m.endpoint_delay_ns)
        i = self._append(u, nbytes, m.latency_ns * (hops - len(path) + 1), path[:1], wait)
        for k, link in enumerate(path[1:], start=1):
            i = self._append(u, nbytes, m.latency_ns - e + (red if k == len(path) - 1 else 0.0), [link], [i])
        return i

    def mark(self, v: int, latency: float, wait: list[int]) -> int:
        """A message of no bytes from ``v`` to itself on a link of its own: it arrives
        ``latency`` after it leaves, an endpoint delay after ``wait`` have arrived."""
        return self._append(v, 0.0, latency, [self._link(("mark", len(self.src)))], wait)

    def _append(self, u: int, nbytes: float, latency: float, path: list[int], wait: list[int]) -> int:
        self.src.append(u)
        self.nb.append(nbytes)
        self.lat.append(latency)
        self.paths.append(path)
        self.deps.append(list(wait))
        return len(self.src) - 1

    def run(self, issue_delay_cycles: float | None = None, nis_per_node: int | None = None):
        """The messages as a TransferRun: each leaves an endpoint delay (default; or
        ``issue_delay_cycles``) after what it waits for, at most ``nis_per_node`` at once per node
        (default: as many as ASTRA-sim's dimensions and peers need)."""
        from nic.message_sim import POLICY_BASELINE, TransferRun

        m, t = self.model, len(self.src)
        delay = float(m.endpoint_delay_ns) if issue_delay_cycles is None else float(issue_delay_cycles)
        h = max(len(p) for p in self.paths)
        path_links = np.full((t, h), -1, np.int64)
        for i, p in enumerate(self.paths):
            path_links[i, :len(p)] = p
        dep_ptr = np.zeros(t + 1, np.int64)
        dep_ptr[1:] = np.cumsum([len(x) for x in self.deps])
        dep_idx = np.array([j for x in self.deps for j in x], np.int64)
        # steps: the transfer's position in its node's list (ascending: the table is in schedule order per node)
        return TransferRun(
            src_node=np.array(self.src, np.int64), step=np.zeros(t, np.int64),
            wire_bytes=np.array(self.nb, np.float64), dep_ptr=dep_ptr, dep_idx=dep_idx,
            path_len=np.array([len(p) for p in self.paths], np.int64),
            link_bytes_per_cycle=np.full(len(self.links), m.bytes_per_ns), num_nodes=m.num_workers,
            nis_per_node=max(m.npus) * len(m.npus) + 2 if nis_per_node is None else nis_per_node,
            policy=POLICY_BASELINE, issue_delay_cycles=delay, step_advance_cycles=0.0, first_start_cycles=delay,
            path_links=path_links,
            path_latency_cycles=np.array(self.lat, np.float64))


def _lines(model: AstraAnalytical, d: int):
    """The NPUs of each line of dimension ``d``, by local index."""
    n, stride = model.npus[d], math.prod(model.npus[:d])
    for base in range(model.num_workers):
        if (base // stride) % n == 0:
            yield [base + i * stride for i in range(n)]


def _step_messages(msgs: _Messages, kind: str, chunk: int) -> None:
    """Ring, direct and halving-doubling: every NPU sends a chunk's steps on each dimension
    (the order and sizes of :meth:`AstraAnalytical.stages_ns`), a step once the previous
    step's messages into it have arrived, the first an endpoint delay after a mark (the
    stage's start); a dimension takes a chunk once the NPU is done with the chunk before on
    it."""
    model = msgs.model
    sizes = model.dim_chunks(kind, chunk)
    last_into: dict[tuple, list[int]] = {}  # (node, chunk, dim) -> the last step's messages into it
    for k in range(model.splits):
        for d, n in enumerate(model.npus):
            steps = _group_steps(model.algorithm, kind, n, sizes[d])
            for rank in _lines(model, d):
                # ASTRA-sim's first bundle of a stage goes through the memory bus (an endpoint
                # delay) before the first send: a mark
                into_prev = {u: [msgs.mark(u, 0.0, last_into.get((u, k, d - 1), []) + last_into.get((u, k - 1, d), []))]
                             for u in rank}
                for s, step in enumerate(steps):
                    into: dict[int, list[int]] = {}
                    for a, b, m, summed in step:
                        wait = into_prev.get(rank[a], [])
                        into.setdefault(rank[b], []).append(msgs.add(d, rank, a, b, m, summed, wait))
                    into_prev = into
                for v in rank:
                    last_into[(v, k, d)] = into_prev.get(v, [])


def _tree_messages(msgs: _Messages, chunk: int) -> None:
    """The double binary tree (:meth:`AstraAnalytical.tree_ns`) as messages: up each line's
    tree (a node's send waits for its children's), down it, the whole chunk per message. An
    NPU's start on a (chunk, dimension) after the first is a mark waiting for what it last
    received on the chunk before there and on this chunk on the dimension before (ASTRA-sim's
    done: an endpoint delay after that), arriving a local reduction later where the NPU sums
    in this tree (its reduction comes after both the start and its children's chunks). The
    run ends with a mark per NPU: done with the last chunk."""
    model = msgs.model
    red = model.reduce_ns(chunk)
    last_into: dict[tuple, list[int]] = {}  # (npu, chunk, dim) -> the message it was last sent
    for k in range(model.splits):
        for d, n in enumerate(model.npus):
            root, kids = binary_tree(n, root_max=k % 2 == 0)
            parent = {c: v for v, cs in kids.items() for c in cs}
            for rank in _lines(model, d):
                begin = {}
                for i, v in enumerate(rank):
                    wait = last_into.get((v, k, d - 1), []) + last_into.get((v, k - 1, d), [])
                    begin[i] = [msgs.mark(v, red if kids[i] else 0.0, wait)] if wait else []
                up = {}

                def climb(i):
                    for c in kids[i]:
                        climb(c)
                    if i != root:
                        wait = begin[i] + [up[c] for c in kids[i]]
                        up[i] = msgs.add(d, rank, i, parent[i], chunk, True, wait)
                climb(root)
                got = {root: up[kids[root][0]]}  # the message each NPU waits for before sending down
                todo = [root]
                while todo:
                    i = todo.pop()
                    wait = begin[i] + [got[i]] if i == root else [got[i]]
                    for c in kids[i]:
                        got[c] = msgs.add(d, rank, i, c, chunk, bool(kids[c]), wait)
                        todo.append(c)
                for i, v in enumerate(rank):
                    last_into[(v, k, d)] = [got[i]]
    last = len(model.npus) - 1
    for v in range(model.num_workers):  # done: an endpoint delay after the last chunk arrives
        msgs.mark(v, 0.0, last_into[(v, model.splits - 1, last)])


def message_run(model: AstraAnalytical, kind: str, nbytes: int, congestion: str = "unaware"):
    """The :class:`nic.message_sim.TransferRun` of one collective on ``model``'s network.

    Ring, direct and halving-doubling as :func:`_step_messages` builds them, the double
    binary tree as :func:`_tree_messages`; a message leaves an endpoint delay (the NIC's
    issue delay) after the messages it waits for have arrived. A message's path latency is
    ``hops * latency`` plus, when the receiver sums it, the local reduction
    (:meth:`AstraAnalytical.reduce_ns`). ``congestion="unaware"``: every message has a link
    of its own (ASTRA-sim's congestion-unaware backend); ``"aware"``: messages share the
    network's directed links (a ring's neighbour links, a fully connected dimension's pair
    links, a switch's up and down links), max-min fair as everywhere in the message model;
    ``"store-and-forward"``: as ``"aware"``, but a message crosses its path link by link, each
    link sending it whole once the one before has it (as ASTRA-sim's congestion-aware
    backend moves a chunk).
    """
    if kind not in COLLECTIVES:
        raise ConfigError(f"collective kind {kind!r}: must be one of {', '.join(COLLECTIVES)}")
    if congestion not in CONGESTION:
        raise ConfigError(f"congestion = {congestion!r}: must be one of {', '.join(CONGESTION)}")
    chunk = model.chunk_bytes(kind, nbytes)
    msgs = _Messages(model, congestion)
    if model.algorithm == "doubleBinaryTree":
        _tree_messages(msgs, chunk)
    else:
        _step_messages(msgs, kind, chunk)
    return msgs.run()


def message_collective_ns(model: AstraAnalytical, kind: str, nbytes: int, congestion: str = "unaware") -> float:
    """Nanoseconds of one collective on our message-level simulator (:func:`message_run`)."""
    from nic.message_sim import simulate

    if nbytes <= 0:
        return 0.0
    return simulate(message_run(model, kind, nbytes, congestion)).total_cycles
