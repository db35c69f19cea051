"""A multilayer perceptron over flat parameter vectors, driving the kernels of :mod:`maddpg.kernels`.

An :class:`MLP` owns one flat float32 parameter vector (and a gradient vector of the same
layout); each layer's ``W[in, out]`` and ``b[out]`` are views into it, so Adam and the soft
target update run once over the whole network. Activations and gradients live in
workspaces allocated once per batch size — the kernels themselves never allocate.

With ``parts > 1`` a pass splits the batch into that many row ranges run in parallel
(:mod:`maddpg.batch_parts`); the weight gradient is the in-order sum of the parts'.
"""

from __future__ import annotations

import numpy as np

from maddpg import batch_parts as P
from maddpg import kernels as K


class _Workspace:
    def __init__(self, batch: int, sizes: list[int]) -> None:
        self.batch = batch
        self.acts = tuple(K.aligned_zeros((batch, n)) for n in sizes[1:])
        self.grads = tuple(K.aligned_zeros((batch, n)) for n in sizes[1:])
        self.dx: dict[int, np.ndarray] = {}  # input-gradient buffers by width

    def dx_buffer(self, width: int) -> np.ndarray:
        buf = self.dx.get(width)
        if buf is None:
            buf = self.dx[width] = K.aligned_zeros((self.batch, width))
        return buf


