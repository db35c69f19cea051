"""nic.collectives: all-reduce schedules, their functional verifier, contention and bounds.

``build(topology, "multitree")`` (or any name in :data:`ALGORITHMS`) returns a
:class:`Schedule`; :func:`verify` executes it on exact integers; :func:`contention`,
:func:`bounds` and :func:`ideal_cycles` say how well it uses the network;
:func:`optimal_bound` is the exact throughput optimum (ForestColl's cut bound).
"""

from __future__ import annotations

from nic.collectives.analysis import Bounds, Contention, bounds, contention, ideal_cycles, transfer_paths
from nic.collectives.baselines import bidir_ring, dbtree, halving_doubling, ring, ring2d, ring2d_4dir, ring_order
from nic.collectives.multitree import multitree
from nic.collectives.optimum import Cut, OptimalBound, optimal_bound
from nic.collectives.schedule import OP_NAMES, Schedule, ScheduleError, TableEntry
from nic.collectives.verify import VerificationError, VerifyReport, verify
from noc.topology import Topology

ALGORITHMS = {
    "ring": ring,
    "bidir_ring": bidir_ring,
    "ring2d": ring2d,
    "ring2d_4dir": ring2d_4dir,
    "dbtree": dbtree,
    "halving_doubling": halving_doubling,
    "multitree": multitree,
}
# Bumped whenever a builder's schedules change, so stored all-reduce results built on
# older schedules are not reused (hw_models.allreduce_sweep.run_key).
SCHEDULE_VERSION = 1

ALIASES = {"hd": "halving_doubling", "2dring": "ring2d", "bidir-ring": "bidir_ring", "double_binary_tree": "dbtree",
           "2dring_4dir": "ring2d_4dir", "ring2d_paper": "ring2d_4dir"}


def algorithm_name(name: str) -> str:
    """The canonical algorithm name; a clear error listing the choices otherwise."""
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(key, ALIASES.get(name.strip().lower(), key))
    if key not in ALGORITHMS:
        raise ScheduleError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    return key


def build(topology: Topology, algorithm: str, **options) -> Schedule:
    """Build ``algorithm``'s all-reduce schedule on ``topology``."""
    fn = ALGORITHMS[algorithm_name(algorithm)]
    try:
        return fn(topology, **options)
    except TypeError as exc:
        raise ScheduleError(f"{algorithm}: bad option ({exc})") from None


__all__ = [
    "ALGORITHMS", "SCHEDULE_VERSION", "Bounds", "Contention", "OP_NAMES", "Schedule", "ScheduleError", "TableEntry",
    "VerificationError", "VerifyReport", "algorithm_name", "bidir_ring", "bounds", "build", "contention",
    "dbtree", "halving_doubling", "ideal_cycles", "multitree", "ring", "ring2d", "ring2d_4dir", "ring_order",
    "transfer_paths", "verify",
    "Cut", "OptimalBound", "optimal_bound",
]
