"""Synthetic traffic over the flit-level network, with the standard methodology.

Bernoulli injection: every NI, every cycle, creates a packet with probability
``rate_packets / 1`` (packets per NI per cycle; ``rate_flits`` = rate_packets × mean
packet size); packet sizes are fixed or drawn from a discrete distribution. Destinations
follow a pattern over NI indices (bit patterns need a power-of-two NI count):

uniform, transpose, bitcomp (bit complement), bitrev (bit reverse), shuffle (rotate left),
tornado (half-way around each dimension of a grid), neighbor (+1 in dimension 0),
neighbor_all (+1 in every dimension), randperm (a fixed random permutation from
``perm_seed``), hotspot (a fraction ``hotspot_fraction`` of packets to the
``hotspot_nodes``, weighted by ``hotspot_weights``, the rest uniform; BookSim2's hotspot is
fraction 1).

Injection: ``bernoulli`` (above) or ``on_off`` (BookSim2's): every NI is a two-state Markov
chain advanced once per cycle, off -> on with probability ``burst_alpha``, on -> off with
``burst_beta``; while on it creates a packet with probability
``r1 = rate_packets (alpha + beta) / alpha``, so the long-run rate is ``rate_packets``.
Each NI starts on or off with probability 1/2, drawn from the seed.

Methodology (as BookSim's): warm up for ``warmup_cycles`` (or until the average latency
of successive windows changes by less than 5 %), then label the packets created during
``measure_cycles`` and keep simulating until every labelled packet is delivered (drain),
or until ``drain_limit_cycles`` runs out: then the run is **unstable** (saturated). The
run reports latency (average, p50, p99; network = from the head's injection, total =
from creation), accepted throughput (flits/NI/cycle over the window), average hops and
per-link utilisation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np
from numba import njit
from pydantic import Field, ValidationInfo, field_validator, model_validator

from noc.base.config import Seed, StrictModel, finite, finite_rule, is_finite_in
from noc.base.errors import ConfigError, DeadlockError
from noc.flit import (
    C_EJECTED_FLITS, C_ERR, C_IN_FLIGHT, C_INJECTED_FLITS, FlitNetworkConfig, build_network, describe_stuck, enqueue_packet,
    new_state, pop_ejected, seed_arbiters, seed_ties, step, stuck,
)
from noc.flit_pipeline import FlitCompiler
from noc.flit_random import draw_double, draw_int, skip_failed, start_trials, trial_source
from noc.topology import Topology

# Packet sizes in flits (synthetic traffic, BookSim2 files): 65,536 flits, a 1 MiB packet
# of 16-byte flits; larger sizes are no network's packets and overflow the kernels' counters.
MAX_PACKET_FLITS = 1 << 16

PATTERNS = ("uniform", "transpose", "bitcomp", "bitrev", "shuffle", "tornado", "neighbor", "neighbor_all", "randperm",
            "hotspot")


RATE_PACKETS_RANGE = (1e-6, 1.0)  # a packet per NI per million cycles .. one per cycle
PACKET_WEIGHT_RANGE = (0.0, 1e6)
THRES_RANGE = (0.0, 1e6)
MAX_RUN_CYCLES = 1 << 40  # cycle counts stay far inside the kernels' int64 arithmetic


class TrafficConfig(StrictModel):
    """Synthetic traffic and the run methodology."""

    pattern: Literal["uniform", "transpose", "bitcomp", "bitrev", "shuffle", "tornado", "neighbor", "neighbor_all",
                     "randperm", "hotspot"] = "uniform"
    rate_packets: Annotated[float, finite(*RATE_PACKETS_RANGE)] = Field(
        0.1, description=f"Packets created per NI per cycle (Bernoulli): {finite_rule(*RATE_PACKETS_RANGE)}.")
    packet_flits: list[int] = Field(default_factory=lambda: [1], min_length=1,
                                    description=f"Packet sizes in flits, each in [1, {MAX_PACKET_FLITS}].")
    packet_weights: list[float] | None = Field(
        None, description=f"Relative frequencies of packet_flits (default: equal), each {finite_rule(*PACKET_WEIGHT_RANGE)}, "
                          "not all zero.")
    hotspot_fraction: Annotated[float, finite(0.0, 1.0)] = Field(
        0.2, description="hotspot: share of packets sent to the hotspot NIs (the rest uniform; BookSim2: 1).")
    hotspot_nodes: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=lambda: [0], min_length=1, max_length=1 << 16, description="hotspot: the hotspot NIs.")
    hotspot_weights: list[Annotated[int, Field(ge=1, le=1_000_000)]] | None = Field(
        None, description="hotspot: relative share of each hotspot NI, integers in [1, 1e6] (default: equal).")
    injection_process: Literal["bernoulli", "on_off"] = Field(
        "bernoulli", description="bernoulli: a trial per NI per cycle at rate_packets. on_off: BookSim2's two-state "
                                 "Markov source (burst_alpha, burst_beta), the same long-run rate.")
    burst_alpha: Annotated[float, finite(0.0, 1.0, lo_open=True)] = Field(
        0.5, description="on_off: probability per cycle that an off NI turns on, in (0, 1].")
    burst_beta: Annotated[float, finite(0.0, 1.0)] = Field(
        0.5, description="on_off: probability per cycle that an on NI turns off, in [0, 1].")
    warmup_cycles: int = Field(1000, ge=0, le=MAX_RUN_CYCLES, description="Cycles before measuring.")
    measure_cycles: int = Field(5000, ge=1, le=MAX_RUN_CYCLES, description="Cycles whose packets are measured.")
    drain_limit_cycles: int = Field(20000, ge=1, le=MAX_RUN_CYCLES, description="Cycles allowed to deliver the measured packets; more means unstable.")
    seed: Seed = Field(1, description="Seed of the traffic (sources, destinations, sizes).")
    perm_seed: Seed = Field(0, description="randperm: the seed of its fixed permutation.")
    self_packets: bool = Field(
        False, description="Packets to their own source are sent (BookSim2): uniform and hotspot draw from every NI, "
                           "the source included, and a fixed pattern's fixed points send to themselves, through the "
                           "router. False: uniform draws from the other NIs, fixed points send nothing.")
    inject_during_drain: bool = Field(
        False, description="Keep creating (unmeasured) packets while the measured ones drain (BookSim2). False: "
                           "creation stops at the end of the measurement window.")
    methodology: Literal["window", "booksim"] = Field(
        "window", description="window: warm-up, one measurement window, drain (warmup_cycles, measure_cycles, "
                              "drain_limit_cycles). booksim: BookSim2's sample periods, convergence and "
                              "latency_thres verdict (the keys below; the window keys are not used).")
    warmup_periods: int = Field(3, ge=0, le=1000, description="booksim: warm-up sample periods (0: until the "
                                "warmup_thres and acc_warmup_thres changes are met).")
    sample_period_cycles: int = Field(1000, ge=1, le=1_000_000, description="booksim: cycles per sample period.")
    max_samples: int = Field(10, ge=1, le=10_000, description="booksim: at most this many periods, warm-up included.")
    latency_thres_cycles: Annotated[float, finite(0.0, 1e9, lo_open=True)] = Field(
        500.0,
        description="booksim: a period end at which the average latency of the delivered packets and of every flit "
                    "still queued or in flight exceeds this is unstable (the run stops).")
    warmup_thres: Annotated[float, finite(*THRES_RANGE)] = Field(0.05, description="booksim: latency change ending a convergence warm-up.")
    acc_warmup_thres: Annotated[float, finite(*THRES_RANGE)] = Field(0.05, description="booksim: throughput change ending a convergence warm-up.")
    stopping_thres: Annotated[float, finite(*THRES_RANGE)] = Field(0.05, description="booksim: latency change of a converged period (3 in a row end the run).")
    acc_stopping_thres: Annotated[float, finite(*THRES_RANGE)] = Field(0.05, description="booksim: throughput change of a converged period.")

    @field_validator("packet_flits")
    @classmethod
    def _sizes(cls, v: list[int]) -> list[int]:
        if min(v) < 1 or max(v) > MAX_PACKET_FLITS:
            raise ValueError(f"packet sizes must be in [1, {MAX_PACKET_FLITS}] flits")
        return v

    @field_validator("packet_weights")
    @classmethod
    def _weights(cls, v: list[float] | None, info: ValidationInfo) -> list[float] | None:
        if v is None:
            return v
        sizes = info.data.get("packet_flits")  # absent when packet_flits itself is invalid
        if sizes is not None and len(v) != len(sizes):
            raise ValueError(f"needs one weight per packet_flits entry ({len(sizes)}), got {len(v)}")
        if not all(is_finite_in(w, *PACKET_WEIGHT_RANGE) for w in v) or sum(v) <= 0:  # NaN: no wrong figures
            raise ValueError(f"weights must be non-negative and not all zero, each {finite_rule(*PACKET_WEIGHT_RANGE)}")
        return v

    @model_validator(mode="after")
    def _hot_and_burst(self) -> "TrafficConfig":
        if self.hotspot_weights is not None and len(self.hotspot_weights) != len(self.hotspot_nodes):
            raise ValueError(f"hotspot_weights needs one weight per hotspot_nodes entry ({len(self.hotspot_nodes)}), "
                             f"got {len(self.hotspot_weights)}")
        if self.injection_process == "on_off" and self.burst_r1 > 1.0:
            raise ValueError(f"on_off: the rate while on, rate_packets (burst_alpha + burst_beta) / burst_alpha = "
                             f"{self.burst_r1:.4g}, exceeds 1 packet per cycle; lower rate_packets or raise burst_alpha")
        return self

    @property
    def burst_r1(self) -> float:
        """on_off: packet probability per cycle while on."""
        return self.rate_packets * (self.burst_alpha + self.burst_beta) / self.burst_alpha

    def hotspot_table(self) -> tuple[np.ndarray, np.ndarray]:
        """(hotspot NIs, cumulative shares) as the kernel reads them."""
        nodes = np.asarray(self.hotspot_nodes, dtype=np.int64)
        w = np.ones(len(nodes)) if self.hotspot_weights is None else np.asarray(self.hotspot_weights, dtype=np.float64)
        return nodes, np.cumsum(w / w.sum())

    def burst_table(self) -> np.ndarray:
        """float64[3]: (alpha, beta, r1) of on_off; alpha = -1 for bernoulli."""
        if self.injection_process == "bernoulli":
            return np.array([-1.0, 0.0, 0.0])
        return np.array([self.burst_alpha, self.burst_beta, self.burst_r1])

    def size_table(self) -> tuple[np.ndarray, np.ndarray]:
        sizes = np.asarray(self.packet_flits, dtype=np.int64)
        w = np.ones(len(sizes)) if self.packet_weights is None else np.asarray(self.packet_weights, dtype=np.float64)
        return sizes, np.cumsum(w / w.sum())

    @property
    def mean_packet_flits(self) -> float:
        sizes, cdf = self.size_table()
        p = np.diff(np.r_[0.0, cdf])
        return float((sizes * p).sum())


def destinations(pattern: str, topology: Topology, perm_seed: int = 0) -> np.ndarray:
    """int64[E]: the fixed destination of each NI (-1: random per packet; uniform/hotspot);
    randperm: a random permutation of the NIs drawn from ``perm_seed``."""
    e = topology.num_endpoints
    src = np.arange(e)
    if pattern in ("uniform", "hotspot"):
        return np.full(e, -1, dtype=np.int64)
    if pattern == "randperm":
        return np.random.default_rng(perm_seed).permutation(e).astype(np.int64)
    if pattern in ("transpose", "bitcomp", "bitrev", "shuffle"):
        bits = e.bit_length() - 1
        if 1 << bits != e:
            raise ConfigError(f"pattern {pattern!r} needs a power-of-two number of NIs; {topology.name} has {e}")
        mask = e - 1
        if pattern == "bitcomp":
            return (~src) & mask
        if pattern == "bitrev":
            return np.array([int(f"{s:0{bits}b}"[::-1], 2) if bits else 0 for s in src], dtype=np.int64)
        if pattern == "shuffle":
            return ((src << 1) | (src >> (bits - 1))) & mask if bits else src
        if bits % 2:
            raise ConfigError(f"transpose needs an even number of address bits; {topology.name} has {e} NIs")
        h = bits // 2
        return ((src >> h) | ((src & ((1 << h) - 1)) << h)).astype(np.int64)
    # grid patterns act on router coordinates, the NI index within its router kept
    if not topology.dims:
        raise ConfigError(f"pattern {pattern!r} needs a mesh or torus; {topology.name} is not one")
    dims = np.asarray(topology.dims)
    strides = np.r_[1, np.cumprod(dims)[:-1]]
    r = topology.endpoint_router
    coords = topology.router_coords[r]
    if pattern == "tornado":
        new = (coords + (dims - 1) // 2) % dims
    elif pattern == "neighbor":
        new = coords.copy()
        new[:, 0] = (new[:, 0] + 1) % dims[0]
    else:  # neighbor_all: +1 in every dimension (BookSim2's neighbor)
        new = (coords + 1) % dims
    c = topology.concentration
    return ((new * strides).sum(axis=1) * c + src % c).astype(np.int64)


@njit(cache=True, inline="always")
def _draw_packet(rs, s, e, rate, fixed_dst, hotspot, hot_nodes, hot_cdf, sizes, cdf, self_packets, burst, on):
    """NI ``s``'s trial of this cycle: (flits, destination), or (0, -1) for no packet (no
    success, or a packet to itself without ``self_packets``). ``burst`` = (alpha, beta, r1)
    of an on/off source (alpha < 0: Bernoulli at ``rate``), ``on`` its NIs' states; the
    draws come from Numba's generator through ``rs`` (noc.flit_random.trial_source)."""
    if burst[0] < 0.0:
        if draw_double(rs) >= rate:
            return 0, -1
    else:  # BookSim2's OnOffInjectionProcess::test: advance the state, then try while on
        if on[s]:
            on[s] = 1 if draw_double(rs) >= burst[1] else 0
        else:
            on[s] = 1 if draw_double(rs) < burst[0] else 0
        if on[s] == 0 or draw_double(rs) >= burst[2]:
            return 0, -1
    u = draw_double(rs)
    k = 0
    while k < sizes.shape[0] - 1 and u > cdf[k]:
        k += 1
    nf = sizes[k]
    d = fixed_dst[s]
    if d < 0:
        if hotspot > 0 and draw_double(rs) < hotspot:
            d = hot_nodes[0]
            if hot_nodes.shape[0] > 1:
                u = draw_double(rs)
                j = 0
                while j < hot_nodes.shape[0] - 1 and u >= hot_cdf[j]:
                    j += 1
                d = hot_nodes[j]
        elif self_packets:
            d = draw_int(rs, 0, e)
        else:
            d = draw_int(rs, 0, e - 1)
            if d >= s:
                d += 1
    if d == s and not self_packets:
        return 0, -1
    return nf, d


