"""Load–latency sweeps of the flit-level network: from near-zero load to saturation.

One point is one :func:`noc.flit_traffic.run_traffic` run (warm-up, measurement window,
drain of the measured packets). :func:`sweep_load` runs, in this order:

1. a point at near-zero load (``start_flits``, default 1/50 of the bound below): its average
   latency is the measured **zero-load latency**, reported next to the analytic value
   :func:`zero_load_latency_cycles` (hops x per-hop delay + serialisation, averaged over the
   pattern's source/destination pairs and the packet-size distribution). It must be one: a
   first point that is unstable, delivers no measured packet, or whose average latency
   exceeds the analytic value by more than ``ZERO_LOAD_TOLERANCE`` (20 %) + 1 cycle + 3
   standard errors of its mean is not at near-zero load, and the sweep stops with a
   :class:`ConfigError` (lower ``start_flits``) instead of judging saturation against it;
2. points at ``step_flits``, 2 x ``step_flits``, ... (default step: 1/8 of the bound) until
   one is **saturated** — its drain did not finish (``stable`` is False: BookSim's
   "unstable"), or its average latency exceeds ``latency_limit_factor`` x the zero-load
   latency — or the offered load reaches one packet per NI per cycle;
3. ``refine_steps`` bisections between the last unsaturated and the first saturated load.

The **saturation throughput** is the highest offered load that was not saturated (within the
bisection's resolution); the peak accepted throughput of any point is reported next to it.
When no point saturated (``max_points`` ran out, or the load reached one packet per NI per
cycle) there is no saturation throughput: ``saturation_offered_flits`` is nan and
``saturation_reached`` False.
Loads are in flits per NI per cycle; ``bound_flits`` is the uniform-traffic bisection bound
``min(1, 4 B / E)`` (B = bisection links one way, E = NIs: 4/k on a k x k mesh, 8/k on a
k x k torus; with ``router.flit_bytes`` set, each link counted at its flit rate, see
:func:`bisection_bound_flits`), which scales the default steps for every pattern but is a
bound only for uniform traffic.

Finished points are never lost: a point that deadlocks ends the sweep with
:class:`SweepDeadlockError` and Ctrl-C with :class:`SweepInterrupted`, each carrying the
points finished before it; with ``run_point=`` (e.g. the CLI's: each point a point of sweep
kind ``noc_load`` in a sweep store) each finished point is kept as it finishes and reused by
a later sweep, which then makes the same choices and gives the same result as an
uninterrupted one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Callable

import numpy as np
from pydantic import Field

from noc.base.config import StrictModel, finite, finite_rule
from noc.base.errors import ConfigError, DeadlockError
from noc.flit import FlitNetworkConfig
from noc.flit_traffic import RunStats, TrafficConfig, destinations, run_traffic
from noc.routing import route
from noc.topology import Topology


# How far the first point's average latency may exceed the analytic zero-load latency (as a
# fraction of it, besides 1 cycle for fractional serialisation and 3 standard errors of the
# measured mean) and still count as a zero-load measurement. Queueing at the default start,
# 1/50 of the bisection bound, adds a few per cent on meshes and tori under uniform traffic.
ZERO_LOAD_TOLERANCE = 0.2


class SweepConfig(StrictModel):
    """How :func:`sweep_load` chooses its load points (loads in flits per NI per cycle)."""

    start_flits: Annotated[float, finite(1e-6, 1.0)] | None = Field(
        None, description=f"Near-zero load of the first point (default: bound / 50): {finite_rule(1e-6, 1.0)}.")
    step_flits: Annotated[float, finite(1e-6, 1.0)] | None = Field(
        None, description=f"Load step of the coarse sweep (default: bound / 8): {finite_rule(1e-6, 1.0)}.")
    max_points: int = Field(24, ge=2, le=200, description="At most this many points in all.")
    refine_steps: int = Field(3, ge=0, le=10, description="Bisections between the last good and the first saturated load.")
    # an infinite limit no point can exceed would report "saturation not reached" for a saturated network
    latency_limit_factor: Annotated[float, finite(1.0, 1e6, lo_open=True)] = Field(
        6.0, description="A point whose average latency exceeds this x the zero-load latency is saturated: "
                         f"{finite_rule(1.0, 1e6, lo_open=True)}.")


def bisection_bound_flits(topology: Topology, flit_bytes: int | None = None) -> float:
    """Uniform-traffic throughput bound in flits/NI/cycle: min(1, 4 x bisection links / NIs)
    with every link carrying one flit per cycle (``flit_bytes`` None).

    With ``flit_bytes`` set, a link carries ``min(1, bytes_per_cycle / flit_bytes)`` flits
    per cycle (noc.flit's link width): the NI term is the narrowest inject or eject link's
    rate (uniform traffic loads every NI alike), and the bisection term counts each
    bisection link at the widest router link's rate, which keeps it an upper bound when
    router links differ in width (exact when they are all alike)."""
    b = int(topology.summary()["bisection_links"])
    e = topology.num_endpoints
    ni_rate, link_rate = 1.0, 1.0
    if flit_bytes is not None:
        w = topology.link_bytes_per_cycle
        ni_links = np.concatenate([topology.inject_link, topology.eject_link])
        ni_rate = min(1.0, float(w[ni_links].min()) / flit_bytes)
        router = w[topology.is_router_link]
        link_rate = min(1.0, float(router.max()) / flit_bytes) if router.size else 1.0
    return min(ni_rate, 4.0 * b / e * link_rate) if b > 0 else ni_rate


def zero_load_latency_cycles(topology: Topology, network: FlitNetworkConfig, traffic: TrafficConfig) -> float:
    """Analytic average zero-load packet latency (tail ejection - creation), in cycles.

    Per packet of ``F`` flits on links ``l_0 .. l_{n-1}`` (injection and ejection links
    included): a flit granted onto link i arrives ``d_i = x_i + latency_i + ceil(r_i) - 1``
    cycles later (``x_i``: switch allocation + traversal, 0 on the injection link; ``r_i``:
    cycles per flit, ``flit_bytes / bytes_per_cycle`` on a link narrower than a flit, else
    1); the head also spends routing + VC allocation in each router, so it is granted link j
    at ``G_j = sum(d_0 .. d_{j-1}) + j * (routing + vc_alloc)``; the tail arrives at
    ``max_j (G_j + (F - 1) * r_j + d_j + ... + d_{n-1})`` — with full-width links the
    familiar ``sum(latencies) + (n - 1) * router delay + F - 1``. Exact for integer ``r_i``;
    with fractional ones it rounds the serialisation differently from the simulator by
    under a cycle per packet. Averaged over the pattern's pairs and the packet-size
    distribution."""
    from noc.flit import serialisation_cycles

    routes = route(topology, network.routing, dateline=network.dateline)
    e = topology.num_endpoints
    links_table, length = routes.links, routes.length
    if traffic.self_packets:  # a packet to its own source: injection link, router, ejection link
        links_table, length = links_table.copy(), length.copy()
        ep = np.arange(e)
        links_table[ep, ep, 0] = topology.inject_link
        links_table[ep, ep, 1] = topology.eject_link
        length[ep, ep] = 2
    lat = topology.link_latency_cycles.astype(np.float64)
    num, den = serialisation_cycles(network.flit_bytes, topology.link_bytes_per_cycle)
    r = num / den  # cycles per flit
    r_head = -(-num // den)  # whole cycles the head takes on an idle link
    h = links_table.shape[2]
    mask = np.arange(h)[None, None, :] < length[:, :, None]
    links = np.clip(links_table, 0, None)
    x = np.full(h, float(network.sw_alloc_delay_cycles + network.st_delay_cycles))
    x[0] = 0.0
    d = np.where(mask, x[None, None, :] + lat[links] + r_head[links] - 1, 0.0)
    grant = np.cumsum(d, axis=2) - d + np.arange(h)[None, None, :] * (network.routing_delay_cycles
                                                                         + network.vc_alloc_delay_cycles)
    rest = np.cumsum(d[:, :, ::-1], axis=2)[:, :, ::-1]  # d_j + ... + d_{n-1}
    sizes, cdf = traffic.size_table()
    probs = np.diff(np.r_[0.0, cdf])
    r_path = r[links]  # cycles per flit of each link on each path
    per_pair = np.zeros((e, e))
    for f, p in zip(sizes, probs):
        tail = np.where(mask, grant + (f - 1) * r_path + rest, -np.inf).max(axis=2)
        per_pair += p * np.where(mask.any(axis=2), tail, 0.0)
    dst = destinations(traffic.pattern, topology, traffic.perm_seed)
    off_diag = np.ones((e, e), dtype=bool) if traffic.self_packets else ~np.eye(e, dtype=bool)
    uniform = float(per_pair[off_diag].mean()) if off_diag.any() else 0.0
    if traffic.pattern == "uniform":
        return uniform
    if traffic.pattern == "hotspot":
        hot, cdf_h = traffic.hotspot_table()
        share = np.diff(np.r_[0.0, cdf_h])  # of the hotspot packets, each hotspot NI's
        f = traffic.hotspot_fraction
        if traffic.self_packets:
            return (1 - f) * uniform + f * float(sum(w * per_pair[:, h].mean() for h, w in zip(hot, share)))
        # a source's hotspot packet to itself is skipped, like the generator does
        to_hot = sum(w * per_pair[np.arange(e) != h, h].sum() for h, w in zip(hot, share))
        n_hot = sum(w * (e - 1) for w in share)
        return ((1 - f) * uniform * e + f * to_hot) / ((1 - f) * e + f * n_hot)
    src = np.arange(e)
    moving = (dst != src) | traffic.self_packets  # packets to oneself are sent only with self_packets
    return float(per_pair[src[moving], dst[moving]].mean()) if moving.any() else 0.0


@dataclass(frozen=True)
class SweepPoint:
    offered_flits: float
    stats: RunStats
    saturated: bool


@dataclass(frozen=True)
class SweepResult:
    points: list[SweepPoint]  # in offered-load order
    zero_load_latency_cycles: float  # measured at the first (near-zero) load
    zero_load_latency_analytic_cycles: float
    saturation_offered_flits: float  # highest unsaturated offered load below a saturated one (nan: none saturated)
    peak_accepted_flits: float  # highest accepted throughput of any point
    bound_flits: float  # uniform bisection bound
    first_saturated_flits: float = math.nan  # lowest saturated offered load (nan: never saturated)
    rows: list[dict] = field(default_factory=list)
    max_offered_flits: float = math.nan  # the highest load the generator offers: 1 packet/NI/cycle, in flits
    reused_points: int = 0  # points ``run_point`` found finished (in a store) instead of simulating them

    @property
    def saturation_reached(self) -> bool:
        return not math.isnan(self.first_saturated_flits)

    @property
    def highest_offered_flits(self) -> float:
        return self.points[-1].offered_flits if self.points else math.nan


# ``run_point(traffic)``: the stats of a run of exactly ``traffic`` (its ``rate_packets`` set
# to the point's load) on the sweep's topology and network, and whether they were found
# finished (e.g. in a store) rather than simulated now
PointRunner = Callable[[TrafficConfig], tuple[RunStats, bool]]


class SweepDeadlockError(DeadlockError):
    """A load point deadlocked. ``result`` holds the points measured before it (a partial
    :class:`SweepResult`; its ``rows`` end with a ``verdict = "deadlock"`` row for that
    load); ``offered_flits`` is the load that deadlocked."""

    def __init__(self, message: str, result: SweepResult, offered_flits: float) -> None:
        super().__init__(message)
        self.result = result
        self.offered_flits = offered_flits


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep (a KeyboardInterrupt, so it stops whatever stops on one);
    ``result`` holds the points finished before it (a partial :class:`SweepResult`)."""

    def __init__(self, result: SweepResult) -> None:
        super().__init__()
        self.result = result


def sweep_load(topology: Topology, network: FlitNetworkConfig, traffic: TrafficConfig, sweep: SweepConfig | None = None,
               on_point: Callable[[int, float, RunStats, bool], None] | None = None,
               run_point: PointRunner | None = None) -> SweepResult:
    """Sweep the offered load of ``traffic`` (its ``rate_packets`` is ignored) from near zero
    to saturation on ``topology``. Deterministic for a given ``traffic.seed``.

    ``on_point(n, load, stats, saturated)`` follows each finished point. ``run_point`` runs
    each point (default: :func:`noc.flit_traffic.run_traffic` here); one that finds a point
    already finished returns it instead (the sweep's choices and results are the same:
    every point is a run of its own) and counts in ``reused_points``.
    A point that deadlocks stops the sweep with :class:`SweepDeadlockError` and Ctrl-C with
    :class:`SweepInterrupted`; both carry the points finished before them."""
    sw = SweepConfig() if sweep is None else sweep
    bound = bisection_bound_flits(topology, network.flit_bytes)
    mean = traffic.mean_packet_flits
    # one packet per NI per cycle; an on/off source at most one per cycle while on
    max_rate = 1.0 if traffic.injection_process == "bernoulli" else \
        traffic.burst_alpha / (traffic.burst_alpha + traffic.burst_beta)
    max_flits = mean * max_rate
    start = sw.start_flits if sw.start_flits is not None else bound / 50
    step = sw.step_flits if sw.step_flits is not None else bound / 8
    if start >= max_flits:
        raise ConfigError(f"sweep.start_flits = {start}: must be below {max_flits} flits/NI/cycle ({max_rate:g} "
                          "packet/NI/cycle, the source's most)")
    analytic = zero_load_latency_cycles(topology, network, traffic)
    done: dict[float, SweepPoint] = {}
    zero_load = math.nan
    reused = 0
    good, bad = start, None

    def run(load: float, first: bool = False) -> SweepPoint:
        nonlocal zero_load, reused
        tr = traffic.model_copy(update={"rate_packets": min(max_rate, load / mean)})
        if run_point is None:
            stats, found = run_traffic(topology, network, tr), False
        else:
            stats, found = run_point(tr)
        reused += found
        if first:
            zero_load = stats.latency_avg
            _check_zero_load(stats, start, analytic)
        sat = (not stats.stable) or not (stats.latency_avg <= sw.latency_limit_factor * zero_load)
        pt = SweepPoint(load, stats, sat)
        done[load] = pt
        if on_point is not None:
            on_point(len(done), load, stats, sat)
        return pt

    def result() -> SweepResult:
        return _result(done, zero_load, analytic, good, bad, bound, max_flits, reused)

    load = start
    try:
        run(start, first=True)  # _check_zero_load passed: the first point is not saturated
        k = 1
        while bad is None and len(done) < sw.max_points:
            load = min(k * step, max_flits)
            k += 1
            if load <= start:
                continue
            if run(load).saturated:
                bad = load
            else:
                good = load
            if load >= max_flits:
                break
        for _ in range(sw.refine_steps):
            if bad is None or len(done) >= sw.max_points:
                break
            load = round((good + bad) / 2, 6)
            if load in done:
                break
            if run(load).saturated:
                bad = load
            else:
                good = load
    except DeadlockError as exc:
        partial = result()
        partial.rows.append({"offered_flits": round(load, 6), "stable": False, "saturated": True, "verdict": "deadlock"})
        n = len(partial.points)
        why = str(exc).removeprefix("deadlock: ")
        raise SweepDeadlockError(f"deadlock at offered load {load:.4g} flits/NI/cycle (after {n} point{'s' if n != 1 else ''}"
                                 f" measured): {why}", partial, load) from None
    except KeyboardInterrupt:
        raise SweepInterrupted(result()) from None
    return result()


def _result(done: dict[float, SweepPoint], zero_load: float, analytic: float, good: float, bad: float | None,
            bound: float, max_flits: float, reused: int) -> SweepResult:
    """The SweepResult of the points in ``done`` (all of a finished sweep, or those before a
    deadlock or an interrupt)."""
    points = [done[x] for x in sorted(done)]
    accepted = [p.stats.accepted_flits for p in points if not math.isnan(p.stats.accepted_flits)]
    rows = []
    for p in points:
        r = {"offered_flits": round(p.offered_flits, 6), **{k2: v for k2, v in p.stats.row().items() if k2 != "offered_flits"},
             "saturated": p.saturated, "verdict": "saturated" if p.saturated else "ok"}
        rows.append(r)
    return SweepResult(
        points=points, zero_load_latency_cycles=float(zero_load), zero_load_latency_analytic_cycles=analytic,
        saturation_offered_flits=float(good) if bad is not None else math.nan,
        peak_accepted_flits=max(accepted) if accepted else math.nan, bound_flits=bound,
        first_saturated_flits=float(bad) if bad is not None else math.nan, rows=rows, max_offered_flits=max_flits,
        reused_points=reused,
    )


def _check_zero_load(stats: RunStats, start: float, analytic: float) -> None:
    """Raise ConfigError unless the first point is a zero-load measurement (module docstring)."""
    where = f"sweep.start_flits = {start:g} flits/NI/cycle"
    if not stats.stable:  # first: an unstable run may also have delivered nothing
        raise ConfigError(f"{where} is not a near-zero load: the run there is unstable (its measured packets "
                          f"did not drain); lower start_flits")
    if stats.packets == 0 or math.isnan(stats.latency_avg):
        raise ConfigError(f"{where}: no measured packet was delivered, so there is no zero-load latency; "
                          f"raise start_flits or traffic.measure_cycles")
    se = stats.latency_std / math.sqrt(stats.packets) if stats.packets > 1 else 0.0
    limit = analytic * (1 + ZERO_LOAD_TOLERANCE) + 1 + 3 * (0.0 if math.isnan(se) else se)
    if stats.latency_avg > limit:
        raise ConfigError(f"{where} is not a near-zero load: average latency there {stats.latency_avg:.1f} cycles, "
                          f"{stats.latency_avg / analytic:.2f} x the analytic zero-load latency {analytic:.2f} "
                          f"(at most {100 * ZERO_LOAD_TOLERANCE:.0f} % + 1 cycle + 3 standard errors above it); "
                          f"lower start_flits")
