"""The agent interconnect: the per-update exchange between engines over a ``noc`` topology.

Engine ``j`` receives from the host its own agent's columns (observations, actions, next
observations) of every agent's sampled minibatch and computes its target actor's actions on
each of them. Agent ``i``'s centralised critic needs every agent's columns of minibatch
``i``, so each engine sends every other engine

* its observations, actions and next observations of their minibatch (``B x (2 obs_j + act_j)``
  words), as soon as they have arrived, and
* its target actions on their minibatch (``B x act_j`` words), once computed;

an all-to-all personalised exchange (for equal agents, an all-gather of ``N`` pieces).

Timing, at two levels of the ``noc`` fidelity ladder:

* **message** (default): every message is a flow along its route (``noc.routing``) holding
  all of its links at once; links are shared max-min fairly (``noc.message.max_min_rates``),
  rates recomputed whenever a flow ends; a message ends ``path_latency_cycles`` after its
  last byte left;
* **flit**: the messages cut into packets of ``packet_bytes`` run through ``noc.flit``'s
  virtual-channel routers (sources interleave their destinations packet by packet).

Neither can beat the bound: every engine must receive what the others send it through its
one ejection link, ``max_i (bytes into i) / bandwidth`` — for ``N`` equal pieces of an
all-gather of ``bytes`` in all, ``(N - 1) / N x bytes / bandwidth``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from maddpg.accel.config import INTERCONNECTS, AccelConfig, Workload
from noc.base.errors import ConfigError, HwModelsError
from noc.message import max_min_rates, path_latency_cycles
from noc.routing import route_pairs
from noc.topology import Topology, mesh, parse_spec, ring, switch


def mesh_dims(n: int) -> tuple[int, ...]:
    """The most square 2-D grid with at least ``n`` routers (``n = 2``: a 1-D mesh of 2)."""
    r = math.isqrt(n - 1) + 1 if n > 1 else 1
    c = -(-n // r)
    return (r,) if c == 1 else (r, c)


def build_topology(kind: str, n: int, cfg: AccelConfig) -> Topology:
    """The interconnect of ``n`` engines: ``ring``, ``mesh``, ``crossbar`` or a noc spec
    with at least ``n`` endpoints (engine ``i`` on endpoint ``i``)."""
    kw = dict(link_bytes_per_cycle=cfg.link_bytes_per_cycle, link_latency_cycles=cfg.link_latency_cycles)
    k = str(kind).strip().lower()
    if n < 2:
        raise ConfigError(f"interconnect {kind!r}: {n} agent(s) exchange nothing; allowed: 2 or more agents")
    if k == "ring":
        return ring(n, **kw)
    if k == "mesh":
        return mesh(mesh_dims(n), **kw)
    if k in ("crossbar", "xbar"):
        return switch(n, **kw)
    try:
        t = parse_spec(k, **kw)
    except HwModelsError as exc:
        raise ConfigError(f"interconnect {kind!r}: not one of {', '.join(INTERCONNECTS)} and not a noc topology "
                          f"spec ({exc})") from None
    if t.num_endpoints < n:
        raise ConfigError(f"interconnect {kind!r}: {t.num_endpoints} endpoints for {n} engines; allowed: a topology "
                          f"with at least {n} endpoints")
    return t


@dataclass(frozen=True)
class Messages:
    """One exchange: message ``k`` goes from engine ``src[k]`` to ``dst[k]`` with ``nbytes[k]``."""

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray

    @property
    def total_bytes(self) -> int:
        return int(self.nbytes.sum())


def exchange_messages(w: Workload, word_bytes: int, part: str) -> Messages:
    """``part`` "inputs": observations, actions and next observations; "targets": target actions."""
    n, B = w.n_agents, w.batch
    src, dst, nb = [], [], []
    for j in range(n):
        words = (2 * w.obs_dims[j] + w.act_dims[j]) if part == "inputs" else w.act_dims[j]
        for i in range(n):
            if i != j:
                src.append(j)
                dst.append(i)
                nb.append(B * words * word_bytes)
    return Messages(np.array(src, np.int64), np.array(dst, np.int64), np.array(nb, np.int64))


def bound_cycles(msgs: Messages, topology: Topology) -> float:
    """No exchange ends sooner: each engine's received bytes through its ejection link and
    its sent bytes through its injection link."""
    bw_in = topology.link_bytes_per_cycle[topology.eject_link]
    bw_out = topology.link_bytes_per_cycle[topology.inject_link]
    into = np.bincount(msgs.dst, weights=msgs.nbytes, minlength=topology.num_endpoints)
    out = np.bincount(msgs.src, weights=msgs.nbytes, minlength=topology.num_endpoints)
    return float(max((into / bw_in).max(), (out / bw_out).max()))


def message_level_cycles(msgs: Messages, topology: Topology, router_delay_cycles: int) -> float:
    """Fluid max-min fair simulation of the messages, all ready at cycle 0; the cycle the
    last one arrives."""
    if msgs.src.size == 0:
        return 0.0
    routes = route_pairs(topology, msgs.src, msgs.dst)
    lat = path_latency_cycles(topology, routes, router_delay_cycles)
    links = routes.links.astype(np.int64)
    plen = routes.length.astype(np.int64)
    cap = topology.link_bytes_per_cycle.astype(np.float64)
    left = msgs.nbytes.astype(np.float64).copy()
    nf = left.size
    rates = np.zeros(nf)
    prio = np.zeros(nf, np.int64)
    cap_left = np.zeros(topology.num_links)
    users = np.zeros(topology.num_links, np.int64)
    now = 0.0
    done_at = np.zeros(nf)
    active = np.flatnonzero(left > 0)
    while active.size:
        max_min_rates(active, prio, links, plen, cap, rates, cap_left, users)
        r = rates[active]
        if not np.all(r > 0):
            raise AssertionError("a flow got no bandwidth")
        dt = float(np.min(left[active] / r))
        left[active] -= r * dt
        now += dt
        fin = active[left[active] <= 1e-9 * msgs.nbytes[active]]
        if fin.size == 0:  # rounding: finish the closest one
            fin = active[[int(np.argmin(left[active] / r))]]
        left[fin] = 0.0
        done_at[fin] = now
        active = np.flatnonzero(left > 0)
    return float(np.max(done_at + lat))


def flit_level_cycles(msgs: Messages, topology: Topology, cfg: AccelConfig) -> float:
    """The messages as packets through ``noc.flit`` (flits of one link width); the cycle
    after the last tail flit is ejected."""
    from noc.flit import FlitNetworkConfig, run_packets

    flit = int(cfg.link_bytes_per_cycle) if float(cfg.link_bytes_per_cycle).is_integer() else None
    if flit is None or flit < 1:
        raise ConfigError(f"level 'flit' needs an integer link_bytes_per_cycle (one flit per cycle), got "
                          f"{cfg.link_bytes_per_cycle!r}; allowed: 1, 2, ... or level 'message'")
    pkt_flits = max(1, -(-cfg.packet_bytes // flit))
    # per source, its messages' packets interleaved round-robin over its destinations
    rows = []
    for s in np.unique(msgs.src).tolist():
        mine = np.flatnonzero(msgs.src == s)
        counts = [-(-int(msgs.nbytes[k]) // (pkt_flits * flit)) for k in mine]
        last = [int(msgs.nbytes[k]) - (c - 1) * pkt_flits * flit for k, c in zip(mine, counts)]
        for p in range(max(counts)):
            for m, k in enumerate(mine):
                if p < counts[m]:
                    size = pkt_flits if p < counts[m] - 1 else -(-last[m] // flit)
                    rows.append((0, s, int(msgs.dst[k]), size))
    pk = np.array(rows, np.int64)
    fcfg = FlitNetworkConfig(flit_bytes=flit, watchdog_cycles=100_000)
    _, ej, _ = run_packets(topology, fcfg, pk, max_cycles=1 << 40)
    return float(ej.max() + 1)


def exchange_cycles(msgs: Messages, topology: Topology, cfg: AccelConfig) -> float:
    if cfg.level == "flit":
        return flit_level_cycles(msgs, topology, cfg)
    return message_level_cycles(msgs, topology, cfg.router_delay_cycles)


@lru_cache(maxsize=256)
def _cached(w: Workload, kind: str, cfg: AccelConfig) -> tuple[float, float, float, float]:
    t = build_topology(kind, w.n_agents, cfg)
    out = []
    for part in ("inputs", "targets"):
        m = exchange_messages(w, cfg.word_bytes, part)
        out += [exchange_cycles(m, t, cfg), bound_cycles(m, t)]
    return tuple(out)


def exchange_times(w: Workload, cfg: AccelConfig) -> dict[str, float]:
    """Cycles of the two exchanges of one update on ``cfg.interconnect`` and their bounds."""
    if w.n_agents < 2:
        return {"inputs": 0.0, "inputs_bound": 0.0, "targets": 0.0, "targets_bound": 0.0}
    key = cfg.model_copy(update={k: getattr(AccelConfig(), k) for k in _ENGINE_ONLY})
    a, ab, b, bb = _cached(w, cfg.interconnect, key)
    return {"inputs": a, "inputs_bound": ab, "targets": b, "targets_bound": bb}


# keys that do not change the exchange (so the cache is shared by every engine size)
_ENGINE_ONLY = ("pe", "lanes", "actor_pe", "actor_lanes", "layer_balance", "vector_lanes", "layer_pipelining", "ii_cycles",
                "mul_latency_cycles", "add_latency_cycles", "special_fn_cycles", "dsp_per_mac_fp32", "lut_per_mac_fp32",
                "ff_per_mac_fp32", "lut_per_mac_fixed", "ff_per_mac_fixed", "dsp_per_vector_lane", "lut_per_vector_lane",
                "ff_per_vector_lane", "lut_per_engine", "ff_per_engine", "uram_min_bytes", "usable_fraction",
                "pcie_gen", "pcie_lanes", "pcie_efficiency", "pcie_latency_us", "overlap_host", "semantics",
                "minibatch_buffer", "tile_b", "stream_exchange")
