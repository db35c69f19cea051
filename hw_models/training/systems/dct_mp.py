"""DCT's model-parallel half: activation and activation-gradient compression across the
model-parallel boundary of a hybrid data x model parallel recommender.

Source: H. Pal et al. (Facebook), "Dynamic Communication Thresholding for Distributed
Training of Recommender Systems" (DCT; reported: at least 100x less data-parallel traffic,
20x less model-parallel traffic, 37 % shorter end-to-end training on a production
recommender). The data-parallel half (the gradient threshold refreshed every few thousand
iterations) is the ``threshold`` compressor of
:mod:`hw_models.training.systems.compression`.

**The split.** The NCF workload (:func:`hw_models.training.workloads.ncf`) splits at its
embedding/MLP boundary: the embedding tables are model-parallel (sharded over the ``N``
workers), the MLP data-parallel. Per sample the boundary carries the looked-up embedding
rows, ``W = 2 mf_dim + mlp[0]`` values (the two MF embeddings and the two MLP embeddings,
each half the first MLP layer): forward the activations, backward their gradients, each an
all-to-all of which ``(N - 1) / N`` leaves the worker.

**Compression** (:func:`mp_traffic`): per sample only the ``k = ceil(keep W)`` entries of
largest magnitude cross, as (value, index) pairs of 8 bytes against 4 dense; the reduction is
``4 W / (8 k)``.

**Convergence** (:func:`dct_mp_sgd`): on the MLP digits task the hidden layer stands for the
boundary: forward each sample's hidden activations keep their ``k`` largest magnitudes (the
rest zero), backward the gradient with respect to them keeps its ``k`` largest per sample
before it goes through the tanh; synchronous SGD otherwise.

**Iteration time** (:func:`hybrid_layers`, :func:`hybrid_iteration`): on the iteration
timeline (:func:`~hw_models.training.timeline.simulate`) the embedding layers come first
with no gradient to all-reduce (each worker updates its shard of the tables), then the
boundary as one blocking step, forward the activations' all-to-all and backward their
gradients', then the data-parallel layers, whose gradients are all-reduced by the policy as
in plain data parallelism. Every worker sends ``S / N`` bytes to every other (``S = B W 4``
dense, ``B k 8`` kept): the traffic of an all-gather of ``S`` bytes, so the all-to-all
takes the configured network's all-gather of ``S`` (:func:`alltoall_s`; the same
equivalence DLion's links use).

Not modelled: DCT's per-sample thresholds refreshed periodically (we take the exact top-k
per sample every iteration), the embedding lookups' own all-to-all of indices, the compute
of the top-k selection, the boundary all-to-all sharing the network with the data-parallel
gradients' all-reduce (it is a blocking step of the compute; the all-reduces that overlap
it run as if the network were theirs alone).
"""

from __future__ import annotations

import math

import numpy as np

from noc.base.errors import ConfigError

DENSE_BYTES = 4
ENTRY_BYTES = 8


def boundary_width(mf_dim: int = 64, mlp_first: int = 256) -> int:
    """Values per sample crossing NCF's embedding/MLP boundary: ``2 mf_dim + mlp_first`` (the
    defaults are :func:`~hw_models.training.workloads.ncf`'s)."""
    return 2 * int(mf_dim) + int(mlp_first)


def _keep_k(width: int, keep: float) -> int:
    if not (isinstance(keep, (int, float)) and 0 < keep <= 1):
        raise ConfigError(f"keep = {keep!r}: must be a share in (0, 1]")
    return max(1, math.ceil(keep * width))


def mp_traffic(width: int, batch: int, workers: int, keep: float) -> dict:
    """Bytes per worker per iteration across the boundary (forward + backward), dense and
    compressed, and their ratio (module docstring)."""
    k = _keep_k(width, keep)
    off = (workers - 1) / workers
    dense = 2 * batch * width * DENSE_BYTES * off
    comp = 2 * batch * k * ENTRY_BYTES * off if keep < 1 else dense
    return {"width": width, "kept": k if keep < 1 else width, "dense_bytes": dense, "compressed_bytes": comp,
            "reduction": dense / comp}


BOUNDARY = "boundary_all_to_all"


def boundary_bytes(width: int, batch: int, keep: float | None) -> int:
    """One direction's bytes a worker's boundary buffer holds: ``B W 4`` dense (``keep``
    None or 1), ``B k 8`` kept."""
    if keep is None or keep >= 1:
        return int(batch) * int(width) * DENSE_BYTES
    return int(batch) * _keep_k(width, keep) * ENTRY_BYTES


