"""Rough wall-clock estimates of flit-level runs, made before they start.

A flit-level simulation costs about the same for every flit crossing a link, so its time
is estimated from the work it will do:

* an all-reduce (``hw-models allreduce --model flit|both``): the flits every transfer puts
  on the wire (whole packets, head flits included, as the NIC packetises them) times the
  links of its route, injection and ejection included (:func:`allreduce_flit_hops`), at
  :data:`SECONDS_PER_FLIT_HOP` (a bulk transfer's flits beyond
  :data:`STEPPED_FLITS_PER_BULK_PACKET` left out: the co-simulation jumps the stretches in
  which every packet only streams);
* synthetic traffic (``hw-models noc run`` and ``noc sweep-load``): every link for every
  simulated cycle, at :data:`SECONDS_PER_LINK_CYCLE`, for the most cycles the run may take
  (:func:`traffic_cycles`).

Both costs were measured on the project's 2-core machine with other work running
(``bench/flit_cost.py`` prints them; docs/allreduce.md, "How long a flit-level run
takes"): all-reduces took 60 to 180 ns per flit-hop (ring, 2D ring, double binary tree and
MultiTree, both NIC designs, over tori, meshes and fat-trees of 8 to 64 routers, 256 KiB to
4 MiB); synthetic traffic took 10 to 40 ns per link-cycle at 1 % load and 100 to 335 ns
loaded or saturated (meshes and tori of 16 to 64 routers). The figures below are near the upper ends, so the estimate errs long;
it leaves out Numba's first compilation. ``hw-models train`` and ``hw-models train-system``
are estimated from seconds per simulated iteration (:func:`training_seconds`;
each training system's registry entry, :meth:`hw_models.training.systems.System.seconds`). A run estimated to take more than
:data:`LONG_RUN_SECONDS` is refused unless the command has ``--yes`` (:func:`check_long_run`).
"""

from __future__ import annotations

from noc.base.errors import HwModelsError

SECONDS_PER_FLIT_HOP = 150e-9
SECONDS_PER_LINK_CYCLE = 300e-9
# a bulk packet's flits the co-simulation steps (its route filling and draining, and the
# checks before a jump; nic.flit_cosim_forward); the rest of it is jumped
STEPPED_FLITS_PER_BULK_PACKET = 512
LONG_RUN_SECONDS = 600.0  # 10 minutes
# ``hw-models train``: one simulated iteration of one run (workload x algorithm x policy) of
# the default workloads took about 29 ms at the message level (3 against 300 iterations of
# the 32 default runs, 2-core machine under heavy load); the estimate uses 30 ms.
SECONDS_PER_TRAINING_ITERATION = 0.03
MAX_TRAINING_ITERATIONS = 100_000  # figures are steady-state means: a few iterations suffice
# seconds of one iteration of one configuration timed on a profile that changes every iteration
# (walk, lognormal: a timeline per iteration), per layer of the workload -- twice the CPU seconds
# measured by bench/train_system_cost.py --profiled (ResNet-50): a bulk-synchronous iteration
# (compression, K-FAC, SGD) and an SSD-SGD step (its period's timeline over k steps)
SECONDS_PER_PROFILED_LAYER_ITERATION = {"bsp": 1.5e-4, "period": 3e-4}
MAX_SYSTEM_ITERATIONS = 100_000  # the digits task reaches its targets in tens to hundreds of iterations
# samples per worker per iteration: 2**20 is past every published per-device batch; a layer's
# GEMM grows with it, and 10**12 ran on with no end in sight
MAX_BATCH_SAMPLES = 1 << 20


