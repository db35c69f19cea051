"""Stepping over Bernoulli trials that certainly fail (noc.flit_random.failed_trials) leaves
Numba's generator exactly where one ``random_double() < rate`` per trial leaves it: the
same successes, the same draws after each success, the same next draws at the end, for
rates from the smallest allowed to 1, in runs of trials that cross block boundaries at both
word parities."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from numba import njit

from noc.flit_random import fail_threshold, failed_trials, random_double, random_int


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
def _skipping(seed, rate, n, chunk, out):
    """The same trials in runs of ``chunk`` (a cycle's NIs), failed ones stepped over."""
    np.random.seed(seed)
    a_fail = np.int64(np.ceil(rate * 134217728.0))
    k = 0
    t = 0
    while t < n:
        m = min(chunk, n - t)
        s = 0
        while s < m:
            s += failed_trials(m - s, a_fail)
            if s >= m:
                break
            if random_double() < rate:
                d = random_int(0, 63)
                if d & 1:
                    d += 64 * np.int64(random_double() < 0.5)
                out[k] = (t + s) * 1000 + d
                k += 1
            s += 1
        t += m
    return k, random_double(), random_int(0, 1 << 40)


@pytest.mark.parametrize("rate", [1e-6, 2.0 ** -27, 3 * 2.0 ** -27 + 2.0 ** -40, 0.005, 0.02, 0.15, 0.5, 1.0])
@pytest.mark.parametrize("chunk", [1, 64, 1000])
def test_skipping_draws_what_every_trial_draws(rate, chunk):
    n = 200_003
    for seed in (1, 12345):
        want, got = np.zeros(n, np.int64), np.zeros(n, np.int64)
        k1, d1, i1 = _one_by_one(seed, rate, n, chunk, want)
        k2, d2, i2 = _skipping(seed, rate, n, chunk, got)
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
