"""Event-driven timeline of data-parallel training iterations: compute, gradients, collectives.

The model (docs/training_timeline.md has it with pictures and checks):

* **Workers.** ``N`` data-parallel workers (the communication model's ``num_workers``), all
  alike and in lockstep, since every collective synchronises them: one timeline stands for
  every worker (one "worker class").
* **Compute** is one resource per worker running, in program order, each iteration's forward
  pass (layer 0 to L-1) and backward pass (layer L-1 to 0); the backward op of a layer
  produces its gradient when it ends.
* **Network** is one shared resource: one collective at a time, never interrupted (a policy
  that wants preemption cuts gradients into slices). Whenever it is idle and gradient bytes
  wait, the policy (:mod:`hw_models.training.policies`) chooses the next collective. A
  collective's time is the communication model's (:mod:`hw_models.training.comm`).
* **Gating.** Layer ``i``'s forward pass in iteration ``t+1`` starts only once layer ``i``'s
  gradient of iteration ``t`` is synchronised (all its bytes all-reduced, or
  reduce-scattered and all-gathered) and its update is done. Communication overlaps the
  backward pass and the next forward pass; nothing else waits for it.
* **Optimiser step** (:class:`~hw_models.training.costs.OptimizerCost`, default free): per
  layer, a compute op just before the layer's next forward pass (once its gradient is
  synchronised); or one global step before the next forward pass, once every gradient is.

* **Periodic and delayed exchanges** (:class:`Exchange`, default: every iteration, needed by
  the next): systems that synchronise only every ``every`` iterations (SSD-SGD, EASGD) or
  use a result a round late. Only iteration ``t`` with ``(t + 1) % every == 0`` hands its
  gradients to the network (the others' layers count as synchronised when their backward op
  ends); layer ``i``'s update and forward pass in an iteration ``t`` with ``t % every == 0``
  wait for layer ``i`` of the exchange ``lag`` rounds back (iteration ``t - 1 - (lag - 1) *
  every``); the optimiser's per-layer update runs every iteration or only in the iterations
  that merge an exchange (``update_on``). With ``lag = 2`` a round's exchange overlaps the
  whole next round's compute, layer by layer.

``simulate`` runs ``iterations`` iterations and the forward pass of one more (so the last
iteration's gradients gate something). Iteration ``t`` spans from the start of its forward
pass (its first op: layer 0's update or forward) to the start of iteration ``t+1``'s.
**Steady state**: the mean over iterations 1 .. K-1 (the first has no communication before
it). In this model every iteration's backward pass starts with the network idle (every
layer's forward pass waited for that layer's collectives), so iterations 1 .. K-1 are equal
and ``iterations = 2`` is enough; the default 3 shows two.

Per iteration it reports the compute time (busy seconds, updates included), the
communication time (network busy seconds), the exposed communication (network busy while
the compute waits), the overlap ratio (share of the communication hidden behind compute)
and the idle time (compute waiting). With the policies here the compute only waits for the
network, so idle time equals exposed communication and ``iteration = compute + exposed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from hw_models.training.comm import CommModel, collective_s, describe
from hw_models.training.costs import LayerCost, OptimizerCost, as_layer_costs, whole
from hw_models.training.policies import Collective, NetworkView, Pending, Piece, Policy, PolicyError
from noc.base.errors import ConfigError

# A bound on collectives per iteration, so a policy that keeps sending tiny slices ends
# with an error rather than never.
MAX_COLLECTIVES_PER_ITERATION = 1_000_000
OPS = ("forward", "backward", "update", "global_update")


@dataclass(frozen=True)
class ComputeEvent:
    """One compute op: ``op`` (``forward``, ``backward``, ``update``, ``global_update``) of
    ``layer`` (-1 for the global update) in ``iteration`` (for an update: the iteration
    whose gradient it applies)."""

    iteration: int
    op: str
    layer: int
    start_s: float
    end_s: float


@dataclass(frozen=True)
class CommEvent:
    """One collective: ``kind`` over ``pieces`` of ``iteration``'s gradients."""

    index: int
    iteration: int
    kind: str
    pieces: tuple[Piece, ...]
    nbytes: int
    start_s: float
    end_s: float

    @property
    def layers(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(p.layer for p in self.pieces))


