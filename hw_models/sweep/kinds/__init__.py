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
