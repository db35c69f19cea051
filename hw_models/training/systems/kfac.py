"""Distributed K-FAC and SPD-KFAC: Kronecker factors from the workloads' layers, their
all-reduce pipelined with the backward pass and tensor fusion, inversion cost cubic in the
factor size, and the placement of inversions on workers.

Source: "Accelerating Distributed K-FAC with Smart Parallelism of Computing and
Communication Tasks" (SPD-KFAC), S. Shi, L. Zhang, B. Li, IEEE ICDCS 2021 -- reported 10-35 %
faster than D-KFAC baselines. K-FAC: J. Martens, R. Grosse, ICML 2015; convolutions (KFC):
R. Grosse, J. Martens, ICML 2016; D-KFAC: J. G. Pauloski et al., SC 2020.

**Factors.** Every GEMM layer with shared weights ``C[m x n] = A[m x k] @ W[k x n]`` per
sample (a convolution as im2col, ``count`` groups) has an input factor ``A`` of dimension
``k`` (+1 with a bias) and an output-gradient factor ``G`` of dimension ``n``, per group.
Computing one from ``b * m`` rows costs ``2 b m d^2`` FLOPs (at the device's peak FLOP
rate); its all-reduce moves the upper triangle, ``d (d + 1) / 2`` fp32 values; inverting it
costs ``d^3`` FLOPs at ``inverse_efficiency`` of the peak (inversions run far below GEMM
speed); preconditioning a layer's gradient ``G^-1 dW A^-1`` costs ``2 (k^2 n + k n^2)``
FLOPs.

**Iteration** (on the timeline, :func:`kfac_timeline`): gradients are all-reduced as in SGD;
then factors are all-reduced; then each factor's inverse is computed by one worker
(**placement**: ``round_robin`` -- factor ``j`` in layer order on worker ``j mod N``, as
D-KFAC -- or ``balanced`` -- longest inversion first onto the least loaded worker, as
SPD-KFAC's load balancing) and all-gathered to every worker; then every worker
preconditions and updates. The last three are one global step before the next forward pass
(their seconds: the most loaded worker's inversions, the all-gather of the inverses -- ``N``
times the largest worker's share of inverse bytes -- and the preconditioning).

* ``dkfac``: all factors computed after the backward pass and all-reduced in one fused
  collective after the gradients (no pipelining);
* ``pipelined``: SPD-KFAC's pipelining: a layer's ``A`` is computed after its forward pass,
  its ``G`` after its backward pass, and both are all-reduced with the layer's gradient, the
  collectives merged by tensor fusion (MG-WFBP's rule on the same network) -- so factor
  communication overlaps the backward pass.

:func:`kfac_sgd` is K-FAC itself on the small tasks (factors averaged over the workers as
the all-reduce does, damping, running averages); placement and pipelining do not change its
arithmetic, only its time.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from hw_models.training.costs import LayerCost, OptimizerCost, as_layer_costs
from noc.base.errors import ConfigError

PLACEMENTS = ("round_robin", "balanced")
SCHEMES = ("dkfac", "pipelined")
DEFAULT_INVERSE_EFFICIENCY = 0.05
FACTOR_ELEM_BYTES = 4


@dataclass(frozen=True)
class Factor:
    """One Kronecker factor: ``kind`` ``A`` or ``G`` of layer ``layer`` (its index in the
    workload), dimension ``dim``, computed from ``rows`` rows per iteration."""

    layer: int
    name: str
    kind: str
    dim: int
    rows: int

    @property
    def nbytes(self) -> int:
        return self.dim * (self.dim + 1) // 2 * FACTOR_ELEM_BYTES

    @property
    def compute_flops(self) -> float:
        return 2.0 * self.rows * self.dim * self.dim

    @property
    def inverse_flops(self) -> float:
        return float(self.dim) ** 3


def factors(workload, batch: int) -> tuple[Factor, ...]:
    """The Kronecker factors of ``workload``'s weight layers for ``batch`` samples."""
    out = []
    for i, layer in enumerate(workload.layers):
        if layer.params == 0:
            continue
        for g in layer.gemms:
            if not g.shared:
                continue
            bias = layer.params > g.k * g.n * g.count
            rows = batch * g.m
            for _ in range(g.count):
                out.append(Factor(i, layer.name, "A", g.k + (1 if bias else 0), rows))
                out.append(Factor(i, layer.name, "G", g.n, rows))
    return tuple(out)