@dataclass(frozen=True)
class LayerEvents:
    """One layer in one iteration: its forward and backward ops, when its gradient appeared
    (``backward_end_s``), when its first collective started (``comm_start_s``, ``nan`` for a
    layer without a gradient) and when it was synchronised (``synced_s``)."""

    iteration: int
    layer: int
    name: str
    forward_start_s: float
    forward_end_s: float
    backward_start_s: float
    backward_end_s: float
    comm_start_s: float
    synced_s: float


@dataclass(frozen=True)
class IterationStats:
    """One iteration's window ``[start_s, end_s)`` and what filled it (seconds)."""

    iteration: int
    start_s: float
    end_s: float
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    idle_s: float
    collectives: int
    comm_bytes: int

    @property
    def iteration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def overlap_ratio(self) -> float:
        """Share of the communication time hidden behind compute (1.0 without communication)."""
        return 1.0 - self.exposed_comm_s / self.comm_s if self.comm_s > 0 else 1.0


def _steady_mean(name: str) -> property:
    """A property: the mean of the iterations' ``name`` over iterations 1 .. K-1 (the steady state)."""

    def mean(self) -> float:
        rows = self.iterations[1:]
        return sum(getattr(r, name) for r in rows) / len(rows)

    return property(mean, doc=f"Steady-state mean of the iterations' {name}.")


@dataclass(frozen=True)
class TimelineResult:
    """A simulated run: per-iteration statistics, every compute op and collective, per-layer
    events; the steady-state figures as properties (mean over iterations 1 .. K-1)."""

    policy: str
    comm: str
    num_workers: int
    layers: tuple[LayerCost, ...]
    iterations: tuple[IterationStats, ...]
    compute_events: tuple[ComputeEvent, ...]
    comm_events: tuple[CommEvent, ...]
    layer_events: tuple[LayerEvents, ...]

    iteration_s = _steady_mean("iteration_s")
    compute_s = _steady_mean("compute_s")
    comm_s = _steady_mean("comm_s")
    exposed_comm_s = _steady_mean("exposed_comm_s")
    idle_s = _steady_mean("idle_s")
    overlap_ratio = IterationStats.overlap_ratio  # of the steady-state means

    def row(self) -> dict:
        """The steady-state figures as a flat row (for tables and CSV)."""
        last = self.iterations[-1]
        return {"policy": self.policy, "iteration_s": self.iteration_s, "compute_s": self.compute_s,
                "comm_s": self.comm_s, "exposed_comm_s": self.exposed_comm_s, "overlap_ratio": self.overlap_ratio,
                "idle_s": self.idle_s, "collectives_per_iteration": last.collectives,
                "comm_bytes_per_iteration": last.comm_bytes, "num_workers": self.num_workers, "comm": self.comm}


@dataclass(frozen=True)
class Exchange:
    """When gradients go to the network and when their result is needed (module docstring):
    iteration ``t`` communicates iff ``(t + 1) % every == 0``; an iteration ``t`` with ``t %
    every == 0`` waits, layer by layer, for the exchange ``lag`` rounds back.
    ``update_on``: ``every`` (the per-layer update runs in every iteration, e.g. a local SGD
    step) or ``merge`` (only in iterations that wait for an exchange). The default is
    synchronous data parallelism."""

    every: int = 1
    lag: int = 1
    update_on: str = "every"

    def __post_init__(self) -> None:
        for key in ("every", "lag"):
            whole(f"Exchange.{key}", getattr(self, key))
        if self.update_on not in ("every", "merge"):
            raise ConfigError(f"Exchange.update_on = {self.update_on!r}: must be every or merge")

    def communicates(self, iteration: int) -> bool:
        return (iteration + 1) % self.every == 0

    def needs(self, iteration: int) -> int | None:
        """The exchange (an iteration) whose result layer by layer gates ``iteration``, or None."""
        if iteration % self.every:
            return None
        e = iteration - 1 - (self.lag - 1) * self.every
        return e if e >= 0 else None


