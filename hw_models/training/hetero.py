"""Heterogeneous, time-varying workers and links: one description every training system reads.

A *profile* gives each of ``N`` nodes a slowdown factor per step (1 = nominal; 2 = twice the
time): of a worker's compute (``--stragglers``) or of a node's links (``--links``; a link
between nodes ``i`` and ``j`` is as slow as its slower end, ``max(f_i, f_j)``). A profile is
one or more parts joined with ``+``; the factors of the parts multiply:

* ``none`` -- every factor 1;
* ``slow:COUNT:FACTOR`` -- the last ``COUNT`` nodes ``FACTOR`` times slower (constant);
* ``const:F0/F1/...`` -- node ``i``'s factor ``F_i`` (``N`` values, or one for all);
* ``at:STEP:NODE:FACTOR`` -- a schedule: from step ``STEP`` on, node ``NODE`` is ``FACTOR``
  times slower (several ``at`` parts make a schedule of changes);
* ``walk:SIGMA`` -- a seeded random walk per node: ``x_0 = 0``, ``x_t = x_{t-1} + SIGMA z_t``
  (``z_t`` standard normal) reflected into ``[0, ln 8]``, factor ``exp(x_t)`` (1 to 8); the
  walk of node ``i`` is drawn from its own stream of the run's seed, so it does not disturb
  the other draws;
* ``lognormal:SIGMA`` -- every step multiplied by a fresh mean-one lognormal draw
  (``exp(SIGMA z - SIGMA^2 / 2)``) from the caller's per-node generator.

Every training system reads it (``hw-models train-system SYSTEM --stragglers ... --links
...``): the parameter server's and EASGD's event simulations draw their workers' compute
factors from it (:meth:`Profile.sample`; ``slow`` and ``lognormal`` draw exactly as they did
when they were the only two parts) and slow their pushes, pulls and exchanges by the links';
DLion reads workers and links from it; compression, SSD-SGD and K-FAC time each iteration at
its factors (:mod:`hw_models.training.systems.profiled`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from noc.base.errors import ConfigError

PARTS = ("none", "slow:COUNT:FACTOR", "const:F0/F1/...", "at:STEP:NODE:FACTOR", "walk:SIGMA", "lognormal:SIGMA")
WALK_MAX = math.log(8.0)
_WALKS: dict = {}


def _walk(sigma: float, seed: int, node: int, step: int) -> float:
    """``x_step`` of node's reflected random walk (module docstring), cached per node."""
    key = (sigma, seed, node)
    path, rng = _WALKS.get(key, (None, None))
    if path is None:
        path, rng = [0.0], np.random.default_rng([seed, 11, node])
        _WALKS[key] = (path, rng)
    while len(path) <= step:
        x = path[-1] + sigma * float(rng.standard_normal())
        while x < 0 or x > WALK_MAX:  # reflect into [0, ln 8]
            x = -x if x < 0 else 2 * WALK_MAX - x
        path.append(x)
    return path[step]


