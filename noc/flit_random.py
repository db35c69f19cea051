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

import math

from llvmlite import ir
import numpy as np
from numba import carray, njit
from numba.core import cgutils
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


# ---- skipping Bernoulli trials that fail, without changing the stream
#
# A Bernoulli trial ``random_double() < rate`` takes two 32-bit words of the Mersenne
# Twister: u = (a * 2**26 + b) / 2**53 with a = the first tempered word >> 5 (27 bits) and
# b = the second >> 6, all exact in doubles. When a >= ceil(rate * 2**27) then
# a * 2**26 >= rate * 2**53, so u >= rate whatever b is: the trial fails, and the second
# word need not be tempered at all, only stepped over. ``failed_trials`` reads the first word
# of each trial straight from the generator's block and advances its index by two words per
# trial, which leaves the generator exactly where the trials' random_double() calls would.

_N, _M = 624, 397  # Mersenne Twister: words per block (numba.cpython.randomimpl.N), twist offset


def _state_ptr(context, builder, addr, sig):
    """The generator state at address ``addr`` (an int64 from :func:`_state_address`)."""
    a = context.cast(builder, addr, sig.args[0], types.int64)
    return builder.inttoptr(a, randomimpl.rnd_state_ptr_t)


@intrinsic
def _state_address(typingctx):
    """The address of Numba's NumPy generator state (of this thread), as an int64: looked up
    once, then passed to the accessors below (a lookup per access is a call each)."""
    def codegen(context, builder, sig, args):
        return builder.ptrtoint(randomimpl.get_state_ptr(context, builder, "np"), ir.IntType(64))
    return signature(types.int64), codegen


@intrinsic
def _word_index(typingctx, addr):
    """The generator's position in its block (0..624; 624: the next draw makes a new block)."""
    def codegen(context, builder, sig, args):
        state = _state_ptr(context, builder, args[0], sig)
        return builder.sext(builder.load(randomimpl.get_index_ptr(builder, state)), ir.IntType(64))
    if isinstance(addr, types.Integer):
        return signature(types.int64, addr), codegen
    return None


@intrinsic
def _set_word_index(typingctx, addr, idx):
    """Move the generator to position ``idx`` (0..624) of its block."""
    def codegen(context, builder, sig, args):
        state = _state_ptr(context, builder, args[0], sig)
        i = context.cast(builder, args[1], sig.args[1], types.int64)
        builder.store(builder.trunc(i, ir.IntType(32)), randomimpl.get_index_ptr(builder, state))
        return context.get_dummy_value()
    if isinstance(addr, types.Integer) and isinstance(idx, types.Integer):
        return signature(types.none, addr, idx), codegen
    return None


@intrinsic
def _words_ptr(typingctx, addr):
    """A pointer to the generator's block of 624 untempered words."""
    def codegen(context, builder, sig, args):
        state = _state_ptr(context, builder, args[0], sig)
        return builder.bitcast(randomimpl.get_array_ptr(builder, state), ir.PointerType(ir.IntType(32)))
    if isinstance(addr, types.Integer):
        return signature(types.CPointer(types.uint32), addr), codegen
    return None


@njit(cache=True, inline="always")
def _high_bits(mt, i):
    """Word i of the block, tempered as a draw tempers it, >> 5: the ``a`` of a
    random_double() whose first word it is."""
    y = np.int64(mt[i])
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y >> 5


@njit(cache=True, inline="always")
def _twist_word(mt, i, j, m):
    y = (np.int64(mt[i]) & 0x80000000) | (np.int64(mt[j]) & 0x7FFFFFFF)
    mt[i] = np.uint32(np.int64(mt[m]) ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF))


@njit(cache=True, inline="always")
def _twist(mt):
    """The generator's next block, as Numba's ``numba_rnd_shuffle`` makes it (MT19937)."""
    for i in range(_N - _M):
        _twist_word(mt, i, i + 1, i + _M)
    for i in range(_N - _M, _N - 1):
        _twist_word(mt, i, i + 1, i + _M - _N)
    _twist_word(mt, _N - 1, 0, _M - 1)


def fail_threshold(rate: float) -> int:
    """ceil(rate * 2**27): a trial ``random_double() < rate`` whose first word's top 27 bits
    are at least this fails (exact: rate * 2**27 is a power-of-two scaling of a double)."""
    return int(math.ceil(rate * 134217728.0))


@njit(cache=True, inline="always")
def failed_trials(n, a_fail):
    """How many of the next ``n`` trials ``random_double() < rate`` (``a_fail`` =
    :func:`fail_threshold` of rate) certainly fail, counting from the first: stops at the
    first trial that may succeed, or where a trial's two words would cross into the next
    block. The generator is advanced past the counted trials, as their draws would have."""
    addr = _state_address()
    mt = carray(_words_ptr(addr), _N)
    idx = _word_index(addr)
    k = 0
    while k < n:
        if idx + 2 <= _N:
            k_max = k + min(n - k, (_N - idx) >> 1)
            while k + 8 <= k_max:  # eight trials at a time, without a branch each (vectorised)
                low = _high_bits(mt, idx)
                for j in range(1, 8):
                    low = min(low, _high_bits(mt, idx + 2 * j))
                if low < a_fail:
                    break
                k += 8
                idx += 16
            while k < k_max and _high_bits(mt, idx) >= a_fail:
                k += 1
                idx += 2
            if k < k_max:
                break  # a trial that may succeed
        elif idx == _N:  # the block is used up: the next draw would make the next one
            _twist(mt)
            idx = 0
        elif _high_bits(mt, idx) >= a_fail:  # the trial's second word is the next block's first
            _twist(mt)
            idx = 1
            k += 1
        else:
            break
    _set_word_index(addr, idx)
    return k
