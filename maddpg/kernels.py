"""HLS-style Numba kernels for MADDPG: dense layers, ReLU, Adam with clipping, soft target
update, Gumbel-softmax, fixed-point quantisation.

Every kernel is written the way an HLS engineer writes C for an FPGA:

* a fixed loop nest over (batch, output, input) whose bounds are the array shapes;
* an explicit batch tile ``tile_b``: the outer loop runs over ``ceil(B / tile_b)`` tiles (one
  tile per processing element in hardware; the tiles are independent);
* register blocks: the dense kernels accumulate ``RB`` rows x ``VW`` columns in a local,
  fully partitioned array (``float acc[RB][VW]``) over the reduction loop, with the block's
  loops fully unrolled. On the CPU the block's columns follow the host's vector width
  (``lanes``, :func:`host_lanes`): 6 x 64 in 24 AVX-512 registers, or each ``VW`` block as four
  4 x 16 blocks in AVX2 registers; all compute every element in the same order;
* caller-provided output buffers (and scratch, e.g. a transposed weight copy) — nothing is
  allocated on the heap inside a kernel;
* float32 everywhere (accumulators included); an optional fixed-point mode rounds every
  kernel output to a signed Q-format ``q_bits`` wide with ``q_frac`` fraction bits and
  saturates, as a fixed-point datapath with a wide accumulator would (``q_bits = 0``: float;
  the rounding is an output stage run only in fixed-point mode).

Each kernel has a twin ``*_nest(shapes, tiling)`` returning a :class:`LoopNest` — its loop
bounds, tile, block and unroll factors and its work (MACs, words moved) as plain data. The
accelerator model turns a LoopNest into cycles. A kernel and its nest are two pieces of code;
what keeps them equal is that both take every path decision and bound from the same
module constants (``NARROW_OUT``, ``VW``, ``RB``, ``RB_TAIL``, ``IN_CHUNK``) and the same shapes,
and tests/maddpg/test_kernels.py, which checks the nests' trip counts and MACs against the
shapes the kernels run. The nest describes the accelerator's datapath (``RB x VW`` blocks)
and does not depend on the CPU's register block (``lanes``), which only splits a ``VW`` block
into narrower ones. The unroll factor is an HLS pragma: on the CPU, LLVM's vectoriser
realises the innermost (contiguous) loop instead.

The kernels run serially on the rows they are given; :mod:`maddpg.batch_parts` runs a whole
pass (several kernels) on row ranges of the minibatch in parallel, one fork-join per pass.

Layout: activations are ``[batch, features]`` row-major; a weight matrix is ``W[in, out]`` so
that the forward pass and the weight gradient stream contiguous rows (``out``); the input
gradient streams rows of ``W`` transposed into a scratch buffer (or, for a few columns,
takes contiguous dot products over rows of ``W``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import llvmlite.ir as llvm_ir
import numpy as np
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# ---------------------------------------------------------------------------------------
# Loop nests as data
# ---------------------------------------------------------------------------------------


RB = 6  # rows of a register block (batch rows, or weight rows in the weight gradient)
RB_TAIL = 2  # rows of the blocks that finish a tile (or the weight rows) when RB no longer fits
VW = 64  # columns of a register block in the loop nests (the datapath's width), and the granule
# that chooses the kernels' paths: a layer is blocked where it has full VW-column blocks
NARROW_OUT = 8  # below this output width the forward pass and weight gradient use narrow forms
# from this output width on (and below NARROW_OUT) the weight gradient takes the outputs as the
# rows of its register block (x read once for all of them); below it, one output at a time (a
# block of RB rows would be mostly padding)
NARROW_BLOCK_OUT = 4

# The CPU's register block, chosen from the host's vector width (lanes of float32): RB rows x
# CPU_COLS[lanes] columns of accumulators. 16 lanes (AVX-512, 32 registers): 6 x 64 = 24 zmm;
# 8 lanes (AVX2, 16 registers): 16 columns, 2 ymm per row (CPU_ROWS below), so a VW block of
# the nest runs as VW / 16 register blocks side by side. The column block only splits a VW block:
# the paths, the loop bounds and every element's order of summation are the same for both,
# hence the same results bit for bit (tests/maddpg/test_kernel_blocking.py), and the loop
# nests, which describe the accelerator's datapath, do not depend on it.
CPU_COLS = {16: VW, 8: 16}
# Rows of the CPU's block: at 8 lanes 6 rows x 16 columns (12 ymm accumulators, BLIS's
# Haswell block) beside the 6 row broadcasts LLVM keeps live and 2 weight (or dy) vectors
# exceed AVX2's 16 registers and spill; 4 rows (8 + 4 + 2) fit. The forward pass, the input
# gradient and the weight gradient (4 weight rows a block, its bias row in the last) use them;
# the narrow weight gradient with its outputs as rows keeps RB (one pass over the batch for up
# to 5 outputs and the bias row). Every output is still its in-order sum: same bits.
RB_AVX2 = 4
CPU_ROWS = {16: RB, 8: RB_AVX2}
LANES_ENV = "MADDPG_VECTOR_LANES"  # overrides the blocking: 8 or 16
# The blocking used for each vector width, measured with bench/maddpg_speed.py --peak: with
# AVX-512 the 16-lane block runs the wide layers 1.4-2.5x faster than the 8-lane one; compiled
# for AVX2 (--avx2, an Intel Xeon) the 8-lane block's 4 x 16 forward pass, input gradient and
# weight gradient run at 77-92 GFLOP/s against the spilling 16-lane block's 45-57
# (docs/maddpg.md). MADDPG_VECTOR_LANES=8 or 16 overrides the choice.
BLOCK_FOR_WIDTH = {16: 16, 8: 8}


def vector_width() -> int:
    """float32 lanes of the vector registers the kernels are compiled for: 16 where the
    target has AVX-512F (``NUMBA_CPU_FEATURES`` if set, else the host's features as LLVM
    reports them), 8 otherwise."""
    import os

    feats = os.environ.get("NUMBA_CPU_FEATURES", "").strip()
    if not feats:
        import llvmlite.binding as llvm

        feats = llvm.get_host_cpu_features().flatten()
    return 16 if "+avx512f" in feats.split(",") else 8


def host_lanes() -> int:
    """The register blocking the kernels use (the ``lanes`` argument): ``MADDPG_VECTOR_LANES``
    if set (8 or 16), else :data:`BLOCK_FOR_WIDTH` of :func:`vector_width`."""
    import os

    raw = os.environ.get(LANES_ENV, "").strip()
    if raw:
        if raw not in ("8", "16"):
            from noc.base.errors import ConfigError

            raise ConfigError(f"{LANES_ENV}: {raw!r} is not a vector width; allowed: 8 (AVX2) or 16 (AVX-512)")
        return int(raw)
    return BLOCK_FOR_WIDTH[vector_width()]


@dataclass(frozen=True)
class Loop:
    """One dimension of a loop nest: its name, extent (``trip``), tile size (1: untiled), HLS
    unroll factor, register block (1: none) and whether its iterations are independent
    (``parallel``: the PEs of the hardware; on the CPU, the loop a parallel build would split)."""

    name: str
    trip: int
    tile: int = 1
    unroll: int = 1
    parallel: bool = False
    block: int = 1

    @property
    def tiles(self) -> int:
        return -(-self.trip // self.tile)

    @property
    def blocks(self) -> int:
        """Full register blocks per tile (or over the whole extent when untiled)."""
        return min(self.tile if self.tile > 1 else self.trip, self.trip) // self.block


@dataclass(frozen=True)
class Tiling:
    """Tile and unroll factors of a kernel (one value serves the CPU kernel and its nest).

    ``tile_b``: batch rows per tile (one tile per PE in hardware).
    ``unroll``: innermost-loop unroll / vector width an HLS tool would be told to use.
    """

    tile_b: int = 64
    unroll: int = 8

    def __post_init__(self) -> None:
        if self.tile_b < 1 or self.unroll < 1:
            raise ValueError(f"tile_b and unroll must be >= 1, got {self.tile_b}, {self.unroll}")


@dataclass(frozen=True)
class LoopNest:
    """A kernel's loop nest as plain data.

    ``loops`` are the dimensions of the iteration space, outermost first, each with its full
    extent (``trip``), so ``iterations`` (their product) counts executions of the body. A
    dimension with ``tile > 1`` is strip-mined: its tile loop stands at its position and walks
    ``ceil(trip / tile)`` tiles, the points of a tile right inside it (unless ``extra`` moves
    the tile loop outermost: the wide forward pass's chunks of ``in``). A dimension with
    ``block > 1`` is register-blocked: at its position (inside its tile loop) a loop walks
    blocks of ``block`` points, and the points of all blocked dimensions run innermost, fully
    unrolled, as one ``block x block`` array of MACs on operands held in registers. Batch
    rows that do not fill a block (a tile's last ones) run in blocks of ``RB_TAIL``, then
    singly; output columns past the last full block run unblocked; the weight gradient pads
    its last block instead (``extra["padding_rows"]``).
    ``unroll`` is the HLS pragma for the innermost loop (on the CPU, the vectoriser's job).

    ``macs``: multiply-accumulates (or elementwise ops for non-MAC kernels);
    ``words_in`` / ``words_out``: array elements read / written once each (no reuse model);
    ``extra``: kernel specifics, e.g. ``transpose`` (words of a weight matrix transposed into
    a local buffer before the nest runs) and ``relu_mask`` (the fused ReLU gradient).
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
            "extra": dict(self.extra),
        }


def dense_forward_nest(batch: int, n_in: int, n_out: int, tiling: Tiling = Tiling()) -> LoopNest:
    """:func:`dense_forward`: narrow layers take dot products over ``in`` of the transposed
    weights; wide ones accumulate ``RB`` rows x ``VW`` outputs in registers over ``in``
    (outputs past the last full ``VW`` block: a plain axpy, row -> in -> out), inputs
    wider than ``IN_CHUNK`` in chunks whose loop is the outermost one (``extra``)."""
    tb, un = tiling.tile_b, tiling.unroll
    words_in = batch * n_in + n_in * n_out + n_out
    if n_out < NARROW_OUT:
        loops = (Loop("batch", batch, tile=tb, parallel=True), Loop("out", n_out), Loop("in", n_in, unroll=un))
        extra = {"transpose": n_in * n_out}
    elif n_out < VW:
        loops = (Loop("batch", batch, tile=tb, parallel=True), Loop("in", n_in), Loop("out", n_out, unroll=un))
        extra = {}
    else:  # inputs in chunks of IN_CHUNK; the chunk loop runs outermost (outside the batch tiles)
        chunk = IN_CHUNK if n_in > IN_CHUNK else 1
        loops = (Loop("batch", batch, tile=tb, parallel=True, block=RB), Loop("out", n_out, unroll=un, block=VW),
                 Loop("in", n_in, tile=chunk))
        extra = {"out_tail": n_out % VW, "in_chunk_outermost": chunk > 1}
    return LoopNest("dense_forward", loops, macs=batch * n_in * n_out, words_in=words_in,
                    words_out=batch * n_out, extra=extra)


def dense_backward_weights_nest(batch: int, n_in: int, n_out: int, tiling: Tiling = Tiling()) -> LoopNest:
    """:func:`dense_backward_weights`: every element sums over the whole batch, innermost.
    Wide layers: the gradient of the augmented ``[W; b]`` (``n_in + 1`` rows, the bias last)
    in register blocks of ``RB`` rows x ``VW`` outputs, the last block padded; narrow ones:
    per output, ``VW`` weight rows per block, then the bias sum."""
    un = tiling.unroll
    extra: dict = {}
    if n_out < NARROW_OUT:
        loops = (Loop("out", n_out), Loop("in", n_in, parallel=True, unroll=un, block=VW), Loop("batch", batch))
        extra["bias_sum"] = batch * n_out
    elif n_out < VW:
        loops = (Loop("out", n_out), Loop("in", n_in, parallel=True), Loop("batch", batch, unroll=un))
        extra["bias_sum"] = batch * n_out
    else:
        loops = (Loop("out", n_out, unroll=un, block=VW), Loop("in", n_in + 1, parallel=True, block=RB), Loop("batch", batch))
        extra["padding_rows"] = -(-(n_in + 1) // RB) * RB - (n_in + 1)
    return LoopNest(
        "dense_backward_weights",
        loops,
        macs=batch * n_in * n_out + batch * n_out,  # dW and the bias sum
        words_in=batch * n_in + batch * n_out,
        words_out=n_in * n_out + n_out,
        extra=extra,
    )


def dense_backward_input_nest(batch: int, n_in: int, n_out: int, tiling: Tiling = Tiling(), width: int | None = None,
                              relu_mask: bool = False) -> LoopNest:
    """:func:`dense_backward_input` computing ``width`` (default all ``n_in``) input columns.
    A multiple of ``VW`` wide: weights transposed first, then ``RB`` rows x ``VW`` columns
    per register block accumulated over ``out``; otherwise a dot product per element."""
    tb, un = tiling.tile_b, tiling.unroll
    w = n_in if width is None else width
    extra: dict = {"relu_mask": relu_mask}
    if w % VW == 0:
        loops = (Loop("batch", batch, tile=tb, parallel=True, block=RB), Loop("in", w, unroll=un, block=VW), Loop("out", n_out))
        extra["transpose"] = w * n_out
    else:
        loops = (Loop("batch", batch, tile=tb, parallel=True), Loop("in", w), Loop("out", n_out, unroll=un))
    return LoopNest(
        "dense_backward_input",
        loops,
        macs=batch * w * n_out,
        words_in=batch * n_out + w * n_out + (batch * w if relu_mask else 0),
        words_out=batch * w,
        extra=extra,
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
    """Two passes over the parameters: the per-segment gradient norm, then the update (plus,
    per segment, the gradient scaling when it is clipped and, in fixed point, the rounding)."""
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


def gumbel_softmax_backward_nest(batch: int, n_act: int, tiling: Tiling = Tiling()) -> LoopNest:
    return LoopNest(
        "gumbel_softmax_backward",
        (Loop("batch", batch, tile=tiling.tile_b, parallel=True), Loop("pass", 2), Loop("action", n_act)),
        macs=batch * n_act * 3,
        words_in=2 * batch * n_act,
        words_out=batch * n_act,
    )


# ---------------------------------------------------------------------------------------
# Buffers
# ---------------------------------------------------------------------------------------

ALIGN_BYTES = 64  # a cache line and an AVX-512 vector: buffers the kernels stream start on one
ALIGN_F32 = ALIGN_BYTES // 4


def aligned_zeros(shape, dtype=np.float32) -> np.ndarray:
    """``np.zeros(shape, dtype)`` whose first element sits on a 64-byte boundary.

    Where the kernels stream rows with full-width vector loads (weights, activations), a
    buffer that starts mid-line makes every load and store straddle two cache lines; numpy
    only guarantees 16 bytes, so the alignment — and with it the speed of a layer (measured
    up to 1.9x on a 64x64 forward pass) — would depend on where the allocator put it. A
    buffer allocator for the caller, not used inside any kernel.
    """
    dt = np.dtype(dtype)
    n = math.prod(shape) if isinstance(shape, tuple) else int(shape)
    raw = np.zeros(n * dt.itemsize + ALIGN_BYTES, np.uint8)
    skip = -raw.ctypes.data % ALIGN_BYTES
    return raw[skip : skip + n * dt.itemsize].view(dt).reshape(shape)


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


@njit(cache=True, nogil=True)
def quantize(x, out, q_frac, q_bits):
    """Elementwise fixed-point rounding of a flat array into ``out`` (may alias ``x``)."""
    for i in range(x.shape[0]):
        out[i] = q_round(x[i], q_frac, q_bits)


@njit(cache=True, nogil=True)
def quantize_rows(y, q_frac, q_bits):
    """Fixed-point rounding of a 2-D array in place: the output stage of the dense kernels in
    fixed-point mode (float mode never calls it, so the float loop nests carry no rounding)."""
    for r in range(y.shape[0]):
        for c in range(y.shape[1]):
            y[r, c] = q_round(y[r, c], q_frac, q_bits)


# ---------------------------------------------------------------------------------------
# Register blocks
# ---------------------------------------------------------------------------------------

_RB_VW = RB * VW
IN_CHUNK = 128  # inputs per pass of a wide forward layer (128 x VW float32 weights = 32 KiB, in L1)

# Float kernels: fastmath lets LLVM contract to FMA and vectorise; no bounds checks, numpy
# error model (no Python-exception paths inside the loops); the GIL released while a kernel
# runs.
_KW = dict(cache=True, fastmath=True, boundscheck=False, error_model="numpy", nogil=True)
# The register-blocked loops: fastmath without ``reassoc``, so that LLVM keeps every output's
# sum in order (it may not split a reduction into partial sums, whatever the block's width)
# and a result does not depend on the blocking: contraction to FMA stays allowed.
_BKW = dict(cache=True, fastmath={"contract", "nnan", "ninf", "nsz", "arcp", "afn"}, boundscheck=False,
            error_model="numpy", nogil=True)


@intrinsic
def _local_f32(typingctx, n):
    """A local float32 array of ``n`` elements on the stack (``n`` a compile-time constant).

    The HLS ``float acc[RB][VW]`` with ``#pragma HLS ARRAY_PARTITION complete``: indexed only
    by fully unrolled loops, LLVM promotes it to (vector) registers. A heap array could not
    be promoted, since LLVM cannot prove that it does not alias the kernel's arguments.
    """
    if not isinstance(n, types.IntegerLiteral):
        return None
    size = n.literal_value

    def codegen(context, builder, sig, args):
        f32 = context.get_value_type(types.float32)
        buf = cgutils.alloca_once(builder, llvm_ir.ArrayType(f32, size))
        return builder.bitcast(buf, f32.as_pointer())

    return types.CPointer(types.float32)(n), codegen


@intrinsic
def _wide_vectors(typingctx):
    """Let LLVM vectorise the calling kernel with 512-bit vectors.

    LLVM's default for AVX-512 server cores is to prefer 256-bit vectors; a register block of
    ``RB x VW`` float32 then needs 2x the registers and spills. The per-function attributes
    below lift that preference (a no-op on CPUs without AVX-512). ``AttributeSet.add`` only
    accepts flag attributes, hence ``set.add`` for these key-value ones.
    """

    def codegen(context, builder, sig, args):
        attrs = builder.function.attributes
        set.add(attrs, '"prefer-vector-width"="512"')
        set.add(attrs, '"min-legal-vector-width"="512"')
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def _prefetch(typingctx, arr, i, j):
    """Ask for the cache line of ``arr[i, j]`` ahead of its use (a DMA read issued early); no
    bounds check is needed, a prefetch never faults."""
    if not (isinstance(arr, types.Array) and arr.ndim == 2):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:], sig.args[1:])]
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)
        i8p = llvm_ir.IntType(8).as_pointer()
        i32 = llvm_ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, llvm_ir.FunctionType(llvm_ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])  # read, keep, data cache
        return context.get_dummy_value()

    return types.none(arr, i, j), codegen


