"""Training-communication systems that users compare co-designed all-reduce against:
gradient compression with error feedback, the parameter server, SSD-SGD, the EASGD family
SPD-KFAC and DLion (heterogeneous workers and links). Each has a timing model on the iteration simulator
(:mod:`hw_models.training.timeline` over the ``nic``/``noc`` networks) and, where it changes
the mathematics of training, a convergence check on small CPU tasks
(:mod:`hw_models.training.systems.tasks`). docs/training_systems.md describes them."""

from __future__ import annotations

from typing import NamedTuple

WORKERS_MEASURED = 16
"""The workers (one task shard each) :attr:`System.seconds_per_iteration` was measured on."""


class System(NamedTuple):
    """A training system's registry entry: ``what`` it is (the docs' section heading names
    it), ``summary`` (its ``train-system`` subcommand's help) and the cost of its convergence
    runs for the long-run estimate (:meth:`seconds`): ``seconds_per_iteration`` of one
    iteration of one run on the digits task with :data:`WORKERS_MEASURED` workers, taken to
    ``--max-iterations`` (a target not reached), about twice the CPU seconds
    bench/train_system_cost.py measured (bench/data/train_system_cost.md; on a machine shared
    with other work the wall time is 3-8x the CPU seconds there); the figure grows with the
    workers over the measured ones to the power ``workers_power``."""

    what: str
    summary: str
    seconds_per_iteration: float
    workers_power: int = 1

    def seconds(self, runs: int, iterations: int, workers: int) -> float:
        """Estimated seconds of ``runs`` convergence runs of ``iterations`` iterations each on
        ``workers`` task shards, never below the measured workers' figure."""
        scale = max(1.0, workers / WORKERS_MEASURED) ** self.workers_power
        return self.seconds_per_iteration * runs * iterations * scale


SYSTEMS = {
    "compression": System("gradient compression with error feedback",
                          "Gradient compression with error feedback (top-k, random-k, threshold, 1-bit, 8-bit).",
                          0.002),  # measured 0.0005-0.0010 s, as ssd, easgd and kfac
    "ps": System("the parameter server",
                 "The parameter server: sync, async and stale-synchronous workers, servers placed on the network.",
                 0.02),  # measured 0.009 s with its event simulation
    "ssd": System("SSD-SGD", "SSD-SGD: local steps with delayed global updates (delays k).", 0.002),
    "easgd": System("the EASGD family",
                    "The EASGD family: sync and async elastic averaging, momentum EASGD, hogwild.", 0.002),
    "kfac": System("SPD-KFAC",
                   "SPD-KFAC: Kronecker-factored curvature with its factors' all-reduces and inversions.", 0.002),
    "dlion": System("DLion", "DLion: weighted batching, prioritised per-link exchange, knowledge transfer on "
                             "unequal workers and links.",
                    0.03, workers_power=2),  # measured 0.015 s, rounds on the timeline; links: all pairs
}
"""The training-system registry: name (``hw-models train-system SYSTEM``, the ``train_system``
sweep kind's ``system``) -> its :class:`System`. Light to import: the commands' help reads it."""

__all__ = ["SYSTEMS", "System", "WORKERS_MEASURED"]
