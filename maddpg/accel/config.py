"""The accelerator design and every modelling assumption, as named config keys.

The paper's internal parameters are not public: each number here is ours, with its unit in
its name and its reason in its description (docs/maddpg_accel.md lists them as a table).
:class:`Workload` is what is trained (network shapes, minibatch), :class:`AccelConfig` the
hardware that trains it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from maddpg.accel import INTERCONNECTS  # noqa: F401 (the interconnects' names, read here by build_topology)
from noc.base.config import StrictModel, finite


class AccelConfig(StrictModel):
    """A CPU-FPGA MADDPG design: engines, datapath, interconnect, host link, and the cost assumptions."""

    # ---- engines ------------------------------------------------------------------------
    clock_mhz: Annotated[float, finite(1.0, 2000.0)] = Field(
        250.0, description="engine and interconnect clock (Alveo kernels typically close timing at 250-300 MHz)")
    pe: int = Field(4, ge=1, le=4096, description="processing elements per layer array: they split the loop a "
                    "kernel's LoopNest marks parallel (batch tiles; weight rows in the weight gradient)")
    lanes: int = Field(8, ge=1, le=4096, description="MAC lanes per PE: they run the loop the LoopNest unrolls "
                       "(default: the trainer's unroll factor, 8)")
    actor_pe: int | None = Field(None, ge=1, le=4096, description="PEs of the actor's layer arrays (None: pe)")
    actor_lanes: int | None = Field(None, ge=1, le=4096, description="lanes of the actor's layer arrays (None: lanes)")
    layer_balance: Literal["uniform", "work"] = Field(
        "uniform", description="uniform: every layer array of a network has pe x lanes MACs; work: lanes scaled "
        "down by each layer's MACs per row against the network's largest layer (ceil), so narrow layers (a 64 -> 1 "
        "critic head) do not hold idle lanes")
    vector_lanes: int = Field(16, ge=1, le=4096, description="elementwise unit per engine (Adam, soft update, "
                              "Gumbel-softmax, random numbers): elements per cycle")
    tile_b: int = Field(64, ge=1, le=1 << 20, description="minibatch rows per tile: the unit of layer pipelining "
                        "(the kernels' batch tile)")
    layer_pipelining: bool = Field(True, description="each layer has its own array and the tiles of a minibatch "
                                   "stream through the layers (fill + (tiles - 1) x slowest layer); false: layer "
                                   "after layer over the whole minibatch")
    ii_cycles: int = Field(1, ge=1, le=64, description="initiation interval of a pipelined loop without a "
                           "loop-carried dependency")
    mul_latency_cycles: int = Field(4, ge=1, le=64, description="fp32 multiplier pipeline depth (fixed point: 3, "
                                    "the DSP48's registers)")
    add_latency_cycles: int = Field(5, ge=1, le=64, description="fp32 adder latency: a reduction carried in the "
                                    "pipelined loop needs this many independent accumulators to reach II 1; an "
                                    "adder tree over unrolled lanes adds it per level (fixed point: 1)")
    special_fn_cycles: int = Field(2, ge=0, le=64, description="extra cycles per element per lane for exp/log "
                                   "(Gumbel-softmax) on the vector unit, beyond one operation per element")
    fixed_point_bits: int = Field(0, ge=0, le=32, description="Q-format word of the datapath; 0: float32 "
                                  "(the kernels' fixed-point mode rounds every output to it)")
    fixed_point_frac_bits: int = Field(0, ge=0, le=31)
    semantics: Literal["parallel", "sequential"] = Field(
        "parallel", description="parallel: every engine updates at once, every agent's target actions from the "
        "target actors as they were before the update (the paper's design); sequential: the trainer's order, "
        "agent i's targets after agents 0..i-1 updated (the engines then work one after another)")
    minibatch_buffer: Literal["auto", "whole", "tiles"] = Field(
        "auto", description="whole: each engine holds its whole minibatch on chip; tiles: two tiles on chip, the "
        "minibatch in card memory (DDR/HBM) streamed at its bandwidth; auto: whole if it fits, else tiles")
    # ---- resource costs ------------------------------------------------------------------
    dsp_per_mac_fp32: int = Field(5, ge=0, le=64, description="DSP48E2 per fp32 multiply-add (full-DSP multiplier "
                                  "3 + adder 2, Xilinx floating-point operator)")
    lut_per_mac_fp32: int = Field(400, ge=0, le=100_000, description="LUTs per fp32 MAC (operator logic, alignment, "
                                  "operand muxing)")
    ff_per_mac_fp32: int = Field(700, ge=0, le=100_000, description="flip-flops per fp32 MAC (pipeline registers)")
    lut_per_mac_fixed: int = Field(40, ge=0, le=100_000, description="LUTs per fixed-point MAC (rounding, saturation)")
    ff_per_mac_fixed: int = Field(80, ge=0, le=100_000, description="flip-flops per fixed-point MAC")
    dsp_per_vector_lane: int = Field(8, ge=0, le=256, description="DSPs per elementwise lane (Adam: multiplies, "
                                     "square root, divide; exp/log polynomials)")
    lut_per_vector_lane: int = Field(3000, ge=0, le=1_000_000, description="LUTs per elementwise lane")
    ff_per_vector_lane: int = Field(4000, ge=0, le=1_000_000, description="flip-flops per elementwise lane")
    lut_per_engine: int = Field(20_000, ge=0, le=10_000_000, description="control, address generation and DMA "
                                "logic of an engine")
    ff_per_engine: int = Field(30_000, ge=0, le=10_000_000, description="flip-flops of an engine's control")
    uram_min_bytes: int = Field(65_536, ge=0, le=1 << 30, description="buffers of at least this size go to URAM "
                                "when the part has it; smaller ones (and all on parts without URAM) to BRAM")
    usable_fraction: Annotated[float, finite(0.01, 1.0)] = Field(
        0.8, description="share of each resource a design may use (the rest: platform shell, PCIe DMA, routing)")
    # ---- interconnect ---------------------------------------------------------------------
    interconnect: str = Field("ring", description="ring, mesh (2-D, the most square grid with a router per engine, "
                              "spare routers idle), crossbar (one switch), or a noc topology spec (torus:2x2, ...)")
    level: Literal["message", "flit"] = Field("message", description="message: max-min fair flows over the routes "
                                              "(noc.message); flit: noc.flit's virtual-channel routers")
    link_bytes_per_cycle: Annotated[float, finite(0.5, 1024.0)] = Field(16.0, description="interconnect link width "
                                                                        "(bytes per engine-clock cycle)")
    link_latency_cycles: int = Field(1, ge=1, le=1000)
    router_delay_cycles: int = Field(2, ge=0, le=100, description="per router crossed (message level)")
    packet_bytes: int = Field(256, ge=1, le=1 << 20, description="flit level: messages cut into packets of this size")
    lut_per_port_byte: int = Field(64, ge=0, le=100_000, description="router LUTs per port per byte of link width "
                                   "(input buffers in LUTRAM, allocators, crossbar slice)")
    ff_per_port_byte: int = Field(48, ge=0, le=100_000, description="router flip-flops per port per byte of width")
    stream_exchange: bool = Field(True, description="target actions leave an engine tile by tile as they are "
                                  "computed (overlapping the target-actor passes); false: after all of them")
    # ---- host ------------------------------------------------------------------------------
    pcie_gen: int = Field(3, ge=1, le=5, description="PCIe generation of the card's link")
    pcie_lanes: int = Field(16, ge=1, le=16, description="PCIe lanes (x1..x16)")
    pcie_efficiency: Annotated[float, finite(0.01, 1.0)] = Field(
        0.85, description="share of the raw rate left for DMA payload (TLP headers at 256-byte payloads, DLLPs)")
    pcie_latency_us: Annotated[float, finite(0.0, 1000.0)] = Field(1.0, description="per DMA transfer: descriptor, "
                                                                   "doorbell and completion round trip")
    overlap_host: bool = Field(True, description="the next update's minibatch DMA runs while this update computes "
                               "(double-buffered); false: the transfer precedes the update")

    @model_validator(mode="after")
    def _check(self) -> "AccelConfig":
        if self.fixed_point_bits and self.fixed_point_frac_bits >= self.fixed_point_bits:
            raise ValueError(f"fixed_point_frac_bits ({self.fixed_point_frac_bits}) must be < fixed_point_bits "
                             f"({self.fixed_point_bits})")
        if self.fixed_point_bits == 1:
            raise ValueError("fixed_point_bits 1 leaves no magnitude bit; allowed: 0 (float32) or 2..32")
        return self

    @property
    def fixed(self) -> bool:
        return self.fixed_point_bits > 0

    @property
    def word_bytes(self) -> int:
        """Bytes a word takes in buffers and on the wires (fixed point: whole bytes)."""
        return -(-self.fixed_point_bits // 8) if self.fixed else 4

    @property
    def word_bits(self) -> int:
        return self.fixed_point_bits if self.fixed else 32

    @property
    def mul_cycles(self) -> int:
        return 3 if self.fixed else self.mul_latency_cycles

    @property
    def add_cycles(self) -> int:
        return 1 if self.fixed else self.add_latency_cycles

    def array(self, net: str) -> tuple[int, int]:
        """(PEs, lanes) of a layer array of ``net`` ("actor" or "critic")."""
        if net == "actor":
            return (self.actor_pe or self.pe, self.actor_lanes or self.lanes)
        return self.pe, self.lanes

    def layer_lanes(self, net: str, sizes: list[int]) -> list[int]:
        """Lanes of each layer array of ``net`` with layer widths ``sizes``."""
        lanes = self.array(net)[1]
        work = [a * b for a, b in zip(sizes[:-1], sizes[1:])]
        if self.layer_balance == "uniform":
            return [lanes] * len(work)
        top = max(work)
        return [max(1, -(-lanes * wk // top)) for wk in work]

    @property
    def datapath(self) -> str:
        return f"Q{self.fixed_point_bits - self.fixed_point_frac_bits - 1}.{self.fixed_point_frac_bits}" if self.fixed \
            else "fp32"


@dataclass(frozen=True)
class Workload:
    """What one update trains: every agent's observation and action sizes, the hidden layers,
    the minibatch, and how often an update runs."""

    obs_dims: tuple[int, ...]
    act_dims: tuple[int, ...]
    hidden_units: int = 64
    hidden_layers: int = 2
    batch: int = 1024
    update_every_steps: int = 100
    env: str = "simple_spread"

    @property
    def n_agents(self) -> int:
        return len(self.obs_dims)

    def actor_sizes(self, i: int) -> list[int]:
        return [self.obs_dims[i], *[self.hidden_units] * self.hidden_layers, self.act_dims[i]]

    def critic_sizes(self) -> list[int]:
        return [sum(self.obs_dims) + sum(self.act_dims), *[self.hidden_units] * self.hidden_layers, 1]

    @property
    def critic_in(self) -> int:
        return sum(self.obs_dims) + sum(self.act_dims)


def workload_for(env: str, n_agents: int, batch: int = 1024, hidden_units: int = 64, hidden_layers: int = 2,
                 update_every_steps: int = 100) -> Workload:
    """The shapes of scenario ``env`` with ``n_agents`` agents (from its environment)."""
    from maddpg.vec_env import make_vec_env

    venv = make_vec_env(env, 1, n_agents, 0, 25, "auto", None)
    return Workload(tuple(int(d) for d in venv.obs_dims), tuple(int(d) for d in venv.act_dims), hidden_units,
                    hidden_layers, batch, update_every_steps, env)


def spread_workload(n_agents: int, batch: int = 1024) -> Workload:
    """simple_spread's shapes without building the environment: observation 4 + 2N + 4(N - 1)
    (own velocity and position, every landmark, the other agents' positions and comms), 5 actions."""
    d = 4 + 2 * n_agents + 4 * (n_agents - 1)
    return Workload((d,) * n_agents, (5,) * n_agents, batch=batch)
