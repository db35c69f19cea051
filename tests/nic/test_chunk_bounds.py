"""A schedule splits a vector into flow chunks ``b[f] = f * n // F`` without int64 overflow:
checked against exact Python integers up to the largest allowed vector; a larger one is a
clear error, not an OverflowError."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nic.collectives.schedule import MAX_VECTOR_ELEMENTS, Schedule
from noc.base.errors import HwModelsError


def _schedule(flows: int) -> Schedule:
    return Schedule.from_transfers("test", "full:2", 2, 1, flows, [(0, 0, 1, f, 0) for f in range(flows)])


@settings(max_examples=60, deadline=None)
@given(flows=st.integers(1, 4096), n=st.one_of(st.integers(0, 10**6), st.integers(0, MAX_VECTOR_ELEMENTS)))
def test_bounds_match_exact_integer_arithmetic(flows, n):
    b = _schedule(flows).chunk_bounds(n)
    assert b.dtype == np.int64
    assert b.tolist() == [f * n // flows for f in range(flows + 1)]


def test_the_largest_vector_and_its_bytes_fit_and_one_more_is_refused():
    s = _schedule(1000)
    b = s.chunk_bounds(MAX_VECTOR_ELEMENTS)
    assert int(b[-1]) == MAX_VECTOR_ELEMENTS and int(np.diff(b).max()) * 16 <= 2**63 - 1
    for bad in (MAX_VECTOR_ELEMENTS + 1, 2**63 - 1, -1):
        with pytest.raises(HwModelsError, match=rf"vector of {bad} elements: allowed 0\.\."):
            s.chunk_bounds(bad)
