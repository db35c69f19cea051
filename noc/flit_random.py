"""``np.random.random()`` and ``np.random.randint(low, high)`` of Numba's NumPy generator,
emitted inline where a kernel calls them.

The draws, and the generator they advance, are Numba's own: the same state (seeded by
``np.random.seed`` inside a kernel), the same Mersenne Twister words, the same conversion
to a double and the same rejection sampling for an integer range, so a run draws exactly
what it drew with the NumPy calls. What changes is the code: Numba compiles those calls as
separate functions that each look up the thread's generator state, which the synthetic
traffic source (every NI, every cycle, noc.flit_traffic) paid on every draw; inline, the
state's address is found once per kernel call.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.core.typing import signature
from numba.cpython import randomimpl
from numba.extending import intrinsic


@intrinsic
def random_double(typingctx):
    """``np.random.random()``: the next double in [0, 1) of Numba's NumPy generator."""
    def codegen(context, builder, sig, args):
        state = randomimpl.get_state_ptr(context, builder, "np")
        return randomimpl.get_next_double(context, builder, state)
    return signature(types.float64), codegen


@intrinsic
def random_int(typingctx, low, high):
    """``np.random.randint(low, high)`` (int64 bounds): an integer in [low, high) of
    Numba's NumPy generator (ValueError on an empty range, as NumPy)."""
    def codegen(context, builder, sig, args):
        lo, hi = (context.cast(builder, a, t, types.int64) for a, t in zip(args, sig.args))
        i64 = ir.IntType(64)
        return randomimpl._randrange_impl(context, builder, lo, hi, ir.Constant(i64, 1), i64, True, "np")
    if isinstance(low, types.Integer) and isinstance(high, types.Integer):
        return signature(types.int64, low, high), codegen
    return None