def format_duration(seconds: float) -> str:
    """``90`` -> ``'1.5 minutes'``, ``7200`` -> ``'2 hours'``, ``1e6`` -> ``'11.6 days'``."""
    for unit, size in (("years", 365 * 86400.0), ("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.2g} seconds"


def allreduce_flit_hops(topology, routes, schedule, nic, size_bytes: int) -> float:
    """Flits times links they cross, summed over the transfers of one all-reduce of
    ``schedule`` (lengths include the NI links). ``routes``: the topology's route table, or
    the router config (``noc.flit.FlitNetworkConfig``) whose routing routes the transfers'
    pairs alone."""
    from nic.preparation import prepare, transfer_routes  # noqa: PLC0415
    from noc.routing import RouteTable  # noqa: PLC0415

    prep = prepare(topology, schedule, nic, int(size_bytes))
    flits = prep.wire_bytes / nic.flit_bytes
    table = isinstance(routes, RouteTable)
    paths = transfer_routes(topology, prep, None if table else routes, routes if table else None)
    return float((flits * paths.length).sum())


def _stepped_flit_hops(topology, routes, schedule, nic, size_bytes: int) -> float:
    """:func:`allreduce_flit_hops` of the cycles the co-simulation steps: with bulk
    transfers (one packet per transfer) on links at least a flit wide it jumps the stretches
    in which every packet only streams (``nic.flit_cosim_forward``), so a packet counts at
    most :data:`STEPPED_FLITS_PER_BULK_PACKET` flits."""
    import numpy as np  # noqa: PLC0415

    from nic.preparation import prepare, transfer_routes  # noqa: PLC0415
    from noc.routing import RouteTable  # noqa: PLC0415

    narrow = bool(np.any(topology.link_bytes_per_cycle < nic.flit_bytes))
    if not nic.bulk or narrow or getattr(routes, "debug", False):
        return allreduce_flit_hops(topology, routes, schedule, nic, size_bytes)
    prep = prepare(topology, schedule, nic, int(size_bytes))
    flits = np.minimum(prep.wire_bytes / nic.flit_bytes, STEPPED_FLITS_PER_BULK_PACKET)
    table = isinstance(routes, RouteTable)
    paths = transfer_routes(topology, prep, None if table else routes, routes if table else None)
    return float((flits * paths.length).sum())


def check_flit_cycles(topology, runs) -> None:
    """Refuse the flit-level all-reduces ``runs`` (as :func:`flit_allreduce_seconds` takes them)
    when one transfer alone needs more cycles (one flit a cycle) than a co-simulation runs
    (``nic.flit_cosim.MAX_CYCLES``)."""
    from nic.flit_cosim import MAX_CYCLES  # noqa: PLC0415
    from nic.preparation import prepare  # noqa: PLC0415

    for schedule, nic, size_bytes in runs:
        flits = -(-int(prepare(topology, schedule, nic, int(size_bytes)).wire_bytes.max()) // int(nic.flit_bytes))
        if flits > MAX_CYCLES:
            raise HwModelsError(f"size {size_bytes:,} B: one transfer is {flits:,} flits, more cycles than the "
                                f"flit level runs ({MAX_CYCLES:,}); use --model message for this size")


def flit_allreduce_seconds(topology, routes, runs) -> float:
    """Estimated seconds of the flit-level all-reduces ``runs``: (schedule, NicConfig, size
    in bytes) triples on ``topology`` (the cycles the co-simulation steps, not those it jumps)."""
    return SECONDS_PER_FLIT_HOP * sum(_stepped_flit_hops(topology, routes, s, nic, size) for s, nic, size in runs)


def traffic_cycles(traffic) -> int:
    """The most cycles one synthetic-traffic run may simulate (``noc.flit_traffic.TrafficConfig``):
    warm-up, measurement and drain limit; BookSim2's methodology: every sample period
    plus the drain limit."""
    if getattr(traffic, "methodology", "window") == "booksim":
        return int(traffic.max_samples) * int(traffic.sample_period_cycles) + int(traffic.drain_limit_cycles)
    return int(traffic.warmup_cycles) + int(traffic.measure_cycles) + int(traffic.drain_limit_cycles)


def traffic_seconds(topology, traffic, points: int = 1) -> float:
    """Estimated seconds of ``points`` synthetic-traffic runs on ``topology`` (an upper end:
    every run to its cycle limit)."""
    return SECONDS_PER_LINK_CYCLE * topology.num_links * traffic_cycles(traffic) * points


def training_seconds(runs: int, iterations: int) -> float:
    """Estimated seconds of ``runs`` training runs of ``iterations`` iterations each."""
    return SECONDS_PER_TRAINING_ITERATION * runs * iterations


def profiled_seconds(configs: int, period_configs: int, iterations: int, layers: int) -> float:
    """Estimated seconds of timing ``configs`` bulk-synchronous and ``period_configs`` SSD-SGD
    configurations of a ``layers``-layer workload iteration by iteration on a profile that
    changes every iteration, each for ``iterations`` iterations."""
    f = SECONDS_PER_PROFILED_LAYER_ITERATION
    return iterations * layers * (configs * f["bsp"] + period_configs * f["period"])


def check_long_run(seconds: float, what: str, yes: bool, instead: str) -> None:
    """A :class:`HwModelsError` printing the estimate unless ``seconds`` is within
    :data:`LONG_RUN_SECONDS` or ``yes`` (the command's ``--yes``)."""
    if seconds > LONG_RUN_SECONDS and not yes:
        raise HwModelsError(
            f"{what} would take about {format_duration(seconds)} on this machine (a rough estimate, more than "
            f"{LONG_RUN_SECONDS / 60:g} minutes); add --yes to run them anyway, or use {instead}")