def place(costs, num_workers: int, placement: str) -> tuple[int, ...]:
    """The worker of each task (``costs`` in layer order): round robin, or longest first onto
    the least loaded worker (ties: lowest worker index)."""
    if placement not in PLACEMENTS:
        raise ConfigError(f"placement = {placement!r}: must be one of {', '.join(PLACEMENTS)}")
    if placement == "round_robin":
        return tuple(j % num_workers for j in range(len(costs)))
    owner = [0] * len(costs)
    heap = [(0.0, w) for w in range(num_workers)]
    for j in sorted(range(len(costs)), key=lambda j: (-costs[j], j)):
        load, w = heapq.heappop(heap)
        owner[j] = w
        heapq.heappush(heap, (load + costs[j], w))
    return tuple(owner)


@dataclass(frozen=True)
class KfacTiming:
    scheme: str
    placement: str
    iteration_s: float
    compute_s: float
    exposed_comm_s: float
    inverse_s: float
    inverse_gather_s: float
    precondition_s: float
    factor_bytes: int
    num_factors: int


def kfac_timeline(workload, batch: int, layers, comm, peak_flops: float, *, scheme: str = "pipelined",
                  placement: str = "balanced", inverse_efficiency: float = DEFAULT_INVERSE_EFFICIENCY,
                  iterations: int = 3, worker_factors: tuple[float, ...] | None = None) -> KfacTiming:
    """One K-FAC configuration's steady iteration (see the module docstring); ``layers``: the
    workload's :class:`LayerCost` on the device of ``peak_flops``. ``worker_factors``: each
    worker's compute slowdown (:mod:`hw_models.training.systems.profiled`): the factors'
    compute and the preconditioning at the slowest worker's speed, each worker's inversions
    at its own (``layers`` and ``comm`` come slowed by the caller)."""
    from hw_models.training.policies import MGWFBP, WaitFreeBackprop  # noqa: PLC0415
    from hw_models.training.timeline import simulate  # noqa: PLC0415

    if scheme not in SCHEMES:
        raise ConfigError(f"scheme = {scheme!r}: must be one of {', '.join(SCHEMES)}")
    if not (isinstance(inverse_efficiency, (int, float)) and 0 < inverse_efficiency <= 1):
        raise ConfigError(f"inverse_efficiency = {inverse_efficiency!r}: must be in (0, 1]")
    layers = as_layer_costs(layers)
    if len(layers) != len(workload.layers):
        raise ConfigError(f"{len(layers)} layer costs for {len(workload.layers)} layers of {workload.name}")
    fs = factors(workload, batch)
    n = comm.num_workers
    inv = [f.inverse_flops / (peak_flops * inverse_efficiency) for f in fs]
    owner = place(inv, n, placement)
    load = np.zeros(n)
    share = np.zeros(n)
    for f, c, w in zip(fs, inv, owner):
        load[w] += c
        share[w] += f.nbytes
    if worker_factors is not None:
        if len(worker_factors) != n:
            raise ConfigError(f"worker_factors: {len(worker_factors)} factors for {n} workers")
        load = load * np.asarray(worker_factors, dtype=float)
        peak_flops = peak_flops / max(worker_factors)
    inverse_s = float(load.max())
    gather_s = float(comm.all_gather_s(int(n * share.max()))) if n > 1 else 0.0
    pre_flops = 0.0
    for f in fs:
        if f.kind == "A":
            a, g = f.dim, next(x.dim for x in fs if x.layer == f.layer and x.kind == "G")
            pre_flops += 2.0 * (a * a * g + a * g * g)
    pre_s = pre_flops / peak_flops
    fbytes = sum(f.nbytes for f in fs)
    if scheme == "pipelined":
        extra_f = [0.0] * len(layers)
        extra_b = [0.0] * len(layers)
        extra_bytes = [0] * len(layers)
        for f in fs:
            s = f.compute_flops / peak_flops
            if f.kind == "A":
                extra_f[f.layer] += s
            else:
                extra_b[f.layer] += s
            extra_bytes[f.layer] += f.nbytes
        costs = [LayerCost(x.name, x.fwd_s + extra_f[i], x.bwd_s + extra_b[i], x.grad_bytes + extra_bytes[i])
                 for i, x in enumerate(layers)]
        policy = MGWFBP()
    else:
        block = sum(f.compute_flops for f in fs) / peak_flops
        costs = [LayerCost("kfac_factors", 0.0, block, fbytes)] + list(layers)
        policy = WaitFreeBackprop()
    opt = OptimizerCost(global_s=inverse_s + gather_s + pre_s)
    r = simulate(costs, comm, policy, iterations=iterations, optimizer=opt)
    return KfacTiming(scheme, placement, r.iteration_s, r.compute_s, r.exposed_comm_s, inverse_s, gather_s, pre_s,
                      fbytes, len(fs))


