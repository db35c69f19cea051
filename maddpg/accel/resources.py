"""On-chip buffers and the FPGA resources of a design; a design that does not fit is refused.

Per engine (one per agent):

* MAC arrays: one per layer of the actor and of the critic, ``pe x lanes`` MACs each; a MAC
  costs ``dsp_per_mac_fp32`` DSPs in float32 and ``ceil(bits / 27) x ceil(bits / 18)``
  (the DSP48E2's 27 x 18 multiplier) in fixed point, plus its LUTs and flip-flops;
* the elementwise unit: ``vector_lanes`` lanes;
* buffers, each with a capacity and the words per cycle its readers need: weights of the
  four networks (read ``lanes`` words per cycle: the PEs share them), Adam moments and
  gradients (the vector unit's ``vector_lanes``), activations for the backward passes
  (``pe`` words per cycle), the minibatch (whole, or two tiles streamed from card memory).
  A buffer takes ``max(capacity blocks, port blocks)`` of BRAM36 (4.5 KiB, one 72-bit read
  port) or, from ``uram_min_bytes`` on and when the part has it, URAM (36 KiB, 72-bit).

The interconnect's routers cost LUTs and flip-flops per port and byte of link width
(``lut_per_port_byte``, calibrated on a 5-port router; a router's crossbar grows with its
port count, so a router of ``p`` ports costs ``p x max(1, p / 5)`` ports' worth).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from maddpg.accel.config import AccelConfig, Workload
from maddpg.accel.parts import RESOURCES, Part
from noc.base.errors import HwModelsError

BRAM36_BYTES = 4608
URAM_BYTES = 36864
PORT_BITS = 72

NAMES = {"dsp": "DSP slices", "bram36": "BRAM (36 Kb blocks)", "uram": "URAM blocks", "lut": "LUTs", "ff": "flip-flops"}


class DesignDoesNotFit(HwModelsError):
    """A design needs more of a resource than the part offers."""

    def __init__(self, message: str, resource: str) -> None:
        super().__init__(message)
        self.resource = resource


@dataclass(frozen=True)
class Buffer:
    name: str
    words: int
    words_per_cycle: int


@dataclass(frozen=True)
class Resources:
    dsp: int
    bram36: int
    uram: int
    lut: int
    ff: int
    buffers: tuple[Buffer, ...] = field(default=(), compare=False)
    minibatch_buffer: str = "whole"

    def amount(self, r: str) -> int:
        return int(getattr(self, r))


def dsp_per_mac(cfg: AccelConfig) -> int:
    if not cfg.fixed:
        return cfg.dsp_per_mac_fp32
    b = cfg.fixed_point_bits
    return -(-b // 27) * -(-b // 18)


def params(sizes: list[int]) -> int:
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def engine_buffers(cfg: AccelConfig, w: Workload, i: int, minibatch: str) -> list[Buffer]:
    """Agent ``i``'s engine buffers (``minibatch``: "whole" or "tiles")."""
    B, n = w.batch, w.n_agents
    pa = cfg.array("actor")[0]
    pc = cfg.array("critic")[0]
    bufs = []
    for net, sizes, pe in (("actor", w.actor_sizes(i), pa), ("critic", w.critic_sizes(), pc)):
        lanes = cfg.layer_lanes(net, sizes)
        for layer, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            words = a * b + b
            bufs.append(Buffer(f"{net} layer {layer} weights", words, lanes[layer]))
            bufs.append(Buffer(f"target {net} layer {layer} weights", words, lanes[layer]))
            bufs.append(Buffer(f"{net} layer {layer} gradient", words, cfg.vector_lanes))
            bufs.append(Buffer(f"{net} layer {layer} Adam moments", 2 * words, cfg.vector_lanes))
        widths = sum(sizes[1:])
        bufs.append(Buffer(f"{net} activations", B * widths, pe))
        bufs.append(Buffer(f"{net} gradient tiles", 2 * cfg.tile_b * max(sizes[1:]), pe))
    rows = B if minibatch == "whole" else 2 * min(cfg.tile_b, B)
    host_cols = 2 * w.obs_dims[i] + w.act_dims[i]  # this agent's columns of every agent's minibatch
    bufs.append(Buffer("minibatch critic inputs [x, a] and [x', a']", 2 * rows * w.critic_in, pc))
    bufs.append(Buffer("minibatch rewards and done flags", 2 * rows, 1))
    own = n * rows if minibatch == "whole" else rows  # streamed: two tiles of one minibatch at a time
    bufs.append(Buffer("own columns of every agent's minibatch", own * host_cols, pa))
    return bufs


