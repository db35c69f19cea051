"""Batch-parallel passes: a minibatch split into ``parts`` row ranges, one per thread.

An MLP's forward pass, its backward pass and the replay gather are row-independent up to
the weight gradient, so each part runs the serial kernels of :mod:`maddpg.kernels` on its
rows (``prange`` over the parts; Numba's threads). Part ``p`` holds rows
``n * p // parts .. n * (p + 1) // parts``. The weight gradient of part ``p`` goes to row
``p`` of a ``[parts, n_params]`` buffer and the rows are summed in order into row 0 after
the parts have joined: processing elements with a wide accumulator each, then a reduction
(in fixed point, rounded to the Q format once, after it).

The arithmetic depends on ``parts`` and on nothing else: one thread or many, the same
values bit for bit. A forward pass is bit-identical to the unsplit one (every row is the
same sum in the same order); a weight gradient differs from the unsplit one by float32
rounding (partial sums added at the end).

One fork-join per pass: on 2 cores a join costs about 2 µs with Numba's OpenMP threading
layer, where the work of one pass at MADDPG's sizes is 50-300 µs.
"""

from __future__ import annotations

from numba import njit, prange

from maddpg import kernels as K
from maddpg.kernels import _wide_vectors

_PKW = dict(cache=True, fastmath=True, boundscheck=False, error_model="numpy", nogil=True, parallel=True)


@njit(cache=True, inline="always")
def _rows(n, p, parts):
    """Row range ``lo, hi`` of part ``p`` of ``n`` rows."""
    return n * p // parts, n * (p + 1) // parts


@njit(cache=True, inline="always")
def _layer(params, seg_start, layer):
    """Views of layer ``layer``'s ``W[in, out]`` and ``b[out]`` in a flat parameter vector."""
    s0 = seg_start[2 * layer]
    s1 = seg_start[2 * layer + 1]
    s2 = seg_start[2 * layer + 2]
    n_out = s2 - s1
    n_in = (s1 - s0) // n_out
    return params[s0:s1].reshape((n_in, n_out)), params[s1:s2]


@njit(cache=True, inline="always")
def _forward_rows(x, params, seg_start, wt, acts, p, lo, hi, tile_b, q_frac, q_bits, lanes):
    """Rows ``lo .. hi`` of an MLP's forward pass (ReLU after every layer but the last)."""
    nl = len(acts)
    w, b = _layer(params, seg_start, 0)
    K.dense_forward(x[lo:hi], w, wt[0][p], b, acts[0][lo:hi], nl > 1, tile_b, q_frac, q_bits, lanes)
    for layer in range(1, nl):
        w, b = _layer(params, seg_start, layer)
        K.dense_forward(acts[layer - 1][lo:hi], w, wt[layer][p], b, acts[layer][lo:hi], layer < nl - 1, tile_b,
                        q_frac, q_bits, lanes)


@njit(**_PKW)
def forward(x, params, seg_start, wt, acts, parts, tile_b, q_frac, q_bits, lanes):
    """An MLP's forward pass over ``x[batch, in]`` into the per-layer activations ``acts``.

    ``params`` and ``seg_start``: the flat parameter vector and its tensor boundaries
    (``W0, b0, W1, b1, ...``); ``wt``: per layer a ``[parts, out, in]`` scratch (each part
    its own transposed copy of the weights); ``lanes``: the CPU's register blocking
    (:func:`maddpg.kernels.host_lanes`), which does not change the results."""
    n = x.shape[0]
    for p in prange(parts):
        _wide_vectors()
        lo, hi = _rows(n, p, parts)
        _forward_rows(x, params, seg_start, wt, acts, p, lo, hi, tile_b, q_frac, q_bits, lanes)


@njit(**_PKW)
def forward_sample(x, params, seg_start, wt, acts, u, out, temperature, dst, col0, parts, tile_b, q_frac, q_bits,
                   lanes):
    """:func:`forward`, then the Gumbel-softmax sample of the logits with uniforms ``u``
    into ``out``, copied into the columns ``col0 ..`` of ``dst`` when ``col0 >= 0`` (a
    target actor's sample into the next-state critic input)."""
    n = x.shape[0]
    for p in prange(parts):
        _wide_vectors()
        lo, hi = _rows(n, p, parts)
        _forward_rows(x, params, seg_start, wt, acts, p, lo, hi, tile_b, q_frac, q_bits, lanes)
        K.gumbel_softmax(acts[len(acts) - 1][lo:hi], u[lo:hi], out[lo:hi], temperature, tile_b)
        if col0 >= 0:
            K.put_columns(out[lo:hi], dst[lo:hi], col0)


@njit(**_PKW)
def backward(x, dout, params, seg_start, wt, acts, grads, grad_parts, weights, col0, dx, parts, tile_b, q_frac, q_bits,
             lanes):
    """Back-propagate ``dout`` through the forward pass that left ``acts`` (input ``x``).

    ``weights``: the weight and bias gradients, part ``p``'s into ``grad_parts[p]`` (flat,
    the layout of ``params``), then summed in order into ``grad_parts[0]``; in fixed point
    the parts' sums stay wide (float32) and the total is rounded once. ``col0 >= 0``: the input gradient's columns ``col0 .. col0 + dx.shape[1]``
    into ``dx``. ``grads``: per layer the activations' gradient workspace. The ReLU
    gradient is fused into the input-gradient kernel of the layer above it."""
    n = x.shape[0]
    nl = len(acts)
    for p in prange(parts):
        _wide_vectors()
        lo, hi = _rows(n, p, parts)
        g = dout[lo:hi]
        for layer in range(nl - 1, 0, -1):
            w, b = _layer(params, seg_start, layer)
            h_in = acts[layer - 1][lo:hi]
            if weights:
                dw, db = _layer(grad_parts[p], seg_start, layer)
                K.dense_backward_weights(h_in, g, dw, db, 0, 0, lanes)  # wide (float) partial sums
            gi = grads[layer - 1][lo:hi]
            K.dense_backward_input(g, w, wt[layer][p], gi, 0, h_in, tile_b, q_frac, q_bits, lanes)
            g = gi
        w, b = _layer(params, seg_start, 0)
        if weights:
            dw, db = _layer(grad_parts[p], seg_start, 0)
            K.dense_backward_weights(x[lo:hi], g, dw, db, 0, 0, lanes)
        if col0 >= 0:
            K.dense_backward_input(g, w, wt[0][p], dx[lo:hi], col0, None, tile_b, q_frac, q_bits, lanes)
    if weights:
        total = grad_parts[0]
        for p in range(1, parts):
            part = grad_parts[p]
            for k in range(total.shape[0]):
                total[k] += part[k]
        if q_bits != 0:  # one rounding of the reduced sum, as the unsplit kernel rounds its sum
            K.quantize(total, total, q_frac, q_bits)


@njit(**_PKW)
def gather_transitions(oa, next_o, idx, c_in, c_in_next, parts):
    """:func:`maddpg.kernels.gather_transitions` with the minibatch's rows split into parts."""
    n = idx.shape[0]
    for p in prange(parts):
        lo, hi = _rows(n, p, parts)
        K.gather_transitions(oa, next_o, idx[lo:hi], c_in[lo:hi], c_in_next[lo:hi])


def effective_parts(parts: int, batch: int) -> int:
    """At most one part per row (a batch of 1, e.g. acting, runs as one part)."""
    return max(1, min(int(parts), int(batch)))


__all__ = ["forward", "forward_sample", "backward", "gather_transitions", "effective_parts"]