# ---------------------------------------------------------------------------------------
# Dense layer and ReLU
# ---------------------------------------------------------------------------------------

# The register-blocked loops, written once for every column width ``cw`` (``CPU_COLS``): an
# ``RB x cw`` block of float32 accumulators (a local array, one row of ``cw`` per block row),
# the FMA loop with the rows unrolled by hand (``nr`` rows of ``RB``, ``RB_TAIL`` or 1 at a call
# site: rows past it are not touched). LLVM then vectorises along the columns only; with a
# loop over the rows there it vectorised across them with gathers (at ``cw = 16``). The block's
# set-up and store loop over its rows, which at ``cw = 64`` measured 6-18 % faster than
# unrolled ones. :func:`_blocked_kernels` compiles them per ``cw``.


@njit(cache=True, inline="always")
def _fma_rows(a, bm, acc, bb, nr, c0, cw, k0, k1):
    """The register block's reduction: ``acc[r, c] += a[bb + r, k] * bm[k, c0 + c]`` for ``k`` in
    ``k0 .. k1``, rows ``r < nr`` (6, 4, ``RB_TAIL`` or 1: rows past it are not touched) and
    columns ``c < cw``, in order of ``k``. The rows are unrolled by hand, one accumulator array
    (a row of ``acc``) each, so that LLVM vectorises along the columns only. The forward pass
    (``a = x``, ``bm = W``) and the input gradient (``a = dy``, ``bm = W`` transposed) share it."""
    zero = np.float32(0.0)
    a0, a1, a2, a3, a4, a5 = acc[0], acc[1], acc[2], acc[3], acc[4], acc[5]
    for k in range(k0, k1):
        x0 = a[bb, k]
        x1 = a[bb + 1, k] if nr > 1 else zero
        x2 = a[bb + 2, k] if nr > 2 else zero
        x3 = a[bb + 3, k] if nr > 3 else zero
        x4 = a[bb + 4, k] if nr > 4 else zero
        x5 = a[bb + 5, k] if nr > 5 else zero
        for c in range(cw):
            wv = bm[k, c0 + c]
            a0[c] += x0 * wv
            if nr > 1:
                a1[c] += x1 * wv
            if nr > 2:
                a2[c] += x2 * wv
            if nr > 3:
                a3[c] += x3 * wv
            if nr > 4:
                a4[c] += x4 * wv
                a5[c] += x5 * wv


