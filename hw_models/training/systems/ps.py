"""Parameter server: push/pull over a topology with server placement, synchronous,
asynchronous and bounded-staleness training, stragglers, eager pull and a staleness-aware
learning rate.

**Network.** ``S`` servers sit on nodes of the topology (co-located with workers, as
BytePS and MXNet's kvstore place them); server ``f`` owns the ``f``-th of ``S`` equal parts of
every tensor. :func:`ps_schedule` writes this as a ``nic`` schedule: step 0 every worker
*pushes* its part ``f`` to server ``f`` (a REDUCE), step 1 the server sends the sum back (a
GATHER, the *pull*). The functional verifier checks it is an all-reduce, and the NIC model
(:class:`~hw_models.training.comm.NicComm`) costs it on the network like any all-reduce
schedule: the push phase is its ``reduce_scatter``, the pull phase its ``all_gather``.

**Synchronous, layer by layer** (the iteration timeline): :class:`PushPull` pushes each
layer's gradient as it appears; *coupled* pull (``eager=False``) pulls only once every push
of the iteration is done, in push order (a whole-model barrier, as a worker that waits for
its push acknowledgements before it pulls); *eager* pull decoupled from push
(``eager=True``) pulls a layer as soon as its push is done, ahead of any further push, so
the next forward pass can start on the front layers.

**Stragglers, asynchrony, staleness, whole iterations** (:func:`simulate_ps`, the coarser
level; :mod:`hw_models.training.systems.ps_layers` simulates every worker layer by layer, with
pushes and pulls overlapping compute, and is what ``hw-models train-system ps`` runs): worker ``i`` computes for ``base_compute_s * factor_i * noise`` (a
profile per worker, :class:`hw_models.training.hetero.Profile`: ``slow:COUNT:FACTOR`` makes the
last COUNT workers FACTOR times slower, ``lognormal:SIGMA`` multiplies by a mean-one
lognormal, ``const``, ``at`` schedules and ``walk`` random walks vary them by worker and
iteration; combine with ``+``), then
pushes its whole gradient; the servers serve pushes first come first served, each taking
``1/N`` of the network model's all-worker push time (so ``N`` simultaneous pushes cost
exactly the simulated push phase), and pulls likewise. Modes: ``sync`` (a barrier: the
servers average the ``N`` gradients, then everyone pulls), ``async`` (every push is an
update of the model), ``ssp:S`` (asynchronous, but a worker may run at most ``S`` iterations
ahead of the slowest). With coupled pull a worker pulls after its push is applied; with
eager pull it pulls at once, concurrently with its push (the model it reads may then miss
its own last gradient, one more step of staleness, but it does not wait for the push); a
worker computes with at most one of its pushes in flight (a send buffer of one gradient), so
when the servers are the bottleneck the queue of pushes stays bounded.

**Convergence** (:func:`ps_convergence`): the event simulation's sequence of updates (which
worker, which model version its gradient was computed on, when it was applied) is replayed
on a small task: every gradient is computed on the version the worker had pulled. The
staleness of an update is the number of updates applied between that version and it; the
asynchronous step is ``lr / N`` per gradient (so ``N`` pushes move the model as far as one
synchronous step of the averaged gradient with ``lr``). The staleness-aware step divides by
the update's staleness ``tau`` (at least 1), as W. Zhang, S. Gupta, X. Lian, J. Liu,
"Staleness-aware Async-SGD for Distributed Deep Learning" (IJCAI 2016) do, scaled by the mean
staleness of the updates applied so far: ``lr / N * mean_tau / tau``. The mean step stays
``lr / N`` whatever the staleness of the system (Zhang et al. retune the base rate instead),
a straggler's stale gradient moves the model less and a fresh one more.
"""

from __future__ import annotations

import heapq
from collections import deque
import math
from dataclasses import dataclass, replace

import numpy as np

from hw_models.training.hetero import Profile
from hw_models.training.policies import Collective, NetworkView, Policy
from hw_models.training.costs import whole
from noc.base.errors import ConfigError

MODES = ("sync", "async", "ssp:BOUND")  # as --modes names them


