"""nic.collectives: all-reduce schedules, their functional verifier, contention and bounds.

``build(topology, "multitree")`` (or any name in :data:`ALGORITHMS`) returns a
:class:`Schedule`; :func:`verify` executes it on exact integers; :func:`contention`,
:func:`bounds` and :func:`ideal_cycles` say how well it uses the network;
:func:`optimal_bound` is the exact throughput optimum (ForestColl's cut bound).

:data:`ALGORITHMS` is the one registry of all-reduce algorithms (:func:`register_algorithm`
adds one). Importing this package is light (no Numba): the registry names its builders by
module, and the rest of this package's names are imported on first use, so the commands'
``--help`` reads the registry without loading the kernels.
"""

from __future__ import annotations

import importlib
import sys
import types

# the names this package re-exports, by the module that defines them (imported on first use)
_EXPORTS = {
    "nic.collectives.analysis": ("Bounds", "Contention", "bounds", "contention", "ideal_cycles", "ni_occupancy_cycles",
                                 "transfer_paths"),
    "nic.collectives.baselines": ("bidir_ring", "dbtree", "halving_doubling", "ring", "ring2d", "ring2d_4dir",
                                  "ring_order"),
    "nic.collectives.multitree": ("multitree",),
    "nic.collectives.optimum": ("Cut", "OptimalBound", "optimal_bound"),
    "nic.collectives.schedule": ("OP_NAMES", "Schedule", "ScheduleError", "TableEntry"),
    "nic.collectives.verify": ("VerificationError", "VerifyReport", "verify"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """Keeps ``multitree`` and ``verify`` the functions when their modules (of the same name)
    are imported: the import system sets a package's attribute to each submodule it loads."""

    multitree = property(lambda self: __getattr__("multitree"), lambda self, value: None)
    verify = property(lambda self: __getattr__("verify"), lambda self, value: None)


sys.modules[__name__].__class__ = _Package

ALGORITHMS: dict = {}
"""The algorithm registry: canonical name -> builder ``fn(topology, **options) -> Schedule``.
The config schema, the commands' help, the calibration matrix and the docs' table of
algorithms read it; :func:`register_algorithm` adds one."""
ALIASES: dict[str, str] = {}
UNCALIBRATED: set[str] = set()
"""Registered algorithms left out of the message model's calibration matrix (nic.calibration)."""
SIZED: set[str] = set()
"""Registered algorithms whose builder takes the all-reduce's size (``size_bytes=``): the sweep's
points and the commands pass it (:func:`size_options`), so the schedule may differ by size."""


def register_algorithm(name: str, builder, aliases: tuple[str, ...] = (), calibrated: bool = True,
                       sized: bool = False) -> None:
    """Add ``builder`` (a function, or ``"module:function"`` imported on first use) to the
    registry as ``name``, also reachable by ``aliases``; ``calibrated``: part of the message
    model's calibration matrix (nic.calibration); ``sized``: the builder takes the
    all-reduce's size as ``size_bytes=`` (:data:`SIZED`)."""
    ALGORITHMS[name] = builder
    ALIASES.update({a: name for a in aliases})
    (UNCALIBRATED.discard if calibrated else UNCALIBRATED.add)(name)
    (SIZED.add if sized else SIZED.discard)(name)


def size_options(algorithm: str, size_bytes: int) -> dict:
    """The builder options that give ``algorithm`` its all-reduce size: ``{"size_bytes": size_bytes}``
    for a :data:`SIZED` algorithm, none for the others (their schedule is one at every size)."""
    return {"size_bytes": int(size_bytes)} if algorithm_name(algorithm) in SIZED else {}


def timing_options(algorithm: str, nic=None, network=None) -> dict:
    """The builder options that give a :data:`SIZED` ``algorithm`` the run's NIC (a
    ``NicConfig``) and network (the routers' ``FlitNetworkConfig``), which it may time its
    candidates with: ``{"nic": nic, "network": network}`` (None values left out); none for
    the others. Not stored with a sweep point (its own keys hold the NIC and network)."""
    if algorithm_name(algorithm) not in SIZED:
        return {}
    return {k: v for k, v in (("nic", nic), ("network", network)) if v is not None}


register_algorithm("ring", "nic.collectives.baselines:ring")
register_algorithm("bidir_ring", "nic.collectives.baselines:bidir_ring", aliases=("bidir-ring",))
register_algorithm("ring2d", "nic.collectives.baselines:ring2d", aliases=("2dring",))
# the paper's four-direction 2D ring is the all-reduce of its plots, not a case of the calibration matrix
register_algorithm("ring2d_4dir", "nic.collectives.baselines:ring2d_4dir", aliases=("2dring_4dir", "ring2d_paper"),
                   calibrated=False)
register_algorithm("dbtree", "nic.collectives.baselines:dbtree", aliases=("double_binary_tree",))
register_algorithm("halving_doubling", "nic.collectives.baselines:halving_doubling", aliases=("hd",))
register_algorithm("multitree", "nic.collectives.multitree:multitree")
# spanning trees per root at the throughput optimum (nic.collectives.forest, .treepack); left out of
# the calibration matrix, whose flit-level runs of every case would grow by a third; given the
# all-reduce's size, small ones take the fastest of it and shallower forests (nic.forest_select)
register_algorithm("forest", "nic.forest_select:forest", aliases=("treepack", "tree_packing"), calibrated=False,
                   sized=True)

DEFAULT_ALGORITHMS = ("ring", "ring2d", "dbtree", "multitree")
"""The algorithms an experiment compares when its config names none (allreduce.algorithms)."""

# Bumped whenever a builder's schedules change, so stored all-reduce results built on
# older schedules are not reused (hw_models.allreduce_sweep.run_key); SCHEDULE_CHANGES names
# the algorithms each bump changed.
SCHEDULE_VERSION = 2
SCHEDULE_CHANGES: dict[int, tuple[str, ...]] = {2: ("forest",)}
"""Version -> the algorithms whose schedules that version changed (from version 2 on; a
record of an older store is still valid for the others: :func:`schedule_versions`)."""


def schedule_versions(algorithm: str) -> list[int]:
    """The schedule versions under which a stored result of ``algorithm`` is one of today's
    schedules, newest first: :data:`SCHEDULE_VERSION` and the older ones not followed by a
    change of ``algorithm`` (a record imported from an older store is checked against these)."""
    name = algorithm_name(algorithm)
    out = [SCHEDULE_VERSION]
    for v in range(SCHEDULE_VERSION, 1, -1):
        if name in SCHEDULE_CHANGES.get(v, ()):
            break
        out.append(v - 1)
    return out


def algorithm_choices() -> str:
    """The registered algorithms, comma-separated, for help texts and error messages."""
    return ", ".join(ALGORITHMS)


def algorithm_name(name: str) -> str:
    """The canonical algorithm name; a clear error listing the choices otherwise."""
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(key, ALIASES.get(name.strip().lower(), key))
    if key not in ALGORITHMS:
        from nic.collectives.schedule import ScheduleError  # noqa: PLC0415

        raise ScheduleError(f"unknown algorithm {name!r}; choose one of {algorithm_choices()}")
    return key


def builder(algorithm: str):
    """The registered builder of ``algorithm`` (a name or an alias)."""
    fn = ALGORITHMS[algorithm_name(algorithm)]
    if isinstance(fn, str):
        module, _, attr = fn.partition(":")
        fn = getattr(importlib.import_module(module), attr)
    return fn


# schedules built, by (builder, topology, options): the latest few, as a command's checks and
# runs ask for each schedule several times (a 64x64 MultiTree takes seconds to build)
_BUILT: dict = {}
_BUILT_MAX = 8
_BUILT_MAX_TRANSFERS = 80_000_000  # ~1.4 GB of schedule columns at most


def build(topology, algorithm: str, **options):
    """Build ``algorithm``'s all-reduce schedule (a :class:`Schedule`) on ``topology``.
    The same builder, topology (equal by value) and options give the same schedule object,
    kept for the latest few (schedules are frozen values: do not write into their arrays)."""
    from nic.collectives.schedule import ScheduleError  # noqa: PLC0415

    fn = builder(algorithm)
    try:
        key = (fn, topology, repr(sorted(options.items())))
        hash(key)
    except TypeError:  # an unhashable topology or option: built each time
        key = None
    if key is not None and key in _BUILT:
        _BUILT[key] = _BUILT.pop(key)  # the latest used last
        return _BUILT[key]
    try:
        out = fn(topology, **options)
    except TypeError as exc:
        raise ScheduleError(f"{algorithm}: bad option ({exc})") from None
    if key is not None:
        _BUILT[key] = out
        while len(_BUILT) > 1 and (len(_BUILT) > _BUILT_MAX or sum(
                getattr(v, "num_transfers", 0) for v in _BUILT.values()) > _BUILT_MAX_TRANSFERS):
            _BUILT.pop(next(iter(_BUILT)))
    return out


__all__ = [
    "ALGORITHMS", "ALIASES", "DEFAULT_ALGORITHMS", "SCHEDULE_CHANGES", "SCHEDULE_VERSION", "SIZED", "UNCALIBRATED",
    "Bounds", "Contention",
    "OP_NAMES", "Schedule", "ScheduleError", "TableEntry", "VerificationError", "VerifyReport", "algorithm_choices",
    "algorithm_name", "bidir_ring", "bounds", "build", "builder", "contention", "dbtree", "halving_doubling",
    "ideal_cycles", "multitree", "ni_occupancy_cycles", "register_algorithm", "ring", "ring2d", "ring2d_4dir",
    "ring_order",
    "transfer_paths", "verify",
    "Cut", "OptimalBound", "optimal_bound", "schedule_versions", "size_options", "timing_options",
]
