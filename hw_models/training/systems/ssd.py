"""SSD-SGD (several steps delay SGD): periodic global synchronisation with local updates in
between, the synchronisation overlapped with the next steps' compute.

Source: "SSD-SGD: Communication Sparsification for Distributed Deep Learning Training",
Y. Xu, D. Dong, W. Xu, X. Liao (arXiv 2020), which generalises OD-SGD (one-step delay SGD)
to a delay of several steps and reports up to 110 % speed-up over synchronous SGD with
similar accuracy. As modelled here (our reading):

* **Mathematics** (:func:`ssd_sgd`): every worker keeps a local model and steps it with its
  own gradients (``lr_local``); every ``k`` steps it hands the sum of its last ``k``
  gradients to a global all-reduce and carries on. That all-reduce's result arrives one
  period (``k`` steps) later: the global model steps by ``lr`` times the mean of the summed
  gradients, and every worker's local model becomes the new global model plus its own local
  steps taken since the hand-over. ``k = 1`` with ``lr_local = 0`` is one-step-delayed
  synchronous SGD; the global model is what is evaluated.
* **Timing on the iteration timeline** (:func:`ssd_timeline`): the workload's forward and
  backward passes layer by layer; every step each layer's local update (read the weights and
  the gradient, write the weights: ``3 b`` bytes at the device's memory bandwidth, the merge
  of an arrived result fused into that pass) runs before the layer's next forward pass; the
  hand-over step's gradients go to the network as the backward pass produces them (policy
  ``wfbp``: one all-reduce per layer, first come first served; ``fused``: one all-reduce of
  the whole model after the backward pass), and the first step of the period after next
  waits, layer by layer, for that layer's all-reduce
  (:class:`~hw_models.training.timeline.Exchange` ``every = k, lag = 2``).
* **Closed form** (:func:`ssd_iteration_s`), the independent check: with one fused
  all-reduce of the whole model every ``k`` steps, overlapped with the next ``k`` steps, a
  step takes ``max(compute + update, allreduce(model) / k)`` in steady state (the network
  being one resource, one period's all-reduce must end before the next starts). The
  timeline with ``fused`` equals it; with ``wfbp`` it differs by the per-layer all-reduces'
  start-up costs (more) and by starting each layer's all-reduce during the backward pass
  (less). Synchronous SGD's step is the iteration timeline's (WFBP over the same network).
"""

from __future__ import annotations

import numpy as np

from noc.base.errors import ConfigError


# the timeline simulates a few rounds of k steps each, so k bounds the run's length
MAX_DELAY = 1000


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_DELAY:
        raise ConfigError(f"delay = {k!r}: must be an integer in 1..{MAX_DELAY} (steps between global "
                          "synchronisations)")
    return k


def ssd_sgd(task, lr: float, k: int, *, lr_local: float | None = None, target: float, max_iterations: int = 2000,
            eval_every: int = 5, label: str | None = None):
    """SSD-SGD on ``task`` (see the module docstring); ``lr_local`` defaults to ``lr``."""
    from hw_models.training.systems.tasks import run_until  # noqa: PLC0415

    k = _check_k(k)
    lr_local = lr if lr_local is None else float(lr_local)
    n = task.workers
    samplers = task.samplers()
    glob = task.init_params()
    local = np.tile(glob, (n, 1))
    acc = np.zeros_like(local)  # gradients since the last hand-over
    since = np.zeros_like(local)  # local steps since the last hand-over (what to re-apply)
    in_flight: list[np.ndarray] = []  # mean summed gradients handed over, arriving one period later

    def step(t):
        for i in range(n):
            g = samplers[i].grad(local[i])
            local[i] -= lr_local * g
            since[i] -= lr_local * g
            acc[i] += g
        if (t + 1) % k == 0:
            arrived = in_flight.pop(0) if in_flight else None
            in_flight.append(acc.mean(axis=0))
            acc[:] = 0.0
            if arrived is not None:
                glob[:] -= lr * arrived
            local[:] = glob + since  # the new global model plus the steps taken since the hand-over
            since[:] = 0.0
        return glob

    return run_until(label or f"SSD-SGD k={k}", task, step, target=target, max_iterations=max_iterations,
                     eval_every=eval_every)


def ssd_timeline(layers, comm, k: int, mem_bytes_per_s: float, *, policy: str = "wfbp"):
    """SSD-SGD with delay ``k`` on the iteration timeline (module docstring):
    ``(steady seconds per step, the timeline result)``."""
    from hw_models.training.systems.exchange import make_policy, run_rounds, steady_step_s  # noqa: PLC0415
    from hw_models.training.timeline import Exchange  # noqa: PLC0415

    k = _check_k(k)
    exch = Exchange(every=k, lag=2, update_on="every")
    upd = tuple(3 * x.grad_bytes / mem_bytes_per_s for x in layers)
    res = run_rounds(layers, comm, make_policy(policy), exch, upd)
    return steady_step_s(res, exch), res


def ssd_iteration_s(compute_s: float, update_s: float, allreduce_s: float, k: int) -> float:
    """Steady-state seconds per step (see the module docstring)."""
    k = _check_k(k)
    return max(compute_s + update_s, allreduce_s / k)


__all__ = ["ssd_iteration_s", "ssd_sgd", "ssd_timeline"]
