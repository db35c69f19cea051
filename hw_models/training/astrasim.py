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
  away) and double binary tree (reduce up and broadcast down a tree of depth ``log2 N``,
  the whole chunk per step); ``endpoint_delay_ns`` is added once per step;
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
        if self.algorithm == "halvingDoubling" and any(n & (n - 1) for n in self.npus):
            raise ConfigError(f"npus = {self.npus}: halvingDoubling needs powers of two")
        if not (self.bandwidth_GBps > 0 and math.isfinite(self.bandwidth_GBps)):
            raise ConfigError(f"bandwidth_GBps = {self.bandwidth_GBps!r}: must be a finite number > 0")
        if not (self.latency_ns >= 0 and math.isfinite(self.latency_ns)):
            raise ConfigError(f"latency_ns = {self.latency_ns!r}: must be a finite number >= 0")
        if self.local_mem_GBps is not None and not (self.local_mem_GBps > 0 and math.isfinite(self.local_mem_GBps)):
            raise ConfigError(f"local_mem_GBps = {self.local_mem_GBps!r}: must be a finite number > 0, or None")
        if isinstance(self.splits, bool) or not isinstance(self.splits, int) or self.splits < 1:
            raise ConfigError(f"splits = {self.splits!r}: must be an integer >= 1")

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
        # double binary tree: up and down a tree of depth log2 N, the whole chunk per step
        depth = max(1, math.ceil(math.log2(n)))
        per = depth * (e + self.send_ns(dim, 1, chunk_bytes))
        return 2 * per if kind == "allreduce" else per

    def stages_ns(self, kind: str, chunk: float) -> list[float]:
        """One chunk's time on each dimension, in the order it visits them."""
        stages = []
        if kind == "all_gather":
            chunk /= self.num_workers
        for d, n in enumerate(self.npus):
            if kind == "all_gather":
                chunk *= n
            stages.append(self.phase_ns(d, kind, chunk))
            if kind == "reduce_scatter":
                chunk /= n
        return stages

    def collective_ns(self, kind: str, nbytes: int) -> float:
        """Nanoseconds of one collective of ``kind`` (:data:`COLLECTIVES`) moving ``nbytes``."""
        if kind not in COLLECTIVES:
            raise ConfigError(f"collective kind {kind!r}: must be one of {', '.join(COLLECTIVES)}")
        if nbytes <= 0:
            return 0.0
        if kind == "all_gather":
            nbytes *= self.num_workers  # ASTRA-sim's all-gather size is each NPU's input
        chunk = nbytes // self.splits
        if kind != "all_gather" and chunk < self.num_workers:
            chunk = self.num_workers  # ASTRA-sim's smallest chunk: one byte per NPU
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


# ---------------------------------------------------------------------------------------------
# The same collectives on our message-level simulator (nic.message_sim), set up with ASTRA-sim's
# analytical semantics: one cycle = 1 ns, links in bytes/ns from GB/s of 2^30 B, its chunking.

CONGESTION = ("unaware", "aware")


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
        raise ConfigError(f"algorithm = {alg!r}: the message model builds ring, direct and halvingDoubling")
    if kind == "allreduce":
        return build[alg](True) + build[alg](False)
    return build[alg](kind == "reduce_scatter")


