"""The EASGD family with unequal worker speeds: an event simulation of every worker's local
steps and exchanges with the centre, replayed on a convergence task in event order.

The iteration timeline (:func:`hw_models.training.systems.easgd.easgd_timeline`) runs all
workers alike; here each worker has its own speed (the parameter server's straggler spec,
:class:`~hw_models.training.systems.ps.Stragglers`: ``slow:COUNT:FACTOR``,
``lognormal:SIGMA``, joined with ``+``), so the lock-free master's reads of a stale centre
happen in the order the simulated clock says.

**Event simulation** (:func:`simulate_easgd`). Worker ``i``'s local step takes ``compute_s``
times its straggler factor (a fresh lognormal draw per step); after ``tau`` steps it
exchanges with the centre and waits for the exchange (as the workers of Zhang et al.'s
Async EASGD do), then goes on. An exchange *reads* the centre when it starts, computes
``d = alpha (x_i - c)`` and ``x_i -= d`` at once, and *writes* ``c += d`` when it ends:

* ``sync``: a barrier: once every worker has done its ``tau`` steps, all exchanges read the
  same centre and write together after ``allreduce_s + update_s``;
* ``async`` / ``measgd``: the round-robin master serves exchanges first come first served
  (ties by worker index), each taking ``exchange_s + update_s``, so every read sees every
  earlier write;
* ``hogwild``: the lock-free master serves every waiting exchange at once, sharing its links
  and memory equally (processor sharing; one exchange alone takes ``max(exchange_s,
  update_s)``, ``N`` together ``N`` times that, as the closed form's ``max(push + pull, N *
  update)``). A read sees only the writes that landed before it; writes that land at the
  same instant are added together (their sum, in worker order).

``exchange_s`` is ``1/N`` of the one-server parameter server's all-worker push and pull of
the model, ``update_s`` the centre update's ``3 M`` bytes at memory bandwidth.

**Staleness** of an exchange: the number of other exchanges' writes that land after its
read and no later than its own write (those at the same instant as its own included) (the updates its difference did not take into
account). Round robin: 0; sync: ``N - 1`` by construction (one simultaneous write);
hogwild: whatever the event order gives.

**Replay** (:func:`replay_easgd`): the events in time order (at equal times, in the causal
order the simulation produced them) on the task; an iteration is ``N`` local steps
(of any workers), and the centre evaluated after iteration ``t`` is the centre just before
the next local step ends. With equally fast workers hogwild's exchanges all read the same
centre and write at the same instant: bit for bit the arithmetic of ``sync``.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, replace

import numpy as np

from hw_models.training.systems.easgd import _check, local_step
from hw_models.training.systems.ps import Stragglers, check_seconds
from hw_models.training.costs import whole
from noc.base.errors import ConfigError

# event kinds, in the order they are replayed at equal times
STEP, READ, WRITE = 0, 1, 2


@dataclass(frozen=True)
class ExchangeRecord:
    """One exchange: ``worker`` after its local step ``after_steps`` (counted from 1), read at
    ``read_s`` (``read_version`` writes had landed), written at ``write_s``."""

    worker: int
    after_steps: int
    read_s: float
    write_s: float
    read_version: int
    staleness: int


@dataclass(frozen=True)
class EASGDRun:
    variant: str
    tau: int
    num_workers: int
    stragglers: str
    events: tuple[tuple[float, int, int], ...]  # (time, kind, worker) in replay order
    exchanges: tuple[ExchangeRecord, ...]  # in the order of their reads
    iterations: int
    total_steps: int
    end_s: float
    step_ends_s: tuple[float, ...]  # every local step's end, sorted

    def time_per_iteration_s(self) -> float:
        """Wall seconds per ``N`` local steps (one iteration's worth) over the second half of
        the run (the steady rate)."""
        n, its = self.num_workers, self.iterations
        half = its // 2
        if half < 1:
            return math.nan
        return (self.step_ends_s[n * its - 1] - self.step_ends_s[n * half - 1]) / (its - half)

    def mean_staleness(self) -> float:
        return float(np.mean([e.staleness for e in self.exchanges])) if self.exchanges else 0.0

    def max_staleness(self) -> int:
        return max((e.staleness for e in self.exchanges), default=0)


def simulate_easgd(variant: str, tau: int, num_workers: int, compute_s: float, *, exchange_s: float,
                   update_s: float, allreduce_s: float, stragglers: Stragglers | None = None, iterations: int = 100,
                   seed: int = 0, links: Stragglers | None = None) -> EASGDRun:
    """Event simulation of ``iterations * N`` local steps and their exchanges (module docstring).
    ``links``: a profile of the nodes' links; with it (``async``/``measgd``/``hogwild``) worker
    ``i``'s exchange with the master on node 0 takes ``link_factor(i, 0)`` times
    ``exchange_s`` (hogwild: its demand on the shared master ``max(exchange_s * factor,
    update_s)``), and a ``sync`` round's all-reduce the slowest link's factor (over every
    node) times ``allreduce_s``."""
    _check(variant, tau, 0.5)
    n = whole("num_workers", num_workers)
    check_seconds(compute_s=compute_s, exchange_s=exchange_s, update_s=update_s, allreduce_s=allreduce_s)
    strag = stragglers or Stragglers()
    rngs = [np.random.default_rng([seed, 11, i]) for i in range(n)]
    whole("iterations", iterations, 2)
    goal = (iterations + tau) * n  # a round more, so the last iteration's exchanges happen
    events: list[tuple[float, int, int, int]] = []  # (time, causal sequence, kind, worker)
    reads: list[tuple[tuple[float, int], int, int]] = []  # ((read time, sequence), worker, steps done)
    writes: dict[tuple[int, int], tuple[float, int]] = {}  # (worker, steps done) -> (write time, sequence)
    seq = [0]

    def stamp(t):
        seq[0] += 1
        return (t, seq[0])
    steps = [0] * n
    total = 0
    t_free = [0.0] * n  # when each worker is free to compute
    now_end = 0.0

    def run_round(i):
        """Worker i's tau local steps from t_free[i]; their step-end events."""
        nonlocal total
        t = t_free[i]
        for _ in range(tau):
            t += compute_s * strag.sample(rngs[i], i, n, steps[i])
            steps[i] += 1
            total += 1
            events.append((*stamp(t), STEP, i))
        return t

    if variant == "sync":
        while total < goal:
            ends = [run_round(i) for i in range(n)]
            t0 = max(ends)
            ar = allreduce_s
            if links is not None and n > 1:
                ar *= max(links.factor(i, n, steps[0]) for i in range(n))
            t1 = t0 + ar + update_s
            for i in range(n):
                reads.append((stamp(t0), i, steps[i]))
            for i in range(n):
                writes[(i, steps[i])] = stamp(t1)
                t_free[i] = t1
        now_end = max(t_free)
    elif variant in ("async", "measgd"):
        ready = sorted((run_round(i), i) for i in range(n))
        master_free = 0.0
        while total < goal:
            t, i = ready.pop(0)
            start = max(t, master_free)
            xf = links.link_factor(i, 0, n, steps[i]) if links is not None else 1.0
            master_free = start + exchange_s * xf + update_s
            reads.append((stamp(start), i, steps[i]))
            writes[(i, steps[i])] = stamp(master_free)
            t_free[i] = master_free
            ready.append((run_round(i), i))
            ready.sort()
        now_end = max(t_free)
    else:  # hogwild: processor sharing of the master
        demand = max(exchange_s, update_s)
        arrivals = sorted((run_round(i), i) for i in range(n))
        active: dict[int, float] = {}  # worker -> remaining seconds of service alone
        now = 0.0
        while total < goal or active:
            nxt_arr = arrivals[0][0] if arrivals and total < goal else math.inf
            if active:
                k = len(active)
                rem = min(active.values())
                nxt_done = now + rem * k
            else:
                nxt_done = math.inf
            if nxt_arr == math.inf and nxt_done == math.inf:
                break
            if nxt_arr <= nxt_done:  # arrivals at this instant join the sharing
                dt = nxt_arr - now
                if active:
                    share = dt / len(active)
                    for j in active:
                        active[j] -= share
                now = nxt_arr
                while arrivals and arrivals[0][0] == now and total < goal:
                    _, i = arrivals.pop(0)
                    reads.append((stamp(now), i, steps[i]))
                    active[i] = demand if links is None else max(exchange_s * links.link_factor(i, 0, n, steps[i]),
                                                                 update_s)
            else:
                k = len(active)
                rem = min(active.values())
                now = nxt_done
                done = [j for j, r in active.items() if r == rem]
                for j in list(active):
                    active[j] = 0.0 if j in done else active[j] - rem
                for j in sorted(done):
                    del active[j]
                    writes[(j, steps[j])] = stamp(now)
                    t_free[j] = now
                    if total < goal:
                        arrivals.append((run_round(j), j))
                arrivals.sort()
        now_end = now
    # the exchanges in read order, their versions and staleness
    reads.sort()
    wstamps = sorted(writes.values())
    recs = []
    for r, i, s in reads:
        w_own = writes[(i, s)]
        version = bisect.bisect_left(wstamps, r)
        # others landing after the read and before its own write, or at the same instant after it
        others = (bisect.bisect_left(wstamps, w_own) - bisect.bisect_right(wstamps, r)
                  + bisect.bisect_left(wstamps, (w_own[0], math.inf)) - bisect.bisect_right(wstamps, w_own))
        recs.append(ExchangeRecord(i, s, r[0], w_own[0], version, others))
        events.append((*r, READ, i))
        events.append((*w_own, WRITE, i))
    end = max([e[0] for e in events] + [now_end])
    ordered = tuple((t, kind, i) for t, _, kind, i in sorted(events))
    ends = tuple(sorted(t for t, _, kind, _ in events if kind == STEP))
    return EASGDRun(variant, tau, n, strag.label, ordered, tuple(recs), iterations, total, end, ends)


def replay_easgd(task, run: EASGDRun, lr: float, *, alpha: float, delta: float = 0.9, target: float,
                 eval_every: int = 5, label: str | None = None):
    """Replay ``run`` on ``task`` (module docstring); ``extra`` has the read centre versions
    (``read_versions``, in read order) and the time per iteration."""
    from hw_models.training.systems.tasks import run_until  # noqa: PLC0415

    _check(run.variant, run.tau, alpha)
    n = run.num_workers
    if task.workers != n:
        raise ConfigError(f"task has {task.workers} workers, the run {n}")
    samplers = task.samplers()
    centre = task.init_params()
    x = np.tile(centre, (n, 1))
    v = np.zeros_like(x)
    pending_d: dict[int, list[np.ndarray]] = {i: [] for i in range(n)}
    state = {"k": 0, "steps": 0, "writes": 0}
    read_versions: list[int] = []
    evs = run.events

    def apply_writes(group):
        ds = [pending_d[i].pop(0) for i in sorted(group)]
        centre[:] += np.array(ds).sum(axis=0)
        state["writes"] += len(ds)

    def step(t):
        goal = (t + 1) * n
        k = state["k"]
        while k < len(evs):
            time_s, kind, i = evs[k]
            if kind == STEP:
                if state["steps"] == goal:
                    break
                local_step(run.variant, x, v, i, samplers[i], lr, delta)
                state["steps"] += 1
                k += 1
            elif kind == READ:
                read_versions.append(state["writes"])
                d = alpha * (x[i] - centre)
                x[i] -= d
                pending_d[i].append(d)
                k += 1
            else:  # writes landing at the same instant are added together
                group = [i]
                k += 1
                while k < len(evs) and evs[k][0] == time_s and evs[k][1] == WRITE:
                    group.append(evs[k][2])
                    k += 1
                apply_writes(group)
        state["k"] = k
        if state["steps"] < goal:
            raise ConfigError(f"the EASGD run has only {run.total_steps} local steps; simulate more iterations")
        return centre

    name = label or f"{run.variant} EASGD tau={run.tau}, stragglers {run.stragglers} (event order)"
    res = run_until(name, task, step, target=target, max_iterations=run.iterations, eval_every=eval_every)
    return replace(res, extra={"read_versions": tuple(read_versions), "time_per_iteration_s":
                               run.time_per_iteration_s(), "mean_staleness": run.mean_staleness(),
                               "max_staleness": run.max_staleness()})


__all__ = ["EASGDRun", "ExchangeRecord", "READ", "STEP", "WRITE", "replay_easgd", "simulate_easgd"]
