"""The synchronous systems' iterations on heterogeneous, time-varying workers and links.

Gradient compression, SSD-SGD and K-FAC (and the synchronous SGD they are compared with)
are timed on the iteration timeline as one steady-state iteration on equal workers and
links. With the profiles of :mod:`hw_models.training.hetero` (``--stragglers`` for the
workers' compute, ``--links`` for the nodes' links, parsed by the same
:meth:`~hw_models.training.hetero.Profile.parse` as the parameter server's, EASGD's and
DLion's) every iteration ``t`` has its own factors, drawn as DLion draws them:

* worker ``i``'s compute factor ``f_i(t)`` -- :meth:`Profile.sample` from worker ``i``'s own
  stream of the run's seed (``lognormal`` included);
* the slowest link's factor ``x(t) = max_i l_i(t)`` over the nodes' link factors (a link is
  as slow as its slower end, and the collectives cross every node's links: a collective is
  as slow as its slowest link).

Iteration ``t`` takes the system's own steady iteration on the timeline with every compute
cost on a worker (passes, compression, decompression, updates, factor compute,
preconditioning) ``c(t)`` times longer and every collective ``x(t)`` times longer
(:class:`SlowedComm`), where ``c(t)`` is what the system waits for:

* synchronous SGD, compression, K-FAC (bulk-synchronous, every iteration): the slowest
  worker, ``c(t) = max_i f_i(t)``; K-FAC's inversions (every iteration, each factor's on
  its one owner) take ``max_w load_w f_w(t)``, the most loaded owner at its own speed (the
  placement is made on nominal costs, not re-balanced to the speeds);
* SSD-SGD with delay ``k``: the workers take their local steps on their own and meet only
  at the hand-over after every ``k`` steps, and the all-reduce handed over overlaps the next
  period's ``k`` steps; so every step of period ``p`` (steps ``p k .. p k + k - 1``) is the
  timeline's steady step at ``c = max_i mean_{t in p} f_i(t)`` (the worker with the most
  compute in the period) and ``x = x(p k)`` (the slowest link when the period's all-reduce
  starts) -- with ``fused`` exchange ``max((compute + update) c, allreduce x / k)``.

A run's seconds are the sum of its iterations' (:class:`ProfiledRun`); each distinct set of
factors is simulated once. Not modelled: an iteration's late collective pushing into the
next one beyond what the steady iteration at its factors has (each iteration is timed as if
its factors held), contention between slow links.
"""

from __future__ import annotations

import math
from typing import Callable, Hashable

import numpy as np

from hw_models.training.costs import LayerCost
from hw_models.training.hetero import Profile

TIMING_ITERATIONS = 100  # iterations the profiled timing rows average over (at most --max-iterations)


class SlowedComm:
    """``inner``'s collectives ``factor`` times longer (the slowest link's factor)."""

    def __init__(self, inner, factor: float):
        self.inner, self.factor = inner, float(factor)
        self.num_workers = inner.num_workers

    def allreduce_s(self, nbytes: int) -> float:
        return self.inner.allreduce_s(nbytes) * self.factor

    def reduce_scatter_s(self, nbytes: int) -> float:
        return self.inner.reduce_scatter_s(nbytes) * self.factor

    def all_gather_s(self, nbytes: int) -> float:
        return self.inner.all_gather_s(nbytes) * self.factor

    def describe(self) -> str:
        from hw_models.training.comm import describe  # noqa: PLC0415

        return f"{describe(self.inner)} (slowest link x{self.factor:g})"


def shifted_mean(values) -> float:
    """The mean of ``values`` as ``v_0 + mean(v - v_0)``: equal values give exactly their value."""
    first = values[0]
    return first + math.fsum(x - first for x in values) / len(values)


def scaled_layers(layers, factor: float) -> tuple[LayerCost, ...]:
    """``layers`` with their forward and backward passes ``factor`` times longer."""
    return tuple(LayerCost(x.name, x.fwd_s * factor, x.bwd_s * factor, x.grad_bytes) for x in layers)