class MLP:
    """``sizes = [in, h1, ..., out]``; ReLU after every layer but the last (linear output)."""

    def __init__(self, sizes: list[int], tiling: K.Tiling = K.Tiling(), q_frac: int = 0, q_bits: int = 0,
                 parts: int = 1, lanes: int | None = None) -> None:
        if int(parts) < 1:
            raise ValueError(f"parts must be >= 1, got {parts}")
        self.lanes = K.host_lanes() if lanes is None else int(lanes)  # the CPU's register blocking
        if self.lanes not in K.CPU_COLS:
            raise ValueError(f"lanes: {lanes} is not a vector width; allowed: {sorted(K.CPU_COLS)}")
        self.sizes = [int(s) for s in sizes]
        self.parts = int(parts)
        self.tiling = tiling
        self.q_frac = int(q_frac)
        self.q_bits = int(q_bits)
        starts = [0]
        for n_in, n_out in zip(self.sizes[:-1], self.sizes[1:]):
            starts.append(starts[-1] + n_in * n_out)
            starts.append(starts[-1] + n_out)
        self.seg_start = np.asarray(starts, np.int64)
        self.n_params = int(starts[-1])
        # 64-byte aligned (so is every layer's W and b when the widths are multiples of 16)
        self.params = K.aligned_zeros(self.n_params)
        # one weight-gradient row per batch part, each starting on a cache line; row 0 is
        # the gradient (the parts' sum)
        stride = -(-self.n_params // 16) * 16
        self.grad_parts = K.aligned_zeros((self.parts, stride))
        self.grad = self.grad_parts[0, : self.n_params]
        self.W, self.b = self._views(self.params)
        self.dW, self.db = self._views(self.grad)
        # per layer [parts, out, in]: transposed weights (the narrow forward's and the input
        # gradient's operand), one copy per part, rewritten on every call that uses them
        self.WT = tuple(K.aligned_zeros((self.parts, n_out, n_in)) for n_in, n_out in zip(self.sizes[:-1], self.sizes[1:]))
        self._ws: dict[int, _Workspace] = {}
        self._x: np.ndarray | None = None

    def _views(self, flat: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        ws, bs = [], []
        for layer, (n_in, n_out) in enumerate(zip(self.sizes[:-1], self.sizes[1:])):
            s = self.seg_start[2 * layer]
            ws.append(flat[s : s + n_in * n_out].reshape(n_in, n_out))
            s = self.seg_start[2 * layer + 1]
            bs.append(flat[s : s + n_out])
        return ws, bs

    def init_glorot(self, rng: np.random.Generator) -> None:
        """Glorot-uniform weights, zero biases (TensorFlow's dense-layer defaults)."""
        for w, b in zip(self.W, self.b):
            limit = np.sqrt(6.0 / (w.shape[0] + w.shape[1]))
            w[...] = rng.uniform(-limit, limit, size=w.shape).astype(np.float32)
            b[...] = 0.0
        if self.q_bits:
            K.quantize(self.params, self.params, self.q_frac, self.q_bits)

    def workspace(self, batch: int) -> _Workspace:
        ws = self._ws.get(batch)
        if ws is None:
            ws = self._ws[batch] = _Workspace(batch, self.sizes)
        return ws

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Run the network on ``x[batch, in]`` (kept for :meth:`backward`); returns the output buffer."""
        ws = self.workspace(x.shape[0])
        self._x = x
        P.forward(x, self.params, self.seg_start, self.WT, ws.acts, P.effective_parts(self.parts, x.shape[0]),
                  self.tiling.tile_b, self.q_frac, self.q_bits, self.lanes)
        return ws.acts[-1]

    def forward_sample(self, x: np.ndarray, u: np.ndarray, out: np.ndarray, temperature: float,
                       into: tuple[np.ndarray, int] | None = None) -> np.ndarray:
        """:meth:`forward`, then the Gumbel-softmax sample of the output logits with uniforms
        ``u`` into ``out`` (``[batch, out]``, contiguous); ``into=(dst, col0)`` also copies it
        into ``dst``'s columns ``col0 ..``. Returns ``out``."""
        ws = self.workspace(x.shape[0])
        self._x = x
        dst, col0 = into if into is not None else (out, -1)
        P.forward_sample(x, self.params, self.seg_start, self.WT, ws.acts, u, out, float(temperature), dst, int(col0),
                         P.effective_parts(self.parts, x.shape[0]), self.tiling.tile_b, self.q_frac, self.q_bits, self.lanes)
        return out

    def backward(self, dout: np.ndarray, weights: bool = True, inputs: bool | tuple[int, int] = False) -> np.ndarray | None:
        """Back-propagate ``dout`` (d loss / d output) through the last :meth:`forward`.

        ``weights``: fill :attr:`grad` (dW, db). ``inputs``: return d loss / d x — all of it
        (``True``) or only the columns ``col0 .. col0 + width`` (``inputs=(col0, width)``, a
        contiguous ``[batch, width]`` buffer: the actor step needs one agent's action columns).
        The ReLU gradient is fused into the input-gradient kernel of the layer above it.
        """
        x = self._x
        assert x is not None, "backward before forward"
        ws = self.workspace(x.shape[0])
        col0, width = -1, 1
        if inputs is not False:
            col0, width = (0, self.sizes[0]) if inputs is True else (int(inputs[0]), int(inputs[1]))
            if not (0 <= col0 and width >= 1 and col0 + width <= self.sizes[0]):
                raise ValueError(f"input columns {col0}..{col0 + width} outside 0..{self.sizes[0]}")
        dx = ws.dx_buffer(width)
        P.backward(x, dout, self.params, self.seg_start, self.WT, ws.acts, ws.grads, self.grad_parts, bool(weights),
                   col0, dx, P.effective_parts(self.parts, x.shape[0]), self.tiling.tile_b, self.q_frac, self.q_bits,
                   self.lanes)
        return dx if col0 >= 0 else None

    def loop_nests(self, batch: int, forward: bool = True, backward: bool = True, weights: bool = True,
                   inputs: bool | tuple[int, int] = False) -> list[K.LoopNest]:
        """The loop nests of a :meth:`forward` and/or :meth:`backward` pass at ``batch`` (for the
        accelerator model); ``weights`` and ``inputs`` as in :meth:`backward`."""
        t = self.tiling
        nests = []
        pairs = list(zip(self.sizes[:-1], self.sizes[1:]))
        if forward:
            nests += [K.dense_forward_nest(batch, n_in, n_out, t) for n_in, n_out in pairs]
        if not backward:
            return nests
        for layer in range(len(pairs) - 1, -1, -1):
            n_in, n_out = pairs[layer]
            if weights:
                nests.append(K.dense_backward_weights_nest(batch, n_in, n_out, t))
            if layer > 0:
                nests.append(K.dense_backward_input_nest(batch, n_in, n_out, t, relu_mask=True))
            elif inputs is not False:
                width = n_in if inputs is True else int(inputs[1])
                nests.append(K.dense_backward_input_nest(batch, n_in, n_out, t, width=width))
        return nests