class _Part:
    """A waiting part of a gradient (mutable inside the engine; policies see :class:`Pending`)."""

    __slots__ = ("iteration", "layer", "offset", "nbytes", "ready_s", "stage")

    def __init__(self, iteration, layer, offset, nbytes, ready_s, stage):
        self.iteration, self.layer, self.offset, self.nbytes = iteration, layer, offset, nbytes
        self.ready_s, self.stage = ready_s, stage

    def view(self) -> Pending:
        return Pending(self.layer, self.offset, self.nbytes, self.ready_s, self.stage)


def _program(layers: tuple[LayerCost, ...], iterations: int, opt: OptimizerCost, exchange: "Exchange"):
    """The compute ops in program order, ``(op, iteration, layer, seconds)``, and the index of
    the first op of each iteration's forward block (iterations 0 .. K)."""
    upd = opt.layer_s(len(layers))
    ops, block = [], []
    for it in range(iterations + 1):
        block.append(len(ops))
        runs = it >= 1 and (exchange.update_on == "every" or exchange.needs(it) is not None)
        if runs and opt.is_global:
            ops.append(("global_update", it - 1, -1, opt.global_s))
        for i, layer in enumerate(layers):
            if runs and not opt.is_global and upd[i] > 0:
                ops.append(("update", it - 1, i, upd[i]))
            ops.append(("forward", it, i, layer.fwd_s))
        if it < iterations:
            for i in reversed(range(len(layers))):
                ops.append(("backward", it, i, layers[i].bwd_s))
    return ops, block


