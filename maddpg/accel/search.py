"""Design-space search: engine sizes x interconnects, the fastest design that fits, and the
Pareto front of update time against DSP slices.

Every point is a full :func:`~maddpg.accel.model.simulate_update` (the exchange is timed once
per interconnect and reused across engine sizes). A design that does not fit stays in the
results, marked with the resource it overflows; the front and the winner are taken over
the designs that fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from maddpg.accel.config import AccelConfig, Workload
from maddpg.accel.model import UpdateResult, simulate_update
from maddpg.accel.parts import Part

PE_LADDER = (1, 2, 4, 8, 16, 32, 64)
LANE_LADDER = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Point:
    cfg: AccelConfig
    result: UpdateResult


def search(w: Workload, part: Part, base: AccelConfig, interconnects: list[str], pes=PE_LADDER,
           lanes=LANE_LADDER, balances=("uniform", "work")) -> list[Point]:
    """Every interconnect x PEs x lanes x layer balance (the rest of ``base`` kept)."""
    pts = []
    for ic in interconnects:
        for bal in balances:
            for pe in pes:
                for ln in lanes:
                    cfg = base.model_copy(update={"interconnect": ic, "pe": int(pe), "lanes": int(ln),
                                                  "layer_balance": bal})
                    pts.append(Point(cfg, simulate_update(w, cfg, part)))
    return pts


def fastest(points: list[Point]) -> Point | None:
    """The fitting design with the shortest update (ties: fewer DSPs, then the order given)."""
    ok = [p for p in points if p.result.fits]
    if not ok:
        return None
    return min(ok, key=lambda p: (p.result.update_cycles, p.result.resources.dsp))


def pareto(points: list[Point]) -> list[Point]:
    """Fitting designs no other fitting design beats on both update time and DSPs, by DSPs."""
    ok = sorted((p for p in points if p.result.fits), key=lambda p: (p.result.resources.dsp, p.result.update_cycles))
    front, best = [], float("inf")
    for p in ok:
        if p.result.update_cycles < best:
            front.append(p)
            best = p.result.update_cycles
    return front
