"""A multilayer perceptron over flat parameter vectors, driving the kernels of :mod:`maddpg.kernels`.

An :class:`MLP` owns one flat float32 parameter vector (and a gradient vector of the same
layout); each layer's ``W[in, out]`` and ``b[out]`` are views into it, so Adam and the soft
target update run once over the whole network. Activations and gradients live in
workspaces allocated once per batch size — the kernels themselves never allocate.
"""

from __future__ import annotations

import numpy as np

from maddpg import kernels as K


class _Workspace:
    def __init__(self, batch: int, sizes: list[int]) -> None:
        self.acts = [np.zeros((batch, n), np.float32) for n in sizes[1:]]
        self.grads = [np.zeros((batch, n), np.float32) for n in sizes[1:]]
        self.dx = np.zeros((batch, sizes[0]), np.float32)


class MLP:
    """``sizes = [in, h1, ..., out]``; ReLU after every layer but the last (linear output)."""

    def __init__(self, sizes: list[int], tiling: K.Tiling = K.Tiling(), q_frac: int = 0, q_bits: int = 0) -> None:
        self.sizes = [int(s) for s in sizes]
        self.tiling = tiling
        self.q_frac = int(q_frac)
        self.q_bits = int(q_bits)
        starts = [0]
        for n_in, n_out in zip(self.sizes[:-1], self.sizes[1:]):
            starts.append(starts[-1] + n_in * n_out)
            starts.append(starts[-1] + n_out)
        self.seg_start = np.asarray(starts, np.int64)
        self.n_params = int(starts[-1])
        self.params = np.zeros(self.n_params, np.float32)
        self.grad = np.zeros(self.n_params, np.float32)
        self.W, self.b = self._views(self.params)
        self.dW, self.db = self._views(self.grad)
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
        h = x
        last = len(self.W) - 1
        kernel = K.dense_forward if x.shape[0] > self.tiling.tile_b else K.dense_forward_serial
        for layer, (w, b) in enumerate(zip(self.W, self.b)):
            kernel(h, w, b, ws.acts[layer], layer < last, self.tiling.tile_b, self.q_frac, self.q_bits)
            h = ws.acts[layer]
        return h

    def backward(self, dout: np.ndarray, weights: bool = True, inputs: bool = False) -> np.ndarray | None:
        """Back-propagate ``dout`` (d loss / d output) through the last :meth:`forward`.

        ``weights``: fill :attr:`grad` (dW, db); ``inputs``: return d loss / d x.
        """
        x = self._x
        assert x is not None, "backward before forward"
        ws = self.workspace(x.shape[0])
        tb = self.tiling.tile_b
        par = x.shape[0] > tb  # one tile: the serial builds
        bw = K.dense_backward_weights if par else K.dense_backward_weights_serial
        bi = K.dense_backward_input if par else K.dense_backward_input_serial
        rb = K.relu_backward if par else K.relu_backward_serial
        g = dout
        for layer in range(len(self.W) - 1, -1, -1):
            h_in = x if layer == 0 else ws.acts[layer - 1]
            if weights:
                bw(h_in, g, self.dW[layer], self.db[layer], self.q_frac, self.q_bits)
            if layer > 0:
                gi = ws.grads[layer - 1]
                bi(g, self.W[layer], gi, tb, self.q_frac, self.q_bits)
                rb(ws.acts[layer - 1], gi, gi, tb)
                g = gi
            elif inputs:
                bi(g, self.W[0], ws.dx, tb, self.q_frac, self.q_bits)
                return ws.dx
        return None

    def loop_nests(self, batch: int, backward_inputs: bool = False) -> list[K.LoopNest]:
        """The loop nests of one forward + backward pass at ``batch`` (for the accelerator model)."""
        t = self.tiling
        nests = []
        pairs = list(zip(self.sizes[:-1], self.sizes[1:]))
        for n_in, n_out in pairs:
            nests.append(K.dense_forward_nest(batch, n_in, n_out, t))
        for layer in range(len(pairs) - 1, -1, -1):
            n_in, n_out = pairs[layer]
            nests.append(K.dense_backward_weights_nest(batch, n_in, n_out, t))
            if layer > 0 or backward_inputs:
                nests.append(K.dense_backward_input_nest(batch, n_in, n_out, t))
            if layer > 0:
                nests.append(K.relu_backward_nest(batch, n_in, t))
        return nests
