"""The EASGD family: elastic averaging between workers' models and a centre model.

Sources: "Deep learning with Elastic Averaging SGD", S. Zhang, A. Choromanska, Y. LeCun,
NeurIPS 2015 (EASGD, its asynchronous and momentum variants); "Scaling Deep Learning on GPU
and Knights Landing clusters", Y. You, A. Buluç, J. Demmel, SC 2017 (the HPC redesign: Async
EASGD's round-robin master replaced by collectives, Hogwild EASGD, Sync EASGD; up to 5.3x
faster).

**Mathematics** (:func:`easgd`), ``N`` workers, each ``tau`` local steps between exchanges,
moving rate ``alpha`` (the elastic parameter ``alpha = lr * rho``):

* local step: ``x_i <- x_i - lr * g_i(x_i)`` (``measgd``: with Nesterov momentum ``delta``);
* ``sync``: all exchange at once with the same centre: ``d_i = alpha (x_i - c)``,
  ``x_i <- x_i - d_i``, ``c <- c + sum_i d_i``;
* ``async`` / ``measgd``: a round-robin master: the workers exchange one after another,
  each with the centre as the previous exchange left it;
* ``hogwild``: lock-free master: all exchanges of a round read the centre as it was at the
  start of the round and add their differences without a lock (the race of concurrent
  updates: every read is stale by the others' updates of that round).

The centre model is what is evaluated.

**Timing on the iteration timeline** (:func:`easgd_timeline`): the workload's passes layer by
layer; a round's last backward pass hands each layer's model to the network as the layer's
gradient appears (the local step and the elastic difference are one pass over the layer).
``sync``: each layer's models all-reduced (policy ``wfbp``: layer by layer as they appear;
``fused``: one all-reduce after the backward pass), then each layer's centre update (``3 b``
bytes of memory traffic on every worker) before its next forward pass, which waits for it
(a barrier, layer by layer). ``async``/``measgd``/``hogwild``: each layer's exchange with the
master (:class:`~hw_models.training.systems.exchange.MasterComm`: ``serial`` for the
round-robin master, ``concurrent`` for hogwild) overlaps the whole next round; the round
after that waits for it, layer by layer (``lag = 2``). All workers run alike (equal speeds;
unequal speeds: :mod:`hw_models.training.systems.hogwild`).

**Closed form** (:func:`easgd_round_s`, the independent check), per round of ``tau`` local steps of every worker and one
exchange each (``M`` model bytes): the round-robin master (``async``, ``measgd``) serialises
the exchanges: each moves ``M`` to the master and ``M`` back at the master's share of the
network (``1/N`` of the all-worker push and pull time of a one-server parameter server on the
topology, :mod:`hw_models.training.systems.ps`) and then updates the centre (reads and
writes ``3M`` at the master's memory bandwidth), so a round is ``max(tau * compute, N *
(exchange + update))``, the exchanges overlapping the workers' next local steps. ``hogwild``
lets the exchanges share the master's links at once and its updates run concurrently with the
transfers: ``max(tau * compute, max(push + pull, N * update))``. ``sync`` (the collective
redesign) all-reduces the ``N`` models (``sum_i x_i``, from which every worker computes the
centre update itself): ``tau * compute + allreduce(M) + update`` -- the all-reduce is a
barrier, not overlapped. The timeline with the ``fused`` policy equals it; with ``wfbp`` the
layers' exchanges start during the backward pass (less) but each pays its own start-up cost
(more).
"""

from __future__ import annotations

import numpy as np

from noc.base.errors import ConfigError

VARIANTS = ("sync", "async", "measgd", "hogwild")


def _check(variant, tau, alpha):
    if variant not in VARIANTS:
        raise ConfigError(f"variant = {variant!r}: must be one of {', '.join(VARIANTS)}")
    if isinstance(tau, bool) or not isinstance(tau, int) or tau < 1:
        raise ConfigError(f"tau = {tau!r}: must be an integer >= 1 (local steps between exchanges)")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha = {alpha!r}: the elastic moving rate must be in (0, 1)")


