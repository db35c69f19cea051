"""The registry's ``forest``: the optimum forest of :mod:`nic.collectives.forest` at large
sizes, and at small ones the fastest of it and shallower forests under the message model.
Above :mod:`nic.collectives` (it runs :mod:`nic.allreduce`'s message model), so that the
schedule package keeps below the models that run its schedules."""

from __future__ import annotations

import dataclasses

from nic.collectives.forest import forest as optimum_forest
from nic.collectives.schedule import Schedule, ScheduleError
from noc.topology import Topology

SELECT_BELOW_BYTES = 4 << 20
"""Below this size :func:`forest` given the size times its candidates and keeps the fastest."""
SMALL_CANDIDATES = ("multitree", "dbtree", "ring")
"""The shallower forests :func:`forest` times against its own at small sizes (registry names):
one breadth-first tree per root, two binary trees, one path per root."""


def forest(topology: Topology, trees: int | None = None, size_bytes: int | None = None,
           nic=None, network=None) -> Schedule:
    """Spanning trees per root at the optimum (:func:`nic.collectives.forest.forest`:
    exact trees on a square 2D torus, else a packing of ``trees`` trees per root).

    ``size_bytes`` (the all-reduce's size; the registry passes it to this builder): below
    :data:`SELECT_BELOW_BYTES`, the schedule is the one of least modelled time
    (:func:`modelled_cycles`) among that forest and the shallower ones of
    :data:`SMALL_CANDIDATES`, which trade the optimum's bandwidth for fewer steps; its
    ``params["construction"]`` names it. ``nic`` (a :class:`nic.nic_config.NicConfig`) and
    ``network`` (the routers' :class:`noc.flit.FlitNetworkConfig`) are the run's, which the
    candidates are timed with (the commands pass them: :func:`nic.collectives.timing_options`);
    None: the co-designed NIC of default settings, a network without router delay. Given
    ``trees``, the packing is kept at every size."""
    large = optimum_forest(topology, trees)
    if size_bytes is None or trees is not None or size_bytes >= SELECT_BELOW_BYTES:
        return large
    return fastest(topology, size_bytes, large, nic, network)


def modelled_cycles(topology: Topology, schedule: Schedule, size_bytes: int, nic=None, network=None) -> float:
    """The all-reduce's cycles under the message model with ``nic`` and ``network`` (as
    :func:`nic.allreduce.simulate_allreduce` takes them; None: the defaults), without its
    functional verification; ``inf`` when ``size_bytes`` is not a whole number of at least
    one element per flow."""
    from nic.allreduce import run_message  # noqa: PLC0415
    from nic.nic_config import NicConfig  # noqa: PLC0415
    from nic.preparation import prepare  # noqa: PLC0415

    nic = NicConfig() if nic is None else nic
    if size_bytes % nic.element_bytes or size_bytes < nic.element_bytes * schedule.num_flows:
        return float("inf")
    times, _ = run_message(topology, prepare(topology, schedule, nic, size_bytes), nic, network)
    return float(times.arrive_cycles.max())


def fastest(topology: Topology, size_bytes: int, large: Schedule, nic=None, network=None) -> Schedule:
    """Of ``large`` and the :data:`SMALL_CANDIDATES` that build on ``topology``, the one of
    least :func:`modelled_cycles` (with ``nic`` and ``network``) at ``size_bytes`` (``large``
    on a tie), named ``forest``."""
    from nic.collectives import build  # noqa: PLC0415

    best, best_cycles, best_name = large, modelled_cycles(topology, large, size_bytes, nic, network), None
    for name in SMALL_CANDIDATES:
        try:
            cand = build(topology, name)
        except ScheduleError:  # not on this network
            continue
        cycles = modelled_cycles(topology, cand, size_bytes, nic, network)
        if cycles < best_cycles:
            best, best_cycles, best_name = cand, cycles, name
    if best_name is None:
        return large
    params = {**best.params, "construction": best_name, "selected_for_bytes": int(size_bytes)}
    return dataclasses.replace(best, algorithm="forest", params=params)


