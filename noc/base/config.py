"""Validated configuration: TOML files into pydantic models, errors a user can act on.

Every package defines its config sections as subclasses of :class:`StrictModel` (unknown
keys are errors, values are immutable; :func:`validate` also refuses values of the wrong
type instead of converting them) with units in the key names
(``link_bytes_per_cycle``, ``link_latency_cycles``). :func:`load_toml` and
:func:`validate` turn pydantic's validation errors into one :class:`ConfigError` whose
message names the file, the key, the value and what is allowed.

The rules every package shares live here too: :func:`finite` (a float key is a finite
number in a stated range: no NaN, no infinity, nothing absurdly large or small),
:data:`Seed` and :func:`check_seed` (one seed rule for every command and model: an
integer in [0, 2**32 - 1], what every generator and kernel here takes). Command-line flags go through :func:`validate` (``flags=``) or
:func:`check_value` against the same fields as the TOML keys they stand for.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Annotated, Any, ClassVar, Mapping, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from noc.base.errors import ConfigError
from noc.base.files import why_missing

M = TypeVar("M", bound=BaseModel)


# One seed rule for every command, config key and model: numpy's legacy seeding
# (np.random.seed, also Numba's generator) takes at most 2**32 - 1, and a seed in this range
# keeps derived seeds (an episode's ``seed * 1_000_003 + e``) inside int64.
SEED_MAX = (1 << 32) - 1
SEED_RULE = f"an integer in [0, {SEED_MAX}] (0 .. 2**32 - 1)"

def format_number(x: float) -> str:
    """``1e-06`` -> ``'1e-6'``, ``100.0`` -> ``'100'``, ``0.5`` -> ``'0.5'``: bounds as people write them."""
    x = float(x)
    if x == 0 or 1e-4 <= abs(x) < 1e5:
        return f"{x:g}"
    mantissa, exp = f"{x:.0e}".split("e")
    if float(f"{mantissa}e{exp}") == x:
        return f"{mantissa}e{int(exp)}"
    return str(int(x)) if x.is_integer() else f"{x:g}"


def finite_rule(lo: float, hi: float, lo_open: bool = False) -> str:
    """``'a finite number in [1e-6, 1e6]'``: what :func:`finite` allows, for messages and help."""
    return f"a finite number in {'(' if lo_open else '['}{format_number(lo)}, {format_number(hi)}]"


def is_finite_in(value: Any, lo: float, hi: float, lo_open: bool = False) -> bool:
    """Whether ``value`` is a real number (not a bool), finite, and in the range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:  # numpy scalars
            value = float(value) if hasattr(value, "dtype") and value.dtype.kind in "iuf" else None
        except (TypeError, ValueError):
            return False
        if value is None:
            return False
    try:
        v = float(value)
    except OverflowError:  # an int beyond float range
        return False
    return math.isfinite(v) and (lo < v if lo_open else lo <= v) and v <= hi


def finite(lo: float, hi: float, *, lo_open: bool = False) -> AfterValidator:
    """Pydantic metadata for a float key: ``Annotated[float, finite(1e-6, 1e6)]`` refuses NaN,
    infinities and values outside ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``) with a message
    stating the range."""
    rule = finite_rule(lo, hi, lo_open)

    def check(v: float) -> float:
        if not is_finite_in(v, lo, hi, lo_open):
            raise ValueError(f"must be {rule}")
        return v

    return AfterValidator(check)


def _seed_ok(v: int) -> int:
    if isinstance(v, bool) or not 0 <= v <= SEED_MAX:
        raise ValueError(f"a seed must be {SEED_RULE}")
    return v


# a seed key of a config model (pydantic's strict mode refuses bools, floats and strings first)
Seed = Annotated[int, AfterValidator(_seed_ok)]


def check_seed(value: Any, name: str = "seed") -> int:
    """``value`` as an int if it is a seed (:data:`SEED_RULE`), else a :class:`ConfigError`
    naming ``name`` (a key or a flag) and the value."""
    import numpy as np  # noqa: PLC0415

    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= value <= SEED_MAX:
        raise ConfigError(f"{name} {value!r}: a seed must be {SEED_RULE}")
    return int(value)


