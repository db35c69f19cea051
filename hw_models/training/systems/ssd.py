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
* **Timing** (:func:`ssd_iteration_s`): a worker's step is its forward and backward pass
  plus a local update (``update_s``); the whole gradient is one fused all-reduce every ``k``
  steps, overlapped with the next ``k`` steps, so in steady state a step takes ``max(compute
  + update, allreduce(model) / k)`` (the network being one resource, the all-reduce of one
  period must end before the next is started). Synchronous SGD's step is the iteration
  timeline's (WFBP over the same network), for the comparison.
"""

from __future__ import annotations

import numpy as np

from noc.errors import ConfigError


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"delay = {k!r}: must be an integer >= 1 (steps between global synchronisations)")
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


def ssd_iteration_s(compute_s: float, update_s: float, allreduce_s: float, k: int) -> float:
    """Steady-state seconds per step (see the module docstring)."""
    k = _check_k(k)
    return max(compute_s + update_s, allreduce_s / k)


__all__ = ["ssd_iteration_s", "ssd_sgd"]