def message_run(model: AstraAnalytical, kind: str, nbytes: int, congestion: str = "unaware"):
    """The :class:`nic.message_sim.TransferRun` of one collective on ``model``'s network.

    Every NPU sends a chunk's steps on each dimension (the order and sizes of
    :meth:`AstraAnalytical.stages_ns`), a step once the previous step's messages into it have
    arrived plus the endpoint delay (the NIC's issue delay); a dimension takes a chunk once
    the NPU is done with the chunk before on it (ASTRA-sim's one active chunk per dimension).
    A message's path latency is ``hops * latency`` plus, when the receiver sums it, the local
    reduction (:meth:`AstraAnalytical.reduce_ns`). ``congestion="unaware"``: every message has
    a link of its own (ASTRA-sim's congestion-unaware backend); ``"aware"``: messages share
    the network's directed links (a ring's neighbour links, a fully connected dimension's
    pair links, a switch's up and down links), max-min fair as everywhere in the message model.
    """
    from nic.message_sim import POLICY_BASELINE, TransferRun

    if kind not in COLLECTIVES:
        raise ConfigError(f"collective kind {kind!r}: must be one of {', '.join(COLLECTIVES)}")
    if congestion not in CONGESTION:
        raise ConfigError(f"congestion = {congestion!r}: must be one of {', '.join(CONGESTION)}")
    if kind == "all_gather":
        nbytes *= model.num_workers
    chunk = nbytes // model.splits
    if kind != "all_gather" and chunk < model.num_workers:
        chunk = model.num_workers
    strides = [math.prod(model.npus[:d]) for d in range(len(model.npus))]
    sizes = []  # the chunk's size on each dimension (as stages_ns)
    c = chunk / model.num_workers if kind == "all_gather" else chunk
    for n in model.npus:
        c = c * n if kind == "all_gather" else c
        sizes.append(c)
        c = c / n if kind == "reduce_scatter" else c
    links: dict[tuple, int] = {}

    def link(key) -> int:
        return links.setdefault(key, len(links))

    src, dst, nb, lat, paths, deps = [], [], [], [], [], []
    last_into: dict[tuple, list[int]] = {}  # (node, chunk, dim) -> the last step's messages into it
    for k in range(model.splits):
        for d, n in enumerate(model.npus):
            steps = _group_steps(model.algorithm, kind, n, sizes[d])
            for base in range(model.num_workers):
                if (base // strides[d]) % n:
                    continue  # one line per dimension: the NPUs whose coordinate d is 0
                rank = [base + i * strides[d] for i in range(n)]
                into_prev: dict[int, list[int]] = {}
                for s, step in enumerate(steps):
                    into: dict[int, list[int]] = {}
                    for a, b, m, summed in step:
                        u, v = rank[a], rank[b]
                        if s:
                            wait = into_prev.get(u, [])
                        else:
                            wait = last_into.get((u, k, d - 1), []) + last_into.get((u, k - 1, d), [])
                        hops = model.hops(d, b - a)
                        if congestion == "unaware":
                            path = [link(("own", len(src)))]
                        elif model.topologies[d] == "Ring":
                            way = 1 if (b - a) % n <= n // 2 else -1
                            path = [link((d, rank[(a + way * h) % n], rank[(a + way * (h + 1)) % n]))
                                    for h in range(hops)]
                        elif model.topologies[d] == "FullyConnected":
                            path = [link((d, u, v))]
                        else:
                            path = [link((d, u, "up")), link((d, "down", v))]
                        into.setdefault(v, []).append(len(src))
                        src.append(u)
                        dst.append(v)
                        nb.append(m)
                        lat.append(hops * model.latency_ns + (model.reduce_ns(m) if summed else 0.0))
                        paths.append(path)
                        deps.append(wait)
                    into_prev = into
                for v in rank:
                    last_into[(v, k, d)] = into_prev.get(v, [])
    t = len(src)
    h = max(len(p) for p in paths)
    path_links = np.full((t, h), -1, np.int64)
    for i, p in enumerate(paths):
        path_links[i, :len(p)] = p
    dep_ptr = np.zeros(t + 1, np.int64)
    dep_ptr[1:] = np.cumsum([len(x) for x in deps])
    dep_idx = np.array([j for x in deps for j in x], np.int64)
    # steps: the transfer's position in its node's list (ascending: the table is in schedule order per node)
    return TransferRun(
        src_node=np.array(src, np.int64), step=np.zeros(t, np.int64), wire_bytes=np.array(nb, np.float64),
        dep_ptr=dep_ptr, dep_idx=dep_idx, path_len=np.array([len(p) for p in paths], np.int64),
        link_bytes_per_cycle=np.full(len(links), model.bytes_per_ns), num_nodes=model.num_workers,
        nis_per_node=max(model.npus) * len(model.npus), policy=POLICY_BASELINE,
        issue_delay_cycles=float(model.endpoint_delay_ns), step_advance_cycles=0.0,
        first_start_cycles=float(model.endpoint_delay_ns), path_links=path_links,
        path_latency_cycles=np.array(lat, np.float64))


def message_collective_ns(model: AstraAnalytical, kind: str, nbytes: int, congestion: str = "unaware") -> float:
    """Nanoseconds of one collective on our message-level simulator (:func:`message_run`)."""
    from nic.message_sim import simulate

    if nbytes <= 0:
        return 0.0
    return simulate(message_run(model, kind, nbytes, congestion)).total_cycles