# acc fields of _advance: measured packets created, measured packets not yet delivered,
# latency sum and count of the packets delivered since the last clear (BookSim's plat
# samples), packets that found no free slot
A_MEASURED, A_OUTSTANDING, A_LAT_SUM, A_LAT_N, A_DROPPED = range(5)


@njit(cache=True, inline="always")
def _generate(net, st, now, e, rate, rs, fixed_dst, hotspot, hot_nodes, hot_cdf, sizes, cdf, self_packets, burst, on,
              record, hops, m_created, m_hops, m_flits, acc):
    """This cycle's trials, NI by NI, and the packets they make. Bernoulli trials that
    certainly fail (:func:`noc.flit_random.skip_failed`; ``rs`` its trial source, made for
    ``rate``) are stepped over in runs, the generator advanced as their draws would have;
    the others are drawn in full, so every NI's trial and packet are the same as one
    ``_draw_packet`` per NI."""
    cap = m_created.shape[0]
    no_priority = np.int64(0)  # not a literal 0, which would compile enqueue_packet once more
    bernoulli = burst[0] < 0.0
    s = 0
    while s < e:
        if bernoulli:
            s += skip_failed(rs, e - s)
            if s >= e:
                break
        nf, d = _draw_packet(rs, s, e, rate, fixed_dst, hotspot, hot_nodes, hot_cdf, sizes, cdf, self_packets, burst, on)
        if nf != 0:
            tag = -2 - now
            if record and acc[A_MEASURED] < cap:
                tag = acc[A_MEASURED]
                m_created[tag] = now
                m_hops[tag] = hops[s, d]
                m_flits[tag] = nf
                acc[A_MEASURED] += 1
                acc[A_OUTSTANDING] += 1
            if not enqueue_packet(net, st, s, d, nf, no_priority, tag, now):
                acc[A_DROPPED] += 1
                if tag >= 0:
                    acc[A_OUTSTANDING] -= 1
                    m_created[tag] = -1
        s += 1


