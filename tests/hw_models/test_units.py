from __future__ import annotations

import pytest

from noc.base.units import format_size_bytes, parse_size_bytes, parse_sizes_bytes
from noc.base.errors import ConfigError


def test_sizes_parse_with_binary_and_decimal_units():
    assert parse_size_bytes("16MiB") == 16 * 1024 * 1024
    assert parse_size_bytes("32 KiB") == 32768
    assert parse_size_bytes("1GB") == 10**9
    assert parse_size_bytes(4096) == 4096 and parse_size_bytes("4096") == 4096


def test_ranges_double_and_lists_keep_order():
    sizes = parse_sizes_bytes("32KiB..64MiB")
    assert sizes[0] == 32 * 1024 and sizes[-1] == 64 * 2**20 and len(sizes) == 12
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))
    assert parse_sizes_bytes("1MiB,4KiB") == [2**20, 4096]
    assert format_size_bytes(64 * 2**20) == "64MiB" and format_size_bytes(1000) == "1000B"


@pytest.mark.parametrize("bad", ["", "abc", "0", "-1KiB", "4..2", "1XB"])
def test_bad_sizes_are_config_errors(bad):
    with pytest.raises(ConfigError):
        parse_sizes_bytes(bad)


def test_the_largest_size_has_its_unit_and_one_more_byte_is_refused():
    assert parse_size_bytes("1TiB") == 2**40 == parse_size_bytes(2**40) and format_size_bytes(2**40) == "1TiB"
    assert parse_size_bytes("1TB") == 10**12
    with pytest.raises(ConfigError, match="larger than 1 TiB"):
        parse_size_bytes(2**40 + 1)


@pytest.mark.parametrize("bad", ["1..", "..4MiB", " .. "])
def test_a_range_without_an_end_is_named(bad):
    with pytest.raises(ConfigError, match="needs both ends"):
        parse_sizes_bytes(bad)


def test_times_read_in_the_unit_that_fits():
    from noc.base.units import cycles_to_seconds, format_seconds
    assert format_seconds(443e-9) == "443.0 ns"
    assert format_seconds(1.595e-6) == "1.595 µs"
    assert format_seconds(26.5238e-3) == "26.52 ms"
    assert format_seconds(1.2043) == "1.204 s"
    assert format_seconds(12345.6) == "12,346 s"
    assert format_seconds(0.0) == "0.000 ns"
    assert cycles_to_seconds(1595, 1.0) == 1.595e-6 and cycles_to_seconds(500, 0.25) == 2e-6
    with pytest.raises(ConfigError, match="clock_ghz"):
        cycles_to_seconds(1, 0)
