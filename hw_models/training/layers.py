"""DNN layers as plain data, and the builder that derives them from layer descriptions.

A :class:`Layer` holds what the training simulator needs of one layer, **per sample**:
its parameter count, forward and backward FLOPs, the elements it reads and writes, and the
GEMMs it runs (:class:`Gemm`, the shapes a systolic array executes). Nothing here is typed
in: :class:`NetBuilder` computes every figure from the layer's description (kernel, stride,
channels ...) while it tracks the tensor shape from layer to layer, as a framework would.

Conventions (docs/training_workloads.md states them for users):

* FLOPs: 2 per multiply-add. A GEMM layer's forward FLOPs are ``2 * m * n * k`` summed over
  its GEMMs; bias additions are not counted.
* Backward: a GEMM ``C = A @ B`` (``A``: activations, ``B``: weights or a second
  activation) costs two GEMMs of the same size, ``dA = dC @ B.T`` and ``dB = A.T @ dC``:
  backward = 2 x forward. The layer that reads the network's input has no input gradient
  to compute (``input_grad=False``): backward = 1 x forward (``dB`` only).
* Other layers compute an input gradient of the forward's cost (backward = 1 x forward),
  plus as much again for a parameter gradient when they have parameters (batch and layer
  norm: 2 x); the first layer skips the input gradient. Residual additions pass the
  gradient through unchanged (0), and an embedding's backward adds its rows' gradients into
  the table (``tokens * dim``).
* Element-wise FLOPs per output element: :data:`ELEMENTWISE_FLOPS` (pooling: one per window
  element).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hw_models.training.costs import whole
from noc.base.errors import ConfigError

# FLOPs per output element of the layers that are not GEMMs (forward pass).
ELEMENTWISE_FLOPS = {
    "relu": 1,        # max(x, 0)
    "dropout": 1,     # x * mask
    "batchnorm": 4,   # (x - mean) * inv_std * gamma + beta (statistics not counted)
    "layernorm": 8,   # mean, variance (2 per element each), then normalise and scale (4)
    "softmax": 5,     # max, subtract, exp, sum, divide
    "roialign": 4,    # bilinear interpolation of 4 neighbours
    "sigmoid": 3,     # exp(-x), + 1, reciprocal
    "tanh": 5,        # 2 * sigmoid(2x) - 1
    "mul": 1,         # product of two tensors
}


# The largest layer modelled, per sample: 2^40 elements (4 TiB of fp32) in its parameters,
# output or input, 2^56 FLOPs each way, so that every figure derived from them (bytes,
# chunks per flow, a batch's FLOPs) stays an exact 64-bit integer
LAYER_LIMITS = (
    ("params", 2**40, "2^40 elements"), ("activation_elems", 2**40, "2^40 elements"),
    ("input_elems", 2**40, "2^40 elements"), ("fwd_flops", 2**56, "2^56 FLOPs per sample"),
    ("bwd_flops", 2**56, "2^56 FLOPs per sample"),
)


def lrn_flops_per_elem(size: int) -> int:
    """Local response normalisation across ``size`` channels: ``size`` squares and
    ``size - 1`` additions, then scale, power and divide (3)."""
    return 2 * size - 1 + 3


@dataclass(frozen=True)
class Gemm:
    """``count`` GEMMs ``C[m x n] = A[m x k] @ B[k x n]`` per sample.

    ``shared``: ``B`` is the layer's weights, the same for every sample, so a batch of ``b``
    samples stacks its rows into ``count`` GEMMs of ``b * m`` rows (a convolution as im2col:
    ``m = out_h * out_w``, ``n = out_channels / groups``, ``k = kh * kw * in_channels /
    groups``, ``count = groups``). Not shared (attention's ``Q @ K.T`` and ``P @ V``): both
    operands are activations, and a batch of ``b`` runs ``b * count`` GEMMs of ``m`` rows.
    """

    m: int
    n: int
    k: int
    count: int = 1
    shared: bool = True

    def __post_init__(self):
        for key in ("m", "n", "k", "count"):
            whole(f"Gemm.{key}", getattr(self, key))

    @property
    def macs(self) -> int:
        """Multiply-adds per sample."""
        return self.m * self.n * self.k * self.count


@dataclass(frozen=True)
class Layer:
    """One layer, per sample. ``activation_elems``: elements of its output;
    ``input_elems``: elements it reads (all inputs); ``gemms``: the forward GEMMs (the
    backward ones follow from them, see the module docstring); ``input_grad``: whether the
    backward pass computes the gradient of the layer's input (False for the layer that reads
    the network's input)."""

    name: str
    kind: str
    params: int
    fwd_flops: int
    bwd_flops: int
    activation_elems: int
    input_elems: int
    gemms: tuple[Gemm, ...] = ()
    input_grad: bool = True

    def __post_init__(self):
        for key, limit, what in LAYER_LIMITS:
            value = getattr(self, key)
            if value > limit:
                raise ConfigError(f"layer {self.name!r}: {key} = {value:,} is past the largest modelled "
                                  f"({limit:,}, {what})")

    def grad_bytes(self, dtype_bytes: int) -> int:
        """Bytes of this layer's parameter gradient."""
        return self.params * dtype_bytes


def gemm_layer(name: str, kind: str, gemms: tuple[Gemm, ...], params: int, activation_elems: int,
               input_elems: int, input_grad: bool = True) -> Layer:
    """A layer made of GEMMs: forward ``2 * macs``, backward ``dB`` always and ``dA`` when
    ``input_grad``."""
    macs = sum(g.macs for g in gemms)
    return Layer(name=name, kind=kind, params=params, fwd_flops=2 * macs,
                 bwd_flops=2 * macs * (2 if input_grad else 1), activation_elems=activation_elems,
                 input_elems=input_elems, gemms=tuple(gemms), input_grad=input_grad)


def elementwise_layer(name: str, kind: str, flops_per_elem: int, activation_elems: int, input_elems: int,
                      params: int = 0, input_grad: bool = True, bwd_flops: int | None = None) -> Layer:
    """A layer without GEMMs: ``flops_per_elem`` per output element forward; backward as the
    module docstring says unless ``bwd_flops`` is given."""
    fwd = flops_per_elem * activation_elems
    if bwd_flops is None:
        bwd_flops = fwd * ((1 if input_grad else 0) + (1 if params else 0))
    return Layer(name=name, kind=kind, params=params, fwd_flops=fwd, bwd_flops=bwd_flops,
                 activation_elems=activation_elems, input_elems=input_elems, input_grad=input_grad)


def _pair(name: str, key: str, v) -> tuple[int, int]:
    if isinstance(v, (tuple, list)) and len(v) == 2:
        a, b = v
    else:
        a = b = v
    for x in (a, b):
        if isinstance(x, bool) or not isinstance(x, int):
            raise ConfigError(f"layer {name!r}: {key} = {v!r}: must be an integer or a pair of integers")
    return int(a), int(b)


def conv_out(size: int, kernel: int, stride: int, pad: int, ceil_mode: bool = False) -> int:
    """Output length of a convolution or pooling window along one axis (PyTorch's rule:
    with ``ceil_mode`` the last window may start in the padding of the right edge only if it
    starts inside the input or the left padding)."""
    span = size + 2 * pad - kernel
    if ceil_mode:
        out = -(-span // stride) + 1
        if (out - 1) * stride >= size + pad:
            out -= 1
        return out
    return span // stride + 1


@dataclass
class NetBuilder:
    """Appends layers while tracking the activation shape of one sample: ``(C, H, W)`` for
    feature maps, ``(F,)`` for vectors, ``(L, D)`` for sequences of ``L`` tokens.

    Branches (residual blocks, inception modules): read :attr:`shape`, build a branch, set
    :attr:`shape` back, build the next, then join them with :meth:`add` or :meth:`concat`.
    The first layer appended gets ``input_grad=False``."""

    name: str
    shape: tuple[int, ...]
    layers: list[Layer] = field(default_factory=list)

    # -- bookkeeping -------------------------------------------------------------------
    def _first(self) -> bool:
        return not self.layers

    def _append(self, layer: Layer, shape: tuple[int, ...]) -> tuple[int, ...]:
        if any(layer.name == x.name for x in self.layers):
            raise ConfigError(f"{self.name}: layer name {layer.name!r} is used twice; layer names must be unique")
        self.layers.append(layer)
        self.shape = tuple(int(s) for s in shape)
        return self.shape

    def _need(self, name: str, kind: str, dims: int) -> None:
        if len(self.shape) != dims:
            what = {1: "a vector (F,)", 2: "a sequence (L, D)", 3: "a feature map (C, H, W)"}[dims]
            raise ConfigError(f"layer {name!r} ({kind}) needs {what} as input, got shape {self.shape}")

    # -- GEMM layers -------------------------------------------------------------------
    def conv(self, name: str, out_channels: int, kernel, stride=1, padding=0, groups: int = 1,
             bias: bool = True) -> tuple[int, ...]:
        """2-D convolution on a ``(C, H, W)`` input."""
        self._need(name, "conv", 3)
        c, h, w = self.shape
        kh, kw = _pair(name, "kernel", kernel)
        sh, sw = _pair(name, "stride", stride)
        ph, pw = _pair(name, "padding", padding)
        if c % groups or out_channels % groups:
            raise ConfigError(f"layer {name!r}: groups = {groups} must divide in_channels = {c} "
                              f"and out_channels = {out_channels}")
        if kh > h + 2 * ph or kw > w + 2 * pw:
            raise ConfigError(f"layer {name!r}: kernel {kh}x{kw} is larger than its padded input "
                              f"{h + 2 * ph}x{w + 2 * pw}")
        oh, ow = conv_out(h, kh, sh, ph), conv_out(w, kw, sw, pw)
        k = kh * kw * (c // groups)
        params = k * out_channels + (out_channels if bias else 0)
        g = Gemm(m=oh * ow, n=out_channels // groups, k=k, count=groups)
        layer = gemm_layer(name, "conv", (g,), params, out_channels * oh * ow, c * h * w,
                           input_grad=not self._first())
        return self._append(layer, (out_channels, oh, ow))

    def linear(self, name: str, out_features: int, bias: bool = True, kind: str = "linear",
               params: int | None = None) -> tuple[int, ...]:
        """Fully connected layer on the last axis of a vector ``(F,)`` or a sequence
        ``(L, D)`` (one GEMM row per token). ``params``: override the count (0 for a
        projection whose weights are tied to another layer's)."""
        if len(self.shape) not in (1, 2):
            raise ConfigError(f"layer {name!r} (linear) needs a vector (F,) or a sequence (L, D) as input, "
                              f"got shape {self.shape}; flatten a feature map first")
        rows = self.shape[0] if len(self.shape) == 2 else 1
        fin = self.shape[-1]
        if params is None:
            params = fin * out_features + (out_features if bias else 0)
        g = Gemm(m=rows, n=out_features, k=fin)
        out_shape = (rows, out_features) if len(self.shape) == 2 else (out_features,)
        layer = gemm_layer(name, kind, (g,), params, rows * out_features, rows * fin,
                           input_grad=not self._first())
        return self._append(layer, out_shape)

    def matmul(self, name: str, m: int, n: int, k: int, count: int, out_shape: tuple[int, ...],
               input_elems: int, kind: str = "matmul") -> tuple[int, ...]:
        """``count`` products of two activations per sample (attention scores and
        weighted sums): no parameters, both operands get gradients."""
        g = Gemm(m=m, n=n, k=k, count=count, shared=False)
        layer = gemm_layer(name, kind, (g,), 0, m * n * count, input_elems, input_grad=True)
        return self._append(layer, out_shape)

    def gemm(self, name: str, gemm: Gemm, params: int) -> tuple[int, ...]:
        """A layer given by its GEMM directly (per sample); leaves a ``(count * m, n)``
        sequence."""
        layer = gemm_layer(name, "gemm", (gemm,), params, gemm.m * gemm.n * gemm.count, math.prod(self.shape),
                           input_grad=not self._first())
        return self._append(layer, (gemm.count * gemm.m, gemm.n))

    # -- layers without GEMMs ------------------------------------------------------------
    def _elementwise(self, name: str, kind: str, flops_per_elem: int, params: int = 0,
                     out_shape: tuple[int, ...] | None = None, bwd_flops: int | None = None) -> tuple[int, ...]:
        out_shape = self.shape if out_shape is None else out_shape
        layer = elementwise_layer(name, kind, flops_per_elem, math.prod(out_shape), math.prod(self.shape),
                                  params=params, input_grad=not self._first(), bwd_flops=bwd_flops)
        return self._append(layer, out_shape)

    def elementwise(self, name: str, kind: str, inputs: int = 1) -> tuple[int, ...]:
        """A layer of :data:`ELEMENTWISE_FLOPS` ``kind`` on ``inputs`` tensors of the current
        shape (``mul``: 2)."""
        if kind not in ELEMENTWISE_FLOPS:
            raise ConfigError(f"layer {name!r}: element-wise kind {kind!r} is unknown "
                              f"(allowed: {', '.join(sorted(ELEMENTWISE_FLOPS))})")
        n = math.prod(self.shape)
        first = self._first()
        fwd = ELEMENTWISE_FLOPS[kind] * n
        layer = Layer(name=name, kind=kind, params=0, fwd_flops=fwd, bwd_flops=0 if first else fwd * inputs,
                      activation_elems=n, input_elems=inputs * n, input_grad=not first)
        return self._append(layer, self.shape)

    def reshape(self, name: str, shape: tuple[int, ...]) -> tuple[int, ...]:
        """View the activation as ``shape`` (same number of elements): no arithmetic."""
        if math.prod(shape) != math.prod(self.shape):
            raise ConfigError(f"layer {name!r}: cannot reshape {self.shape} to {tuple(shape)}")
        return self._elementwise(name, "reshape", 0, out_shape=tuple(shape))

    def relu(self, name: str) -> tuple[int, ...]:
        return self._elementwise(name, "relu", ELEMENTWISE_FLOPS["relu"])

    def dropout(self, name: str) -> tuple[int, ...]:
        return self._elementwise(name, "dropout", ELEMENTWISE_FLOPS["dropout"])

    def batchnorm(self, name: str) -> tuple[int, ...]:
        """Batch normalisation over the channels of a feature map (or the features of a
        vector): a scale and a shift per channel."""
        return self._elementwise(name, "batchnorm", ELEMENTWISE_FLOPS["batchnorm"], params=2 * self.shape[0])

    def layernorm(self, name: str) -> tuple[int, ...]:
        """Layer normalisation over the last axis: a scale and a shift per feature."""
        return self._elementwise(name, "layernorm", ELEMENTWISE_FLOPS["layernorm"], params=2 * self.shape[-1])

    def softmax(self, name: str) -> tuple[int, ...]:
        return self._elementwise(name, "softmax", ELEMENTWISE_FLOPS["softmax"])

    def lrn(self, name: str, size: int = 5) -> tuple[int, ...]:
        """Local response normalisation across ``size`` neighbouring channels."""
        return self._elementwise(name, "lrn", lrn_flops_per_elem(size))

    def pool(self, name: str, kind: str, kernel, stride=None, padding=0, ceil_mode: bool = False) -> tuple[int, ...]:
        """Max or average pooling (``kind``: ``maxpool`` or ``avgpool``) of a feature map:
        one FLOP per window element and output."""
        self._need(name, kind, 3)
        c, h, w = self.shape
        kh, kw = _pair(name, "kernel", kernel)
        sh, sw = _pair(name, "stride", kernel if stride is None else stride)
        ph, pw = _pair(name, "padding", padding)
        if kh > h + 2 * ph or kw > w + 2 * pw:
            raise ConfigError(f"layer {name!r}: kernel {kh}x{kw} is larger than its padded input "
                              f"{h + 2 * ph}x{w + 2 * pw}")
        out = (c, conv_out(h, kh, sh, ph, ceil_mode), conv_out(w, kw, sw, pw, ceil_mode))
        return self._elementwise(name, kind, kh * kw, out_shape=out)

    def global_avgpool(self, name: str) -> tuple[int, ...]:
        """Average of each channel over the whole map, to a vector ``(C,)``."""
        self._need(name, "global_avgpool", 3)
        c, h, w = self.shape
        return self._elementwise(name, "global_avgpool", h * w, out_shape=(c,))

    def flatten(self, name: str) -> tuple[int, ...]:
        """Reshape to a vector: no arithmetic, recorded so that shapes stay explicit."""
        return self._elementwise(name, "flatten", 0, out_shape=(math.prod(self.shape),))

    def roialign(self, name: str, rois: int, out_hw: int) -> tuple[int, ...]:
        """Crop ``rois`` regions of ``out_hw x out_hw`` from a feature map (bilinear, as
        RoIAlign); the output is a batch of ``rois`` maps, stacked as ``(C, rois * out_hw,
        out_hw)``: the following convolutions (stride 1 or 2, "same" padding) then have
        exactly the GEMM rows of ``rois`` separate maps, ``rois * out_h * out_w``."""
        self._need(name, "roialign", 3)
        c = self.shape[0]
        return self._elementwise(name, "roialign", ELEMENTWISE_FLOPS["roialign"], out_shape=(c, rois * out_hw, out_hw))

    def embedding(self, name: str, num: int, dim: int, tokens: int, params: bool = True) -> tuple[int, ...]:
        """Look up ``tokens`` rows of a ``num x dim`` table (no arithmetic forward; backward
        adds the rows' gradients into the table). ``params=False``: the table is another
        layer's (tied weights)."""
        out = (tokens, dim) if tokens > 1 else (dim,)
        layer = Layer(name=name, kind="embedding", params=num * dim if params else 0, fwd_flops=0,
                      bwd_flops=tokens * dim, activation_elems=tokens * dim, input_elems=tokens,
                      input_grad=False)
        return self._append(layer, out)

    def add(self, name: str, inputs: int = 2) -> tuple[int, ...]:
        """Element-wise sum of ``inputs`` tensors of the current shape (residual joins):
        ``inputs - 1`` FLOPs per element; the gradient passes through unchanged (0)."""
        n = math.prod(self.shape)
        layer = Layer(name=name, kind="add", params=0, fwd_flops=(inputs - 1) * n, bwd_flops=0,
                      activation_elems=n, input_elems=inputs * n, input_grad=not self._first())
        return self._append(layer, self.shape)

    def concat(self, name: str, shapes: list[tuple[int, ...]], axis: int = 0) -> tuple[int, ...]:
        """Concatenate branch outputs along ``axis`` (channels by default): no arithmetic."""
        base = list(shapes[0])
        for s in shapes[1:]:
            if len(s) != len(base) or any(a != b for i, (a, b) in enumerate(zip(s, base)) if i != axis):
                raise ConfigError(f"layer {name!r}: cannot concatenate shapes {shapes} along axis {axis}")
        base[axis] = sum(s[axis] for s in shapes)
        total_in = sum(math.prod(s) for s in shapes)
        layer = Layer(name=name, kind="concat", params=0, fwd_flops=0, bwd_flops=0, activation_elems=math.prod(base),
                      input_elems=total_in, input_grad=not self._first())
        return self._append(layer, tuple(base))