@njit(cache=True, error_model="numpy", _nrt=False, pipeline_class=FlitCompiler)
def _advance(net, st, now, cycles, rate, fixed_dst, hotspot, hot_nodes, hot_cdf, sizes, cdf, self_packets, burst, on,
             generate, record, count_all, stop_when_drained, hops, m_created, m_inj, m_ej, m_hops, m_flits, acc, rs):
    """Simulate up to ``cycles`` cycles from cycle ``now``. With ``generate`` every NI makes
    its Bernoulli trial each cycle; with ``record`` the packets made are measured (their tag
    indexes the m_ arrays), others carry ``-2 - creation cycle``. Delivered measured packets
    (and, with ``count_all``, every packet) add their latency to the since-clear sums. With
    ``stop_when_drained`` it stops at the first cycle with no measured packet outstanding.
    ``rs`` is scratch for the trial source (noc.flit_random.trial_source). Compiled without
    reference counting, as noc.flit's kernels (it allocates nothing). Returns (the next
    cycle, 1 if the watchdog fired)."""
    e = fixed_dst.shape[0]
    start_trials(rs, np.int64(np.ceil(rate * 134217728.0)))  # noc.flit_random.fail_threshold(rate)
    for _ in range(cycles):
        if stop_when_drained and acc[A_OUTSTANDING] == 0:
            break
        if generate:
            _generate(net, st, now, e, rate, rs, fixed_dst, hotspot, hot_nodes, hot_cdf, sizes, cdf, self_packets,
                      burst, on, record, hops, m_created, m_hops, m_flits, acc)
        step(net, st, now)
        while True:
            tag, cyc = pop_ejected(st)
            if tag == -1 and cyc == -1:
                break
            if tag >= 0:
                m_ej[tag] = cyc
                m_inj[tag] = st.ej_inj[(st.ej_r[0] - 1) % st.ej_inj.shape[0]]
                acc[A_OUTSTANDING] -= 1
                acc[A_LAT_SUM] += cyc - m_created[tag]
                acc[A_LAT_N] += 1
            elif count_all:
                acc[A_LAT_SUM] += cyc - (-2 - tag)
                acc[A_LAT_N] += 1
        now += 1
        if stuck(net, st):
            return now, 1
    return now, 0