class StrictModel(BaseModel):
    """Base for config sections: unknown keys rejected, frozen, validated on assignment.

    :meth:`key_fields` is a section as plain data for the keys of stored results. A section
    that gains a field after results were first stored names it in ``later_fields``: it is
    left out of the keys while it has its default, so those results are still found."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)
    later_fields: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        unknown = sorted(set(cls.later_fields) - set(cls.model_fields))
        if unknown:
            raise TypeError(f"{cls.__name__}.later_fields names no field of it: {', '.join(unknown)}")

    def key_fields(self) -> dict[str, Any]:
        """The section as plain (JSON) data, without the ``later_fields`` at their defaults."""
        data = self.model_dump(mode="json")
        fields = type(self).model_fields
        return {k: v for k, v in data.items() if k not in self.later_fields or v != fields[k].default}


def _key(err: dict[str, Any]) -> str:
    return ".".join(str(p) for p in err["loc"]) or "(top level)"


def _flag_of(key: str, flags: Mapping[str, str]) -> str | None:
    """The flag that set ``key`` (or the list or section it is in)."""
    while key:
        if key in flags:
            return flags[key]
        key = key.rpartition(".")[0]
    return None


def _describe(err: dict[str, Any], flags: Mapping[str, str] | None = None) -> str:
    key = _key(err)
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"unknown key {key!r}"
    if kind == "missing":
        return f"missing key {key!r}"
    value = err.get("input")
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if not err["loc"]:  # a rule over several keys: its message names them
        return msg
    flag = _flag_of(key, flags or {})
    if flag is not None:
        return f"{flag} {value!r}: {msg} (the flag sets {key})"
    return f"key {key!r} = {value!r}: {msg}"


def _allowed_keys(model: type[BaseModel], loc: tuple) -> str:
    """The keys allowed at the location of an unknown-key error (best effort)."""
    cls: Any = model
    for part in loc[:-1]:
        field = getattr(cls, "model_fields", {}).get(part)
        if field is None:
            return ""
        cls = field.annotation
    fields = getattr(cls, "model_fields", None)
    return f" (allowed: {', '.join(sorted(fields))})" if fields else ""


def validate(data: dict[str, Any], model: type[M], source: str = "config",
             flags: Mapping[str, str] | None = None) -> M:
    """Validate plain data into ``model``; raise :class:`ConfigError` naming source, key and value.

    ``flags`` maps dotted keys that came from command-line flags to those flags
    (``{"network.nis_per_node": "--nis"}``): a bad value there is named by its flag."""
    try:
        # strict: a value of the wrong type is an error ("4" or true for a count, 2.5 for an
        # integer), never converted; an integer where a float is expected is fine
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        errs = exc.errors()
        first = errs[0]
        extra = _allowed_keys(model, tuple(first["loc"])) if first["type"] == "extra_forbidden" else ""
        more = f" (and {len(errs) - 1} more problem{'s' if len(errs) > 2 else ''})" if len(errs) > 1 else ""
        where = "" if _flag_of(_key(first), flags or {}) is not None else f"{source}: "
        raise ConfigError(f"{where}{_describe(first, flags)}{extra}{more}") from None


def check_value(model: type[BaseModel], key: str, value: Any, flag: str, name: str | None = None) -> Any:
    """``value`` checked by the rules of ``model``'s field ``key`` (its type, range and
    validators), for a command-line flag that stands for that key (``name``: the key as
    a config file spells it, e.g. ``network.nis_per_node``); a :class:`ConfigError` naming
    ``flag``, the value and what is allowed otherwise."""
    try:
        return getattr(validate({key: value}, model, source=flag, flags={key: flag}), key)
    except ConfigError as exc:
        if name is None:
            raise
        raise ConfigError(str(exc).replace(f"(the flag sets {key})", f"(the flag sets {name})")) from None


def read_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file, turning missing files and syntax errors into :class:`ConfigError`."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{p}: is a directory, not a config file")
    try:
        with p.open("rb") as f:
            raw = f.read()
        if not raw.strip():  # a truncated or never-written file: not "every default" (leave the file out for that)
            raise ConfigError(f"{p}: an empty file ({len(raw)} bytes); a config file holds at least one key, "
                              "or a comment (leave the file out to take every default)")
        return tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: {why_missing(p, 'no such config file')}") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the config file ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not a text file (TOML is UTF-8)") from None
    except tomllib.TOMLDecodeError as exc:
        with p.open("rb") as f:
            bom = f.read(3) == b"\xef\xbb\xbf"
        if bom:  # what some editors write first: the parser's message would point at line 1, column 1
            raise ConfigError(f"{p}: not valid TOML: it starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 "
                              "without one") from None
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None


def load_toml(path: str | Path, model: type[M]) -> M:
    """Read and validate a TOML file into ``model``."""
    return validate(read_toml(path), model, source=str(path))