@njit(cache=True, inline="always")
def _forward_rows(x, w, b, y, acc, bb, nr, n_cb, cw, relu, i0, i1):
    """Rows ``bb .. bb + nr`` of a wide forward pass over inputs ``i0 .. i1``: per block of ``cw``
    outputs (``n_cb`` blocks) the accumulators (``acc``'s rows) start from the bias (first chunk
    of inputs) or the partial sums in ``y``, accumulate ``x[r, i] * w[i, o]`` over the chunk
    (:func:`_fma_rows`) and are stored (with the ReLU after the last chunk). The block's first
    and last steps loop over its rows (row by row, as ``y`` is laid out)."""
    zero = np.float32(0.0)
    first = i0 == 0
    last = i1 == x.shape[1]
    for ob in range(n_cb):
        o0 = ob * cw
        if first:
            for r in range(nr):
                for o in range(cw):
                    acc[r, o] = b[o0 + o]
        else:
            for r in range(nr):
                for o in range(cw):
                    acc[r, o] = y[bb + r, o0 + o]
        _fma_rows(x, w, acc, bb, nr, o0, cw, i0, i1)
        for r in range(nr):
            for o in range(cw):
                v = acc[r, o]
                if last and relu and v < zero:
                    v = zero
                y[bb + r, o0 + o] = v


