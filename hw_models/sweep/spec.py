"""The sweep file: a TOML file naming an experiment kind, the values every point shares and
the axes its points vary along (docs/sweeps.md).

    kind = "allreduce"                    # a module of hw_models.sweep.kinds
    store = "results/sweeps/ar.sqlite"    # optional; --store overrides
    [base]                                # every point's config
    network.topology = "torus:4x4"
    [axes]                                # crossed with each other
    "allreduce.size" = "32KiB..64MiB"     # a doubling size range
    "allreduce.algorithm" = ["ring", "multitree"]
    "network.link_latency_cycles" = {from = 1, to = 4, step = 1}
    [zip.nets]                            # advanced together: one axis of the cross product
    "network.topology" = ["torus:4x4", "torus:8x8"]
    "nic.packet_bytes" = [256, 512]
    [sample]                              # optional: a sample of the grid instead of all of it
    method = "latin_hypercube"            # or "random"
    points = 50
    seed = 7

:func:`load_sweep` reads and checks the file (every error names the TOML path of the key,
its value and what is allowed); :func:`expand` gives the points (each a dict of dotted key
-> value), the same for the same seed; :func:`point_config` merges one into ``[base]``.
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from noc.base.config import SEED_RULE, check_seed, read_toml
from noc.base.errors import ConfigError

TOP_KEYS = ("kind", "description", "store", "base", "axes", "zip", "sample")
SAMPLE_KEYS = ("method", "points", "seed")
METHODS = ("random", "latin_hypercube")
RANGE_KEYS = ("from", "to", "step", "times")
INTERVAL_KEYS = ("low", "high", "log", "integer")
MAX_AXIS_VALUES = 100_000
MAX_POINTS = 1_000_000
DEFAULT_SEED = 1

AXIS_FORMS = ("a list of values, a size range such as '32KiB..64MiB' (doubling), a table {from, to, step} "
              "or {from, to, times}, or with [sample] an interval {low, high, log, integer}")


@dataclass(frozen=True)
class Interval:
    """A continuous axis, only sampled: values in [low, high] (log-uniform with ``log``,
    rounded to integers with ``integer``)."""

    low: float
    high: float
    log: bool = False
    integer: bool = False

    def at(self, u: float) -> float | int:
        """The value at quantile ``u`` in [0, 1)."""
        if self.log:
            x = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            x = self.low + u * (self.high - self.low)
        x = min(max(x, self.low), self.high)
        return int(round(x)) if self.integer else float(x)


@dataclass(frozen=True)
class Axis:
    """One axis of the cross product: one key (``[axes]``) or the keys of a ``[zip.NAME]``
    group, with its values (a tuple per value: one item per key) or an :class:`Interval`."""

    where: str  # the TOML path, for messages: [axes] network.topology, or [zip.nets]
    keys: tuple[str, ...]
    values: tuple[tuple, ...] | Interval

    @property
    def size(self) -> int | None:
        return None if isinstance(self.values, Interval) else len(self.values)


@dataclass(frozen=True)
class Sample:
    method: str
    points: int
    seed: int


@dataclass(frozen=True)
class SweepSpec:
    path: str
    kind: str
    base: dict
    axes: tuple[Axis, ...]
    sample: Sample | None = None
    store: str | None = None
    description: str = ""
    origin: dict = field(default_factory=dict)  # dotted key -> where in the file it is set, for messages

    @property
    def grid_points(self) -> int | None:
        """Points of the full cross product (None when an axis is an interval)."""
        sizes = [a.size for a in self.axes]
        return None if None in sizes else math.prod(sizes)


def _err(path: str, where: str, value: Any, what: str) -> ConfigError:
    return ConfigError(f"{path}: {where} = {value!r}: {what}")


def _flatten(table: dict, prefix: str = "") -> dict[str, Any]:
    """Nested tables to dotted keys (``{"network": {"topology": x}}`` -> ``{"network.topology": x}``;
    a quoted key with dots is the same path); a table of range or interval keys is a value."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and not set(v) <= set(RANGE_KEYS) | set(INTERVAL_KEYS):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


#: what a range or interval bound may be (an integer outside int64 has no float to compare with)
NUMBER_RULE = "must be a finite number (an integer within -2**63 .. 2**63 - 1)"