def simulate(layers: Sequence[LayerCost], comm: CommModel, policy: Policy, *, iterations: int = 3,
             optimizer: OptimizerCost | None = None, exchange: Exchange | None = None) -> TimelineResult:
    """Simulate ``iterations`` training iterations (>= 2) of ``layers`` (forward order) with
    collectives costed by ``comm`` and chosen by ``policy``; ``exchange``: which iterations
    communicate and when their result is needed (default: every iteration, needed by the
    next); see the module docstring."""
    layers = as_layer_costs(layers)
    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a hw_models.training.policies.Policy, not {type(policy).__name__}")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 2:
        raise ConfigError(f"iterations = {iterations!r}: must be an integer >= 2 (the first iteration is not "
                          "steady state)")
    opt = OptimizerCost() if optimizer is None else optimizer
    if not isinstance(opt, OptimizerCost):
        raise TypeError(f"optimizer must be an OptimizerCost, not {type(opt).__name__}")
    exch = Exchange() if exchange is None else exchange
    if not isinstance(exch, Exchange):
        raise TypeError(f"exchange must be an Exchange, not {type(exch).__name__}")
    L = len(layers)
    ops, block = _program(layers, iterations, opt, exch)
    plan = policy.plan(layers, comm)

    nan = math.nan
    synced = [[nan] * L for _ in range(iterations)]
    done_bytes = [[0] * L for _ in range(iterations)]
    comm_start = [[nan] * L for _ in range(iterations)]
    bwd_left = [L] * iterations
    op_start = [nan] * len(ops)
    op_end = [nan] * len(ops)

    now = 0.0
    ptr = 0  # next op of the program
    comp = -1  # running op, -1: compute idle
    comp_end = nan
    net: tuple[Collective, float, float, int] | None = None  # (collective, start, end, iteration)
    pending: list[_Part] = []
    comm_events: list[CommEvent] = []
    cur_iter = 0  # the iteration whose backward pass started last
    per_iter_count = [0] * iterations

    def gate_ok(k: int) -> bool:
        """A forward op waits for its layer's exchange, an update for the exchange it applies (all layers' for the
        global update); a backward op waits for nothing."""
        op, it, i, _ = ops[k]
        e = None if op == "backward" else exch.needs(it if op == "forward" else it + 1)
        if e is None:
            return True
        return not any(math.isnan(x) for x in synced[e]) if op == "global_update" else not math.isnan(synced[e][i])

    def next_gradient_s() -> float:
        """When the next gradient of the running backward pass appears (inf: none will)."""
        k, t = comp, comp_end
        if not exch.communicates(cur_iter):
            return math.inf
        if k >= 0:
            op, it, i, _ = ops[k]
            if op != "backward" or it != cur_iter:
                return math.inf
            if layers[i].grad_bytes > 0:
                return t
        else:
            t = now
        for j in range(ptr, len(ops)):
            op, it, i, dur = ops[j]
            if op != "backward" or it != cur_iter:
                return math.inf
            t += dur
            if layers[i].grad_bytes > 0:
                return t
        return math.inf

    def take(c: Collective) -> int:
        """Remove the collective's pieces from the waiting parts; the iteration they belong to."""
        stage = "gather" if c.kind == "all_gather" else "reduce"
        used: set[int] = set()
        its = set()
        for p in c.pieces:
            match = [j for j, q in enumerate(pending)
                     if q.layer == p.layer and q.stage == stage and q.offset == p.offset_bytes and j not in used]
            if not match or p.nbytes > pending[match[0]].nbytes:
                raise PolicyError(f"policy {policy.label}: {c.kind} piece {p} is not the front of a waiting {stage} "
                                  f"part (waiting: {[q.view() for q in pending]})")
            used.add(match[0])
            its.add(pending[match[0]].iteration)
        if len(its) != 1:
            raise PolicyError(f"policy {policy.label}: one collective mixes iterations {sorted(its)}")
        for p in c.pieces:
            j = next(j for j, q in enumerate(pending)
                     if q.layer == p.layer and q.stage == stage and q.offset == p.offset_bytes)
            q = pending[j]
            if p.nbytes == q.nbytes:
                del pending[j]
            else:
                q.offset += p.nbytes
                q.nbytes -= p.nbytes
        return its.pop()

    def finish_collective() -> None:
        nonlocal net
        c, start, end, it = net
        comm_events.append(CommEvent(len(comm_events), it, c.kind, c.pieces, c.nbytes, start, end))
        for p in c.pieces:
            if c.kind == "reduce_scatter":
                pending.append(_Part(it, p.layer, p.offset_bytes, p.nbytes, now, "gather"))
            else:
                done_bytes[it][p.layer] += p.nbytes
                if done_bytes[it][p.layer] == layers[p.layer].grad_bytes:
                    synced[it][p.layer] = now
        net = None

    def finish_compute() -> None:
        nonlocal comp
        op, it, i, _ = ops[comp]
        op_end[comp] = now
        if op == "backward":
            bwd_left[it] -= 1
            if layers[i].grad_bytes > 0 and exch.communicates(it):
                pending.append(_Part(it, i, 0, layers[i].grad_bytes, now, "reduce"))
            else:
                synced[it][i] = now
        comp = -1

    while True:
        progressed = True
        while progressed:
            progressed = False
            if comp >= 0 and comp_end <= now:
                finish_compute()
                progressed = True
            if net is not None and net[2] <= now:
                finish_collective()
                progressed = True
            if comp < 0 and ptr < len(ops) and gate_ok(ptr):
                comp, ptr = ptr, ptr + 1
                op, it, i, dur = ops[comp]
                op_start[comp] = now
                comp_end = now + dur
                if op == "backward" and i == L - 1:
                    cur_iter = it
                progressed = True
                if dur == 0:
                    continue  # finish it before the network chooses
            if net is None and pending:
                view = NetworkView(now, cur_iter, tuple(q.view() for q in pending), bwd_left[cur_iter] == 0,
                                   next_gradient_s(), layers, comm, plan)
                c = policy.next_collective(view)
                if c is not None:
                    if not isinstance(c, Collective):
                        raise PolicyError(f"policy {policy.label} returned {c!r}, not a Collective or None")
                    it = take(c)
                    per_iter_count[it] += 1
                    if per_iter_count[it] > MAX_COLLECTIVES_PER_ITERATION:
                        raise PolicyError(f"policy {policy.label} started more than {MAX_COLLECTIVES_PER_ITERATION:,} "
                                          f"collectives in iteration {it}; use larger slices")
                    cost = collective_s(comm, c.kind, c.nbytes)
                    if not (math.isfinite(cost) and cost >= 0):
                        raise PolicyError(f"the communication model gave {cost!r} s for a {c.kind} of {c.nbytes} B")
                    for p in c.pieces:
                        if math.isnan(comm_start[it][p.layer]):
                            comm_start[it][p.layer] = now
                    net = (c, now, now + cost, it)
                    progressed = True
        times = ([comp_end] if comp >= 0 else []) + ([net[2]] if net is not None else [])
        if not times:
            if ptr == len(ops) and not pending:
                break
            left = sum(q.nbytes for q in pending)
            raise PolicyError(f"policy {policy.label} left {left} gradient bytes waiting at {now:.6g} s with nothing "
                              "else to happen (it must send what waits once the backward pass is over)")
        now = min(times)

    compute_events = tuple(ComputeEvent(it, op, i, op_start[k], op_end[k]) for k, (op, it, i, _) in enumerate(ops))
    comm_ev = tuple(comm_events)
    bounds = [op_start[b] for b in block]
    stats = tuple(_window_stats(t, bounds[t], bounds[t + 1], compute_events, comm_ev) for t in range(iterations))
    layer_events = _layer_events(layers, iterations, ops, op_start, op_end, comm_start, synced)
    return TimelineResult(policy=policy.label, comm=describe(comm), num_workers=int(getattr(comm, "num_workers", 0)),
                          layers=layers, iterations=stats, compute_events=compute_events, comm_events=comm_ev,
                          layer_events=layer_events)


