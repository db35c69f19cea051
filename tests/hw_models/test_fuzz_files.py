"""Fuzzing the files the commands read: any range a sweep file can hold either expands into
the values its definition gives or is a :class:`ConfigError` (never another exception).
A small example budget runs by default; the slow suite runs many more."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hw_models.sweep.spec import MAX_AXIS_VALUES, load_sweep
from noc.base.errors import ConfigError

EDGES = [0, 1, -1, 2, 3, 10, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**400, 1e-300, 1e300, 1e308, -1e308, 1.5,
         float("inf"), float("-inf"), float("nan")]
NUMBERS = st.one_of(st.sampled_from(EDGES), st.integers(-(2**70), 2**70), st.integers(-1000, 1000),
                    st.floats(allow_nan=True, allow_infinity=True))


def _toml(x) -> str:
    if isinstance(x, float):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf") if math.isinf(x) else repr(x)
    return str(x)


def _check_range(tmp_path, lo, hi, key, inc):
    p = tmp_path / "s.toml"
    p.write_text(f'kind = "noc_load"\n[axes]\n"router.num_vcs" = {{from = {_toml(lo)}, to = {_toml(hi)}, '
                 f'{key} = {_toml(inc)}}}\n')
    try:
        spec = load_sweep(p, None)
    except ConfigError as exc:
        assert "\n" not in str(exc) and "s.toml" in str(exc)
        return
    values = [v[0] for v in spec.axes[0].values]
    assert 1 <= len(values) <= MAX_AXIS_VALUES
    if all(isinstance(x, int) for x in (lo, hi, inc)):
        want = list(range(lo, hi + 1, inc)) if key == "step" else [lo * inc**k for k in range(len(values))]
        assert values == want
        assert key == "step" or values[-1] <= hi < values[-1] * inc
    else:
        assert values[0] == pytest.approx(lo) and values[-1] <= hi + 1e-9 * max(1.0, abs(hi))


def _run(tmp_path, lo, hi, key, inc):
    _check_range(tmp_path, lo, hi, key, inc)


_given = given(lo=NUMBERS, hi=NUMBERS, key=st.sampled_from(["step", "times"]), inc=NUMBERS)
_hc = [HealthCheck.function_scoped_fixture]


@settings(max_examples=150, deadline=None, suppress_health_check=_hc)
@_given
def test_any_range_expands_exactly_or_is_a_config_error(tmp_path, lo, hi, key, inc):
    _run(tmp_path, lo, hi, key, inc)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=_hc)
@_given
def test_any_range_expands_exactly_or_is_a_config_error_many(tmp_path, lo, hi, key, inc):
    _run(tmp_path, lo, hi, key, inc)