@njit(cache=True)
def _in_flight_age(st, now):
    """(sum over every flit queued or in the network of its packet's age, number of such flits)."""
    total = 0
    n = 0
    for p in range(st.p_flits.shape[0]):
        rest = st.p_flits[p] - st.p_ejected_flits[p]
        if rest > 0:
            total += rest * (now - st.p_created[p])
            n += rest
    return total, n


@dataclass(frozen=True)
class RunStats:
    """One synthetic-traffic run: the standard figures of a load-latency point."""

    offered_flits: float  # flits/NI/cycle
    accepted_flits: float  # flits/NI/cycle ejected during the measurement window
    latency_avg: float  # total: creation -> tail ejection, cycles
    latency_p50: float
    latency_p99: float
    network_latency_avg: float  # head injection -> tail ejection
    hops_avg: float
    packets: int
    stable: bool
    cycles: int
    link_utilisation: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    latency_std: float = float("nan")  # sample standard deviation of the total latency, cycles
    latency_min: float = float("nan")
    latency_max: float = float("nan")
    latency_se: float = float("nan")  # standard error of latency_avg by batch means (see latency_standard_error)
    injected_flits: float = float("nan")  # flits/NI/cycle injected during the measurement
    verdict: str = ""  # why a run is unstable ("" when stable)

    def row(self) -> dict:
        return {"offered_flits": round(self.offered_flits, 5), "accepted_flits": round(self.accepted_flits, 5),
                "latency_avg": round(self.latency_avg, 3), "latency_p50": self.latency_p50,
                "latency_p99": self.latency_p99, "network_latency_avg": round(self.network_latency_avg, 3),
                "hops_avg": round(self.hops_avg, 3), "packets": self.packets, "stable": self.stable,
                "cycles": self.cycles,
                "link_util_max": round(float(self.link_utilisation.max()) if self.link_utilisation.size else 0.0, 4)}