# ---- K-FAC on the small tasks --------------------------------------------------------------------


def kfac_sgd(task, lr: float, *, damping: float = 1e-2, decay: float = 0.95, target: float,
             max_iterations: int = 2000, eval_every: int = 5, label: str = "K-FAC"):
    """K-FAC on ``task``: per weight matrix (bias as an extra input row), running averages of
    the worker-averaged factors ``A = E[a a^T]`` and ``G = E[g g^T]``, the averaged gradient
    preconditioned as ``(A + sqrt(damping) I)^-1 dW (G + sqrt(damping) I)^-1``."""
    from hw_models.training.systems.tasks import run_until  # noqa: PLC0415

    n = task.workers
    samplers = task.samplers()
    w = task.init_params()
    sl = [s for _, s in task.layer_slices()]
    pairs = [(sl[2 * k], sl[2 * k + 1]) for k in range(len(sl) // 2)]
    state = {"A": None, "G": None}
    root = float(np.sqrt(damping))

    def step(t):
        grads, As, Gs = [], None, None
        for s in samplers:
            X, y = s.next()
            grads.append(task.loss_grad(w, X, y)[1])
            io = task.layer_io(w, X, y)
            a_f = [a.T @ a / len(y) for a, _ in io]
            g_f = [g.T @ g / len(y) for _, g in io]
            As = a_f if As is None else [p + q for p, q in zip(As, a_f)]
            Gs = g_f if Gs is None else [p + q for p, q in zip(Gs, g_f)]
        g = np.mean(grads, axis=0)
        As = [x / n for x in As]
        Gs = [x / n for x in Gs]
        if state["A"] is None:
            state["A"], state["G"] = As, Gs
        else:
            state["A"] = [decay * p + (1 - decay) * q for p, q in zip(state["A"], As)]
            state["G"] = [decay * p + (1 - decay) * q for p, q in zip(state["G"], Gs)]
        for (ws, bs), A, G in zip(pairs, state["A"], state["G"]):
            d_in, d_out = A.shape[0] - 1, G.shape[0]
            dW = np.vstack([g[ws].reshape(d_in, d_out), g[bs][None, :]])
            P = np.linalg.solve(A + root * np.eye(len(A)), dW)
            P = np.linalg.solve(G + root * np.eye(len(G)), P.T).T
            w[ws] -= lr * P[:-1].ravel()
            w[bs] -= lr * P[-1]
        return w

    return run_until(label, task, step, target=target, max_iterations=max_iterations, eval_every=eval_every)


__all__ = ["DEFAULT_INVERSE_EFFICIENCY", "Factor", "KfacTiming", "PLACEMENTS", "SCHEMES", "factors", "kfac_sgd",
           "kfac_timeline", "place"]