def _blocks(buf: Buffer, cfg: AccelConfig, part: Part) -> tuple[int, int]:
    """(BRAM36, URAM) blocks of one buffer."""
    nbytes = buf.words * cfg.word_bytes
    port = -(-buf.words_per_cycle * cfg.word_bits // PORT_BITS)
    if part.uram > 0 and nbytes >= cfg.uram_min_bytes:
        return 0, max(-(-nbytes // URAM_BYTES), port)
    return max(-(-nbytes // BRAM36_BYTES), port), 0


def router_ports(topology) -> list[int]:
    """Ports (links in) of each router of a ``noc`` topology, injection links included."""
    import numpy as np

    e = topology.num_endpoints
    into = topology.link_dst[topology.link_dst >= e] - e
    return np.bincount(into, minlength=topology.num_routers).tolist()


def estimate(cfg: AccelConfig, w: Workload, part: Part, topology=None, minibatch: str | None = None) -> Resources:
    """Resources of the whole design: ``n`` engines and the interconnect ``topology``."""
    mb = minibatch or ("whole" if cfg.minibatch_buffer in ("auto", "whole") else "tiles")
    from maddpg.accel.engine import engine_macs

    per_mac_lut = cfg.lut_per_mac_fixed if cfg.fixed else cfg.lut_per_mac_fp32
    per_mac_ff = cfg.ff_per_mac_fixed if cfg.fixed else cfg.ff_per_mac_fp32
    dsp = lut = ff = bram = uram = 0
    all_bufs: list[Buffer] = []
    for i in range(w.n_agents):
        macs = engine_macs(cfg, w, i)
        dsp += macs * dsp_per_mac(cfg) + cfg.vector_lanes * cfg.dsp_per_vector_lane
        lut += macs * per_mac_lut + cfg.vector_lanes * cfg.lut_per_vector_lane + cfg.lut_per_engine
        ff += macs * per_mac_ff + cfg.vector_lanes * cfg.ff_per_vector_lane + cfg.ff_per_engine
        for buf in engine_buffers(cfg, w, i, mb):
            b, u = _blocks(buf, cfg, part)
            bram += b
            uram += u
            if i == 0:
                all_bufs.append(buf)
    if topology is not None:
        width = cfg.link_bytes_per_cycle
        for p in router_ports(topology):
            eff = p * max(1.0, p / 5.0)
            lut += int(round(eff * width * cfg.lut_per_port_byte))
            ff += int(round(eff * width * cfg.ff_per_port_byte))
    res = Resources(int(dsp), int(bram), int(uram), int(lut), int(ff), tuple(all_bufs), mb)
    if minibatch is None and cfg.minibatch_buffer == "auto" and mb == "whole" and overfull(res, part, cfg):
        tiles = estimate(cfg, w, part, topology, "tiles")
        if not overfull(tiles, part, cfg) or overfull(res, part, cfg)[0][0] in ("bram36", "uram"):
            return tiles
    return res


def limits(part: Part, cfg: AccelConfig) -> dict[str, int]:
    return {r: int(part.amount(r) * cfg.usable_fraction) for r in RESOURCES}


def overfull(res: Resources, part: Part, cfg: AccelConfig) -> list[tuple[str, float]]:
    """Resources over the limit, most over-subscribed first: (resource, used / allowed)."""
    lim = limits(part, cfg)
    over = []
    for r in RESOURCES:
        if res.amount(r) > lim[r]:
            over.append((r, res.amount(r) / max(lim[r], 1e-9)))
    return sorted(over, key=lambda t: -t[1])


def check_fits(res: Resources, part: Part, cfg: AccelConfig, what: str = "the design") -> None:
    """Raise :class:`DesignDoesNotFit` naming the most over-subscribed resource."""
    over = overfull(res, part, cfg)
    if not over:
        return
    r, _ = over[0]
    lim = limits(part, cfg)[r]
    others = ", ".join(f"{NAMES[o]} {res.amount(o):,} > {limits(part, cfg)[o]:,}" for o, _ in over[1:])
    raise DesignDoesNotFit(
        f"{what} does not fit on {part.name}: it needs {res.amount(r):,} {NAMES[r]}, the part allows {lim:,} "
        f"({part.amount(r):,} x usable_fraction {cfg.usable_fraction:g})" + (f"; also over: {others}" if others else ""),
        r)
