"""Experiment kinds a sweep can run: one module per kind, named after it.

A kind is a :class:`Kind` value that a module of this package holds as ``KIND``; the
module's name is the kind's name (``hw_models/sweep/kinds/allreduce.py`` is kind
``allreduce``), so a sweep file's ``kind = "allreduce"`` imports that module and nothing
else. Adding a kind is adding a module (docs/sweeps.md, "Adding a kind"):

* ``validate(point, source)`` takes one point's config (nested dicts, as the sweep file's
  ``[base]`` and axes make it) and returns the **fully resolved** config as plain JSON data
  (defaults filled in, names made canonical), or raises :class:`noc.base.errors.ConfigError`
  whose message names ``source``, the key, the value and what is allowed. It runs for every
  point before any point runs. Two points that run the same experiment must resolve to the
  same dict: the store keys a point by a hash of it.
* ``run(resolved)`` runs one point and returns its metrics: a flat dict of JSON scalars
  (numbers, strings, booleans). It runs in a worker process (or on a Dask worker), which
  imports the kind's module once and runs many points.
* ``model_versions()`` returns the versions of the models the kind runs (a dict); they are
  part of every point's key, so a new model version runs the points again.

Heavy imports (Numba kernels) belong inside the functions: listing kinds and ``--help``
stay fast.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass
from typing import Callable

from noc.base.errors import ConfigError


@dataclass(frozen=True)
class Kind:
    """One experiment kind (module docstring)."""

    name: str
    summary: str  # one line for `hw-models sweep kinds`
    validate: Callable[[dict, str], dict]
    run: Callable[[dict], dict]
    model_versions: Callable[[], dict]


_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def kind_names() -> list[str]:
    """The kinds there are: the modules of this package."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if _NAME.match(m.name))


_LOADED: dict[str, Kind] = {}


def get_kind(name: object, where: str = "kind =") -> Kind:
    """The kind called ``name``; a :class:`ConfigError` naming ``where`` (the key or flag that
    gave the name), the value and the kinds there are otherwise."""
    if isinstance(name, str) and name in _LOADED:  # a worker asks at every point
        return _LOADED[name]
    names = kind_names()
    if not isinstance(name, str) or name not in names:
        raise ConfigError(f"{where} {name!r}: not a sweep kind; choose one of {', '.join(names)}")
    module = importlib.import_module(f"{__name__}.{name}")
    kind = getattr(module, "KIND", None)
    if not isinstance(kind, Kind) or kind.name != name:
        raise ConfigError(f"{where} {name!r}: module {module.__name__} does not define KIND = Kind(name={name!r}, ...)")
    _LOADED[name] = kind
    return kind


def table_of(point: dict, key: str, source: str, allowed: tuple[str, ...]) -> dict:
    """``point[key]`` (a table, empty when missing), checked to hold only ``allowed`` keys;
    a :class:`ConfigError` naming ``source`` and the key otherwise. For kinds' own sections."""
    section = point.get(key, {})
    if not isinstance(section, dict):
        raise ConfigError(f"{source}: key {key!r} = {section!r}: must be a table of {', '.join(allowed)}")
    unknown = sorted(set(section) - set(allowed))
    if unknown:
        raise ConfigError(f"{source}: unknown key '{key}.{unknown[0]}' (allowed: {', '.join(allowed)})")
    return section


def choice_of(value: object, allowed, source: str, key: str):
    """``value`` if it is one of ``allowed``; else a :class:`ConfigError` naming the key, value and choices."""
    try:
        known = value in allowed
    except TypeError:  # a list or table where a name belongs: not hashable, so not a choice
        known = False
    if not known:
        raise ConfigError(f"{source}: key '{key}' = {value!r}: choose one of {', '.join(allowed)}")
    return value


def integer_of(value: object, source: str, key: str, low: int) -> int:
    """``value`` if it is an integer (not a boolean) >= ``low``; else a :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{source}: key '{key}' = {value!r}: must be an integer >= {low}")
    return value


def boolean_of(value: object, source: str, key: str) -> bool:
    """``value`` if it is true or false; else a :class:`ConfigError`."""
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: key '{key}' = {value!r}: must be true or false")
    return value


def size_of(value: object, source: str, key: str, rule: str, zero: bool = False) -> int:
    """The bytes of ``value`` (an integer or e.g. ``"32KiB"``; with ``zero``, 0 and "0" are 0); else a
    :class:`ConfigError` naming the key, the value and ``rule`` (what a size is) or why it does not parse."""
    from noc.base.units import parse_size_bytes

    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"{source}: key '{key}' = {value!r}: {rule}")
    try:
        return 0 if zero and value in (0, "0") else parse_size_bytes(value)
    except ConfigError as exc:
        raise ConfigError(f"{source}: key '{key}' = {value!r}: {exc}") from None


#: the versions a kind's points may depend on: name in a point's key -> (module, attribute)
MODEL_VERSIONS = {"message_model": ("nic.message_sim", "MODEL_VERSION"), "flit_model": ("noc.flit", "MODEL_VERSION"),
                  "schedule": ("nic.collectives", "SCHEDULE_VERSION"),
                  "scheduler": ("nic.scheduler", "SCHEDULER_VERSION")}


def model_version(name: str) -> int:
    """The version of the model ``name`` of :data:`MODEL_VERSIONS` (e.g. ``message_model``)."""
    module, attribute = MODEL_VERSIONS[name]
    return getattr(importlib.import_module(module), attribute)


def model_versions_of(*models: str, **own: int) -> dict:
    """A kind's ``model_versions()``: those of ``models`` (:data:`MODEL_VERSIONS`) and its ``own`` (name -> version)."""
    return {**own, **{m: model_version(m) for m in models}}


def algorithm_of(value: object, source: str, key: str) -> str:
    """The registry's name of the algorithm ``value`` (aliases taken) at dotted key ``key``;
    a :class:`ConfigError` naming ``source``, the key and the value otherwise."""
    from nic.collectives import ScheduleError, algorithm_name

    try:
        if not isinstance(value, str):
            raise ScheduleError("not a name")
        return algorithm_name(value)
    except ScheduleError as exc:
        raise ConfigError(f"{source}: key '{key}' = {value!r}: {exc}") from None
