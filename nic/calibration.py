"""The calibration matrix of the message-level model: which runs it is checked on against
the flit level, the criterion, and one comparison (docs/message_model_validation.md).

The matrix is every algorithm of the registry (:data:`nic.collectives.ALGORITHMS`, but for
those registered as uncalibrated: the four-direction 2D ring) on every topology below with both NICs, except the 2D ring
on the fat-tree (the 2D ring is for 2D grids): 46 cases. ``tests/nic/test_flit_cosim.py``
runs it with 4 VCs x 32 flits at 32 KiB .. 4 MiB; ``bench/message_calibration.py`` runs it
with any router and size.

The criterion (:func:`within`, :func:`reference_routers`, :func:`check`): a case passes when
its message-level total is within 5 % of the range of the flit totals of its reference
routers. For a co-designed (bulk) case that is the router as given, the arbiters' reset
state: within 5 % of that one flit total. For a per-packet (baseline NIC) case it is also
the same router with ``arbiter_seed`` 1 .. 4 and with virtual cut-through, since the flit
level's own total moves by more than 5 % with either on some of these cases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from nic.allreduce import NicConfig, simulate_allreduce
from nic.collectives import ALGORITHMS as ALGORITHM_REGISTRY
from nic.collectives import UNCALIBRATED, build
from nic.variants import DESIGNS as NIC_DESIGNS
from noc.flit import FlitNetworkConfig
from noc.topology import parse_spec

TOPOLOGIES = ("torus:4x4", "torus:4x4:c4", "mesh:4x4", "fattree:k4:l2")
DESIGNS = tuple(NIC_DESIGNS)  # both NICs of the registry (nic.variants)

TOLERANCE = 0.05
"""How far (as a fraction) the message total may be outside the range of the flit totals."""

ARBITER_SEEDS = 4
"""``arbiter_seed`` 1 .. this many are among a per-packet case's reference routers."""


def cases() -> Iterator[tuple[str, str, str]]:
    """(topology spec, algorithm, NIC design) of every case, in table order."""
    for spec in TOPOLOGIES:
        for algorithm in (a for a in ALGORITHM_REGISTRY if a not in UNCALIBRATED):
            if algorithm == "ring2d" and spec.startswith("fattree"):
                continue  # the 2D ring is for 2D grids
            for design in DESIGNS:
                yield spec, algorithm, design


def within(message_cycles: float, flit_totals: Sequence[float], tolerance: float = TOLERANCE) -> bool:
    """Whether ``message_cycles`` is within ``tolerance`` of the range of ``flit_totals``: no
    more than 5 % below the smallest nor 5 % above the largest (one total: within 5 % of it)."""
    return min(flit_totals) * (1.0 - tolerance) <= message_cycles <= max(flit_totals) * (1.0 + tolerance)


def range_error_percent(message_cycles: float, flit_totals: Sequence[float]) -> float:
    """How far ``message_cycles`` is from the range [min, max] of ``flit_totals``, in % of the
    nearer end (negative: below the smallest); 0 inside it."""
    low, high = min(flit_totals), max(flit_totals)
    if message_cycles < low:
        return 100.0 * (message_cycles / low - 1.0)
    if message_cycles > high:
        return 100.0 * (message_cycles / high - 1.0)
    return 0.0


def reference_routers(net: FlitNetworkConfig, design: str,
                      arbiter_seeds: int = ARBITER_SEEDS) -> list[FlitNetworkConfig]:
    """The routers whose flit totals make up a case's reference range, ``net`` (the reset
    state: every round-robin pointer at 0) first. A co-designed case: ``net`` alone. A
    per-packet (baseline NIC) case: also ``net`` with virtual cut-through (its VCs must hold
    a whole packet) and ``net`` with ``arbiter_seed`` 1 .. ``arbiter_seeds``."""
    if net.arbiter_seed is not None or net.flow_control == "vct":
        raise ValueError("the reference routers are derived from a wormhole router in its reset state; "
                         "leave arbiter_seed and flow_control = 'vct' out")
    if NicConfig(design=design).bulk:
        return [net]
    return [net, net.model_copy(update={"flow_control": "vct"}),
            *(net.model_copy(update={"arbiter_seed": k}) for k in range(1, arbiter_seeds + 1))]


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


@dataclass(frozen=True)
class Check:
    """One case against the criterion: the message total and the flit totals run for it (the
    reset state's first, then those of the other reference routers that were needed)."""

    spec: str
    algorithm: str
    design: str
    message_cycles: float
    flit_totals: tuple[float, ...]

    @property
    def ok(self) -> bool:
        return within(self.message_cycles, self.flit_totals)

    @property
    def error_percent(self) -> float:
        """The message model's deviation from the range of the flit totals (0 inside it)."""
        return range_error_percent(self.message_cycles, self.flit_totals)

    def describe(self) -> str:
        low, high = min(self.flit_totals), max(self.flit_totals)
        flit = f"flit {low:.0f}" if low == high else f"flit {low:.0f} .. {high:.0f} ({len(self.flit_totals)} runs)"
        return f"message {self.message_cycles:.0f} vs {flit} cycles: {self.error_percent:+.1f} %"


def check(spec: str, algorithm: str, design: str, net: FlitNetworkConfig, size_bytes: int,
          arbiter_seeds: int = ARBITER_SEEDS,
          run_flit: Callable[[str, str, str, FlitNetworkConfig, int], float] = flit_total) -> Check:
    """Check one case against the criterion with router ``net`` (its reset state).
    ``run_flit(spec, algorithm, design, router, size_bytes)`` gives a flit total
    (:func:`flit_total`, or one that also checks or caches the run). The other reference
    routers run one at a time, and only while the message total is outside the range of the
    totals run so far: another total can only widen the range, so the outcome is the one
    all of them give, and a case within 5 % of the reset state costs one flit run."""
    routers = reference_routers(net, design, arbiter_seeds)
    c = compare(spec, algorithm, design, net, size_bytes, flit_cycles=run_flit(spec, algorithm, design, net, size_bytes))
    totals = [c.flit_cycles]
    for router in routers[1:]:
        if within(c.message_cycles, totals):
            break
        totals.append(run_flit(spec, algorithm, design, router, size_bytes))
    return Check(spec, algorithm, design, c.message_cycles, tuple(totals))
