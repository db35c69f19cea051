"""Sizes with units: ``16MiB``, ``32KiB..64MiB`` (doubling ranges), ``4096`` (bytes)."""

from __future__ import annotations

import re

from noc.base.errors import ConfigError

_UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
MAX_SIZE_BYTES = 1 << 40  # 1 TiB: far beyond any all-reduce simulated here, and safe in int64 byte counts
# ASCII digits only: re's \d and int() also take digits such as '４' or '١'
_SIZE_RE = re.compile(r"^\s*([0-9]+)\s*([kmgt]i?b|b)?\s*$", re.IGNORECASE | re.ASCII)


def parse_size_bytes(text: str | int) -> int:
    """``'16MiB'`` → 16777216. Integers (or digit strings) are bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise ConfigError(f"size {text!r} is not a size; use e.g. 4096, 32KiB, 16MiB, 1GiB")
        value = int(m.group(1)) * _UNITS[(m.group(2) or "").lower()]
    if value <= 0:
        raise ConfigError(f"size {text!r} must be positive")
    if value > MAX_SIZE_BYTES:
        raise ConfigError(f"size {text!r} is larger than {MAX_SIZE_BYTES >> 40} TiB")
    return value


def parse_sizes_bytes(text: str) -> list[int]:
    """``'32KiB..64MiB'`` → every power-of-two multiple from 32 KiB to 64 MiB; ``'1MiB,4MiB'`` → a list."""
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if ".." in part:
            lo_s, hi_s = part.split("..", 1)
            if not lo_s.strip() or not hi_s.strip():
                raise ConfigError(f"size range {part!r} needs both ends, e.g. 32KiB..64MiB")
            lo, hi = parse_size_bytes(lo_s), parse_size_bytes(hi_s)
            if hi < lo:
                raise ConfigError(f"size range {part!r} runs backwards ({lo} > {hi} bytes)")
            s = lo
            while s <= hi:
                out.append(s)
                s *= 2
        elif part:
            out.append(parse_size_bytes(part))
    if not out:
        raise ConfigError(f"sizes {text!r} name no size")
    return out


def format_size_bytes(n: int) -> str:
    """16777216 → '16MiB' (exact binary multiples only, else bytes)."""
    for unit, mult in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n % mult == 0:
            return f"{n // mult}{unit}"
    return f"{n}B"


def cycles_to_seconds(cycles: float, clock_ghz: float) -> float:
    """Cycles of a clock of ``clock_ghz`` GHz in seconds."""
    if not clock_ghz > 0:
        raise ConfigError(f"clock_ghz = {clock_ghz!r}: must be > 0 to turn cycles into seconds")
    return float(cycles) / (clock_ghz * 1e9)


def format_seconds(seconds: float, digits: int = 4) -> str:
    """A time with the unit that keeps it readable: ``'443 ns'``, ``'1.595 µs'``,
    ``'26.52 ms'``, ``'1.204 s'`` (``digits`` significant digits, at least the integer part)."""
    s = float(seconds)
    if s != s or s in (float("inf"), float("-inf")):
        return str(s)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(s) >= scale or unit == "ns":
            v = s / scale
            whole = len(str(int(abs(v)))) if abs(v) >= 1 else 1
            return f"{v:,.{max(0, digits - whole)}f} {unit}"
    raise AssertionError("unreachable")

