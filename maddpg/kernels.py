"""HLS-style Numba kernels for MADDPG: dense layers, ReLU, Adam with clipping, soft target
update, Gumbel-softmax, fixed-point quantisation.

Every kernel is written the way an HLS engineer writes C for an FPGA:

* a fixed loop nest over (batch, output, input) whose bounds are the array shapes;
* an explicit batch tile ``tile_b``: the outer loop runs over ``ceil(B / tile_b)`` tiles and
  is the parallel loop (``prange``; one tile per processing element in hardware);
* caller-provided output buffers — nothing is allocated inside a kernel;
* float32 everywhere (accumulators included); an optional fixed-point mode rounds every
  kernel output to a signed Q-format ``q_bits`` wide with ``q_frac`` fraction bits and
  saturates, as a fixed-point datapath with a wide accumulator would (``q_bits = 0``: float).

Each kernel has a twin ``*_nest(shapes, tiling)`` returning a :class:`LoopNest` — its loop
bounds, tile and unroll factors and its work (MACs, words moved) as plain data. The
accelerator model turns a LoopNest into cycles; the kernel and its nest are defined side by
side from the same shapes, so they cannot drift. The unroll factor is an HLS pragma: on the
CPU, LLVM's vectoriser realises the innermost (contiguous) loop instead.

Layout: activations are ``[batch, features]`` row-major; a weight matrix is ``W[in, out]`` so
that the innermost loop of the forward pass and of the weight gradient walks contiguous
memory (``out``), and the input gradient is a contiguous dot product over ``out``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit, prange

# ---------------------------------------------------------------------------------------
# Loop nests as data
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Loop:
    """One loop of a nest: its name, trip count, tile size (1: untiled) and unroll factor."""

    name: str
    trip: int
    tile: int = 1
    unroll: int = 1
    parallel: bool = False

    @property
    def tiles(self) -> int:
        return -(-self.trip // self.tile)


@dataclass(frozen=True)
class Tiling:
    """Tile and unroll factors of a kernel (one value serves the CPU kernel and its nest).

    ``tile_b``: batch rows per parallel tile (the prange loop; a PE's share in hardware).
    ``unroll``: innermost-loop unroll / vector width an HLS tool would be told to use.
    """

    tile_b: int = 64
    unroll: int = 8

    def __post_init__(self) -> None:
        if self.tile_b < 1 or self.unroll < 1:
            raise ValueError(f"tile_b and unroll must be >= 1, got {self.tile_b}, {self.unroll}")


@dataclass(frozen=True)
class LoopNest:
    """A kernel's loop nest as plain data: outermost loop first.

    ``macs``: multiply-accumulates (or elementwise ops for non-MAC kernels);
    ``words_in`` / ``words_out``: array elements read / written once each (no reuse model).
    """

    kernel: str
    loops: tuple[Loop, ...]
    macs: int
    words_in: int
    words_out: int
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def iterations(self) -> int:
        """Innermost-body executions (product of trip counts)."""
        return math.prod(lp.trip for lp in self.loops)

    def as_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "loops": [lp.__dict__.copy() for lp in self.loops],
            "macs": self.macs,
            "words_in": self.words_in,
            "words_out": self.words_out,
        }


def dense_forward_nest(batch: int, n_in: int, n_out: int, tiling: Tiling = Tiling()) -> LoopNest:
    return LoopNest(
        "dense_forward",
        (
            Loop("batch", batch, tile=tiling.tile_b, parallel=True),
            Loop("in", n_in),
            Loop("out", n_out, unroll=tiling.unroll),
        ),
        macs=batch * n_in * n_out,
        words_in=batch * n_in + n_in * n_out + n_out,
        words_out=batch * n_out,
    )


def dense_backward_weights_nest(batch: int, n_in: int, n_out: int, tiling: Tiling = Tiling()) -> LoopNest:
    return LoopNest(
        "dense_backward_weights",
        (
            Loop("in", n_in, parallel=True),
            Loop("batch", batch),
            Loop("out", n_out, unroll=tiling.unroll),
        ),
        macs=batch * n_in * n_out + batch * n_out,  # dW and the bias sum
        words_in=batch * n_in + batch * n_out,
        words_out=n_in * n_out + n_out,
    )


def dense_backward_input_nest(batch: int, n_in: int, n_out: int, tiling: Tiling = Tiling()) -> LoopNest:
    return LoopNest(
        "dense_backward_input",
        (
            Loop("batch", batch, tile=tiling.tile_b, parallel=True),
            Loop("in", n_in),
            Loop("out", n_out, unroll=tiling.unroll),
        ),
        macs=batch * n_in * n_out,
        words_in=batch * n_out + n_in * n_out,
        words_out=batch * n_in,
    )


def relu_backward_nest(batch: int, n: int, tiling: Tiling = Tiling()) -> LoopNest:
    return LoopNest(
        "relu_backward",
        (Loop("batch", batch, tile=tiling.tile_b, parallel=True), Loop("feature", n, unroll=tiling.unroll)),
        macs=batch * n,
        words_in=2 * batch * n,
        words_out=batch * n,
    )


def adam_nest(n_params: int, n_segments: int, tiling: Tiling = Tiling()) -> LoopNest:
    """Two passes over the parameters: the per-segment gradient norm, then the update."""
    return LoopNest(
        "adam_clip",
        (Loop("pass", 2), Loop("param", n_params, unroll=tiling.unroll)),
        macs=n_params * 8,
        words_in=4 * n_params,
        words_out=3 * n_params,
        extra={"segments": n_segments},
    )


def soft_update_nest(n_params: int, tiling: Tiling = Tiling()) -> LoopNest:
    return LoopNest(
        "soft_update",
        (Loop("param", n_params, unroll=tiling.unroll),),
        macs=2 * n_params,
        words_in=2 * n_params,
        words_out=n_params,
    )


def gumbel_softmax_nest(batch: int, n_act: int, tiling: Tiling = Tiling()) -> LoopNest:
    return LoopNest(
        "gumbel_softmax",
        (Loop("batch", batch, tile=tiling.tile_b, parallel=True), Loop("pass", 3), Loop("action", n_act)),
        macs=batch * n_act * 4,
        words_in=2 * batch * n_act,
        words_out=batch * n_act,
        extra={"exp": batch * n_act, "log": 2 * batch * n_act},
    )


# ---------------------------------------------------------------------------------------
# Fixed point
# ---------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def q_round(x, q_frac, q_bits):
    """Round ``x`` to signed Q(q_bits - q_frac - 1).(q_frac), nearest, ties to even; saturate.

    ``q_bits == 0`` returns ``x`` unchanged (float mode).
    """
    if q_bits == 0:
        return x
    scale = np.float32(2.0**q_frac)
    hi = np.float32(2.0 ** (q_bits - 1) - 1)
    lo = np.float32(-(2.0 ** (q_bits - 1)))
    k = np.float32(np.rint(np.float64(x) * scale))
    if k > hi:
        k = hi
    elif k < lo:
        k = lo
    return np.float32(k / scale)


@njit(cache=True)
def quantize(x, out, q_frac, q_bits):
    """Elementwise fixed-point rounding of a flat array into ``out`` (may alias ``x``)."""
    for i in range(x.shape[0]):
        out[i] = q_round(x[i], q_frac, q_bits)


# ---------------------------------------------------------------------------------------
# Dense layer and ReLU
# ---------------------------------------------------------------------------------------


NARROW_OUT = 8  # below this output width the forward pass switches from axpy to dot-product order


@njit(cache=True, parallel=True, fastmath=True)
def dense_forward(x, w, b, y, relu, tile_b, q_frac, q_bits):
    """``y[b, o] = act(sum_i x[b, i] * w[i, o] + b[o])``; ``act`` is ReLU if ``relu`` else identity."""
    n_batch = x.shape[0]
    n_in = x.shape[1]
    n_out = w.shape[1]
    n_tiles = (n_batch + tile_b - 1) // tile_b
    for t in prange(n_tiles):
        b_end = min((t + 1) * tile_b, n_batch)
        for bb in range(t * tile_b, b_end):
            if n_out >= NARROW_OUT:
                # wide layer: broadcast x[b, i], stream the contiguous row w[i, :] (axpy)
                for o in range(n_out):
                    y[bb, o] = b[o]
                for i in range(n_in):
                    xi = x[bb, i]
                    for o in range(n_out):
                        y[bb, o] += xi * w[i, o]
            else:
                # narrow layer (a critic's 1-wide head): a dot product per output
                for o in range(n_out):
                    acc = b[o]
                    for i in range(n_in):
                        acc += x[bb, i] * w[i, o]
                    y[bb, o] = acc
            for o in range(n_out):
                v = y[bb, o]
                if relu and v < 0:
                    v = np.float32(0.0)
                y[bb, o] = q_round(v, q_frac, q_bits)


@njit(cache=True, parallel=True, fastmath=True)
def relu_forward(x, y, tile_b):
    """``y = max(x, 0)`` (the standalone ReLU; dense_forward fuses it)."""
    n_batch = x.shape[0]
    n = x.shape[1]
    n_tiles = (n_batch + tile_b - 1) // tile_b
    for t in prange(n_tiles):
        for bb in range(t * tile_b, min((t + 1) * tile_b, n_batch)):
            for j in range(n):
                v = x[bb, j]
                y[bb, j] = v if v > 0 else np.float32(0.0)


@njit(cache=True, parallel=True, fastmath=True)
def relu_backward(y, dy, dx, tile_b):
    """``dx = dy * (y > 0)`` where ``y`` is the ReLU's output (``dx`` may alias ``dy``)."""
    n_batch = y.shape[0]
    n = y.shape[1]
    n_tiles = (n_batch + tile_b - 1) // tile_b
    for t in prange(n_tiles):
        for bb in range(t * tile_b, min((t + 1) * tile_b, n_batch)):
            for j in range(n):
                dx[bb, j] = dy[bb, j] if y[bb, j] > 0 else np.float32(0.0)


@njit(cache=True, parallel=True, fastmath=True)
def dense_backward_weights(x, dy, dw, db, q_frac, q_bits):
    """``dw[i, o] = sum_b x[b, i] dy[b, o]``, ``db[o] = sum_b dy[b, o]`` (overwrites dw, db).

    Parallel over ``in`` rows: each output element has one writer and a fixed summation
    order, so the result is deterministic whatever the thread count.
    """
    n_batch = x.shape[0]
    n_in = x.shape[1]
    n_out = dy.shape[1]
    for i in prange(n_in + 1):
        if i < n_in:
            if n_out >= NARROW_OUT:
                for o in range(n_out):
                    dw[i, o] = 0.0
                for bb in range(n_batch):
                    xi = x[bb, i]
                    for o in range(n_out):
                        dw[i, o] += xi * dy[bb, o]
            else:
                for o in range(n_out):
                    acc = np.float32(0.0)
                    for bb in range(n_batch):
                        acc += x[bb, i] * dy[bb, o]
                    dw[i, o] = acc
            for o in range(n_out):
                dw[i, o] = q_round(dw[i, o], q_frac, q_bits)
        else:  # one extra "row" computes the bias gradient
            for o in range(n_out):
                db[o] = 0.0
            for bb in range(n_batch):
                for o in range(n_out):
                    db[o] += dy[bb, o]
            for o in range(n_out):
                db[o] = q_round(db[o], q_frac, q_bits)


@njit(cache=True, parallel=True, fastmath=True)
def dense_backward_input(dy, w, dx, tile_b, q_frac, q_bits):
    """``dx[b, i] = sum_o dy[b, o] * w[i, o]`` (overwrites dx)."""
    n_batch = dy.shape[0]
    n_in = w.shape[0]
    n_out = w.shape[1]
    n_tiles = (n_batch + tile_b - 1) // tile_b
    for t in prange(n_tiles):
        for bb in range(t * tile_b, min((t + 1) * tile_b, n_batch)):
            for i in range(n_in):
                acc = np.float32(0.0)
                for o in range(n_out):
                    acc += dy[bb, o] * w[i, o]
                dx[bb, i] = q_round(acc, q_frac, q_bits)


# ---------------------------------------------------------------------------------------
# Optimiser and target networks (flat parameter vectors)
# ---------------------------------------------------------------------------------------


@njit(cache=True)
def adam_clip(param, grad, m, v, seg_start, step, lr, beta1, beta2, eps, clip_norm, q_frac, q_bits):
    """One Adam step on a flat parameter vector, with per-tensor gradient-norm clipping.

    ``seg_start`` (int64, length n_segments + 1) delimits the tensors inside ``param``; each
    tensor's gradient is scaled by ``min(1, clip_norm / ||g||)`` first (``clip_norm <= 0``:
    no clipping) — TensorFlow's ``clip_by_norm`` per variable, as openai/maddpg does.
    ``step`` is the 1-based step count after this update. Bias-corrected Adam:
    ``m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr * m_hat / (sqrt(v_hat) + eps)``.
    ``grad`` is overwritten by the clipped gradient.
    """
    bc1 = np.float32(1.0 - beta1**step)
    bc2 = np.float32(1.0 - beta2**step)
    b1 = np.float32(beta1)
    b2 = np.float32(beta2)
    lr32 = np.float32(lr)
    eps32 = np.float32(eps)
    for s in range(seg_start.shape[0] - 1):
        lo = seg_start[s]
        hi = seg_start[s + 1]
        if clip_norm > 0:
            sq = 0.0  # float64 accumulator: the norm is a single scalar per tensor
            for k in range(lo, hi):
                sq += np.float64(grad[k]) * np.float64(grad[k])
            norm = math.sqrt(sq)
            if norm > clip_norm:
                scale = np.float32(clip_norm / norm)
                for k in range(lo, hi):
                    grad[k] = grad[k] * scale
        for k in range(lo, hi):
            g = grad[k]
            mk = b1 * m[k] + (np.float32(1.0) - b1) * g
            vk = b2 * v[k] + (np.float32(1.0) - b2) * g * g
            m[k] = mk
            v[k] = vk
            upd = lr32 * (mk / bc1) / (np.float32(math.sqrt(vk / bc2)) + eps32)
            param[k] = q_round(param[k] - upd, q_frac, q_bits)


@njit(cache=True)
def soft_update(target, source, tau):
    """Polyak averaging ``target = (1 - tau) * target + tau * source`` on flat vectors."""
    t32 = np.float32(tau)
    keep = np.float32(1.0) - t32
    for k in range(target.shape[0]):
        target[k] = keep * target[k] + t32 * source[k]


# ---------------------------------------------------------------------------------------
# Gumbel-softmax (discrete actions)
# ---------------------------------------------------------------------------------------


@njit(cache=True, parallel=True, fastmath=False)
def gumbel_softmax(logits, u, out, temperature, tile_b):
    """``out = softmax((logits - log(-log(u))) / temperature)`` row-wise.

    ``u`` holds uniform samples in (0, 1) drawn by the caller (so the kernel has no RNG
    state and a seed reproduces everything); ``u = None``-like behaviour (plain softmax)
    is obtained by passing ``u`` filled with ``exp(-1)`` (Gumbel noise 0).
    """
    n_batch = logits.shape[0]
    n_act = logits.shape[1]
    inv_t = np.float32(1.0 / temperature)
    n_tiles = (n_batch + tile_b - 1) // tile_b
    for t in prange(n_tiles):
        for bb in range(t * tile_b, min((t + 1) * tile_b, n_batch)):
            mx = np.float32(-np.inf)
            for a in range(n_act):
                z = (logits[bb, a] - np.float32(math.log(-math.log(u[bb, a])))) * inv_t
                out[bb, a] = z
                if z > mx:
                    mx = z
            s = np.float32(0.0)
            for a in range(n_act):
                e = np.float32(math.exp(out[bb, a] - mx))
                out[bb, a] = e
                s += e
            for a in range(n_act):
                out[bb, a] = out[bb, a] / s


@njit(cache=True, parallel=True, fastmath=True)
def gumbel_softmax_backward(out, dout, dlogits, temperature, tile_b):
    """Gradient through the softmax of :func:`gumbel_softmax` (noise is a constant):
    ``dlogits = out * (dout - sum(dout * out)) / temperature`` (overwrites dlogits)."""
    n_batch = out.shape[0]
    n_act = out.shape[1]
    inv_t = np.float32(1.0 / temperature)
    n_tiles = (n_batch + tile_b - 1) // tile_b
    for t in prange(n_tiles):
        for bb in range(t * tile_b, min((t + 1) * tile_b, n_batch)):
            dot = np.float32(0.0)
            for a in range(n_act):
                dot += dout[bb, a] * out[bb, a]
            for a in range(n_act):
                dlogits[bb, a] = out[bb, a] * (dout[bb, a] - dot) * inv_t


# ---------------------------------------------------------------------------------------
# Data movement and small fused loss kernels
# ---------------------------------------------------------------------------------------


@njit(cache=True)
def gather_rows(src, idx, dst):
    """``dst[k, :] = src[idx[k], :]`` (the replay-buffer DMA of one sampled batch)."""
    n = src.shape[1]
    for k in range(idx.shape[0]):
        r = idx[k]
        for j in range(n):
            dst[k, j] = src[r, j]


@njit(cache=True)
def put_columns(src, dst, col0):
    """``dst[:, col0:col0 + w] = src`` (building a critic's concatenated input)."""
    w = src.shape[1]
    for k in range(src.shape[0]):
        for j in range(w):
            dst[k, col0 + j] = src[k, j]


@njit(cache=True)
def take_columns(src, col0, dst):
    """``dst = src[:, col0:col0 + w]`` into a contiguous buffer."""
    w = dst.shape[1]
    for k in range(dst.shape[0]):
        for j in range(w):
            dst[k, j] = src[k, col0 + j]


@njit(cache=True)
def td_loss_grad(q, q_next, rew, done, gamma, dq):
    """Critic loss ``mean((q - y)^2)`` with ``y = r + gamma (1 - done) q_next``: writes
    ``dq = 2 (q - y) / B`` and returns the loss."""
    n = q.shape[0]
    loss = 0.0
    for k in range(n):
        y = rew[k] + np.float32(gamma) * (np.float32(1.0) - done[k]) * q_next[k, 0]
        d = q[k, 0] - y
        loss += np.float64(d) * d
        dq[k, 0] = np.float32(2.0) * d / np.float32(n)
    return loss / n


@njit(cache=True)
def add_l2_grad(dlogits, logits, coef):
    """``dlogits += coef * 2 * logits / logits.size`` — the gradient of ``coef * mean(logits^2)``."""
    scale = np.float32(2.0 * coef / (logits.shape[0] * logits.shape[1]))
    for k in range(logits.shape[0]):
        for a in range(logits.shape[1]):
            dlogits[k, a] += scale * logits[k, a]


# Serial builds of the same definitions, for a batch that fits one tile (acting on one
# observation, small batches): there is only one tile to run, and a parallel launch costs
# more than the work. Same loop nest, same results.
dense_forward_serial = njit(cache=True, fastmath=True)(dense_forward.py_func)
dense_backward_weights_serial = njit(cache=True, fastmath=True)(dense_backward_weights.py_func)
dense_backward_input_serial = njit(cache=True, fastmath=True)(dense_backward_input.py_func)
relu_backward_serial = njit(cache=True, fastmath=True)(relu_backward.py_func)
gumbel_softmax_serial = njit(cache=True)(gumbel_softmax.py_func)
gumbel_softmax_backward_serial = njit(cache=True, fastmath=True)(gumbel_softmax_backward.py_func)