class Profiles:
    """The run's worker and link profiles for ``n`` nodes (``seed``: the run's; the links' walk
    uses ``seed + 1``, as DLion's) and their per-iteration draws, drawn in order once."""

    def __init__(self, workers_spec: str, links_spec: str, n: int, seed: int = 0):
        self.workers = Profile.parse(workers_spec, n, seed=seed, what="stragglers")
        self.links = Profile.parse(links_spec, n, seed=seed + 1, what="links")
        self.n = int(n)
        self._rngs = [np.random.default_rng([seed, 13, i]) for i in range(n)]
        self._f: list[tuple[float, ...]] = []
        self._x: list[float] = []

    @property
    def label(self) -> str:
        return f"stragglers {self.workers.label}, links {self.links.label}"

    def _draw(self, t: int) -> None:
        n = self.n
        while len(self._f) <= t:
            s = len(self._f)
            self._f.append(tuple(self.workers.sample(self._rngs[i], i, n, s) for i in range(n)))
            self._x.append(max(self.links.factor(i, n, s) for i in range(n)) if n > 1 else 1.0)

    def workers_at(self, t: int) -> tuple[float, ...]:
        """``f_i(t)`` of every worker."""
        self._draw(t)
        return self._f[t]

    def slowest_link_at(self, t: int) -> float:
        """``x(t)``: the slowest link's factor."""
        self._draw(t)
        return self._x[t]

    def bsp_key(self, t: int) -> tuple[float, float]:
        """A bulk-synchronous iteration's ``(max_i f_i(t), x(t))``."""
        return max(self.workers_at(t)), self.slowest_link_at(t)

    def period_key(self, k: int) -> Callable[[int], tuple[float, float]]:
        """SSD-SGD's (module docstring): step ``t``'s ``(max_i mean_{s in period} f_i(s), x(p k))``."""
        def key(t: int) -> tuple[float, float]:
            first = t - t % k
            f = [self.workers_at(s) for s in range(first, first + k)]
            return max(shifted_mean([x[i] for x in f]) for i in range(self.n)), self.slowest_link_at(first)
        return key


class ProfiledRun:
    """One configuration's iterations under the profiles: iteration ``t`` takes
    ``steady(key(t))`` seconds, each distinct key simulated once."""

    def __init__(self, key: Callable[[int], Hashable], steady: Callable[..., float]):
        self.key, self.steady = key, steady
        self._cache: dict = {}
        self._s: list[float] = []

    def seconds(self, t: int) -> float:
        while len(self._s) <= t:
            k = self.key(len(self._s))
            if k not in self._cache:
                self._cache[k] = self.steady(*k)
            self._s.append(self._cache[k])
        return self._s[t]

    def total_s(self, iterations: int) -> float:
        """Seconds of the first ``iterations`` iterations."""
        self.seconds(iterations - 1)
        return math.fsum(self._s[:iterations])

    def mean_s(self, iterations: int) -> float:
        """Mean seconds per iteration over the first ``iterations`` (as a shifted mean, so equal
        iterations give exactly their seconds)."""
        self.seconds(iterations - 1)
        return shifted_mean(self._s[:iterations])


def timing_row(system: str, label: str, nominal_s: float, run: ProfiledRun, profiles: Profiles,
               iterations: int) -> dict:
    """A configuration's timing row under the profiles (its mean over the first ``iterations``)."""
    mean = run.mean_s(iterations)
    return {"system": system, "run": f"{label}, {profiles.label}", "iteration_s": mean,
            "nominal_iteration_s": nominal_s, "slowdown": mean / nominal_s, "profile_iterations": iterations,
            "stragglers": profiles.workers.label, "links": profiles.links.label}


def time_to_target(run: ProfiledRun, iterations_to_target) -> float | None:
    return run.total_s(iterations_to_target) if iterations_to_target not in (None, "") else None


def profile_conv(row: dict, run: ProfiledRun, ref_run: ProfiledRun, ref_iterations, iterations: int,
                 profiles: Profiles) -> dict:
    """``row`` (a convergence row) with its time columns under the profiles: the iteration
    time ratio of the timing rows' means, the time to the target the sum of the iterations
    to it, and its ratio to the reference's."""
    t = time_to_target(run, row["iterations_to_target"])
    ref_t = time_to_target(ref_run, ref_iterations)
    it = run.mean_s(iterations) / ref_run.mean_s(iterations)
    row["iteration_time_vs_reference"] = round(it, 4)
    row["time_to_target_vs_reference"] = "" if t is None or not ref_t else round(t / ref_t, 4)
    row["time_to_target_s"] = "" if t is None else t
    row["stragglers"], row["links"] = profiles.workers.label, profiles.links.label
    return row


__all__ = ["Profiles", "ProfiledRun", "SlowedComm", "TIMING_ITERATIONS", "profile_conv", "scaled_layers",
           "shifted_mean", "time_to_target", "timing_row"]