@dataclass(frozen=True)
class Profile:
    """Per-node, per-step slowdown factors (module docstring). Build with :meth:`parse`."""

    slow_count: int = 0
    slow_factor: float = 1.0
    sigma: float = 0.0
    const: tuple[float, ...] = ()
    schedule: tuple[tuple[int, int, float], ...] = ()
    walk: float = 0.0
    seed: int = 0

    @classmethod
    def parse(cls, spec: str, num_nodes: int, *, seed: int = 0, what: str = "stragglers") -> "Profile":
        text = str(spec).strip().lower()
        if text in ("", "none"):
            return cls(seed=seed)
        kw: dict = {"seed": seed}
        sched = []
        allowed = ", ".join(PARTS)
        for part in text.split("+"):
            bits = part.strip().split(":")
            try:
                if bits[0] == "slow" and len(bits) == 3:
                    kw["slow_count"], kw["slow_factor"] = int(bits[1]), float(bits[2])
                elif bits[0] == "lognormal" and len(bits) == 2:
                    kw["sigma"] = float(bits[1])
                elif bits[0] == "const" and len(bits) == 2:
                    kw["const"] = tuple(float(x) for x in bits[1].split("/"))
                elif bits[0] == "at" and len(bits) == 4:
                    sched.append((int(bits[1]), int(bits[2]), float(bits[3])))
                elif bits[0] == "walk" and len(bits) == 2:
                    kw["walk"] = float(bits[1])
                else:
                    raise ValueError
            except ValueError:
                raise ConfigError(f"{what} = {spec!r}: {part!r} is not one of {allowed} (combine with +)") from None
        vals = kw.get("const", ())
        if vals and len(vals) not in (1, num_nodes):
            raise ConfigError(f"{what} = {spec!r}: const needs 1 or {num_nodes} factors (one per node), "
                              f"got {len(vals)}")
        if len(vals) == 1:
            kw["const"] = vals * num_nodes
        out = cls(schedule=tuple(sorted(sched)), **kw)
        if not 0 <= out.slow_count <= num_nodes:
            raise ConfigError(f"{what} = {spec!r}: COUNT must be in [0, {num_nodes}] (workers)")
        if not (math.isfinite(out.slow_factor) and out.slow_factor >= 1.0):
            raise ConfigError(f"{what} = {spec!r}: FACTOR must be a number >= 1")
        if not (math.isfinite(out.sigma) and 0.0 <= out.sigma <= 3.0):
            raise ConfigError(f"{what} = {spec!r}: SIGMA must be in [0, 3]")
        if not (math.isfinite(out.walk) and 0.0 <= out.walk <= 3.0):
            raise ConfigError(f"{what} = {spec!r}: walk SIGMA must be in [0, 3]")
        if any(not (math.isfinite(f) and 0.01 <= f <= 1000) for f in out.const):
            raise ConfigError(f"{what} = {spec!r}: const factors must be numbers in [0.01, 1000]")
        for step, node, f in out.schedule:
            if step < 0 or not 0 <= node < num_nodes or not (math.isfinite(f) and 0.01 <= f <= 1000):
                raise ConfigError(f"{what} = {spec!r}: at:STEP:NODE:FACTOR needs STEP >= 0, NODE in "
                                  f"[0, {num_nodes - 1}], FACTOR in [0.01, 1000]")
        return out

    def factor(self, node: int, num_nodes: int, step: int = 0) -> float:
        """The deterministic factor of ``node`` at ``step`` (all parts but ``lognormal``)."""
        f = self.slow_factor if node >= num_nodes - self.slow_count else 1.0
        if self.const:
            f *= self.const[node]
        for s, k, g in self.schedule:
            if k == node and step >= s:
                f *= g
        if self.walk:
            f *= math.exp(_walk(self.walk, self.seed, node, step))
        return f

    def sample(self, rng: np.random.Generator, node: int, num_nodes: int, step: int = 0) -> float:
        """:meth:`factor` times the step's ``lognormal`` draw from ``rng``."""
        f = self.factor(node, num_nodes, step)
        if self.sigma > 0:
            f *= float(np.exp(self.sigma * rng.standard_normal() - 0.5 * self.sigma ** 2))
        return f

    def link_factor(self, i: int, j: int, num_nodes: int, step: int = 0) -> float:
        """A link's slowdown: its slower end's (``lognormal`` not applied); 1 from a node to
        itself (no link)."""
        if i == j:
            return 1.0
        return max(self.factor(i, num_nodes, step), self.factor(j, num_nodes, step))

    @property
    def label(self) -> str:
        parts = []
        if self.slow_count and self.slow_factor != 1.0:
            parts.append(f"slow:{self.slow_count}:{self.slow_factor:g}")
        if self.const and any(f != 1.0 for f in self.const):
            parts.append("const:" + "/".join(f"{f:g}" for f in self.const))
        parts.extend(f"at:{s}:{k}:{g:g}" for s, k, g in self.schedule)
        if self.walk:
            parts.append(f"walk:{self.walk:g}")
        if self.sigma:
            parts.append(f"lognormal:{self.sigma:g}")
        return "+".join(parts) or "none"


__all__ = ["PARTS", "Profile"]
