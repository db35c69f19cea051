"""The NIC registry: the designs a NIC can be and the MultiTree paper's named variants of it.

Light to import (no Numba): the config schema (:class:`nic.allreduce.NicConfig`), the
commands' ``--nic`` and ``--variant`` help and their error messages read these.
"""

from __future__ import annotations

DESIGNS = {
    "codesigned": "tables, lockstep, step priority, bulk transfers",
    "baseline": "send when ready, per-packet flow control, no priority",
}
"""NIC design name -> what it does."""

VARIANTS = {
    "alpha": {"nis": 1, "flow_control": "packet"},
    "beta": {"nis": 4, "flow_control": "packet"},
    "gamma": {"nis": 1, "flow_control": "bulk"},
    "delta": {"nis": 4, "flow_control": "bulk"},
}
"""The MultiTree paper's NIC variants: its co-designed NIC (:data:`VARIANT_NIC`) with 1 or 4
NIs per node and 256 B packets or whole-chunk (bulk) transfers."""

VARIANT_NIC = {"design": "codesigned", "step_priority": True, "packet_bytes": 256}


def variant_help() -> str:
    """The variants for a ``--variant`` help text: ``alpha (1 NI, 256 B packets), ...``."""
    def what(v: dict) -> str:
        nis = f"{v['nis']} NI{'s' if v['nis'] > 1 else ''}"
        flow = f"{VARIANT_NIC['packet_bytes']} B packets" if v["flow_control"] == "packet" else "whole-chunk transfers"
        return f"{nis}, {flow}"

    return ", ".join(f"{name} ({what(v)})" for name, v in VARIANTS.items())


__all__ = ["DESIGNS", "VARIANTS", "VARIANT_NIC", "variant_help"]
