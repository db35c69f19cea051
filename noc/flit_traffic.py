"""Synthetic traffic over the flit-level network, with the standard methodology.

Bernoulli injection: every NI, every cycle, creates a packet with probability
``rate_packets / 1`` (packets per NI per cycle; ``rate_flits`` = rate_packets × mean
packet size); packet sizes are fixed or drawn from a discrete distribution. Destinations
follow a pattern over NI indices (bit patterns need a power-of-two NI count):

uniform, transpose, bitcomp (bit complement), bitrev (bit reverse), shuffle (rotate left),
tornado (half-way around each dimension of a grid), neighbor (+1 in dimension 0),
hotspot (a fraction of packets to NI 0, the rest uniform).

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
from typing import Literal

import numpy as np
from numba import njit
from pydantic import Field, ValidationInfo, field_validator

from noc.config import StrictModel
from noc.errors import ConfigError, DeadlockError
from noc.flit import (
    C_EJECTED_FLITS, C_ERR, C_IN_FLIGHT, FlitNetworkConfig, build_network, describe_stuck, enqueue_packet, new_state, pop_ejected,
    seed_arbiters, step, stuck,
)
from noc.topology import Topology

PATTERNS = ("uniform", "transpose", "bitcomp", "bitrev", "shuffle", "tornado", "neighbor", "hotspot")


class TrafficConfig(StrictModel):
    """Synthetic traffic and the run methodology."""

    pattern: Literal["uniform", "transpose", "bitcomp", "bitrev", "shuffle", "tornado", "neighbor", "hotspot"] = "uniform"
    rate_packets: float = Field(0.1, gt=0, le=1, description="Packets created per NI per cycle (Bernoulli).")
    packet_flits: list[int] = Field(default_factory=lambda: [1], min_length=1, description="Packet sizes in flits.")
    packet_weights: list[float] | None = Field(None, description="Probabilities of packet_flits (default: equal).")
    hotspot_fraction: float = Field(0.2, ge=0, le=1, description="hotspot: share of packets sent to NI 0.")
    warmup_cycles: int = Field(1000, ge=0, description="Cycles before measuring.")
    measure_cycles: int = Field(5000, ge=1, description="Cycles whose packets are measured.")
    drain_limit_cycles: int = Field(20000, ge=1, description="Cycles allowed to deliver the measured packets; more means unstable.")
    seed: int = Field(1, ge=0)

    @field_validator("packet_flits")
    @classmethod
    def _sizes(cls, v: list[int]) -> list[int]:
        if min(v) < 1:
            raise ValueError("packet sizes must be >= 1 flit")
        return v

    @field_validator("packet_weights")
    @classmethod
    def _weights(cls, v: list[float] | None, info: ValidationInfo) -> list[float] | None:
        if v is None:
            return v
        sizes = info.data.get("packet_flits")  # absent when packet_flits itself is invalid
        if sizes is not None and len(v) != len(sizes):
            raise ValueError(f"needs one weight per packet_flits entry ({len(sizes)}), got {len(v)}")
        if min(v, default=0.0) < 0 or sum(v) <= 0:
            raise ValueError("weights must be non-negative and not all zero")
        return v

    def size_table(self) -> tuple[np.ndarray, np.ndarray]:
        sizes = np.asarray(self.packet_flits, dtype=np.int64)
        w = np.ones(len(sizes)) if self.packet_weights is None else np.asarray(self.packet_weights, dtype=np.float64)
        return sizes, np.cumsum(w / w.sum())

    @property
    def mean_packet_flits(self) -> float:
        sizes, cdf = self.size_table()
        p = np.diff(np.r_[0.0, cdf])
        return float((sizes * p).sum())


def destinations(pattern: str, topology: Topology) -> np.ndarray:
    """int64[E]: the fixed destination of each NI (-1: random per packet; uniform/hotspot)."""
    e = topology.num_endpoints
    src = np.arange(e)
    if pattern in ("uniform", "hotspot"):
        return np.full(e, -1, dtype=np.int64)
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
    else:  # neighbor
        new = coords.copy()
        new[:, 0] = (new[:, 0] + 1) % dims[0]
    c = topology.concentration
    return ((new * strides).sum(axis=1) * c + src % c).astype(np.int64)


@njit(cache=True)
def _run(net, st, rate, fixed_dst, hotspot, sizes, cdf, warmup, measure, drain_limit, seed, hops, link_is_router):
    np.random.seed(seed)
    e = fixed_dst.shape[0]
    cap = st.p_src.shape[0]
    # per measured packet: created, injected, ejected
    m_created = np.full(cap, -1, np.int64)
    m_inj = np.full(cap, -1, np.int64)
    m_ej = np.full(cap, -1, np.int64)
    m_hops = np.zeros(cap, np.int64)
    m_flits = np.zeros(cap, np.int64)
    n_meas = 0
    outstanding = 0
    end_measure = warmup + measure
    now = 0
    unstable = 0
    dropped = 0
    link_window = np.zeros(st.link_flits.shape[0], np.int64)  # flits each link carried in the window
    ej_window = np.zeros(2, np.int64)  # flits ejected at the start and the end of the window
    while True:
        if now == warmup:
            link_window[:] = -st.link_flits
            ej_window[0] = st.counters[C_EJECTED_FLITS]
        creating = now < end_measure
        if creating:
            for s in range(e):
                if np.random.random() < rate:
                    u = np.random.random()
                    k = 0
                    while k < sizes.shape[0] - 1 and u > cdf[k]:
                        k += 1
                    nf = sizes[k]
                    d = fixed_dst[s]
                    if d < 0:
                        if hotspot > 0 and np.random.random() < hotspot:
                            d = 0
                        else:
                            d = np.random.randint(0, e - 1)
                            if d >= s:
                                d += 1
                    if d == s:
                        continue
                    tag = -1
                    if now >= warmup and n_meas < cap:
                        tag = n_meas
                        m_created[tag] = now
                        m_hops[tag] = hops[s, d]
                        m_flits[tag] = nf
                        n_meas += 1
                        outstanding += 1
                    if not enqueue_packet(net, st, s, d, nf, 0, tag, now):
                        dropped += 1
                        if tag >= 0:
                            outstanding -= 1
                            m_created[tag] = -1
        step(net, st, now)
        while True:
            tag, cyc = pop_ejected(st)
            if tag == -1 and cyc == -1:
                break
            if tag >= 0:
                m_ej[tag] = cyc
                m_inj[tag] = st.ej_inj[(st.ej_r[0] - 1) % st.ej_inj.shape[0]]
                outstanding -= 1
        if now == end_measure - 1:
            # the window's last cycle has been simulated: record its end here, not at the top of
            # the next iteration, which never runs when nothing measured is outstanding now
            ej_window[1] = st.counters[C_EJECTED_FLITS]
            link_window += st.link_flits
        if stuck(net, st):
            return m_created[:n_meas], m_inj[:n_meas], m_ej[:n_meas], m_hops[:n_meas], m_flits[:n_meas], now, 2, dropped, link_window, ej_window
        now += 1
        if now >= end_measure and outstanding == 0:
            break
        if now >= end_measure + drain_limit:
            unstable = 1
            break
    return m_created[:n_meas], m_inj[:n_meas], m_ej[:n_meas], m_hops[:n_meas], m_flits[:n_meas], now, unstable, dropped, link_window, ej_window


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

    def row(self) -> dict:
        return {"offered_flits": round(self.offered_flits, 5), "accepted_flits": round(self.accepted_flits, 5),
                "latency_avg": round(self.latency_avg, 3), "latency_p50": self.latency_p50,
                "latency_p99": self.latency_p99, "network_latency_avg": round(self.network_latency_avg, 3),
                "hops_avg": round(self.hops_avg, 3), "packets": self.packets, "stable": self.stable,
                "cycles": self.cycles,
                "link_util_max": round(float(self.link_utilisation.max()) if self.link_utilisation.size else 0.0, 4)}


def run_traffic(topology: Topology, network: FlitNetworkConfig | None, traffic: TrafficConfig) -> RunStats:
    """One load point: warm-up, measurement, drain. Same seed, same result."""
    cfg = FlitNetworkConfig() if network is None else network
    net = build_network(topology, cfg)
    sizes, cdf = traffic.size_table()
    if cfg.flow_control == "vct" and sizes.max() > cfg.vc_depth_flits:
        raise ConfigError(f"virtual cut-through needs packets (max {int(sizes.max())} flits) to fit a VC "
                          f"(vc_depth_flits = {cfg.vc_depth_flits})")
    e = topology.num_endpoints
    expected = int(traffic.rate_packets * e * (traffic.warmup_cycles + traffic.measure_cycles) * 1.5) + 1024
    st = new_state(net, expected)
    seed_arbiters(net, st, cfg.arbiter_seed)
    hops = np.maximum(net.route_len - 2, 0)
    created, inj, ej, hp, fl, cycles, status, dropped, link_window, ej_window = _run(
        net, st, traffic.rate_packets, destinations(traffic.pattern, topology),
        traffic.hotspot_fraction if traffic.pattern == "hotspot" else 0.0, sizes, cdf, traffic.warmup_cycles,
        traffic.measure_cycles, traffic.drain_limit_cycles, traffic.seed, hops, topology.is_router_link)
    if status == 2:
        raise DeadlockError(f"deadlock: no flit moved for {cfg.watchdog_cycles} cycles at cycle {cycles} with "
                            f"{int(st.counters[C_IN_FLIGHT])} flits queued or in flight; stuck: {describe_stuck(net, st, topology)}")
    if st.counters[C_ERR]:
        raise AssertionError(f"flit-level invariant violated {int(st.counters[C_ERR])} times")
    ok = ej >= 0
    lat = (ej - created)[ok]
    nlat = (ej - inj)[ok]
    window = traffic.measure_cycles
    util = link_window / window  # over the measurement window, not the drain after it
    return RunStats(
        offered_flits=traffic.rate_packets * traffic.mean_packet_flits,
        accepted_flits=float(ej_window[1] - ej_window[0]) / (e * window) if status == 0 or cycles >= traffic.warmup_cycles + window
        else float("nan"),
        latency_avg=float(lat.mean()) if lat.size else float("nan"),
        latency_p50=float(np.percentile(lat, 50)) if lat.size else float("nan"),
        latency_p99=float(np.percentile(lat, 99)) if lat.size else float("nan"),
        network_latency_avg=float(nlat.mean()) if nlat.size else float("nan"),
        hops_avg=float(hp.mean()) if hp.size else 0.0, packets=int(ok.sum()),
        stable=status == 0 and dropped == 0, cycles=int(cycles), link_utilisation=util,
        latency_std=float(lat.std(ddof=1)) if lat.size > 1 else float("nan"),
    )
