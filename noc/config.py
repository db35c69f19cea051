"""Validated configuration: TOML files into pydantic models, errors a user can act on.

Every package defines its config sections as subclasses of :class:`StrictModel` (unknown
keys are errors, values are immutable; :func:`validate` also refuses values of the wrong
type instead of converting them) with units in the key names
(``link_bytes_per_cycle``, ``link_latency_cycles``). :func:`load_toml` and
:func:`validate` turn pydantic's validation errors into one :class:`ConfigError` whose
message names the file, the key, the value and what is allowed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from noc.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base for config sections: unknown keys rejected, frozen, validated on assignment."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


def _describe(err: dict[str, Any]) -> str:
    key = ".".join(str(p) for p in err["loc"]) or "(top level)"
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"unknown key {key!r}"
    if kind == "missing":
        return f"missing key {key!r}"
    value = err.get("input")
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
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


def validate(data: dict[str, Any], model: type[M], source: str = "config") -> M:
    """Validate plain data into ``model``; raise :class:`ConfigError` naming source, key and value."""
    try:
        # strict: a value of the wrong type is an error ("4" or true for a count, 2.5 for an
        # integer), never converted; an integer where a float is expected is fine
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        errs = exc.errors()
        first = errs[0]
        extra = _allowed_keys(model, tuple(first["loc"])) if first["type"] == "extra_forbidden" else ""
        more = f" (and {len(errs) - 1} more problem{'s' if len(errs) > 2 else ''})" if len(errs) > 1 else ""
        raise ConfigError(f"{source}: {_describe(first)}{extra}{more}") from None


def read_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file, turning missing files and syntax errors into :class:`ConfigError`."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{p}: is a directory, not a config file")
    try:
        with p.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the config file ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not a text file (TOML is UTF-8)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None


def load_toml(path: str | Path, model: type[M]) -> M:
    """Read and validate a TOML file into ``model``."""
    return validate(read_toml(path), model, source=str(path))