@njit(cache=True, inline="always")
def _forward_blocks(x, w, b, y, acc, rb, cw, relu, tile_b, n_tiles):
    """The register-blocked part of a wide forward pass (the first ``VW * (n_out // VW)``
    outputs) in ``rb x cw`` blocks (``acc``'s rows): chunks of inputs outermost, then batch
    tiles, then rows in blocks of ``rb``, ``RB_TAIL`` and 1."""
    n_batch = x.shape[0]
    n_in = x.shape[1]
    n_cb = (w.shape[1] // VW) * (VW // cw)
    for c in range((n_in + IN_CHUNK - 1) // IN_CHUNK):  # chunks of inputs: w's rows stay in L1
        i0 = c * IN_CHUNK
        i1 = min(i0 + IN_CHUNK, n_in)
        for t in range(n_tiles):
            r0 = t * tile_b
            r1 = min(r0 + tile_b, n_batch)
            bb = r0
            while bb + rb <= r1:
                _forward_rows(x, w, b, y, acc, bb, rb, n_cb, cw, relu, i0, i1)
                bb += rb
            while bb + RB_TAIL <= r1:
                _forward_rows(x, w, b, y, acc, bb, RB_TAIL, n_cb, cw, relu, i0, i1)
                bb += RB_TAIL
            while bb < r1:
                _forward_rows(x, w, b, y, acc, bb, 1, n_cb, cw, relu, i0, i1)
                bb += 1


@njit(cache=True, inline="always")
def _aug_x(x, bb, i, n_in):
    """Row ``bb``, column ``i`` of the augmented input ``[x, 1]`` (0 past it: padding)."""
    v = x[bb, min(i, n_in - 1)]
    return v if i < n_in else (np.float32(1.0) if i == n_in else np.float32(0.0))


@njit(cache=True, inline="always")
def _weight_store(dw, db, a, i, o0, cw, n_in):
    """Row ``i`` of the augmented gradient ``[dW; db]`` (``db`` at ``n_in``, padding past it)."""
    if i < n_in:
        for o in range(cw):
            dw[i, o0 + o] = a[o]
    elif i == n_in:
        for o in range(cw):
            db[o0 + o] = a[o]


@njit(cache=True, inline="always")
def _plain_x(x, bb, i, n_in):
    """Row ``bb``, column ``i`` of ``x`` (a block of inputs only: :func:`_aug_x`'s counterpart)."""
    return x[bb, i]


@njit(cache=True, inline="always")
def _weight_fma(x, dy, acc, rb, cw, i0, o0, load):
    """The weight gradient block's reduction over the whole batch, in order:
    ``acc[r, o] += load(x, b, i0 + r) * dy[b, o0 + o]`` for rows ``r < rb`` (6 or 4, unrolled
    by hand) and outputs ``o < cw``. ``load``: :func:`_plain_x` for a block of inputs,
    :func:`_aug_x` for the block with the bias row of ``[x, 1]`` and padding past it. Each is
    compiled into its own loop (a function argument is a compile-time constant in Numba), so
    neither loop tests which block it is on."""
    a0, a1, a2, a3, a4, a5 = acc[0], acc[1], acc[2], acc[3], acc[4], acc[5]
    zero = np.float32(0.0)
    n_in = x.shape[1]
    for bb in range(x.shape[0]):
        x0 = load(x, bb, i0, n_in)
        x1 = load(x, bb, i0 + 1, n_in)
        x2 = load(x, bb, i0 + 2, n_in)
        x3 = load(x, bb, i0 + 3, n_in)
        x4 = load(x, bb, i0 + 4, n_in) if rb > 4 else zero
        x5 = load(x, bb, i0 + 5, n_in) if rb > 4 else zero
        for o in range(cw):
            d = dy[bb, o0 + o]
            a0[o] += x0 * d
            a1[o] += x1 * d
            a2[o] += x2 * d
            a3[o] += x3 * d
            if rb > 4:
                a4[o] += x4 * d
                a5[o] += x5 * d


@njit(cache=True, inline="always")
def _weight_blocks(x, dy, dw, db, acc, rb, cw, o_tail, n_ib):
    """The blocked weight gradient (outputs ``0 .. o_tail``): rows ``i0 .. i0 + rb`` x outputs
    ``o0 .. o0 + cw`` of the gradient of the augmented weights ``[W; b]`` (input ``[x, 1]``) per
    block, each accumulating ``x[b, i] * dy[b, o]`` over the whole batch (:func:`_weight_fma`).
    Row ``n_in`` is the bias row (``x = 1``); rows past it are padding (``x = 0``, not stored)."""
    zero = np.float32(0.0)
    n_in = x.shape[1]
    for ob in range(o_tail // cw):
        o0 = ob * cw
        for ib in range(n_ib):
            i0 = ib * rb
            for r in range(rb):
                for o in range(cw):
                    acc[r, o] = zero
            if i0 + rb <= n_in:
                _weight_fma(x, dy, acc, rb, cw, i0, o0, _plain_x)
            else:  # the last block: the bias row (x = 1), then padding
                _weight_fma(x, dy, acc, rb, cw, i0, o0, _aug_x)
            for r in range(rb):
                _weight_store(dw, db, acc[r], i0 + r, o0, cw, n_in)


@njit(cache=True, inline="always")
def _weight_rows_t(g, x, dw, db, acc, rb, cw, n_cols):
    """The weight and bias gradients of a layer with a few outputs (``g = dy``, ``g.shape[1]``
    of them, fewer than ``NARROW_OUT``), its outputs as the block's rows: ``acc[r, c]``
    accumulates ``g[b, i0 + r] * x[b, c0 + c]`` over the batch in order (``g``'s row broadcast,
    ``x``'s contiguous row streamed: ``x`` is read once for all outputs), for inputs ``0 ..
    n_cols`` (whole blocks of ``cw``), and is stored transposed, as ``dw[c0 + c, i0 + r]``; the
    same loop sums ``g[b, i0 + r]`` over the batch in order into ``db``. A block's rows past the
    last output repeat it (a plain load: no select in the loop) and are not stored."""
    a0, a1, a2, a3, a4, a5 = acc[0], acc[1], acc[2], acc[3], acc[4], acc[5]
    zero = np.float32(0.0)
    n_rows = g.shape[1]
    last = n_rows - 1
    for ib in range((n_rows + rb - 1) // rb):
        i0 = ib * rb
        j0, j1, j2, j3 = min(i0, last), min(i0 + 1, last), min(i0 + 2, last), min(i0 + 3, last)
        j4, j5 = min(i0 + 4, last), min(i0 + 5, last)
        for cb in range(n_cols // cw):
            c0 = cb * cw
            for r in range(rb):
                for c in range(cw):
                    acc[r, c] = zero
            s0 = s1 = s2 = s3 = s4 = s5 = zero
            for bb in range(g.shape[0]):
                x0 = g[bb, j0]
                x1 = g[bb, j1]
                x2 = g[bb, j2]
                x3 = g[bb, j3]
                x4 = g[bb, j4] if rb > 4 else zero
                x5 = g[bb, j5] if rb > 4 else zero
                s0 += x0
                s1 += x1
                s2 += x2
                s3 += x3
                if rb > 4:
                    s4 += x4
                    s5 += x5
                for c in range(cw):
                    d = x[bb, c0 + c]
                    a0[c] += x0 * d
                    a1[c] += x1 * d
                    a2[c] += x2 * d
                    a3[c] += x3 * d
                    if rb > 4:
                        a4[c] += x4 * d
                        a5[c] += x5 * d
            for r in range(rb):
                if i0 + r < n_rows:
                    for c in range(cw):
                        dw[c0 + c, i0 + r] = acc[r, c]
            if cb == 0:  # every column block sums the same: the first one stores it
                for r, sr in enumerate((s0, s1, s2, s3, s4, s5)):
                    if r < rb and i0 + r < n_rows:
                        db[i0 + r] = sr


@njit(cache=True, inline="always")
def _input_rows(dy, wt, dx, acc, bb, nr, n_cb, cw):
    """Input-gradient rows ``bb .. bb + nr``: per block of ``cw`` columns (``n_cb`` blocks) the
    accumulators (``acc``'s rows) sum ``dy[b, o] * wt[o, j]`` over ``out`` (:func:`_fma_rows`),
    zeroed and stored row by row (as :func:`_forward_rows`)."""
    zero = np.float32(0.0)
    for jb in range(n_cb):
        j0 = jb * cw
        for r in range(nr):
            for j in range(cw):
                acc[r, j] = zero
        _fma_rows(dy, wt, acc, bb, nr, j0, cw, 0, dy.shape[1])
        for r in range(nr):
            for j in range(cw):
                dx[bb + r, j0 + j] = acc[r, j]


@njit(cache=True, inline="always")
def _input_tile(dy, wt, dx, acc, rb, cw, r0, r1):
    """Rows ``r0 .. r1`` of a blocked input gradient in blocks of ``rb``, ``RB_TAIL`` and 1 rows."""
    n_cb = dx.shape[1] // cw
    bb = r0
    while bb + rb <= r1:
        _input_rows(dy, wt, dx, acc, bb, rb, n_cb, cw)
        bb += rb
    while bb + RB_TAIL <= r1:
        _input_rows(dy, wt, dx, acc, bb, RB_TAIL, n_cb, cw)
        bb += RB_TAIL
    while bb < r1:
        _input_rows(dy, wt, dx, acc, bb, 1, n_cb, cw)
        bb += 1


def _blocked_kernels(lanes: int):
    """The three register-blocked loops compiled for ``lanes``-wide vectors: ``RB x cw`` blocks,
    ``cw = CPU_COLS[lanes]`` (a compile-time constant of each kernel: its accumulators live on
    the stack, in registers once LLVM has unrolled the block). Returns (forward, weight
    gradient, input gradient, weight gradient of a narrow layer with ``x`` and ``dy`` swapped and
    the block stored transposed); each compiles and caches separately per ``lanes``."""
    cw = CPU_COLS[lanes]
    rb = CPU_ROWS[lanes]
    n_acc = RB * cw

    @njit(**_BKW)
    def forward(x, w, b, y, relu, tile_b, n_tiles):
        _wide_vectors()
        tile_b = max(tile_b, 1)  # known positive: row indices need no negative-index wraparound
        acc = carray(_local_f32(n_acc), (RB, cw))
        _forward_blocks(x, w, b, y, acc, rb, cw, relu, tile_b, n_tiles)

    @njit(**_BKW)
    def weights(x, dy, dw, db, o_tail, n_ib):
        _wide_vectors()
        acc = carray(_local_f32(n_acc), (RB, cw))
        _weight_blocks(x, dy, dw, db, acc, rb, cw, o_tail, n_ib)

    @njit(**_BKW)
    def weights_t(dy, x, dw, db, n_cols):
        _wide_vectors()
        acc = carray(_local_f32(n_acc), (RB, cw))
        _weight_rows_t(dy, x, dw, db, acc, rb, cw, n_cols)

    @njit(**_BKW)
    def inputs(dy, wt, dx, r0, r1):
        _wide_vectors()
        r0 = max(r0, 0)  # known non-negative: row indices need no negative-index wraparound
        acc = carray(_local_f32(n_acc), (RB, cw))
        _input_tile(dy, wt, dx, acc, rb, cw, r0, r1)

    return forward, weights, inputs, weights_t


_forward_blocked16, _weight_blocked16, _input_blocked16, _weight_t_blocked16 = _blocked_kernels(16)
_forward_blocked8, _weight_blocked8, _input_blocked8, _weight_t_blocked8 = _blocked_kernels(8)


@njit(**_KW)
def dense_forward(x, w, wt, b, y, relu, tile_b, q_frac, q_bits, lanes=16):
    """``y[b, o] = act(sum_i x[b, i] * w[i, o] + b[o])``; ``act`` is ReLU if ``relu`` else identity.

    Wide layers (``n_out >= NARROW_OUT``): inside each batch tile, blocks of ``RB`` rows x
    ``VW`` outputs are accumulated in registers over ``in`` (``x[b, i]`` broadcast, the
    contiguous row ``w[i, o0:o0+VW]`` streamed); the tile's last rows run in blocks of
    ``RB_TAIL``, then singly; outputs past the last full ``VW`` block as a plain axpy. Wide
    inputs are taken ``IN_CHUNK`` at a time, outermost (the chunk of ``w`` stays in L1 over the
    whole batch; partial sums wait in ``y``): each output still sums its inputs in order.
    Narrow layers (a critic's 1-wide head, an actor's logits): ``wt`` (``[n_out, n_in]``,
    caller's buffer) receives ``w`` transposed and each output is a contiguous dot product.
    ``lanes``: the CPU's vector width (8 or 16), which sets the register block's columns
    (``CPU_COLS``); the result does not depend on it.
    """
    _wide_vectors()
    n_batch = x.shape[0]
    n_in = x.shape[1]
    n_out = w.shape[1]
    tile_b = max(tile_b, 1)  # known positive: row indices need no negative-index wraparound
    n_tiles = (n_batch + tile_b - 1) // tile_b
    zero = np.float32(0.0)
    if n_out < NARROW_OUT:
        for o in range(n_out):
            for i in range(n_in):
                wt[o, i] = w[i, o]
        for t in range(n_tiles):
            for bb in range(t * tile_b, min((t + 1) * tile_b, n_batch)):
                for o in range(n_out):
                    a = b[o]
                    for i in range(n_in):
                        a += x[bb, i] * wt[o, i]
                    if relu and a < zero:
                        a = zero
                    y[bb, o] = a
    else:
        n_blk = n_out // VW
        o_tail = n_blk * VW
        if n_blk > 0:
            if lanes == 8:
                _forward_blocked8(x, w, b, y, relu, tile_b, n_tiles)
            else:
                _forward_blocked16(x, w, b, y, relu, tile_b, n_tiles)
        for t in range(n_tiles):
            r0 = t * tile_b
            r1 = min(r0 + tile_b, n_batch)
            if o_tail < n_out:
                for bb in range(r0, r1):
                    for o in range(o_tail, n_out):
                        y[bb, o] = b[o]
                    for i in range(n_in):
                        xi = x[bb, i]
                        for o in range(o_tail, n_out):
                            y[bb, o] += xi * w[i, o]
                    if relu:
                        for o in range(o_tail, n_out):
                            if y[bb, o] < zero:
                                y[bb, o] = zero
    if q_bits != 0:
        quantize_rows(y, q_frac, q_bits)


@njit(**_KW)
def relu_forward(x, y, tile_b):
    """``y = max(x, 0)`` (the standalone ReLU; dense_forward fuses it)."""
    n_batch = x.shape[0]
    n = x.shape[1]
    tile_b = max(tile_b, 1)
    n_tiles = (n_batch + tile_b - 1) // tile_b
    for t in range(n_tiles):
        for bb in range(t * tile_b, min((t + 1) * tile_b, n_batch)):
            for j in range(n):
                v = x[bb, j]
                y[bb, j] = v if v > 0 else np.float32(0.0)


@njit(**_KW)
def relu_backward(y, dy, dx, tile_b):
    """``dx = dy * (y > 0)`` where ``y`` is the ReLU's output (``dx`` may alias ``dy``).

    The standalone ReLU gradient; :func:`dense_backward_input` fuses it (``mask``)."""
    n_batch = y.shape[0]
    n = y.shape[1]
    tile_b = max(tile_b, 1)
    n_tiles = (n_batch + tile_b - 1) // tile_b
    for t in range(n_tiles):
        for bb in range(t * tile_b, min((t + 1) * tile_b, n_batch)):
            for j in range(n):
                dx[bb, j] = dy[bb, j] if y[bb, j] > 0 else np.float32(0.0)



@njit(cache=True, inline="always")
def _weight_column(x, dy, dw, db, o, i_from, bias):
    """Output column ``o`` unblocked: ``dw[i, o]`` for ``i >= i_from`` and, if ``bias``,
    ``db[o]``, each a sum over the batch (in order when ``dy`` has more than one column; a
    single contiguous column LLVM may sum in vector partial sums, as ``fastmath`` allows)."""
    zero = np.float32(0.0)
    for i in range(i_from, x.shape[1]):
        a = zero
        for bb in range(x.shape[0]):
            a += x[bb, i] * dy[bb, o]
        dw[i, o] = a
    if bias:
        a = zero
        for bb in range(x.shape[0]):
            a += dy[bb, o]
        db[o] = a




@njit(**_KW)
def dense_backward_weights(x, dy, dw, db, q_frac, q_bits, lanes=16):
    """``dw[i, o] = sum_b x[b, i] dy[b, o]``, ``db[o] = sum_b dy[b, o]`` (overwrites dw, db).

    Wide layers: the gradient of the augmented weights ``[W; b]`` (input ``[x, 1]``, so the
    bias is row ``n_in``) in blocks of ``RB`` rows x ``VW`` outputs accumulated in registers
    over the whole batch (``x[b, i0:i0+RB]`` broadcast, the contiguous ``dy[b, o0:o0+VW]``
    streamed); the last block is padded past the bias row. Narrow layers (``n_out < NARROW_OUT``)
    with at least ``NARROW_BLOCK_OUT`` outputs: the same register blocks with the roles swapped,
    the outputs as the block's rows (``dy[b, 0:n_out]`` broadcast, ``x[b, i0:i0+VW]`` streamed:
    ``x`` is read once for all outputs), stored transposed, the bias sums in the same loop;
    narrower ones (a critic's 1-wide head): per output, ``VW`` weight rows at a time
    accumulate ``dy[b, o] * x[b, i0:i0+VW]``. Past the last full ``VW`` block of inputs, and
    for the other biases, a sum per element (:func:`_weight_column`). Every element is one
    accumulator summed over the batch: the result does not depend on how blocks are
    scheduled, nor on ``lanes`` (the CPU's vector width, which sets the register block's
    columns).
    """
    _wide_vectors()
    n_batch = x.shape[0]
    n_in = x.shape[1]
    n_out = dy.shape[1]
    zero = np.float32(0.0)
    acc = carray(_local_f32(_RB_VW), (RB, VW))
    if n_out < NARROW_OUT:
        n_blk = n_in // VW
        rows_t = n_out >= NARROW_BLOCK_OUT and n_blk > 0  # outputs as block rows, the bias sums with them
        if rows_t:
            if lanes == 8:
                _weight_t_blocked8(dy, x, dw, db, n_blk * VW)
            else:
                _weight_t_blocked16(dy, x, dw, db, n_blk * VW)
        for o in range(n_out):
            for ib in range(n_blk if n_out < NARROW_BLOCK_OUT else 0):
                i0 = ib * VW
                for i in range(VW):
                    acc[0, i] = zero
                for bb in range(n_batch):
                    d = dy[bb, o]
                    for i in range(VW):
                        acc[0, i] += d * x[bb, i0 + i]
                for i in range(VW):
                    dw[i0 + i, o] = acc[0, i]
            _weight_column(x, dy, dw, db, o, n_blk * VW, not rows_t)
    else:
        n_blk = n_out // VW
        o_tail = n_blk * VW
        n_ib = n_in // (RB_AVX2 if lanes == 8 else RB) + 1  # blocks over the n_in + 1 rows of [W; b]
        if n_blk > 0:
            if lanes == 8:
                _weight_blocked8(x, dy, dw, db, o_tail, n_ib)
            else:
                _weight_blocked16(x, dy, dw, db, o_tail, n_ib)
        for o in range(o_tail, n_out):
            _weight_column(x, dy, dw, db, o, 0, True)
    if q_bits != 0:
        quantize_rows(dw, q_frac, q_bits)
        for o in range(n_out):
            db[o] = q_round(db[o], q_frac, q_bits)



@njit(**_KW)
def dense_backward_input(dy, w, wt, dx, col0, mask, tile_b, q_frac, q_bits, lanes=16):
    """``dx[b, j] = sum_o dy[b, o] * w[col0 + j, o]`` for ``j < dx.shape[1]`` (overwrites dx):
    the input gradient, or the block of its columns ``col0 ..`` that the caller needs.

    ``mask``: the layer input's ReLU output ``h`` (fuses the ReLU gradient:
    ``dx[b, j] = 0`` where ``h[b, col0 + j] <= 0``) or None. When the width is a multiple of
    ``VW``: ``wt`` (``[n_out, >= width]``, caller's buffer) receives the needed rows of ``w``
    transposed, and blocks of ``RB`` rows (the tile's last ones in blocks of ``RB_TAIL``, then
    singly) x ``VW`` columns accumulate in registers over ``out``; otherwise each element is
    a contiguous dot product over ``w[col0 + j, :]``. ``lanes``: the CPU's vector width (8 or
    16), which sets the register block's columns; the result does not depend on it.
    """
    _wide_vectors()
    n_batch = dy.shape[0]
    n_out = w.shape[1]
    n_cols = dx.shape[1]
    tile_b = max(tile_b, 1)  # known positive: row indices need no negative-index wraparound
    n_tiles = (n_batch + tile_b - 1) // tile_b
    zero = np.float32(0.0)
    col0 = max(col0, 0)  # known non-negative: indices need no wraparound, loads stay contiguous
    if n_cols % VW == 0:
        for o in range(n_out):
            for j in range(n_cols):
                wt[o, j] = w[col0 + j, o]
        for t in range(n_tiles):
            r0 = t * tile_b
            r1 = min(r0 + tile_b, n_batch)
            if lanes == 8:
                _input_blocked8(dy, wt, dx, r0, r1)
            else:
                _input_blocked16(dy, wt, dx, r0, r1)
            if mask is not None:  # the ReLU gradient, over the tile while it is in L1
                for bb in range(r0, r1):
                    for j in range(n_cols):
                        v = dx[bb, j]
                        dx[bb, j] = v if mask[bb, col0 + j] > zero else zero
    else:
        for t in range(n_tiles):
            for bb in range(t * tile_b, min((t + 1) * tile_b, n_batch)):
                for j in range(n_cols):
                    a = zero
                    for o in range(n_out):
                        a += dy[bb, o] * w[col0 + j, o]
                    if mask is not None:
                        a = a if mask[bb, col0 + j] > zero else zero
                    dx[bb, j] = a
    if q_bits != 0:
        quantize_rows(dx, q_frac, q_bits)


# ---------------------------------------------------------------------------------------
# Optimiser and target networks (flat parameter vectors)
# ---------------------------------------------------------------------------------------


@njit(**_KW)
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
        lo = np.uint64(seg_start[s])  # unsigned: no negative-index wraparound, the loops vectorise
        hi = np.uint64(seg_start[s + 1])
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
            param[k] = param[k] - lr32 * (mk / bc1) / (np.float32(math.sqrt(vk / bc2)) + eps32)
        if q_bits != 0:
            for k in range(lo, hi):
                param[k] = q_round(param[k], q_frac, q_bits)


@njit(**_KW)
def soft_update(target, source, tau):
    """Polyak averaging ``target = (1 - tau) * target + tau * source`` on flat vectors."""
    t32 = np.float32(tau)
    keep = np.float32(1.0) - t32
    for k in range(target.shape[0]):
        target[k] = keep * target[k] + t32 * source[k]


# ---------------------------------------------------------------------------------------
# Gumbel-softmax (discrete actions)
# ---------------------------------------------------------------------------------------

U_MIN = np.float32(1e-10)  # uniform samples are clipped into (0, 1) before the Gumbel transform
U_MAX = np.float32(1.0 - 2.0**-24)


@intrinsic
def _frexp_f32(typingctx, x):
    """``(m, e)`` with ``x = m * 2**e``, ``m`` in [0.5, 1), for a positive normal float32, from
    its bits (exponent field and mantissa as 32-bit integer operations, so loops vectorise at
    full width; ``e`` as a float32)."""
    if x != types.float32:
        return None

    def codegen(context, builder, sig, args):
        i32 = llvm_ir.IntType(32)
        f32 = llvm_ir.FloatType()
        bits = builder.bitcast(args[0], i32)
        e = builder.sub(builder.and_(builder.lshr(bits, i32(23)), i32(0xFF)), i32(126))
        m = builder.bitcast(builder.or_(builder.and_(bits, i32(0x807FFFFF)), i32(0x3F000000)), f32)
        return context.make_tuple(builder, sig.return_type, [m, builder.sitofp(e, f32)])

    return types.UniTuple(types.float32, 2)(types.float32), codegen


@intrinsic
def _ldexp1_f32(typingctx, n):
    """``2**n`` for a float32 ``n`` holding an integer in [-126, 127], built in the exponent bits."""
    if n != types.float32:
        return None

    def codegen(context, builder, sig, args):
        i32 = llvm_ir.IntType(32)
        k = builder.add(builder.fptosi(args[0], i32), i32(127))
        return builder.bitcast(builder.shl(k, i32(23)), llvm_ir.FloatType())

    return types.float32(types.float32), codegen


@njit(cache=True, inline="always", fastmath=True)
def exp_f32(x):
    """``exp(x)`` in float32 (Cephes ``expf``: range reduction by ln 2, degree-5 polynomial,
    exponent built in the bits; ~1 ulp). Arguments are clamped to [-87, 88] (no overflow,
    no denormals). Plain arithmetic, so loops of it vectorise (libm's ``expf`` does not)."""
    x = min(max(x, np.float32(-87.0)), np.float32(88.0))
    fx = np.floor(x * np.float32(1.44269504088896341) + np.float32(0.5))
    r = x - fx * np.float32(0.693359375) + fx * np.float32(2.12194440e-4)
    z = r * r
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    y = p * z + r + np.float32(1.0)
    return y * _ldexp1_f32(fx)


@njit(cache=True, inline="always", fastmath=True)
def log_f32(x):
    """``log(x)`` in float32 for positive normal ``x`` (Cephes ``logf``: exponent and mantissa
    from the bits, degree-8 polynomial; ~1 ulp); vectorises like :func:`exp_f32`."""
    m, e = _frexp_f32(x)  # x = m 2^e, m in [0.5, 1)
    small = m < np.float32(0.707106781186547524)
    e = e - np.float32(1.0) if small else e
    r = (m + m - np.float32(1.0)) if small else (m - np.float32(1.0))
    z = r * r
    p = np.float32(7.0376836292e-2)
    p = p * r - np.float32(1.1514610310e-1)
    p = p * r + np.float32(1.1676998740e-1)
    p = p * r - np.float32(1.2420140846e-1)
    p = p * r + np.float32(1.4249322787e-1)
    p = p * r - np.float32(1.6668057665e-1)
    p = p * r + np.float32(2.0000714765e-1)
    p = p * r - np.float32(2.4999993993e-1)
    p = p * r + np.float32(3.3333331174e-1)
    y = p * r * z - e * np.float32(2.12194440e-4) - np.float32(0.5) * z
    return r + y + e * np.float32(0.693359375)


@njit(**_KW)
def gumbel_softmax(logits, u, out, temperature, tile_b):
    """``out = softmax((logits - log(-log(u'))) / temperature)`` row-wise, ``u' = clip(u, U_MIN, U_MAX)``.

    ``u`` holds uniform samples in [0, 1) drawn by the caller (so the kernel has no RNG
    state and a seed reproduces everything); ``u = None``-like behaviour (plain softmax)
    is obtained by passing ``u`` filled with ``exp(-1)`` (Gumbel noise 0). Per tile, three
    elementwise passes over its rows x actions (noise, exponentials, normalisation) with
    the row maxima and sums in between; ``log`` and ``exp`` are :func:`log_f32`,
    :func:`exp_f32`.
    """
    _wide_vectors()
    n_batch = logits.shape[0]
    n_act = logits.shape[1]
    lf = logits.reshape(n_batch * n_act)
    uf = u.reshape(n_batch * n_act)
    of = out.reshape(n_batch * n_act)
    inv_t = np.float32(1.0 / temperature)
    tile_b = max(tile_b, 1)
    n_tiles = (n_batch + tile_b - 1) // tile_b
    for t in range(n_tiles):
        r0 = t * tile_b
        r1 = min(r0 + tile_b, n_batch)
        # flat element index of the tile, unsigned: no negative-index wraparound, so the
        # elementwise passes vectorise
        k0 = np.uint64(r0 * n_act)
        k1 = np.uint64(r1 * n_act)
        na = np.uint64(n_act)
        for k in range(k0, k1):
            ua = min(max(uf[k], U_MIN), U_MAX)
            of[k] = (lf[k] - log_f32(-log_f32(ua))) * inv_t
        for k in range(k0, k1, na):  # row maxima subtracted
            mx = of[k]
            for a in range(np.uint64(1), na):
                mx = max(mx, of[k + a])
            for a in range(na):
                of[k + a] = of[k + a] - mx
        for k in range(k0, k1):
            of[k] = exp_f32(of[k])
        for k in range(k0, k1, na):  # rows normalised
            s = np.float32(0.0)
            for a in range(na):
                s += of[k + a]
            for a in range(na):
                of[k + a] = of[k + a] / s


@njit(**_KW)
def gumbel_softmax_backward(out, dout, dlogits, temperature, tile_b):
    """Gradient through the softmax of :func:`gumbel_softmax` (noise is a constant):
    ``dlogits = out * (dout - sum(dout * out)) / temperature`` (overwrites dlogits)."""
    n_batch = out.shape[0]
    n_act = out.shape[1]
    inv_t = np.float32(1.0 / temperature)
    tile_b = max(tile_b, 1)  # known positive: row indices need no negative-index wraparound
    n_tiles = (n_batch + tile_b - 1) // tile_b
    for t in range(n_tiles):
        for bb in range(t * tile_b, min((t + 1) * tile_b, n_batch)):
            dot = np.float32(0.0)
            for a in range(n_act):
                dot += dout[bb, a] * out[bb, a]
            for a in range(n_act):
                dlogits[bb, a] = out[bb, a] * (dout[bb, a] - dot) * inv_t


# ---------------------------------------------------------------------------------------
# Counter-based random numbers (the minibatch indices and the Gumbel noise)
# ---------------------------------------------------------------------------------------

_GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's counter increment (2^64 / golden ratio)


@njit(cache=True, inline="always")
def _mix64(z):
    """splitmix64's output function: a bijective 64-bit mixer (Steele, Lea, Flood 2014)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(**_KW)
def uniform_fill(key, out):
    """``out[k] = ((mix(key + (k + 1) * GOLDEN) >> 40) * 2^-24)``: uniform float32 samples in
    [0, 1) on the 24-bit grid, a pure function of ``key`` and the index (splitmix64 as a
    counter-based generator: no state to carry, so a hardware generator is one mixer per
    lane and any slice of the stream can be drawn independently)."""
    k0 = np.uint64(key)
    g = np.uint64(_GOLDEN)
    scale = np.float32(2.0**-24)
    for k in range(np.uint64(out.shape[0])):
        z = _mix64(k0 + (k + np.uint64(1)) * g)
        out[k] = np.float32(np.int32(z >> np.uint64(40))) * scale


@njit(**_KW)
def randint_fill(key, high, out):
    """``out[k]`` uniform in ``0 .. high - 1`` from the same counter-based stream as
    :func:`uniform_fill` (the high 32 bits scaled by multiply-shift: bias below ``high / 2^32``)."""
    k0 = np.uint64(key)
    g = np.uint64(_GOLDEN)
    h = np.uint64(high)
    for k in range(np.uint64(out.shape[0])):
        z = _mix64(k0 + (k + np.uint64(1)) * g)
        out[k] = np.int64(((z >> np.uint64(32)) * h) >> np.uint64(32))


def counter_rng_nest(n: int, tiling: Tiling = Tiling()) -> LoopNest:
    """:func:`uniform_fill` / :func:`randint_fill`: one 64-bit mixer (3 multiplies, 3
    shift-xors) per sample, no state."""
    return LoopNest("counter_rng", (Loop("sample", n, unroll=tiling.unroll),), macs=3 * n, words_in=0, words_out=n,
                    extra={"mixer": "splitmix64"})


# ---------------------------------------------------------------------------------------
# Data movement and small fused loss kernels
# ---------------------------------------------------------------------------------------


@njit(cache=True, boundscheck=False, nogil=True)
def gather_transitions(oa, next_o, idx, c_in, c_in_next):
    """The replay DMA of one sampled minibatch: row ``idx[k]`` of ``oa`` (all agents'
    observations and actions, the critic-input layout) into ``c_in[k]`` and of ``next_o``
    (all next observations) into the first columns of ``c_in_next[k]``. The replay is larger
    than the caches, so the rows of sample ``k + GATHER_AHEAD`` are requested while sample
    ``k`` is copied."""
    w_oa = np.uint64(oa.shape[1])  # unsigned indices: no negative-index wraparound
    w_no = np.uint64(next_o.shape[1])
    n = idx.shape[0]
    for k in range(min(GATHER_AHEAD, n)):
        _request_rows(oa, next_o, idx[k])
    for k in range(np.uint64(n)):
        if k + GATHER_AHEAD < n:
            _request_rows(oa, next_o, idx[k + GATHER_AHEAD])
        r = np.uint64(idx[k])
        for j in range(w_oa):
            c_in[k, j] = oa[r, j]
        for j in range(w_no):
            c_in_next[k, j] = next_o[r, j]


GATHER_AHEAD = 16  # samples between a replay row's prefetch and its copy


@njit(cache=True, inline="always")
def _request_rows(oa, next_o, r):
    """Prefetch the cache lines of replay row ``r`` of ``oa`` and ``next_o``."""
    for j in range(0, oa.shape[1], 16):
        _prefetch(oa, r, j)
    _prefetch(oa, r, oa.shape[1] - 1)
    for j in range(0, next_o.shape[1], 16):
        _prefetch(next_o, r, j)
    _prefetch(next_o, r, next_o.shape[1] - 1)


@njit(cache=True, boundscheck=False, nogil=True)
def put_columns(src, dst, col0):
    """``dst[:, col0:col0 + w] = src`` (an actor's sampled actions into a critic's input)."""
    w = np.uint64(src.shape[1])
    c0 = np.uint64(max(col0, 0))
    for k in range(np.uint64(src.shape[0])):
        for j in range(w):
            dst[k, c0 + j] = src[k, j]


@njit(cache=True, nogil=True)
def td_loss_grad(q, q_next, rew, done, idx, gamma, dq):
    """Critic loss ``mean((q - y)^2)`` with ``y = r + gamma (1 - done) q_next``, the rewards and
    done flags of the sampled replay rows ``idx``: writes ``dq = 2 (q - y) / B`` and returns the loss."""
    n = q.shape[0]
    loss = 0.0
    for k in range(n):
        r = idx[k]
        y = rew[r] + np.float32(gamma) * (np.float32(1.0) - done[r]) * q_next[k, 0]
        d = q[k, 0] - y
        loss += np.float64(d) * d
        dq[k, 0] = np.float32(2.0) * d / np.float32(n)
    return loss / n


@njit(cache=True, nogil=True)
def add_l2_grad(dlogits, logits, coef):
    """``dlogits += coef * 2 * logits / logits.size`` — the gradient of ``coef * mean(logits^2)``."""
    scale = np.float32(2.0 * coef / (logits.shape[0] * logits.shape[1]))
    for k in range(logits.shape[0]):
        for a in range(logits.shape[1]):
            dlogits[k, a] += scale * logits[k, a]
