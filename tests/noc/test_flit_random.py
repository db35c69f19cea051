"""The traffic source's draws (noc.flit_random: draw_double, draw_int, and skip_failed,
which steps over Bernoulli trials that certainly fail) against Numba's own
``np.random.random()`` and ``np.random.randint`` one draw at a time: the same successes, the
same draws after each success and the same next draws at the end, for rates from the
smallest allowed to 1, in runs of trials that cross block boundaries at both word parities."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from numba import njit

from noc.flit_random import (
    draw_double, draw_int, fail_threshold, random_double, random_int, skip_failed, start_trials, trial_source,
)


@njit(cache=True)
def _one_by_one(seed, rate, n, chunk, out):
    """Every trial drawn; after a success, a destination and sometimes a second double
    (as a packet's draws do), so the parity of the generator's position keeps changing."""
    np.random.seed(seed)
    k = 0
    for t in range(n):
        if random_double() < rate:
            d = random_int(0, 63)
            if d & 1:
                d += 64 * np.int64(random_double() < 0.5)
            out[k] = t * 1000 + d
            k += 1
    return k, random_double(), random_int(0, 1 << 40)


@njit(cache=True)
def _skipping(seed, rate, n, chunk, out, rs):
    """The same trials in runs of ``chunk`` (a cycle's NIs), failed ones stepped over, every
    other draw through the trial source."""
    np.random.seed(seed)
    start_trials(rs, np.int64(np.ceil(rate * 134217728.0)))
    k = 0
    t = 0
    while t < n:
        m = min(chunk, n - t)
        s = 0
        while s < m:
            s += skip_failed(rs, m - s)
            if s >= m:
                break
            if draw_double(rs) < rate:
                d = draw_int(rs, 0, 63)
                if d & 1:
                    d += 64 * np.int64(draw_double(rs) < 0.5)
                out[k] = (t + s) * 1000 + d
                k += 1
            s += 1
        t += m
    return k, random_double(), random_int(0, 1 << 40)


@njit(cache=True)
def _ints(seed, hi, n, ours, rs):
    np.random.seed(seed)
    out = np.zeros(n, np.int64)
    start_trials(rs, np.int64(1))
    for i in range(n):
        out[i] = draw_int(rs, 3, 3 + hi) if ours else random_int(3, 3 + hi)
    return out, random_double()


@pytest.mark.parametrize("span", [1, 2, 3, 63, 64, 65, 1000, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, 3 << 40, (1 << 62) + 5])
def test_draw_int_is_numbas_randint(span):
    got, after = _ints(7, span, 5000, True, trial_source())
    want, after_want = _ints(7, span, 5000, False, trial_source())
    assert np.array_equal(got, want) and after == after_want


@pytest.mark.parametrize("rate", [1e-6, 2.0 ** -27, 3 * 2.0 ** -27 + 2.0 ** -40, 0.005, 0.02, 0.15, 0.5, 1.0])
@pytest.mark.parametrize("chunk", [1, 64, 1000])
def test_skipping_draws_what_every_trial_draws(rate, chunk):
    n = 200_003
    for seed in (1, 12345):
        want, got = np.zeros(n, np.int64), np.zeros(n, np.int64)
        k1, d1, i1 = _one_by_one(seed, rate, n, chunk, want)
        k2, d2, i2 = _skipping(seed, rate, n, chunk, got, trial_source())
        assert (k2, d2, i2) == (k1, d1, i1)
        assert np.array_equal(got[:k2], want[:k1])


def test_threshold_is_exact():
    """A trial whose first word's top 27 bits are a_fail fails whatever the second word
    (its smallest double is >= rate), and one at a_fail - 1 can succeed (its smallest is
    < rate): the threshold is the least that is sure."""
    for rate in (1e-6, 2.0 ** -27, 0.005, 0.02, 0.15, 1 / 3, 1.0):
        a = fail_threshold(rate)
        assert Fraction(a * 2 ** 26, 2 ** 53) >= Fraction(rate)
        assert Fraction((a - 1) * 2 ** 26, 2 ** 53) < Fraction(rate)
