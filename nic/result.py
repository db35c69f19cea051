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
            "time_us": round(self.seconds * 1e6, 6),
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
        """The result ``to_json`` wrote; a ``ValueError`` or ``TypeError`` names what does not fit
        (every field is checked, so a damaged stored result fails here, not in a table later)."""
        d = json.loads(text)
        if not isinstance(d, dict):
            raise TypeError(f"a stored AllreduceResult is a JSON object, not {type(d).__name__}")
        for name, (kind, what) in _FIELD_TYPES.items():
            if name not in d:
                continue
            items = d[name] if name in _SEQUENCES else [d[name]]
            if name in _SEQUENCES and not isinstance(items, list):
                raise TypeError(f"AllreduceResult.{name} = {items!r} is not a list")
            for value in items:
                fits = isinstance(value, bool) if kind is bool else isinstance(value, kind) and not isinstance(value, bool)
                if not fits:
                    raise TypeError(f"AllreduceResult.{name} holds {value!r}, not a {what}")
        if "clock_ghz" in d and not d["clock_ghz"] > 0:
            raise ValueError(f"AllreduceResult.clock_ghz = {d['clock_ghz']!r} is not positive")
        if "total_cycles" in d and not 0 <= d["total_cycles"] < float("inf"):
            raise ValueError(f"AllreduceResult.total_cycles = {d['total_cycles']!r} is not a finite count")
        d["step_end_cycles"] = tuple(d["step_end_cycles"])
        d["node_idle_fraction"] = tuple(d["node_idle_fraction"])
        d["link_utilisation"] = tuple(d.get("link_utilisation", ()))
        return cls(**d)


# the fields from_json checks (for the sequences: every item): a stored result with a value of
# another type is damaged
_NUMBER = ((int, float), "number")
_WHOLE = (int, "whole number")
_STRING = (str, "string")
_FIELD_TYPES = {"topology": _STRING, "algorithm": _STRING, "nic": _STRING, "model": _STRING, "size_bytes": _WHOLE,
                "num_nodes": _WHOLE, "nis_per_node": _WHOLE, "total_cycles": _NUMBER, "clock_ghz": _NUMBER,
                "bound_cycles": _NUMBER, "verified": (bool, "boolean"), "step_end_cycles": _NUMBER,
                "node_idle_fraction": _NUMBER, "link_utilisation_mean": _NUMBER, "link_utilisation_max": _NUMBER,
                "seed": _WHOLE, "link_utilisation": _NUMBER, "extra": (dict, "JSON object")}
_SEQUENCES = ("step_end_cycles", "node_idle_fraction", "link_utilisation")
