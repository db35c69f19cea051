"""The calibration matrix of the message-level model: which runs it is checked on against
the flit level, and one comparison (docs/allreduce.md, "Calibration").

The matrix is every algorithm on every topology below with both NICs, except the 2D ring
on the fat-tree (the 2D ring is for 2D grids): 46 cases. ``tests/nic/test_flit_cosim.py``
runs it with 4 VCs x 32 flits at 256 KiB; ``bench/message_calibration.py`` runs it with
any router and size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from nic.allreduce import NicConfig, simulate_allreduce
from nic.collectives import build
from noc.topology import parse_spec

TOPOLOGIES = ("torus:4x4", "torus:4x4:c4", "mesh:4x4", "fattree:k4:l2")
ALGORITHMS = ("ring", "bidir_ring", "ring2d", "dbtree", "halving_doubling", "multitree")
DESIGNS = ("codesigned", "baseline")


def cases() -> Iterator[tuple[str, str, str]]:
    """(topology spec, algorithm, NIC design) of every case, in table order."""
    for spec in TOPOLOGIES:
        for algorithm in ALGORITHMS:
            if algorithm == "ring2d" and spec.startswith("fattree"):
                continue  # the 2D ring is for 2D grids
            for design in DESIGNS:
                yield spec, algorithm, design


@dataclass(frozen=True)
class Comparison:
    """Both models' total cycles for one case; ``error_percent`` < 0: the message model is faster."""

    spec: str
    algorithm: str
    design: str
    flit_cycles: float
    message_cycles: float

    @property
    def error_percent(self) -> float:
        return 100.0 * (self.message_cycles / self.flit_cycles - 1.0)


def flit_total(spec: str, algorithm: str, design: str, network, size_bytes: int) -> float:
    """The flit level's total for one case with router ``network`` (its ``arbiter_seed``
    included)."""
    t = parse_spec(spec)
    return simulate_allreduce(t, build(t, algorithm), NicConfig(design=design), network, size_bytes,
                              model="flit").total_cycles


def compare(spec: str, algorithm: str, design: str, network, size_bytes: int,
            flit_cycles: float | None = None) -> Comparison:
    """Run one case at both levels with router ``network`` (each run raises if its times
    break a dependency of the verified schedule). ``flit_cycles``: the flit level's total
    from an earlier run of the same case, router and size (flit ``MODEL_VERSION`` too);
    then only the message model runs."""
    if flit_cycles is None:
        flit_cycles = flit_total(spec, algorithm, design, network, size_bytes)
    t = parse_spec(spec)
    msg = simulate_allreduce(t, build(t, algorithm), NicConfig(design=design), network, size_bytes, model="message")
    return Comparison(spec, algorithm, design, flit_cycles, msg.total_cycles)