def _is_number(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return -(2**63) <= x <= 2**63 - 1
    return isinstance(x, float) and math.isfinite(x)


def _axis_values(path: str, where: str, spec: Any, sampled: bool) -> tuple | Interval:
    """The values of one axis as the file gives them (module docstring)."""
    if isinstance(spec, list):
        if not spec:
            raise _err(path, where, spec, f"an empty list; an axis is {AXIS_FORMS}")
        if len(spec) > MAX_AXIS_VALUES:
            raise _err(path, where, f"<{len(spec)} values>", f"at most {MAX_AXIS_VALUES:,} values per axis")
        return tuple(spec)
    if isinstance(spec, str) and ".." in spec:
        from noc.base.units import parse_sizes_bytes

        try:
            values = parse_sizes_bytes(spec)
        except ConfigError as exc:
            raise _err(path, where, spec, f"{exc} (a size range is 'LOW..HIGH', doubling, e.g. '32KiB..64MiB'; "
                                          "parts may be joined with commas)") from None
        return tuple(values)
    if isinstance(spec, dict) and spec and set(spec) <= set(RANGE_KEYS):
        return _range(path, where, spec)
    if isinstance(spec, dict) and spec and set(spec) <= set(INTERVAL_KEYS):
        if not sampled:
            raise _err(path, where, spec, "an interval has values only when sampled: add a [sample] table "
                                          f"(method = {' or '.join(map(repr, METHODS))}, points, seed), or give a "
                                          "list or a range {from, to, step}")
        return _interval(path, where, spec)
    if isinstance(spec, dict):
        raise _err(path, where, spec, "a table here is a range {from, to, step | times} or an interval "
                                      "{low, high, log, integer}; its keys may not mix or be others")
    raise _err(path, where, spec, f"an axis is {AXIS_FORMS}; a value every point shares belongs in [base]")


def _range(path: str, where: str, spec: dict) -> tuple:
    missing = [k for k in ("from", "to") if k not in spec]
    if missing:
        raise _err(path, where, spec, f"a range needs 'from' and 'to' (missing {missing[0]!r}) and one of 'step' "
                                      "or 'times'")
    if ("step" in spec) == ("times" in spec):
        raise _err(path, where, spec, "a range has one of 'step' (from, from + step, ... up to to) or 'times' "
                                      "(from, from x times, ... up to to)")
    lo, hi = spec["from"], spec["to"]
    inc = spec.get("step", spec.get("times"))
    for name, x in (("from", lo), ("to", hi), ("step" if "step" in spec else "times", inc)):
        if not _is_number(x):
            raise _err(path, f"{where}.{name}", x, NUMBER_RULE)
    if hi < lo:
        raise _err(path, where, spec, f"the range runs backwards (to = {hi} < from = {lo})")
    integers = all(isinstance(x, int) for x in (lo, hi, inc))
    if "step" in spec:
        if not inc > 0:
            raise _err(path, f"{where}.step", inc, "must be positive")
        if integers:  # exact: a float quotient rounds past 'to' near 2**63
            n = (hi - lo) // inc + 1
            if n > MAX_AXIS_VALUES:
                raise _err(path, where, spec, f"{n:,} values; at most {MAX_AXIS_VALUES:,} per axis")
        else:
            span = (hi - lo) / inc  # infinite when the range's arithmetic overflows a float
            if not math.isfinite(span) or span + 1e-9 >= MAX_AXIS_VALUES:
                count = f"{math.floor(span) + 1:,}" if math.isfinite(span) else "too many"
                raise _err(path, where, spec, f"{count} values; at most {MAX_AXIS_VALUES:,} per axis")
            n = math.floor(span + 1e-9) + 1
        values = [lo + k * inc if integers else round(lo + k * inc, 12) for k in range(n)]
        while len(values) > 1 and values[-1] > hi + 1e-9 * max(1.0, abs(hi)):
            values.pop()  # a float sum rounded past 'to' (from = -1e308, step = 1e308 gives 0.0)
    else:
        if not inc > 1:
            raise _err(path, f"{where}.times", inc, "must be greater than 1")
        if not lo > 0:
            raise _err(path, f"{where}.from", lo, "a range with 'times' starts above 0")
        values, x = [], lo
        top = hi if integers else hi * (1 + 1e-12)  # integers exactly; floats to rounding
        while x <= top:
            values.append(x if integers else round(x, 12))
            x = x * inc
            if isinstance(x, float) and not math.isfinite(x) and x <= top:
                raise _err(path, where, spec, "the range's values overflow a floating-point number before reaching "
                                              "'to'")
            if len(values) > MAX_AXIS_VALUES:
                raise _err(path, where, spec, f"more than {MAX_AXIS_VALUES:,} values per axis")
    return tuple(values)


def _interval(path: str, where: str, spec: dict) -> Interval:
    for k in ("low", "high"):
        if k not in spec:
            raise _err(path, where, spec, f"an interval needs 'low' and 'high' (missing {k!r})")
        if not _is_number(spec[k]):
            raise _err(path, f"{where}.{k}", spec[k], NUMBER_RULE)
    for k in ("log", "integer"):
        if k in spec and not isinstance(spec[k], bool):
            raise _err(path, f"{where}.{k}", spec[k], "must be true or false")
    iv = Interval(float(spec["low"]), float(spec["high"]), spec.get("log", False), spec.get("integer", False))
    if not iv.low < iv.high:
        raise _err(path, where, spec, "low must be below high")
    if iv.log and not iv.low > 0:
        raise _err(path, f"{where}.low", spec["low"], "a log interval starts above 0")
    return iv


def load_sweep(path: str | Path, seed: int | None = None) -> SweepSpec:
    """Read and check sweep file ``path``; ``seed`` (e.g. ``--seed``) replaces ``[sample] seed``.
    Errors name the file, the TOML path, the value and what is allowed."""
    p = str(path)
    data = read_toml(path)
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise ConfigError(f"{p}: unknown key {unknown[0]!r} (allowed: {', '.join(TOP_KEYS)})")
    if "kind" not in data:
        from hw_models.sweep.kinds import kind_names

        raise ConfigError(f"{p}: missing key 'kind' (the experiment each point runs: {', '.join(kind_names())})")
    kind = data["kind"]
    from hw_models.sweep.kinds import get_kind

    get_kind(kind, where=f"{p}: kind =")
    for key in ("description", "store"):
        if key in data and (not isinstance(data[key], str) or (key == "store" and not data[key].strip())):
            raise _err(p, key, data[key], "must be a " + ("file name" if key == "store" else "string"))
    for key in ("base", "axes", "zip", "sample"):
        if key in data and not isinstance(data[key], dict):
            raise _err(p, key, data[key], f"must be a table ([{key}])")
    sample = _sample(p, data.get("sample"), seed)
    sampled = sample is not None
    base = data.get("base", {})
    origin = {k: "[base]" for k in _flatten(base)}
    axes: list[Axis] = []

    def claim(key: str, where: str) -> None:
        if key in origin:
            raise ConfigError(f"{p}: {where} = ...: key {key!r} is set in {origin[key]} already; a key is set in "
                              "one place (a value every point shares in [base], one that varies on one axis)")
        for other in origin:  # a key and a key inside it: 'network' and 'network.topology'
            if other.startswith(key + ".") or key.startswith(other + "."):
                raise ConfigError(f"{p}: {where}: key {key!r} overlaps key {other!r} of {origin[other]}; set "
                                  "the inner keys one by one")
        origin[key] = where

    for key, spec in _flatten(data.get("axes", {})).items():
        where = f"[axes] {key}"
        claim(key, where)
        values = _axis_values(p, where, spec, sampled)
        axes.append(Axis(where, (key,), values if isinstance(values, Interval) else tuple((v,) for v in values)))
    for name, group in data.get("zip", {}).items():
        gwhere = f"[zip.{name}]"
        if not isinstance(group, dict) or not group:
            raise _err(p, gwhere, group, "a zip group is a table of keys with equally long lists of values, "
                                         "advanced together")
        columns = {}
        for key, spec in _flatten(group).items():
            where = f"{gwhere} {key}"
            claim(key, where)
            if isinstance(spec, dict) and spec and set(spec) <= set(INTERVAL_KEYS):
                raise _err(p, where, spec, "a zipped key takes a list or a range of values; an interval "
                                           "{low, high} is an axis of its own, in [axes]")
            values = _axis_values(p, where, spec, sampled=False)
            columns[key] = values
        lengths = {k: len(v) for k, v in columns.items()}
        if len(set(lengths.values())) > 1:
            shown = ", ".join(f"{k} has {n}" for k, n in lengths.items())
            raise ConfigError(f"{p}: {gwhere}: zipped keys need equally many values ({shown})")
        axes.append(Axis(gwhere, tuple(columns), tuple(zip(*columns.values()))))
    spec = SweepSpec(path=p, kind=kind, base=copy.deepcopy(base), axes=tuple(axes), sample=sample,
                     store=data.get("store"), description=data.get("description", ""), origin=origin)
    grid = spec.grid_points
    if sample is None and grid is not None and grid > MAX_POINTS:
        raise ConfigError(f"{p}: the axes make {grid:,} points; at most {MAX_POINTS:,} (sample them: "
                          "[sample] method, points, seed)")
    if sample is not None and sample.method == "random" and grid is not None and sample.points > grid:
        raise ConfigError(f"{p}: [sample] points = {sample.points}: more than the {grid:,} points of the whole "
                          "grid; leave [sample] out to run them all")
    return spec


def _sample(path: str, table: dict | None, seed: int | None) -> Sample | None:
    if table is None:
        if seed is not None:
            raise ConfigError(f"--seed {seed}: {path} samples nothing (it has no [sample] table); the seed of the "
                              "runs themselves is a key of the experiment, e.g. run.seed or traffic.seed in [base]")
        return None
    unknown = [k for k in table if k not in SAMPLE_KEYS]
    if unknown:
        raise ConfigError(f"{path}: unknown key 'sample.{unknown[0]}' (allowed: {', '.join(SAMPLE_KEYS)})")
    method = table.get("method")
    if method not in METHODS:
        raise _err(path, "sample.method", method, f"choose one of {', '.join(map(repr, METHODS))}")
    points = table.get("points")
    if isinstance(points, bool) or not isinstance(points, int) or not 1 <= points <= MAX_POINTS:
        raise _err(path, "sample.points", points, f"must be an integer in 1..{MAX_POINTS:,}")
    if seed is not None:
        seed = check_seed(seed, "--seed")
    else:
        seed = table.get("seed", DEFAULT_SEED)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= (1 << 32) - 1:
            raise _err(path, "sample.seed", seed, f"a seed must be {SEED_RULE}")
    return Sample(method, points, seed)


def expand(spec: SweepSpec) -> list[dict[str, Any]]:
    """The points of ``spec``: the cross product of its axes in file order (the last axis
    varies fastest), or its sample; each a dict of dotted key -> value. Deterministic: the
    same file and seed give the same points in the same order."""
    return list(iter_values(spec))


def point_count(spec: SweepSpec) -> int:
    """How many points :func:`iter_values` gives."""
    return spec.sample.points if spec.sample is not None else spec.grid_points


def iter_values(spec: SweepSpec) -> Iterator[dict[str, Any]]:
    """:func:`expand`'s points one at a time (a million-point sample is drawn whole, as
    numbers, but each point's dict is made only as it is taken)."""
    if spec.sample is None:
        for combo in itertools.product(*(a.values for a in spec.axes)):
            yield _values(spec.axes, combo)
        return
    import numpy as np

    rng = np.random.default_rng(spec.sample.seed)
    n = spec.sample.points
    axes = spec.axes
    draws: list = []  # per axis: n grid indices of the flat grid, or n numbers in [0, 1)
    if spec.sample.method == "random" and spec.grid_points is not None:
        # a sample of distinct grid points, without replacement
        flat = rng.choice(spec.grid_points, size=n, replace=False)
        radices = _radices([a.size for a in axes])

        def pick(j: int, a: Axis, i: int):
            return a.values[(int(flat[i]) // radices[j]) % a.size]
    else:
        for a in axes:
            if spec.sample.method == "random":
                draws.append(rng.random(n))
            else:  # Latin hypercube: one draw in each of n equal strata, strata shuffled per axis
                draws.append((rng.permutation(n) + rng.random(n)) / n)

        def pick(j: int, a: Axis, i: int):
            x = float(draws[j][i])
            if isinstance(a.values, Interval):
                return (a.values.at(x),)
            return a.values[min(int(x * a.size), a.size - 1)]
    for i in range(n):
        yield _values(axes, tuple(pick(j, a, i) for j, a in enumerate(axes)))


def _radices(sizes: list[int]) -> list[int]:
    """Mixed-radix place values of grid indices (the last axis varies fastest)."""
    out, r = [], 1
    for s in reversed(sizes):
        out.append(r)
        r *= s
    return list(reversed(out))


def _values(axes: tuple[Axis, ...], combo: tuple) -> dict[str, Any]:
    out = {}
    for a, vals in zip(axes, combo):
        for k, v in zip(a.keys, vals):
            out[k] = _plain(v)
    return out


def _plain(v: Any) -> Any:
    """Numpy scalars as Python values (configs are validated strictly)."""
    if isinstance(v, (str, int, float)):  # bool is an int
        return v
    if hasattr(v, "item") and not isinstance(v, (list, dict)):
        return v.item()
    return _copy(v)


def _copy(data: Any) -> Any:
    """A copy of TOML data (tables, arrays, scalars): what ``copy.deepcopy`` gives, several
    times faster (a million-point sample copies its base a million times)."""
    if isinstance(data, dict):
        return {k: _copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_copy(v) for v in data]
    if isinstance(data, (str, int, float, bool)) or data is None:
        return data
    return copy.deepcopy(data)


def point_config(base: dict, values: dict[str, Any]) -> dict:
    """``base`` with each dotted key of ``values`` set (tables made as needed)."""
    cfg = _copy(base)
    for key, value in values.items():
        *parents, leaf = key.split(".")
        node = cfg
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):  # pragma: no cover - load_sweep refuses overlapping keys
                raise ConfigError(f"key {key!r}: {part!r} is not a table")
        node[leaf] = _copy(value)
    return cfg


def describe(values: dict[str, Any], most: int = 6) -> str:
    """``a = 1, b = 'x'``: a point's axis values, for messages."""
    items = [f"{k} = {v!r}" for k, v in values.items()]
    return ", ".join(items[:most]) + (f", ... ({len(items) - most} more)" if len(items) > most else "")
