"""DLion: decentralised training on heterogeneous, changing workers and links.

Source: R. Hong, A. Chandra, "DLion: Decentralized Distributed Deep Learning in Micro-Clouds",
HPDC 2021 (reported: up to 4.2x faster training than the baselines in a heterogeneous GPU
cluster, with better accuracy).

``N`` workers each hold a model ``x_i`` and exchange gradients with every other worker
(all-pairs, the decentralised exchange; each link ``j -> i`` has its own bandwidth). Worker
speeds and link bandwidths come from :class:`hw_models.training.hetero.Profile` (a worker's
compute factor ``f_i(t)``, a link's ``l_ij(t)``). A round ``t``:

1. **weighted dynamic batching** (``batching``): the ``N B`` samples of a round are split in
   proportion to the workers' speeds, ``b_i = N B (1/f_i) / sum_j (1/f_j)`` (rounded to
   integers >= 1 by largest remainder), so ``b_i f_i`` -- each worker's compute time -- is
   the same for all (:func:`weighted_batches`); without it every worker takes ``B``;
2. each worker's gradient ``g_i`` on its ``b_i`` samples (its own shard);
3. **per-link prioritised exchange** (``priority``): link ``j -> i`` has the round's compute
   time ``T`` as its budget and sends the ``k_ji = min(P, floor(bw_ji T / 8))`` entries of
   largest magnitude of ``g_j + r_ji`` (8 bytes each: a float32 value and an int32 index; ``P``
   parameters; ``bw_ji`` the link's bytes per second), keeping the rest as the link's residual
   ``r_ji`` (error feedback) (:func:`link_entries`); without it every link sends the whole
   gradient (``4 P`` bytes);
4. worker ``i`` steps with the batch-weighted mean of what it has:
   ``x_i <- x_i - lr (b_i g_i + sum_j b_j s_ji) / sum_j b_j``;
5. **direct knowledge transfer** (``transfer``, every ``E`` rounds): the worker with the lowest
   loss on its round's batch sends its model to the others, which take the mean of theirs and
   it, ``x_i <- (x_i + x_best) / 2``.

With no technique on, every worker receives every gradient in full and equal batches: the
models stay equal and the run is synchronous SGD (the tests check it equals
:func:`~hw_models.training.systems.tasks.sync_sgd`). The model evaluated is the workers' mean.

**Time of a round**: compute ``T = max_i (b_i / B) c f_i`` (``c``: the workload's forward and
backward passes for ``B`` samples, from its layer costs on the device), then the exchange:
each link's bytes over its bandwidth, the links concurrently, ``E_t = max_ji bytes_ji /
bw_ji`` (prioritised: at most ``T``); a knowledge transfer adds the best worker's model over
its slowest link. ``bw`` of a link at nominal speed: every worker sending ``b`` bytes to every
other is the traffic of an all-gather of ``N b`` bytes, so a link's nominal time for ``b``
bytes is the configured network's all-gather of ``N b`` (the baseline algorithm's), and a
link with factor ``lf`` takes ``lf`` times it.

**On the timeline** (:class:`Net` with ``layers``): a round is the iteration timeline's
steady iteration with every layer's passes scaled by the slowest worker's ``max_i (b_i / B)
f_i`` and each layer's exchange a collective of :class:`LinkExchange` (as long as its slowest
link); policy ``wfbp`` sends each layer as its gradient appears, ``fused`` the whole model
after the backward pass, which is the closed form :func:`round_s` exactly.

**Baseline, synchronous all-reduce** on the same workers and links: ``max_i c f_i`` plus the
baseline all-reduce of the model slowed by the slowest link (a ring passes through all of
them; on the timeline: passes scaled, the all-reduce model slowed), convergence synchronous
SGD.

Not modelled: DLion's measurement of capacities (the factors are known each round), its
partial-model (per-layer) priorities, the compute of top-k selection, GPU contention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from hw_models.training.systems.compression import topk
from noc.base.errors import ConfigError

TECHNIQUES = ("batching", "priority", "transfer")
ENTRY_BYTES = 8  # a sparse entry: float32 value + int32 index
DENSE_BYTES = 4


def parse_techniques(spec: str) -> list[tuple[str, ...]]:
    """``all`` (each alone, then all together), ``none``, or ``+``-joined technique sets
    separated by commas (``batching,priority+transfer``)."""
    text = str(spec).strip().lower()
    if text == "all":
        return [(), *((t,) for t in TECHNIQUES), TECHNIQUES]
    out = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        if item == "none":
            out.append(())
            continue
        parts = tuple(p.strip() for p in item.split("+"))
        bad = [p for p in parts if p not in TECHNIQUES]
        if bad:
            raise ConfigError(f"techniques = {spec!r}: {bad[0]!r} unknown (allowed: all, none, or "
                              f"{', '.join(TECHNIQUES)} joined with +, sets separated by commas)")
        out.append(tuple(t for t in TECHNIQUES if t in parts))
    if not out:
        raise ConfigError(f"techniques = {spec!r} names no technique set")
    return list(dict.fromkeys(out))


def label(techs: tuple[str, ...]) -> str:
    return "DLion, " + ("+".join(techs) if techs else "no technique")


def weighted_batches(total: int, factors) -> tuple[np.ndarray, np.ndarray]:
    """``(real shares, integer batches)``: ``total`` samples split in proportion to ``1 /
    factor`` (the real shares make ``share_i * factor_i`` equal); integers by largest
    remainder, each at least 1."""
    f = np.asarray(factors, dtype=float)
    n = len(f)
    if total < n:
        raise ConfigError(f"total batch = {total}: at least one sample per worker ({n})")
    share = total * (1 / f) / np.sum(1 / f)
    base = np.maximum(np.floor(share).astype(int), 1)
    left = total - int(base.sum())
    order = np.argsort(-(share - np.floor(share)), kind="stable")
    k = 0
    while left > 0:
        base[order[k % n]] += 1
        left -= 1
        k += 1
    while left < 0:  # the >= 1 floor took too many: take from the largest
        j = int(np.argmax(base))
        base[j] -= 1
        left += 1
    return share, base


def link_entries(num_params: int, link_bytes_per_s: float, budget_s: float) -> int:
    """Entries a link sends in ``budget_s`` at ``link_bytes_per_s``: ``min(P, floor(bw T / 8))``."""
    return int(min(num_params, math.floor(link_bytes_per_s * budget_s / ENTRY_BYTES)))


@dataclass(frozen=True)
class Net:
    """What a round's time needs: ``compute_s`` (a worker's passes for the task batch ``B`` at
    nominal speed), ``link_s`` (the whole model, ``model_bytes``, over one link at nominal
    bandwidth), ``allreduce_s`` (the baseline all-reduce of the model).

    With ``layers`` (the workload's :class:`~hw_models.training.costs.LayerCost`, whose passes
    sum to ``compute_s``), ``link`` (seconds of ``b`` bytes over one link at nominal
    bandwidth, ``link(model_bytes) == link_s``) and ``allreduce`` (the baseline's
    communication model) a round is timed on the iteration timeline with ``policy``
    (``wfbp``: each layer's exchange as its gradient appears; ``fused``: one exchange after
    the backward pass, which gives :func:`round_s` exactly); without them by :func:`round_s`."""

    compute_s: float
    link_s: float
    allreduce_s: float
    model_bytes: int
    layers: tuple = ()
    link: Callable[[int], float] | None = None
    allreduce: object = None
    policy: str = "wfbp"

    @property
    def on_timeline(self) -> bool:
        return bool(self.layers)


class LinkExchange:
    """DLion's exchange of a round as a communication model for the timeline: every link
    ``j -> i`` at once, link ``j -> i`` moving ``q_ji b`` of a layer's ``b`` gradient bytes
    (``q = 1`` dense; prioritised: its entries' bytes over the dense gradient's) at ``1 /
    lf_ji`` of the nominal bandwidth; a collective ends with its slowest link:
    ``link(b) * max_ji q_ji lf_ji`` (``scale``)."""

    def __init__(self, link, scale: float, num_workers: int, what: str = "DLion links"):
        self._link, self.scale, self.num_workers, self._what = link, float(scale), int(num_workers), what

    def allreduce_s(self, nbytes: int) -> float:
        return self._link(nbytes) * self.scale if nbytes else 0.0

    reduce_scatter_s = all_gather_s = allreduce_s

    def describe(self) -> str:
        return f"{self._what} (slowest x{self.scale:g})"


class _TimedRounds:
    """Seconds of a round on the timeline (:func:`~hw_models.training.timeline.simulate`, its
    steady state) for the slowest worker's compute factor ``cs`` and the exchange's slowest
    link ``xs``; the same pair is simulated once."""

    def __init__(self, net: Net, link, n: int):
        from hw_models.training.systems.exchange import make_policy  # noqa: PLC0415

        self.net, self.link, self.n = net, link, n
        self.policy = make_policy(net.policy)
        self._cache: dict = {}

    def __call__(self, cs: float, xs: float) -> float:
        from hw_models.training.systems.profiled import scaled_layers  # noqa: PLC0415
        from hw_models.training.timeline import simulate  # noqa: PLC0415

        key = (cs, xs)
        if key not in self._cache:
            self._cache[key] = simulate(scaled_layers(self.net.layers, cs), LinkExchange(self.link, xs, self.n),
                                        self.policy, iterations=2).iteration_s
        return self._cache[key]


def round_s(compute_s: float, exchange_s: float, transfer_s: float = 0.0) -> float:
    """The closed form of a round: compute, then the exchange, then a knowledge transfer."""
    return compute_s + exchange_s + transfer_s


def dlion(task, techs: tuple[str, ...], net: Net, workers, links, lr: float, *, target: float,
          max_iterations: int, transfer_every: int = 20, eval_every: int = 5, seed: int = 0):
    """DLion with ``techs`` on ``task`` (module docstring); ``workers``/``links``:
    :class:`~hw_models.training.hetero.Profile`. ``extra``: ``time_to_target_s``,
    ``seconds`` (simulated to the end), ``mean_round_s``, ``bytes_per_round``, ``round_s`` (each
    round's seconds, in order)."""
    from hw_models.training.systems.tasks import run_until  # noqa: PLC0415

    n, B, P = task.workers, task.batch, task.num_params
    samplers = task.samplers()  # per worker; each minibatch of its own size here
    rngs = [np.random.default_rng([seed, 13, i]) for i in range(n)]
    x = np.tile(task.init_params(), (n, 1))
    resid = np.zeros((n, n, P)) if "priority" in techs else None
    # a link's bandwidth at nominal speed, in the task's units: a full dense gradient (4 P bytes) takes link_s
    bw_task = DENSE_BYTES * P / net.link_s if net.link_s > 0 else math.inf
    clock = {"t": 0.0, "bytes": 0.0}
    times: list[float] = []
    timed = _TimedRounds(net, net.link, n) if net.on_timeline else None

    def step(t):
        f = np.array([workers.sample(rngs[i], i, n, t) for i in range(n)])
        if "batching" in techs:
            _, b = weighted_batches(n * B, f)
        else:
            b = np.full(n, B)
        cs = float(np.max(b / B * f))
        comp = float(np.max(b / B * net.compute_s * f))
        grads, losses = [], []
        for i in range(n):
            loss, g = task.loss_grad(x[i], *samplers[i].next(int(b[i])))
            grads.append(g)
            losses.append(loss)
        lf = np.array([[links.link_factor(i, j, n, t) for j in range(n)] for i in range(n)])
        wsum = float(b.sum())
        exch, sent, xs = 0.0, 0.0, 0.0
        new = np.empty_like(x)
        for i in range(n):
            agg = b[i] * grads[i]
            for j in range(n):
                if j == i:
                    continue
                if "priority" in techs:
                    k = link_entries(P, bw_task / lf[j, i], comp)
                    v = grads[j] + resid[j, i]
                    s = topk(v, k)
                    resid[j, i] = v - s
                    exch = max(exch, k * ENTRY_BYTES / (bw_task / lf[j, i]))
                    xs = max(xs, k * ENTRY_BYTES / (DENSE_BYTES * P) * lf[j, i])
                    sent += k * ENTRY_BYTES / (DENSE_BYTES * P) * net.model_bytes
                else:
                    s = grads[j]
                    exch = max(exch, net.link_s * lf[j, i])
                    xs = max(xs, lf[j, i])
                    sent += net.model_bytes
                agg = agg + b[j] * s
            new[i] = x[i] - lr * agg / wsum
        x[:] = new
        extra_s = 0.0
        if "transfer" in techs and (t + 1) % transfer_every == 0:
            best = int(np.argmin(losses))
            x[:] = (x + x[best]) / 2
            extra_s = net.link_s * max(lf[best, j] for j in range(n) if j != best) if n > 1 else 0.0
            sent += (n - 1) * net.model_bytes
        clock["t"] += timed(cs, xs) + extra_s if timed else round_s(comp, exch, extra_s)
        clock["bytes"] += sent
        times.append(clock["t"])
        return x.mean(axis=0)

    r = run_until(label(techs), task, step, target=target, max_iterations=max_iterations, eval_every=eval_every)
    rounds = len(times)
    return replace(r, extra={"time_to_target_s": r.time_at(times), "seconds": clock["t"],
                             "mean_round_s": clock["t"] / rounds, "bytes_per_round": clock["bytes"] / rounds,
                             "round_s": _rounds(times)})


def allreduce_baseline(task, net: Net, workers, links, lr: float, *, target: float, max_iterations: int,
                       eval_every: int = 5, seed: int = 0):
    """Synchronous all-reduce SGD on the same workers and links (module docstring)."""
    from hw_models.training.systems.tasks import sync_sgd  # noqa: PLC0415

    n = task.workers
    rngs = [np.random.default_rng([seed, 13, i]) for i in range(n)]
    times, clock = [], 0.0
    timed = _TimedRounds(net, net.allreduce.allreduce_s, n) if net.on_timeline else None
    for t in range(max_iterations):
        f = max(workers.sample(rngs[i], i, n, t) for i in range(n))
        worst_link = max(links.factor(i, n, t) for i in range(n))
        clock += timed(f, worst_link) if timed else net.compute_s * f + net.allreduce_s * worst_link
        times.append(clock)
    r = sync_sgd(task, lr, target=target, max_iterations=max_iterations, eval_every=eval_every,
                 label="sync all-reduce SGD")
    rounds = r.iterations_to_target or max_iterations
    return replace(r, extra={"time_to_target_s": r.time_at(times), "seconds": times[rounds - 1],
                             "mean_round_s": times[rounds - 1] / rounds,
                             "bytes_per_round": 2 * (n - 1) / n * net.model_bytes * n, "round_s": _rounds(times)})


def _rounds(times) -> tuple[float, ...]:
    """Each round's seconds from the clock after each round."""
    return tuple(float(x) for x in np.diff(np.concatenate(([0.0], times))))


__all__ = ["DENSE_BYTES", "ENTRY_BYTES", "Net", "TECHNIQUES", "allreduce_baseline", "dlion", "label",
           "link_entries", "parse_techniques", "topk", "weighted_batches"]
