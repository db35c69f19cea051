"""The NIC's configuration: :class:`NicConfig` (the designs of :mod:`nic.variants` and their
switches), and the checks that a router config fits a NIC (flit size,
what the message model can represent, virtual cut-through).

``nic.preparation`` lays a schedule out for a NIC, ``nic.flow_control`` derives what the
message model takes from the routers, ``nic.allreduce`` runs a model.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Optional

import numpy as np
from pydantic import Field, model_validator

from nic.message_sim import POLICY_BASELINE, POLICY_CODESIGNED
from nic.variants import DESIGNS
from noc.base.config import StrictModel, finite, finite_rule
from noc.base.errors import ConfigError
from noc.routing import PairRoutes, RouteTable, check_vc_classes
from noc.topology import Topology


class NicConfig(StrictModel):
    """The network interface: which design, how it packetises, the clock."""

    # added after results were first stored: left out of result keys at their defaults (key_fields)
    later_fields: ClassVar[frozenset[str]] = frozenset({
        "step_priority", "reduction", "reduce_elements_per_cycle", "reduce_granule_elements", "reduce_latency_cycles",
        "tx_buffer_flits"})

    design: Literal[tuple(DESIGNS)] = Field(
        "codesigned", description="; ".join(f"{name}: {what}" for name, what in DESIGNS.items()) + ".")
    flow_control: Literal["default", "bulk", "packet"] = Field(
        "default", description="bulk: one head flit per transfer; packet: one per packet_bytes. default: the design's own.")
    packet_bytes: int = Field(256, ge=16, le=1 << 20, description="Payload bytes per packet in per-packet mode (256 B = 16 flits of 16 B).")
    flit_bytes: int = Field(16, ge=1, le=1024, description="Bytes per flit (the head flit's size).")
    element_bytes: int = Field(4, ge=1, le=16, description="Bytes per vector element (fp32 = 4).")
    issue_delay_cycles: int = Field(1, ge=0, le=1000, description="Baseline NIC: cycles from a message's arrival to "
                                    "a send it unblocks (the co-designed NIC's delays are its scheduler's).")
    clock_ghz: Annotated[float, finite(1e-3, 100.0)] = Field(1.0, description="Cycles to seconds and GB/s.")
    step_priority: Optional[bool] = Field(
        None, description="Packets carry their schedule step as switch priority (earlier steps first). "
                          "Default: the design's (on for codesigned, off for baseline).")
    reduction: Literal["free", "chunk", "stream"] = Field(
        "free", description="How a received REDUCE is summed before it can be forwarded. free: no cost; chunk: the "
                            "node's reduction unit starts once the whole message is in; stream: it works on the data "
                            "as it arrives, so only the last packet's share is left after the tail.")
    reduce_elements_per_cycle: Annotated[float, finite(1e-6, 1 << 20)] = Field(
        32.0, description="Reduction unit throughput in elements (element_bytes each) per cycle: "
                          f"{finite_rule(1e-6, 1 << 20)}.")
    reduce_granule_elements: int = Field(
        1, ge=1, le=1 << 20, description="The unit works on whole granules of this many elements (a partial "
                                         "granule costs a whole one).")
    reduce_latency_cycles: int = Field(0, ge=0, le=100_000, description="Pipeline latency of the reduction unit.")
    tx_buffer_flits: int = Field(
        0, ge=0, le=1 << 24, description="The NI's transmit queue, in flits: the NI is free for its next transfer "
                                         "once the rest of its message fits in it (0: once the last flit has left).")

    @model_validator(mode="after")
    def _issue_delay_is_the_baselines(self) -> "NicConfig":
        if self.design == "codesigned" and self.issue_delay_cycles != 1:
            raise ValueError(f"issue_delay_cycles={self.issue_delay_cycles} is for the baseline NIC: the co-designed "
                             "NIC's scheduler offers a send 3 cycles after the arrival it waits for "
                             "(docs/nic_scheduler.md); leave it at 1 or use design='baseline'")
        return self

    @property
    def bulk(self) -> bool:
        if self.flow_control == "default":
            return self.design == "codesigned"
        return self.flow_control == "bulk"

    @property
    def prioritised(self) -> bool:
        """Whether packets carry their step as switch priority."""
        return self.design == "codesigned" if self.step_priority is None else bool(self.step_priority)

    def reduce_cycles(self, elements: int) -> int:
        """Cycles the reduction unit is busy summing ``elements`` elements (0 when free):
        whole granules at ``reduce_elements_per_cycle``, rounded up to whole cycles."""
        if self.reduction == "free" or elements <= 0:
            return 0
        g = self.reduce_granule_elements
        return int(np.ceil((-(-int(elements) // g) * g) / self.reduce_elements_per_cycle - 1e-9))

    @property
    def packet_flits(self) -> int:
        """Flits of a full packet in per-packet mode: a head flit plus ``packet_bytes`` of
        payload in whole flits."""
        return 1 + -(-self.packet_bytes // self.flit_bytes)

    @property
    def policy(self) -> int:
        return POLICY_CODESIGNED if self.design == "codesigned" else POLICY_BASELINE

    def wire_bytes(self, payload_bytes: np.ndarray) -> np.ndarray:
        """Bytes on the wire: whole flits, as the packetiser sends them. Each packet is a head
        flit plus its payload rounded up to whole flits; bulk: one packet per transfer,
        per-packet: ``packet_bytes`` each, the last one shorter (an empty transfer is a head)."""
        payload = np.asarray(payload_bytes, dtype=np.int64)
        f = self.flit_bytes
        if self.bulk:
            flits = 1 + -(-payload // f)
        else:
            full, rest = payload // self.packet_bytes, payload % self.packet_bytes
            flits = full * self.packet_flits + np.where(rest > 0, 1 + -(-rest // f), 0)
            flits = np.where(payload == 0, 1, flits)
        return (flits * f).astype(np.float64)



def honours_priority(network) -> bool:
    """Whether the routers' switch allocation lets a more urgent packet go first: not with
    iSLIP, which matches inputs and outputs round-robin whatever the packets' priority (a
    packet's step then only orders the VCs of one input). The message model gives the
    co-designed NIC's step priority on links only where the flit level would."""
    return getattr(network, "sw_allocator", "vc_first") != "islip"


