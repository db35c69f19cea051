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
from numba import njit
from numba.core import cgutils
from numba.cpython.unsafe.numbers import trailing_zeros
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
# word need not be tempered at all, only stepped over. ``skip_failed`` (below) finds the next
# trial that may succeed from a bit per word of the generator's block and advances its index
# by two words per trial stepped over, which leaves the generator exactly where the trials'
# random_double() calls would.

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


def _word_ptr(context, builder, sig, args):
    state = _state_ptr(context, builder, args[0], sig)
    i = context.cast(builder, args[1], sig.args[1], types.int64)
    return cgutils.gep_inbounds(builder, randomimpl.get_array_ptr(builder, state), 0, i)


@intrinsic
def _word(typingctx, addr, i):
    """Word ``i`` (0..623) of the generator's block, untempered (a uint32 value in an int64)."""
    def codegen(context, builder, sig, args):
        return builder.zext(builder.load(_word_ptr(context, builder, sig, args)), ir.IntType(64))
    if isinstance(addr, types.Integer) and isinstance(i, types.Integer):
        return signature(types.int64, addr, i), codegen
    return None


@intrinsic
def _set_word(typingctx, addr, i, value):
    """Word ``i`` of the generator's block := the low 32 bits of ``value``."""
    def codegen(context, builder, sig, args):
        v = context.cast(builder, args[2], sig.args[2], types.int64)
        builder.store(builder.trunc(v, ir.IntType(32)), _word_ptr(context, builder, sig, args))
        return context.get_dummy_value()
    if all(isinstance(a, types.Integer) for a in (addr, i, value)):
        return signature(types.none, addr, i, value), codegen
    return None


@njit(cache=True, inline="always")
def _tempered(mt, i):
    """Word i of the block (``mt``: the generator state's address), tempered as Numba's
    draws temper it (a uint32 value in an int64)."""
    y = _word(mt, i)
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y


@njit(cache=True, inline="always")
def _high_bits(mt, i):
    """The ``a`` (top 27 bits) of a random_double() whose first word is word i."""
    return _tempered(mt, i) >> 5


@njit(cache=True, inline="always")
def _twist_word(mt, i, j, m):
    y = (_word(mt, i) & 0x80000000) | (_word(mt, j) & 0x7FFFFFFF)
    _set_word(mt, i, _word(mt, m) ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF))


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


# ---- a trial source: the same draws as random_double / random_int, with failed trials
# stepped over by a bit set per block
#
# ``rs`` (int64[2 + _FLAG_WORDS], made by :func:`trial_source`, readied by :func:`start_trials`) holds whether the flags are
# those of the generator's current block (rs[0]), the trials' threshold a_fail (rs[1], of
# fail_threshold) and one bit per word of the block (rs[2:]): set when a trial whose first
# word it is may succeed. The draws below read and step Numba's own generator (its state,
# index and words) and make every next block themselves (_twist, as numba_rnd_shuffle),
# clearing rs[0]; so as long as a kernel draws only through them, rs[0] set means the flags
# describe the block in use. The flags are computed for a whole block at once (vectorised).

_FLAG_WORDS = (_N + 63) >> 6
_EVEN = np.int64(0x5555555555555555)  # bits at even positions
_ODD = np.int64(-0x5555555555555556)  # 0xAAAA...: bits at odd positions


def trial_source() -> np.ndarray:
    """Scratch ``rs`` for a kernel's trials (:func:`start_trials` readies it)."""
    return np.zeros(2 + _FLAG_WORDS, np.int64)


@njit(cache=True, inline="always")
def start_trials(rs, a_fail):
    """Ready ``rs`` for trials at threshold ``a_fail`` (fail_threshold of their rate); its
    flags are computed for the generator's block at the first trial (anything may have drawn
    since ``rs`` was last used)."""
    rs[0] = 0
    rs[1] = a_fail


@njit(cache=True, inline="always")
def _block():
    """(address of the generator state, the same: the block's words are read through it)."""
    addr = _state_address()
    return addr, addr


@njit(cache=True, _nrt=False)
def _new_block(rs, mt):
    """The next block (a call, not inlined: once per 624 words, and the twist is long code)."""
    _twist(mt)
    rs[0] = 0


@njit(cache=True, inline="always")
def _next_word(rs):
    """The next tempered word of Numba's generator (its get_next_int32)."""
    addr, mt = _block()
    idx = _word_index(addr)
    if idx >= _N:
        _new_block(rs, mt)
        idx = 0
    _set_word_index(addr, idx + 1)
    return _tempered(mt, idx)


@njit(cache=True, inline="always")
def draw_double(rs):
    """``random_double()``: the same double from the same words."""
    a = _next_word(rs) >> 5
    b = _next_word(rs) >> 6
    return (a * 67108864.0 + b) / 9007199254740992.0


@njit(cache=True, inline="always")
def draw_int(rs, low, high):
    """``random_int(low, high)`` (NumPy's rule in Numba: rejection sampling over the fewest
    bits that hold high - low - 1, one word per try, two above 32 bits, high word first;
    no draw when the range has one value). The range must not be empty."""
    n = np.int64(high - low)
    if n <= 0:
        raise ValueError("empty range for randrange()")
    if n == 1:
        return np.int64(low)
    nbits = 0
    m = n - 1
    while m > 0:
        nbits += 1
        m >>= 1
    while True:
        if nbits <= 32:
            r = _next_word(rs) & ((np.int64(1) << nbits) - 1)
        else:
            hi = _next_word(rs) & ((np.int64(1) << (nbits - 32)) - 1)
            r = _next_word(rs) + (hi << 32)
        if r < n:
            return np.int64(low) + r


@njit(cache=True, _nrt=False)
def _flags(rs, mt):
    """rs[2:] for the block mt: bit i set when word i's top 27 bits are below rs[1]."""
    a_fail = rs[1]
    for w in range(_FLAG_WORDS):
        bits = np.int64(0)
        for j in range(min(64, _N - 64 * w)):
            bits |= np.int64(_high_bits(mt, 64 * w + j) < a_fail) << j
        rs[2 + w] = bits
    rs[0] = 1


@njit(cache=True, inline="always")
def _next_flag(rs, i):
    """The first position >= i (0 <= i < _N) of the block with its flag set and i's parity, or _N."""
    w = i >> 6
    par = _ODD if i & 1 else _EVEN
    bits = rs[2 + w] & par & (np.int64(-1) << (i & 63))
    while bits == 0:
        w += 1
        if w >= _FLAG_WORDS:
            return _N
        bits = rs[2 + w] & par
    return (w << 6) + trailing_zeros(bits)


@njit(cache=True, inline="always")
def skip_failed(rs, n):
    """How many of the next ``n`` trials ``draw_double() < rate`` (rs made for rate's
    threshold) certainly fail, counting from the first; the generator is advanced past them,
    as their draws would have. Stops at the first trial that may succeed."""
    addr, mt = _block()
    idx = _word_index(addr)
    k = 0
    while k < n:
        if idx >= _N:
            _new_block(rs, mt)
            idx = 0
        if rs[0] == 0:
            _flags(rs, mt)
        if idx == _N - 1:  # the trial's second word is the next block's first
            if (rs[2 + (idx >> 6)] >> (idx & 63)) & 1:
                break
            _new_block(rs, mt)
            idx = 1
            k += 1
            continue
        fit = (_N - idx) >> 1  # trials whose two words are in this block
        take = min((_next_flag(rs, idx) - idx) >> 1, fit, n - k)
        k += take
        idx += 2 * take
        if take < fit and k < n:
            break  # a trial that may succeed
    _set_word_index(addr, idx)
    return k