# ---- network ----------------------------------------------------------------------------------


def server_nodes(placement: str, num_nodes: int, num_servers: int) -> tuple[int, ...]:
    """Server nodes: ``spread`` (evenly spaced node indices), ``first`` (nodes 0 .. S-1), or a
    comma-separated list of node indices."""
    if isinstance(num_servers, bool) or not isinstance(num_servers, int) or not 1 <= num_servers <= num_nodes:
        raise ConfigError(f"servers = {num_servers!r}: must be an integer in [1, {num_nodes}] (nodes of the topology)")
    p = str(placement).strip().lower()
    if p == "spread":
        return tuple(k * num_nodes // num_servers for k in range(num_servers))
    if p == "first":
        return tuple(range(num_servers))
    try:
        nodes = tuple(int(x) for x in p.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"placement = {placement!r}: must be spread, first or comma-separated node indices") from None
    if len(nodes) != num_servers or len(set(nodes)) != len(nodes) or not all(0 <= n < num_nodes for n in nodes):
        raise ConfigError(f"placement = {placement!r}: needs {num_servers} distinct node indices in [0, {num_nodes - 1}]")
    return nodes


def ps_schedule(topology, servers: tuple[int, ...]):
    """The push/pull of ``servers`` on ``topology`` as a ``nic`` schedule (one flow per
    server), checked by the functional verifier."""
    from nic.collectives import Schedule, verify  # noqa: PLC0415
    from nic.scheduler import OP_GATHER, OP_REDUCE  # noqa: PLC0415

    n = int(topology.num_nodes)
    transfers = []
    for f, s in enumerate(servers):
        for w in range(n):
            if w != s:
                transfers.append((0, w, s, f, OP_REDUCE))
                transfers.append((1, s, w, f, OP_GATHER))
    sch = Schedule.from_transfers("parameter_server", topology.name, n, topology.nis_per_node, len(servers),
                                  transfers, {"servers": list(servers)})
    verify(sch, seed=0)
    return sch


class PushPull(Policy):
    """Synchronous parameter server layer by layer (see the module docstring): pushes are
    reduce-scatters (to the servers), pulls all-gathers (from them)."""

    source = ("Towards fast distributed training with generic and efficient communication scheduling (thesis): "
              "eager pull decoupled from push")

    def __init__(self, eager: bool):
        self.eager = bool(eager)
        self.name = "ps_eager_pull" if self.eager else "ps_coupled_pull"

    def next_collective(self, view: NetworkView) -> Collective | None:
        pulls = view.waiting("gather")
        pushes = view.waiting("reduce")
        if self.eager and pulls:
            return Collective("all_gather", (min(pulls, key=lambda p: (p.layer, p.offset_bytes)).piece(),))
        if pushes:
            return Collective("reduce_scatter", (pushes[0].piece(),))
        if pulls and view.backward_done:
            return Collective("all_gather", (pulls[0].piece(),))
        return None


# ---- stragglers ---------------------------------------------------------------------------------


Stragglers = Profile
"""Per-worker compute factors: a :class:`hw_models.training.hetero.Profile` (``slow``,
``lognormal``, ``const``, ``at`` schedules, ``walk``)."""


# ---- the event simulation ---------------------------------------------------------------------


@dataclass(frozen=True)
class Update:
    """One model update: the ``workers`` whose gradients it applies (one, or all in sync), the
    model version each gradient was computed on, the new version and when it was applied."""

    workers: tuple[int, ...]
    read_versions: tuple[int, ...]
    version: int
    time_s: float

    def staleness(self) -> tuple[int, ...]:
        return tuple(self.version - 1 - v for v in self.read_versions)


@dataclass(frozen=True)
class PSRun:
    mode: str
    bound: int | None
    eager: bool
    num_workers: int
    updates: tuple[Update, ...]
    compute_s: float
    push_s: float
    pull_s: float

    def gradients(self) -> int:
        return sum(len(u.workers) for u in self.updates)

    def time_per_iteration_s(self) -> float:
        """Wall seconds per ``N`` gradients (one synchronous iteration's worth), between the
        first and the last update (the steady rate; the first update's start-up left out)."""
        g = self.gradients() - len(self.updates[0].workers) if self.updates else 0
        return (self.updates[-1].time_s - self.updates[0].time_s) / (g / self.num_workers) if g else math.nan

    def mean_staleness(self) -> float:
        s = [x for u in self.updates for x in u.staleness()]
        return float(np.mean(s)) if s else 0.0

    def max_staleness(self) -> int:
        return max((x for u in self.updates for x in u.staleness()), default=0)


def check_seconds(**values) -> None:
    """Each of ``values`` a finite number of seconds >= 0, else a ConfigError naming it."""
    for key, v in values.items():
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise ConfigError(f"{key} = {v!r}: must be a finite number of seconds >= 0")


def parse_mode(mode: str) -> tuple[str, int | None]:
    m = str(mode).strip().lower()
    if m in ("sync", "async"):
        return m, None
    if m.startswith("ssp:"):
        try:
            b = int(m[4:])
        except ValueError:
            b = -1
        if b >= 0:
            return "ssp", b
    raise ConfigError(f"mode = {mode!r}: must be {', '.join(MODES[:-1])} or {MODES[-1]} (BOUND an integer >= 0)")


def simulate_ps(num_workers: int, compute_s: float, push_all_s: float, pull_all_s: float, *, mode: str = "sync",
                eager: bool = False, stragglers: Stragglers | None = None, gradients: int = 800,
                seed: int = 0, links: Profile | None = None, server: int = 0) -> PSRun:
    """Event simulation of whole iterations until ``gradients`` gradients are applied (see the
    module docstring). ``push_all_s``/``pull_all_s``: the network model's time for all
    ``N`` workers' pushes (pulls) of the whole model at once. ``links``: a profile of the
    nodes' links (:class:`~hw_models.training.hetero.Profile`); worker ``i``'s push and pull
    then take ``link_factor(i, server)`` times its share (the server busy for it), in the
    worker's iteration ``t``."""
    kind, bound = parse_mode(mode)
    n = whole("num_workers", num_workers)
    check_seconds(compute_s=compute_s, push_all_s=push_all_s, pull_all_s=pull_all_s)
    strag = stragglers or Stragglers()
    rngs = [np.random.default_rng([seed, 7, i]) for i in range(n)]
    s_push, s_pull = push_all_s / n, pull_all_s / n

    def lf(i, step):
        return links.link_factor(i, server, n, step) if links is not None else 1.0

    updates: list[Update] = []
    if kind == "sync":
        t, version = 0.0, 0
        while sum(len(u.workers) for u in updates) < gradients:
            done = sorted((t + compute_s * strag.sample(rngs[i], i, n, version), i) for i in range(n))
            free = 0.0
            for c, i in done:  # pushes first come first served
                free = max(free, c) + s_push * lf(i, version)
            version += 1
            updates.append(Update(tuple(range(n)), (version - 1,) * n, version, free))
            if links is None:
                t = free + n * s_pull  # every worker pulls; the last pull ends the round
            else:
                t = free + sum(s_pull * lf(i, version - 1) for i in range(n))
        return PSRun(kind, bound, eager, n, tuple(updates), compute_s, push_all_s, pull_all_s)

    limit = math.inf if kind == "async" else bound
    heap: list = []
    seq = 0

    def push(time, what, i):
        nonlocal seq
        heapq.heappush(heap, (time, seq, what, i))
        seq += 1

    version = 0
    read = [0] * n  # version each worker's current gradient is computed on
    started = [0] * n  # iterations started
    applied = [0] * n  # gradients applied
    push_free = pull_free = 0.0
    blocked: set[int] = set()
    in_flight = [deque() for _ in range(n)]  # versions of the gradients being pushed
    for i in range(n):
        push(0.0, "start", i)

    def request_pull(time, i):
        nonlocal pull_free
        start = max(time, pull_free)
        pull_free = start + s_pull * lf(i, started[i] - 1)
        push(start, "pull_start", i)

    while heap and len(updates) < gradients:
        t, _, what, i = heapq.heappop(heap)
        if what == "start":
            if started[i] - min(applied) > limit or len(in_flight[i]) > 1:
                blocked.add(i)
                continue
            push(t + compute_s * strag.sample(rngs[i], i, n, started[i]), "computed", i)
            started[i] += 1
        elif what == "computed":
            start = max(t, push_free)
            push_free = start + s_push * lf(i, started[i] - 1)
            in_flight[i].append(read[i])
            push(push_free, "pushed", i)
            if eager:
                request_pull(t, i)
        elif what == "pushed":  # the servers apply the gradient, then answer
            version += 1
            applied[i] += 1
            updates.append(Update((i,), (in_flight[i].popleft(),), version, t))
            if not eager:
                request_pull(t, i)
            for j in sorted(blocked):
                blocked.discard(j)
                push(t, "start", j)
        elif what == "pull_start":
            read[i] = version
            push(t + s_pull * lf(i, started[i] - 1), "pulled", i)
        elif what == "pulled":
            push(t, "start", i)
    return PSRun(kind, bound, eager, n, tuple(updates), compute_s, push_all_s, pull_all_s)


# ---- convergence ----------------------------------------------------------------------------


def ps_convergence(task, run: PSRun, lr: float, *, staleness_aware: bool = False, target: float,
                   eval_every: int = 5, label: str | None = None):
    """Replay ``run``'s updates on ``task`` (one worker per task shard): every gradient on the
    version its worker read. Iterations count ``N`` gradients; ``extra`` has the simulated
    seconds to the target and the staleness."""
    from hw_models.training.systems.tasks import run_until  # noqa: PLC0415

    if task.workers != run.num_workers:
        raise ConfigError(f"task has {task.workers} workers, the run {run.num_workers}")
    n = run.num_workers
    samplers = task.samplers()
    w = task.init_params()
    last_use: dict[int, int] = {}
    for k, u in enumerate(run.updates):
        for v in u.read_versions:
            last_use[v] = k
    history = {0: w.copy()}
    state = {"k": 0, "got": 0}
    seen = {"count": 0, "sum": 0.0}  # the staleness of the updates so far (what the servers observed)
    times: list[float] = []

    def apply(k: int, u: Update):
        if run.mode == "sync":
            g = np.mean([samplers[i].grad(history[v]) for i, v in zip(u.workers, u.read_versions)], axis=0)
            w[:] -= lr * g
        else:
            (i,), (v,) = u.workers, u.read_versions
            tau = max(1, u.version - 1 - v)
            seen["count"] += 1
            seen["sum"] += tau
            scale = (seen["sum"] / seen["count"]) / tau if staleness_aware else 1.0
            w[:] -= (lr / n) * scale * samplers[i].grad(history[v])
        if u.version in last_use:
            history[u.version] = w.copy()
        for v in set(u.read_versions):
            if last_use[v] == k:
                del history[v]

    def step(t):
        while state["got"] < (t + 1) * n:
            k = state["k"]
            if k >= len(run.updates):
                raise ConfigError(f"the PS run has only {len(run.updates)} updates; simulate more gradients")
            apply(k, run.updates[k])
            state["got"] += len(run.updates[k].workers)
            state["k"] = k + 1
        times.append(run.updates[state["k"] - 1].time_s)
        return w

    max_it = run.gradients() // n
    name = label or (f"PS {run.mode}{'' if run.bound is None else ':' + str(run.bound)}"
                     f"{', eager pull' if run.eager else ''}{', staleness-aware lr' if staleness_aware else ''}")
    res = run_until(name, task, step, target=target, max_iterations=max_it, eval_every=eval_every)
    return replace(res, extra={"time_to_target_s": res.time_at(times), "time_per_iteration_s":
                               run.time_per_iteration_s(), "mean_staleness": run.mean_staleness(),
                               "max_staleness": run.max_staleness()})


__all__ = ["MODES", "PSRun", "PushPull", "Stragglers", "Update", "parse_mode", "ps_convergence", "ps_schedule",
           "server_nodes", "simulate_ps"]