def _layer_events(layers, iterations, ops, op_start, op_end, comm_start, synced) -> tuple[LayerEvents, ...]:
    where = {(op, it, i): k for k, (op, it, i, _) in enumerate(ops) if op in ("forward", "backward")}
    out = []
    for it in range(iterations):
        for i, layer in enumerate(layers):
            f, b = where[("forward", it, i)], where[("backward", it, i)]
            out.append(LayerEvents(it, i, layer.name, op_start[f], op_end[f], op_start[b], op_end[b],
                                   comm_start[it][i], synced[it][i]))
    return tuple(out)


def _clip(s: float, e: float, a: float, b: float) -> float:
    return max(0.0, min(e, b) - max(s, a))


def _window_stats(t: int, a: float, b: float, compute: Sequence[ComputeEvent],
                  comm: Sequence[CommEvent]) -> IterationStats:
    """What filled ``[a, b)``: compute and network busy time, their overlap."""
    cs = [(e.start_s, e.end_s) for e in compute if e.end_s > a and e.start_s < b and e.end_s > e.start_s]
    ns = [(e.start_s, e.end_s) for e in comm if e.end_s > a and e.start_s < b and e.end_s > e.start_s]
    compute_s = sum(_clip(s, e, a, b) for s, e in cs)
    comm_s = sum(_clip(s, e, a, b) for s, e in ns)
    # both lists are sorted and each is disjoint in itself: sweep them together
    overlap, i, j = 0.0, 0, 0
    while i < len(cs) and j < len(ns):
        lo = max(cs[i][0], ns[j][0], a)
        hi = min(cs[i][1], ns[j][1], b)
        if hi > lo:
            overlap += hi - lo
        if cs[i][1] <= ns[j][1]:
            i += 1
        else:
            j += 1
    mine = [e for e in comm if e.iteration == t]
    nbytes = sum(e.nbytes for e in mine if e.kind != "all_gather")  # reduce-scatter + all-gather: one all-reduce
    return IterationStats(iteration=t, start_s=a, end_s=b, compute_s=compute_s, comm_s=comm_s,
                          exposed_comm_s=max(0.0, comm_s - overlap), idle_s=max(0.0, (b - a) - compute_s),
                          collectives=len(mine), comm_bytes=nbytes)


def compare_policies(layers: Sequence[LayerCost], comm: CommModel, policies: Sequence[Policy] | None = None, *,
                     iterations: int = 3, optimizer: OptimizerCost | None = None) -> tuple[TimelineResult, ...]:
    """:func:`simulate` for each of ``policies`` (default: every policy of
    :data:`hw_models.training.policies.POLICIES` with its default options)."""
    from hw_models.training.policies import POLICIES  # noqa: PLC0415

    chosen = [cls() for cls in POLICIES.values()] if policies is None else list(policies)
    return tuple(simulate(layers, comm, p, iterations=iterations, optimizer=optimizer) for p in chosen)


__all__ = ["MAX_COLLECTIVES_PER_ITERATION", "OPS", "CommEvent", "ComputeEvent", "Exchange", "IterationStats", "LayerEvents",
           "TimelineResult", "compare_policies", "simulate"]
