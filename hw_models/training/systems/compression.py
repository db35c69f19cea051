"""Gradient compression with error feedback: the compressors, their bytes on the network,
their cost on the compute timeline, and convergence against full precision.

Compressors (one tensor at a time, per layer):

* ``topk`` -- the ``ratio * n`` largest magnitudes (values and int32 indices on the wire);
* ``randk`` -- ``ratio * n`` elements at positions drawn from a seed shared by all workers
  (values only on the wire, plus the 8-byte seed);
* ``threshold`` -- elements with magnitude >= a threshold that is recomputed (as the k-th
  largest magnitude) only every ``refresh`` iterations and reused in between, as DCT does
  (values and indices; the count varies);
* ``onebit`` -- the sign of every element times one scale, the mean magnitude
  ``||x||_1 / n`` (1-bit SGD; 1 bit per element and a 4-byte scale); its squared error is
  exactly ``||x||^2 - ||x||_1^2 / n``;
* ``eightbit`` -- round-to-nearest onto 255 levels ``scale * {-127..127}``, ``scale =
  max|x| / 127`` (one byte per element and a 4-byte scale); every element's error is at most
  ``scale / 2``.

**Error feedback** (local): worker ``i`` sends ``c = C(g_i + e_i)`` and keeps ``e_i <- g_i +
e_i - c``, so nothing is lost, only delayed: the sum of what was sent plus the residual
equals the sum of the gradients. **Gradient mismatch**: the gradient is evaluated at the
model ``w_t`` while error feedback follows the virtual model ``w_t - lr * mean_i(e_i)``. The
two fixes (Xu et al., "Step-Ahead Error Feedback for Distributed Training with Compressed
Gradient", AAAI 2021, as read here): **step ahead** -- worker ``i`` evaluates its gradient
at ``w_t - lr * e_i`` (its own residual, the local estimate of the virtual model); **error
averaging** -- every ``average_every`` iterations the workers all-reduce their residuals
(``e_i <- mean_j e_j``), a dense all-reduce on the timeline.

**Timeline** (:func:`compressed_timeline`): compressing a layer's gradient is compute on the
worker right after its backward pass (``passes`` reads of the dense gradient at the device's
memory bandwidth), so it delays the rest of the backward pass and the next iteration;
compressed gradients cannot be summed on the wire, so each layer's exchange is an
**all-gather** of every worker's compressed bytes on the same network; decompressing and
summing the ``N`` received parts is compute before the layer's next forward pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hw_models.training.comm import CommModel, describe
from hw_models.training.costs import LayerCost, OptimizerCost, as_layer_costs
from noc.base.errors import ConfigError

KINDS = ("none", "topk", "randk", "threshold", "onebit", "eightbit")
FIXES = ("none", "step_ahead", "error_averaging", "both")
SPECS = ", ".join(("topk:RATIO", "randk:RATIO", "threshold:RATIO[:REFRESH]", "onebit", "eightbit"))  # --compressors'
INDEX_BYTES = 4
VALUE_BYTES = 4
# reads of the dense gradient per compression (selection, packing), error feedback included
PASSES = {"none": 0.0, "topk": 4.0, "randk": 2.0, "threshold": 2.0, "onebit": 3.0, "eightbit": 3.0}


@dataclass(frozen=True)
class Compressor:
    """``kind`` (one of :data:`KINDS`), the kept share ``ratio`` for the sparsifiers and the
    threshold's ``refresh`` period in iterations."""

    kind: str = "topk"
    ratio: float = 0.01
    refresh: int = 50

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConfigError(f"compressor = {self.kind!r}: must be one of {', '.join(KINDS)}")
        r = self.ratio
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0.0 < r <= 1.0:
            raise ConfigError(f"ratio = {r!r}: must be a share in (0, 1]")
        if isinstance(self.refresh, bool) or not isinstance(self.refresh, int) or self.refresh < 1:
            raise ConfigError(f"refresh = {self.refresh!r}: must be an integer >= 1 (iterations)")

    @property
    def label(self) -> str:
        return self._named(" ", f"{self.ratio:g}", "/")

    @property
    def spec(self) -> str:
        """The compressor as ``--compressors`` names it (``topk:0.01``), exactly."""
        return self._named(":", repr(self.ratio), ":")

    def _named(self, sep: str, ratio: str, refresh_sep: str) -> str:
        if self.kind in ("topk", "randk"):
            return f"{self.kind}{sep}{ratio}"
        if self.kind == "threshold":
            return f"threshold{sep}{ratio}{refresh_sep}{self.refresh}"
        return self.kind

    def k(self, n: int) -> int:
        return max(1, int(math.ceil(self.ratio * n))) if n else 0

    def wire_bytes(self, n: int, kept: int | None = None) -> int:
        """Bytes one worker sends for an ``n``-element fp32 tensor (``kept``: elements a
        threshold kept; default its expected ``k``)."""
        if n == 0:
            return 0
        if self.kind == "none":
            return n * VALUE_BYTES
        if self.kind == "topk":
            return self.k(n) * (VALUE_BYTES + INDEX_BYTES)
        if self.kind == "randk":
            return self.k(n) * VALUE_BYTES + 8
        if self.kind == "threshold":
            return (self.k(n) if kept is None else kept) * (VALUE_BYTES + INDEX_BYTES)
        if self.kind == "onebit":
            return -(-n // 8) + 4
        return n + 4  # eightbit

    def passes(self) -> float:
        """Dense reads per compression, the threshold's occasional top-k amortised."""
        p = PASSES[self.kind]
        if self.kind == "threshold":
            p += PASSES["topk"] / self.refresh
        return p


# ---- the compressors on numbers ---------------------------------------------------------------


def topk(x: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` largest magnitudes of ``x`` (ties broken by position), others zero."""
    out = np.zeros_like(x)
    if k >= x.size:
        return x.copy()
    idx = np.argpartition(-np.abs(x), k - 1, kind="introselect")[:k]
    out[idx] = x[idx]
    return out


def randk(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    out = np.zeros_like(x)
    idx = rng.choice(x.size, size=min(k, x.size), replace=False)
    out[idx] = x[idx]
    return out


def onebit(x: np.ndarray) -> np.ndarray:
    """``scale * sign(x)`` with ``scale = ||x||_1 / n`` (zeros map to +scale)."""
    if x.size == 0:
        return x.copy()
    scale = np.abs(x).mean()
    return np.where(x >= 0, scale, -scale)


def eightbit(x: np.ndarray) -> np.ndarray:
    m = np.abs(x).max() if x.size else 0.0
    if m == 0:
        return np.zeros_like(x)
    scale = m / 127.0
    return np.clip(np.rint(x / scale), -127, 127) * scale


class WorkerCompressor:
    """One worker's compressor state over the tensors given by ``slices`` (the threshold per
    tensor and when it was set), and the bytes it sent."""

    def __init__(self, comp: Compressor, slices: list[slice], seed: int):
        self.comp, self.slices = comp, slices
        self.thresholds = [None] * len(slices)
        self.bytes_sent = 0
        self.seed = seed

    def __call__(self, x: np.ndarray, t: int) -> np.ndarray:
        out = np.zeros_like(x)
        c = self.comp
        for j, s in enumerate(self.slices):
            v = x[s]
            n = v.size
            if c.kind == "none":
                out[s] = v
            elif c.kind == "topk":
                out[s] = topk(v, c.k(n))
            elif c.kind == "randk":  # positions shared by all workers: the seed is (seed, t, tensor)
                out[s] = randk(v, c.k(n), np.random.default_rng([self.seed, t, j]))
            elif c.kind == "threshold":
                if self.thresholds[j] is None or t % c.refresh == 0:
                    k = c.k(n)
                    self.thresholds[j] = np.partition(np.abs(v), n - k)[n - k] if k < n else 0.0
                keep = np.abs(v) >= self.thresholds[j]
                out[s] = np.where(keep, v, 0.0)
                self.bytes_sent += c.wire_bytes(n, int(keep.sum()))
                continue
            elif c.kind == "onebit":
                out[s] = onebit(v)
            else:
                out[s] = eightbit(v)
            self.bytes_sent += c.wire_bytes(n)
        return out


# ---- convergence -------------------------------------------------------------------------------


def ef_sgd(task, comp: Compressor, lr: float, *, error_feedback: bool = True, fix: str = "none",
           average_every: int = 10, target: float, max_iterations: int = 2000, eval_every: int = 5, label=None):
    """Data-parallel SGD with every worker's gradient compressed (see the module docstring);
    returns a :class:`~hw_models.training.systems.tasks.Convergence` whose ``extra`` has the
    bytes each worker sent per iteration (mean) against full precision."""
    from hw_models.training.systems.tasks import run_until  # noqa: PLC0415

    if fix not in FIXES:
        raise ConfigError(f"fix = {fix!r}: must be one of {', '.join(FIXES)}")
    if fix != "none" and not error_feedback:
        raise ConfigError(f"fix = {fix!r} corrects error feedback; it needs error_feedback = True")
    if isinstance(average_every, bool) or not isinstance(average_every, int) or average_every < 1:
        raise ConfigError(f"average_every = {average_every!r}: must be an integer >= 1 (iterations)")
    n = task.workers
    w = task.init_params()
    samplers = task.samplers()
    slices = [s for _, s in task.layer_slices()]
    workers = [WorkerCompressor(comp, slices, task.seed) for _ in range(n)]
    err = np.zeros((n, task.num_params))
    ahead = fix in ("step_ahead", "both")
    averaging = fix in ("error_averaging", "both")
    done = {"t": 0}

    def step(t):
        sent = np.empty_like(err)
        for i in range(n):
            at = w - lr * err[i] if ahead else w
            p = samplers[i].grad(at) + (err[i] if error_feedback else 0.0)
            sent[i] = workers[i](p, t)
            if error_feedback:
                err[i] = p - sent[i]
        if averaging and (t + 1) % average_every == 0:
            err[:] = err.mean(axis=0)
        w[:] -= lr * sent.mean(axis=0)
        done["t"] = t + 1
        return w

    name = label or (f"{comp.label}" + ("" if comp.kind == "none" else (" + EF" if error_feedback else " (no EF)"))
                     + ("" if fix == "none" else f" + {fix.replace('_', ' ')}"))

    def extra():
        per_iter = sum(x.bytes_sent for x in workers) / n / max(done["t"], 1)
        return {"bytes_per_worker_iteration": per_iter, "dense_bytes": task.num_params * VALUE_BYTES}

    return run_until(name, task, step, target=target, max_iterations=max_iterations, eval_every=eval_every,
                     extra=extra)


# ---- timeline --------------------------------------------------------------------------------


class CompressedComm:
    """A communication model whose "all-reduce" of a gradient part is the all-gather of every
    worker's compressed part (``N * wire_bytes``) on ``inner``'s network."""

    def __init__(self, inner: CommModel, comp: Compressor, element_bytes: int = VALUE_BYTES):
        self.inner, self.comp, self.element_bytes = inner, comp, element_bytes
        self.num_workers = inner.num_workers

    def wire(self, nbytes: int) -> int:
        return self.comp.wire_bytes(-(-int(nbytes) // self.element_bytes))

    def allreduce_s(self, nbytes: int) -> float:
        if self.comp.kind == "none":
            return self.inner.allreduce_s(nbytes)
        return self.inner.all_gather_s(self.num_workers * self.wire(nbytes)) if nbytes else 0.0

    def reduce_scatter_s(self, nbytes: int) -> float:
        raise ConfigError("compressed gradients are exchanged whole (all-gather); use a policy that all-reduces")

    all_gather_s = reduce_scatter_s

    def describe(self) -> str:
        return f"{self.comp.label} all-gather over {describe(self.inner)}"


def compression_costs(layers, comp: Compressor, num_workers: int, mem_bytes_per_s: float):
    """The layers with compression added to each backward pass and the per-layer
    decompress-and-sum cost (an :class:`OptimizerCost`), in seconds."""
    layers = as_layer_costs(layers)
    if not (isinstance(mem_bytes_per_s, (int, float)) and mem_bytes_per_s > 0):
        raise ConfigError(f"mem_bytes_per_s = {mem_bytes_per_s!r}: must be > 0")
    out, upd = [], []
    for x in layers:
        n = x.grad_bytes // VALUE_BYTES
        if comp.kind == "none" or n == 0:
            out.append(x)
            upd.append(0.0)
            continue
        out.append(LayerCost(x.name, x.fwd_s, x.bwd_s + comp.passes() * x.grad_bytes / mem_bytes_per_s, x.grad_bytes))
        # read N compressed parts, accumulate into a dense buffer (read + write)
        upd.append((num_workers * comp.wire_bytes(n) + 2 * x.grad_bytes) / mem_bytes_per_s)
    return tuple(out), OptimizerCost(per_layer_s=tuple(upd))


@dataclass(frozen=True)
class CompressionTiming:
    label: str
    iteration_s: float
    compute_s: float
    exposed_comm_s: float
    wire_bytes_per_worker: int
    dense_bytes: int
    extra: dict = field(default_factory=dict)


def compressed_timeline(layers, comm: CommModel, comp: Compressor, policy, *, mem_bytes_per_s: float,
                        fix: str = "none", average_every: int = 10, iterations: int = 3) -> CompressionTiming:
    """Steady-state iteration of ``layers`` with every gradient compressed by ``comp``; with
    error averaging, one dense all-reduce of all residuals every ``average_every``
    iterations, after the step (exposed: the next forward pass needs the averaged errors
    with step ahead), amortised over the period."""
    from hw_models.training.timeline import simulate  # noqa: PLC0415

    if fix not in FIXES:
        raise ConfigError(f"fix = {fix!r}: must be one of {', '.join(FIXES)}")
    costs, opt = compression_costs(layers, comp, comm.num_workers, mem_bytes_per_s)
    r = simulate(costs, CompressedComm(comm, comp), policy, iterations=iterations, optimizer=opt)
    dense = sum(x.grad_bytes for x in costs)
    wire = sum(comp.wire_bytes(x.grad_bytes // VALUE_BYTES) for x in costs)
    it_s, extra = r.iteration_s, {}
    if fix in ("error_averaging", "both") and comp.kind != "none":
        avg_s = comm.allreduce_s(dense)
        it_s += avg_s / average_every
        extra["error_averaging_s_per_iteration"] = avg_s / average_every
    # a step ahead costs one dense axpy (read w, e; write) per iteration
    if fix in ("step_ahead", "both") and comp.kind != "none":
        ahead_s = 3 * dense / mem_bytes_per_s
        it_s += ahead_s
        extra["step_ahead_s"] = ahead_s
    return CompressionTiming(comp.label + ("" if fix == "none" else f" + {fix}"), it_s, r.compute_s,
                             r.exposed_comm_s, wire, dense, extra)


__all__ = ["CompressedComm", "Compressor", "CompressionTiming", "FIXES", "KINDS", "WorkerCompressor",
           "compressed_timeline", "compression_costs", "ef_sgd", "eightbit", "onebit", "randk", "topk"]