def check_router_flit_bytes(network, nic: NicConfig) -> None:
    """The router's ``flit_bytes``, when set, must be the NIC's (both models refuse a mismatch)."""
    fb = getattr(network, "flit_bytes", None)
    if fb is not None and fb != nic.flit_bytes:
        raise ConfigError(f"router flit_bytes = {fb} and the NIC's flit_bytes = {nic.flit_bytes} disagree; "
                          "set one of them")


def check_message_router(topology: Topology, routes: RouteTable | PairRoutes, nic: NicConfig, network) -> None:
    """A :class:`ConfigError` unless the message model can represent ``network`` on these
    routes with this NIC: VCs that split into the routes' classes, the NIC's flit size,
    wormhole flow control."""
    check_vc_classes(topology, routes, int(network.num_vcs))  # as the flit level refuses it
    check_router_flit_bytes(network, nic)
    if getattr(network, "flow_control", "wormhole") != "wormhole":
        raise ConfigError(f"flow_control = {network.flow_control!r}: the message model represents wormhole routers "
                          "only; use the flit level (model='flit') for virtual cut-through")


def check_cut_through(nic: NicConfig, cfg) -> None:
    """A :class:`ConfigError` unless virtual cut-through routers ``cfg`` (a
    ``noc.flit.FlitNetworkConfig``) can carry this NIC's packets: per-packet flow control,
    and a whole packet fits in a VC."""
    if nic.bulk:
        raise ConfigError("flow_control = 'vct' needs room for a whole packet in a VC, and the NIC's bulk "
                          "transfers are one packet each: use wormhole, or the NIC's per-packet flow control")
    if cfg.vc_depth_flits < nic.packet_flits:
        raise ConfigError(f"flow_control = 'vct' with vc_depth_flits = {cfg.vc_depth_flits}: the NIC's "
                          f"{nic.packet_bytes} B packets are {nic.packet_flits} flits and must fit in a VC")


__all__ = ["NicConfig", "check_cut_through", "check_message_router",
           "check_router_flit_bytes", "honours_priority"]