class _TrafficRun:
    """One synthetic-traffic run's state (network state, measured packets, counters) and
    the kernel calls that advance it; both methodologies drive it."""

    def __init__(self, topology: Topology, cfg: FlitNetworkConfig, traffic: TrafficConfig, net, slots: int,
                 measured: int) -> None:
        self.topology, self.cfg, self.traffic, self.net = topology, cfg, traffic, net
        self.st = new_state(net, slots)
        seed_arbiters(net, self.st, cfg.arbiter_seed)
        seed_ties(self.st, traffic.seed)
        self.hops = np.maximum(net.route_len - 2, 0)
        self.m_created, self.m_inj, self.m_ej = (np.full(measured, -1, np.int64) for _ in range(3))
        self.m_hops = np.zeros(measured, np.int64)
        self.m_flits = np.zeros(measured, np.int64)
        self.acc = np.zeros(5, np.int64)
        self.rs = trial_source()
        self.sizes, self.cdf = traffic.size_table()
        self.fixed = destinations(traffic.pattern, topology, traffic.perm_seed)
        self.hot = traffic.hotspot_fraction if traffic.pattern == "hotspot" else 0.0
        self.hot_nodes, self.hot_cdf = traffic.hotspot_table()
        e = topology.num_endpoints
        if traffic.pattern == "hotspot" and self.hot_nodes.max() >= e:
            raise ConfigError(f"hotspot_nodes {traffic.hotspot_nodes}: {topology.name} has NIs 0..{e - 1}")
        self.burst = traffic.burst_table()
        # on_off: every NI starts on or off with probability 1/2 (BookSim2's RandomInt(1) per node)
        self.on = np.random.default_rng([traffic.seed, 0x0FF]).integers(0, 2, e).astype(np.int8)

    def start(self) -> None:
        """Seed Numba's own generator, which the kernels draw from: just before the first
        advance, so that runs prepared together each start from their own seed."""
        _seed_numba(self.traffic.seed)

    def advance(self, now: int, cycles: int, generate: bool, record: bool, count_all: bool = False,
                stop_when_drained: bool = False) -> int:
        now, dead = _advance(self.net, self.st, now, cycles, self.traffic.rate_packets, self.fixed, self.hot,
                             self.hot_nodes, self.hot_cdf, self.sizes, self.cdf, self.traffic.self_packets, self.burst,
                             self.on, generate, record, count_all, stop_when_drained,
                             self.hops, self.m_created, self.m_inj, self.m_ej, self.m_hops, self.m_flits, self.acc,
                             self.rs)
        if dead:
            raise _deadlock(self.cfg, self.net, self.st, self.topology, now)
        return now

    def measured(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(latency, network latency, hops) of the delivered measured packets, in creation order."""
        n = int(self.acc[A_MEASURED])
        created, inj, ej = self.m_created[:n], self.m_inj[:n], self.m_ej[:n]
        ok = (ej >= 0) & (created >= 0)
        return (ej - created)[ok], (ej - inj)[ok], self.m_hops[:n][ok]

    def check(self) -> None:
        if self.st.counters[C_ERR]:
            raise AssertionError(f"flit-level invariant violated {int(self.st.counters[C_ERR])} times")


def latency_standard_error(latencies: np.ndarray, batches: int = 20) -> float:
    """Standard error of the mean packet latency by batch means: the packets in creation
    order cut into ``batches`` runs, whose means vary as much as the run's sampling does
    (neighbouring packets' latencies are correlated, so the per-packet standard deviation
    over sqrt(n) would understate it). nan with fewer than 2 packets per batch."""
    n = latencies.size // batches
    if n < 2:
        return float("nan")
    means = latencies[: n * batches].reshape(batches, n).mean(axis=1)
    return float(means.std(ddof=1) / np.sqrt(batches))


def _deadlock(cfg: FlitNetworkConfig, net, st, topology: Topology, cycles: int) -> DeadlockError:
    return DeadlockError(f"deadlock: no flit moved for {cfg.watchdog_cycles} cycles at cycle {cycles} with "
                         f"{int(st.counters[C_IN_FLIGHT])} flits queued or in flight; stuck: {describe_stuck(net, st, topology)}")


def run_traffic(topology: Topology, network: FlitNetworkConfig | None, traffic: TrafficConfig) -> RunStats:
    """One load point: warm-up, measurement, drain (``traffic.methodology``). Same seed,
    same result. :class:`PreparedTraffic` is the same in two steps."""
    return PreparedTraffic(topology, network, traffic).run()


class PreparedTraffic:
    """One load point set up and not yet simulated: the network's arrays
    (:func:`noc.flit.build_network`; its route tables are built once per process per network,
    :mod:`noc.topology_cache`), the checks of the configuration, the network state and the
    traffic source. :meth:`run` simulates it, once. ``run_traffic`` is the two together; the
    split lets a caller time the simulation alone, as BookSim2 times its own (its "Total run
    time" leaves out building its network and traffic manager; bench/noc_speed.py)."""

    def __init__(self, topology: Topology, network: FlitNetworkConfig | None, traffic: TrafficConfig) -> None:
        cfg = FlitNetworkConfig() if network is None else network
        net = build_network(topology, cfg)
        sizes, _ = traffic.size_table()
        if cfg.flow_control == "vct" and sizes.max() > cfg.vc_depth_flits:
            raise ConfigError(f"virtual cut-through needs packets (max {int(sizes.max())} flits) to fit a VC "
                              f"(vc_depth_flits = {cfg.vc_depth_flits})")
        e = topology.num_endpoints
        if traffic.methodology == "booksim":
            # packet slots for what is queued or in flight at once: by Little's law rate x NIs x
            # latency, and a stable run's latency stays below latency_thres_cycles (4x for
            # transients; running out ends the run as unstable, with its reason); measured packets
            # are the ones created in at most max_samples - warmup_periods periods
            slots = int(traffic.rate_packets * e * 4 * traffic.latency_thres_cycles) + 4096
            cap = int(traffic.rate_packets * e * max(traffic.max_samples - traffic.warmup_periods, 1)
                      * traffic.sample_period_cycles * 1.2) + 1024
            self._run = _TrafficRun(topology, cfg, traffic, net, min(slots, 4_000_000), cap)
        else:
            slots = int(traffic.rate_packets * e * (traffic.warmup_cycles + traffic.measure_cycles) * 1.5) + 1024
            self._run = _TrafficRun(topology, cfg, traffic, net, slots, slots)
        self._ran = False

    def run(self) -> RunStats:
        """Simulate the point: the statistics ``run_traffic`` returns. A second call is an error
        (the state has moved on; prepare the point again)."""
        if self._ran:
            raise RuntimeError("a PreparedTraffic runs once; prepare the point again")
        self._ran = True
        self._run.start()
        return _run_booksim(self._run) if self._run.traffic.methodology == "booksim" else _run_window(self._run)


def _run_window(run: _TrafficRun) -> RunStats:
    """The window methodology: warm-up, one measurement window, drain."""
    traffic, st = run.traffic, run.st
    e = run.topology.num_endpoints
    now = run.advance(0, traffic.warmup_cycles, True, False)
    link0, ej0 = st.link_flits.copy(), int(st.counters[C_EJECTED_FLITS])
    now = run.advance(now, traffic.measure_cycles, True, True)
    link_window, ej1 = st.link_flits - link0, int(st.counters[C_EJECTED_FLITS])
    cycles = run.advance(now, traffic.drain_limit_cycles, traffic.inject_during_drain, False, stop_when_drained=True)
    status = 1 if run.acc[A_OUTSTANDING] > 0 else 0
    dropped = int(run.acc[A_DROPPED])
    run.check()
    lat, nlat, hp = run.measured()
    window = traffic.measure_cycles
    util = link_window / window  # over the measurement window, not the drain after it
    return RunStats(
        offered_flits=traffic.rate_packets * traffic.mean_packet_flits,
        accepted_flits=float(ej1 - ej0) / (e * window),
        latency_avg=float(lat.mean()) if lat.size else float("nan"),
        latency_p50=float(np.percentile(lat, 50)) if lat.size else float("nan"),
        latency_p99=float(np.percentile(lat, 99)) if lat.size else float("nan"),
        network_latency_avg=float(nlat.mean()) if nlat.size else float("nan"),
        hops_avg=float(hp.mean()) if hp.size else 0.0, packets=int(lat.size),
        stable=status == 0 and dropped == 0, cycles=int(cycles), link_utilisation=util,
        latency_std=float(lat.std(ddof=1)) if lat.size > 1 else float("nan"),
        latency_min=float(lat.min()) if lat.size else float("nan"),
        latency_max=float(lat.max()) if lat.size else float("nan"),
        latency_se=latency_standard_error(lat),
        verdict="" if status == 0 and dropped == 0 else ("packet slots ran out" if dropped else "measured packets not drained"),
    )


def _run_booksim(run: _TrafficRun) -> RunStats:
    """BookSim2's run methodology (its TrafficManager, ``sim_type = latency``): sample periods
    of ``sample_period_cycles``; ``warmup_periods`` of warm-up (0: until the latency and
    throughput changes fall below ``warmup_thres`` / ``acc_warmup_thres``), statistics
    cleared at its end; then periods until three in a row change latency and throughput by
    at most ``stopping_thres`` / ``acc_stopping_thres`` (cumulative averages), or
    ``max_samples`` periods in all; then the measured packets drain while unmeasured ones
    keep coming. At the end of every period (and every 1000 drain cycles) the average
    latency of the packets delivered since the last clear and of every flit still queued or
    in flight (its age) above ``latency_thres_cycles`` makes the run unstable. The figures
    are BookSim's final ones: latency over the measured packets (those created after the
    warm-up), rates over the cycles from the warm-up's end to the drain's start."""
    traffic = run.traffic
    e = run.topology.num_endpoints
    period = traffic.sample_period_cycles
    st, acc, advance = run.st, run.acc, run.advance

    def too_slow(now) -> bool:
        age, n = _in_flight_age(st, now)
        n_all = acc[A_LAT_N] + n
        return n_all > 0 and (acc[A_LAT_SUM] + age) / n_all > traffic.latency_thres_cycles

    def clear(now):
        acc[A_LAT_SUM] = 0
        acc[A_LAT_N] = 0
        return now, int(st.counters[C_EJECTED_FLITS]), int(st.counters[C_INJECTED_FLITS]), st.link_flits.copy()

    now = 0
    running, clear_next, converged, phases = False, False, 0, 0
    prev_lat, prev_acc = 0.0, 0.0
    reset = clear(now)
    verdict = ""
    while phases < traffic.max_samples and (not running or converged < 3):
        if clear_next or (not running and phases % 2 == 0):
            reset = clear(now)
            clear_next = False
        now = advance(now, period, True, running, not running)
        lat = acc[A_LAT_SUM] / acc[A_LAT_N] if acc[A_LAT_N] else 0.0
        accepted = (int(st.counters[C_EJECTED_FLITS]) - reset[1]) / (now - reset[0]) / e
        lat_change = abs(lat - prev_lat) / lat if lat else 1.0
        acc_change = abs(accepted - prev_acc) / accepted if accepted else 1.0
        prev_lat, prev_acc = lat, accepted
        if too_slow(now):
            verdict = f"average latency exceeded latency_thres_cycles = {traffic.latency_thres_cycles:g}"
            break
        if not running:
            if (phases + 1 >= traffic.warmup_periods if traffic.warmup_periods > 0
                    else lat_change <= traffic.warmup_thres and acc_change <= traffic.acc_warmup_thres):
                running, clear_next = True, True
        elif lat_change <= traffic.stopping_thres and acc_change <= traffic.acc_stopping_thres:
            converged += 1
        else:
            converged = 0
        phases += 1
    if not verdict and not running:
        verdict = "too many sample periods needed to converge (still warming up)"
    drain_start = now
    ej_end, inj_end = int(st.counters[C_EJECTED_FLITS]), int(st.counters[C_INJECTED_FLITS])
    link_window = st.link_flits - reset[3]
    while not verdict and acc[A_OUTSTANDING] > 0:
        if now - drain_start >= traffic.drain_limit_cycles:
            verdict = f"measured packets not drained within drain_limit_cycles = {traffic.drain_limit_cycles}"
            break
        now = advance(now, 1000, True, False, False)
        if acc[A_OUTSTANDING] > 0 and too_slow(now):
            verdict = f"average latency exceeded latency_thres_cycles = {traffic.latency_thres_cycles:g} while draining"
    run.check()
    lat, nlat, hops = run.measured()
    window = max(drain_start - reset[0], 1)
    nan = float("nan")
    stable = not verdict and acc[A_DROPPED] == 0
    return RunStats(
        offered_flits=traffic.rate_packets * traffic.mean_packet_flits,
        accepted_flits=(ej_end - reset[1]) / window / e if stable else nan,
        injected_flits=(inj_end - reset[2]) / window / e if stable else nan,
        latency_avg=float(lat.mean()) if stable and lat.size else nan,
        latency_p50=float(np.percentile(lat, 50)) if stable and lat.size else nan,
        latency_p99=float(np.percentile(lat, 99)) if stable and lat.size else nan,
        network_latency_avg=float(nlat.mean()) if stable and nlat.size else nan,
        hops_avg=float(hops.mean()) if lat.size else 0.0, packets=int(lat.size),
        stable=stable, cycles=int(now), link_utilisation=link_window / max(drain_start - reset[0], 1),
        latency_std=float(lat.std(ddof=1)) if stable and lat.size > 1 else nan,
        latency_min=float(lat.min()) if stable and lat.size else nan,
        latency_max=float(lat.max()) if stable and lat.size else nan,
        latency_se=latency_standard_error(lat) if stable else nan,
        verdict=verdict or ("packet slots ran out" if acc[A_DROPPED] else ""),
    )


@njit(cache=True)
def _seed_numba(seed):
    np.random.seed(seed)
