"""The all-reduce ``Result``: one plain, typed, serialisable value per simulated run."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class AllreduceResult:
    """What one all-reduce simulation measured.

    Bandwidths follow the NCCL convention: algorithm bandwidth = size / time, bus
    bandwidth = algorithm bandwidth × 2(N-1)/N, in GB/s (10^9 bytes/s) at ``clock_ghz``.
    """

    topology: str
    algorithm: str
    nic: str  # "codesigned" | "baseline"
    model: str  # "message" | "flit"
    size_bytes: int
    num_nodes: int
    nis_per_node: int
    total_cycles: float
    clock_ghz: float
    bound_cycles: float  # bandwidth lower bound for this size on this topology
    verified: bool  # the reduction the schedule performs was checked exactly
    step_end_cycles: tuple[float, ...] = ()  # when the last transfer of each step arrived
    node_idle_fraction: tuple[float, ...] = ()  # per node: share of the run with no NI sending
    link_utilisation_mean: float = 0.0  # router-to-router links, busy fraction
    link_utilisation_max: float = 0.0
    seed: int = 0  # of the functional verifier's random input vectors (both timing models are deterministic)
    # per link, in topology link order (Topology.link_src / link_dst, injection and ejection
    # links included): bytes carried / (bytes per cycle x total cycles)
    link_utilisation: tuple[float, ...] = ()
    extra: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.total_cycles / (self.clock_ghz * 1e9)

    @property
    def algbw_gbps(self) -> float:
        return self.size_bytes / self.seconds / 1e9 if self.total_cycles > 0 else float("inf")

    @property
    def busbw_gbps(self) -> float:
        n = self.num_nodes
        return self.algbw_gbps * 2 * (n - 1) / n

    @property
    def bound_fraction(self) -> float:
        """Share of the bandwidth bound achieved (1.0 = at the bound)."""
        return self.bound_cycles / self.total_cycles if self.total_cycles > 0 else 0.0

    def row(self) -> dict:
        """A flat CSV row: the scalars, with derived bandwidths."""
        return {
            "topology": self.topology,
            "algorithm": self.algorithm,
            "nic": self.nic,
            "model": self.model,
            "size_bytes": self.size_bytes,
            "num_nodes": self.num_nodes,
            "nis_per_node": self.nis_per_node,
            "total_cycles": round(self.total_cycles, 3),
            "clock_ghz": self.clock_ghz,
            "algbw_gbps": round(self.algbw_gbps, 4),
            "busbw_gbps": round(self.busbw_gbps, 4),
            "bound_cycles": round(self.bound_cycles, 3),
            "bound_fraction": round(self.bound_fraction, 4),
            "steps": len(self.step_end_cycles),
            "link_utilisation_mean": round(self.link_utilisation_mean, 4),
            "link_utilisation_max": round(self.link_utilisation_max, 4),
            "verified": self.verified,
            "seed": self.seed,
        }

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "AllreduceResult":
        """The result ``to_json`` wrote; a ``ValueError`` or ``TypeError`` names what does not fit."""
        d = json.loads(text)
        for name, (kind, what) in _SCALAR_TYPES.items():
            value = d.get(name)
            fits = isinstance(value, bool) if kind is bool else isinstance(value, kind) and not isinstance(value, bool)
            if name in d and not fits:
                raise TypeError(f"AllreduceResult.{name} = {value!r} is not a {what}")
        d["step_end_cycles"] = tuple(d["step_end_cycles"])
        d["node_idle_fraction"] = tuple(d["node_idle_fraction"])
        d["link_utilisation"] = tuple(d.get("link_utilisation", ()))
        return cls(**d)


# the scalar fields from_json checks: a stored result with a value of another type is damaged
_NUMBER = ((int, float), "number")
_SCALAR_TYPES = {"topology": (str, "string"), "algorithm": (str, "string"), "nic": (str, "string"),
                 "model": (str, "string"), "size_bytes": (int, "whole number"), "num_nodes": (int, "whole number"),
                 "nis_per_node": (int, "whole number"), "total_cycles": _NUMBER, "clock_ghz": _NUMBER,
                 "bound_cycles": _NUMBER, "verified": (bool, "boolean")}