def exchange(variant: str, x: np.ndarray, centre: np.ndarray, alpha: float) -> None:
    """One exchange of every worker's model ``x[i]`` with ``centre``, in place."""
    if variant in ("sync", "hogwild"):  # every exchange reads the same centre
        d = alpha * (x - centre)
        x -= d
        centre += d.sum(axis=0)
    else:
        for i in range(len(x)):  # round robin, each with the centre the previous left
            d = alpha * (x[i] - centre)
            x[i] -= d
            centre += d


def local_step(variant: str, x: np.ndarray, v: np.ndarray, i: int, sampler, lr: float, delta: float) -> None:
    """Worker ``i``'s local step, in place: SGD, or for ``measgd`` Nesterov momentum ``delta``
    (the gradient at the look-ahead point)."""
    if variant == "measgd":
        g = sampler.grad(x[i] + delta * v[i])
        v[i] = delta * v[i] - lr * g
        x[i] += v[i]
    else:
        x[i] -= lr * sampler.grad(x[i])


def easgd(task, variant: str, lr: float, *, alpha: float, tau: int = 1, delta: float = 0.9, target: float,
          max_iterations: int = 2000, eval_every: int = 5, label: str | None = None):
    """One EASGD variant on ``task`` (see the module docstring). An iteration is one local
    step of every worker."""
    from hw_models.training.systems.tasks import run_until  # noqa: PLC0415

    _check(variant, tau, alpha)
    n = task.workers
    samplers = task.samplers()
    centre = task.init_params()
    x = np.tile(centre, (n, 1))
    v = np.zeros_like(x)

    def step(t):
        for i in range(n):
            local_step(variant, x, v, i, samplers[i], lr, delta)
        if (t + 1) % tau == 0:
            exchange(variant, x, centre, alpha)
        return centre

    return run_until(label or f"{variant} EASGD alpha={alpha:g} tau={tau}", task, step, target=target,
                     max_iterations=max_iterations, eval_every=eval_every)


def easgd_timeline(variant: str, tau: int, layers, allreduce_comm, push_all_s, pull_all_s, *, num_workers: int,
                   mem_bytes_per_s: float, policy: str = "wfbp"):
    """One EASGD variant on the iteration timeline (module docstring): ``(steady seconds per
    local step, the timeline result)``. ``push_all_s(b)``/``pull_all_s(b)``: the one-server
    parameter server's all-worker push and pull of ``b`` bytes."""
    from hw_models.training.systems.exchange import MasterComm, make_policy, run_rounds, steady_step_s  # noqa: PLC0415
    from hw_models.training.timeline import Exchange  # noqa: PLC0415

    _check(variant, tau, 0.5)
    if variant == "sync":
        exch = Exchange(every=tau, lag=1, update_on="merge")
        upd = tuple(3 * x.grad_bytes / mem_bytes_per_s for x in layers)
        comm = allreduce_comm
    else:
        exch = Exchange(every=tau, lag=2, update_on="merge")
        upd = (0.0,) * len(layers)
        comm = MasterComm(push_all_s, pull_all_s, num_workers, mem_bytes_per_s,
                          "concurrent" if variant == "hogwild" else "serial")
    res = run_rounds(layers, comm, make_policy(policy), exch, upd)
    return steady_step_s(res, exch), res


def easgd_round_s(variant: str, tau: int, compute_s: float, model_bytes: int, *, push_all_s: float,
                  pull_all_s: float, allreduce_s: float, num_workers: int, mem_bytes_per_s: float) -> float:
    """Seconds per round (``tau`` local steps and one exchange per worker); see the module
    docstring. ``push_all_s``/``pull_all_s``: the one-server parameter server's all-worker
    push and pull of ``model_bytes`` on the network; ``allreduce_s``: the all-reduce of
    ``model_bytes``."""
    _check(variant, tau, 0.5)
    n = num_workers
    update_s = 3 * model_bytes / mem_bytes_per_s
    if variant == "sync":
        return tau * compute_s + allreduce_s + update_s
    if variant == "hogwild":
        return max(tau * compute_s, max(push_all_s + pull_all_s, n * update_s))
    return max(tau * compute_s, n * ((push_all_s + pull_all_s) / n + update_s))


__all__ = ["VARIANTS", "easgd", "easgd_round_s", "easgd_timeline", "exchange"]