def alltoall_s(comm, per_worker_bytes: int) -> float:
    """Seconds of an all-to-all in which every worker sends ``per_worker_bytes / N`` to every
    other: the traffic of an all-gather of ``per_worker_bytes``, timed as ``comm``'s."""
    return float(comm.all_gather_s(int(per_worker_bytes))) if per_worker_bytes else 0.0


def hybrid_layers(layers, kinds, comm, width: int, batch: int, keep: float | None):
    """``layers`` (:class:`~hw_models.training.costs.LayerCost`, with their workload layers'
    ``kinds``) as the hybrid DP x MP iteration (module docstring): the embedding layers without
    gradients to all-reduce, the boundary's all-to-all (forward and backward) as a layer of
    its own, then the others unchanged."""
    from hw_models.training.costs import LayerCost  # noqa: PLC0415

    if len(layers) != len(kinds):
        raise ConfigError(f"{len(layers)} layer costs for {len(kinds)} layer kinds")
    emb = [x for x, k in zip(layers, kinds) if k == "embedding"]
    if not emb:
        raise ConfigError("the workload has no embedding layers: no model-parallel boundary")
    t = alltoall_s(comm, boundary_bytes(width, batch, keep))
    return (*(LayerCost(x.name, x.fwd_s, x.bwd_s, 0) for x in emb), LayerCost(BOUNDARY, t, t, 0),
            *(x for x, k in zip(layers, kinds) if k != "embedding"))


def hybrid_iteration(layers, kinds, comm, width: int, batch: int, keep: float | None, policy=None):
    """The hybrid iteration on the timeline (:func:`hybrid_layers`; ``policy`` default
    wait-free backprop): the :class:`~hw_models.training.timeline.TimelineResult`."""
    from hw_models.training.policies import WaitFreeBackprop  # noqa: PLC0415
    from hw_models.training.timeline import simulate  # noqa: PLC0415

    return simulate(hybrid_layers(layers, kinds, comm, width, batch, keep), comm, policy or WaitFreeBackprop())


def _rowtopk(a: np.ndarray, k: int) -> np.ndarray:
    if k >= a.shape[1]:
        return a
    idx = np.argpartition(-np.abs(a), k - 1, axis=1)[:, :k]
    out = np.zeros_like(a)
    np.put_along_axis(out, idx, np.take_along_axis(a, idx, axis=1), axis=1)
    return out


def mp_loss_grad(task, w: np.ndarray, X: np.ndarray, y: np.ndarray, k: int):
    """The MLP's loss and gradient with the boundary (hidden layer) compressed to ``k`` entries
    per sample forward and backward (module docstring)."""
    from hw_models.training.systems.tasks import _softmax_xent_grad  # noqa: PLC0415

    W1, b1, W2, b2 = task._unpack(w)
    h = np.tanh(X @ W1 + b1)
    hc = _rowtopk(h, k)
    loss, dz = _softmax_xent_grad(hc @ W2 + b2, y)
    dhc = _rowtopk(dz @ W2.T, k)
    dh = dhc * (1.0 - h * h)
    g = np.empty_like(w)
    for (_, s, _), p in zip(task._slices, (X.T @ dh, dh.sum(axis=0), hc.T @ dz, dz.sum(axis=0))):
        g[s] = p.ravel()
    return float(loss), g


def dct_mp_sgd(task, keep: float, lr: float, *, target: float, max_iterations: int = 2000, eval_every: int = 5):
    """Synchronous SGD on the MLP task with the boundary compressed to ``keep`` of the hidden
    units per sample (module docstring)."""
    from hw_models.training.systems.tasks import run_until  # noqa: PLC0415

    if task.model != "mlp":
        raise ConfigError(f"task {task.model!r}: DCT's model-parallel boundary needs the mlp task")
    k = _keep_k(task.hidden, keep)
    w = task.init_params()
    samplers = task.samplers()

    def step(t):
        g = np.mean([mp_loss_grad(task, w, *s.next(), k)[1] for s in samplers], axis=0)
        w[:] -= lr * g
        return w

    return run_until(f"DCT model-parallel keep={keep:g}", task, step, target=target, max_iterations=max_iterations,
                     eval_every=eval_every)


__all__ = ["BOUNDARY", "alltoall_s", "boundary_bytes", "boundary_width", "dct_mp_sgd", "hybrid_iteration",
           "hybrid_layers", "mp_loss_grad", "mp_traffic"]
