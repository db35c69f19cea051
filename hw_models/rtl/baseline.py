"""Synthesis baselines: stored cost and speed per configuration and tool version, and the check.

A baseline is keyed by the tool versions that made it (``"yosys 0.70"`` for the generic
flow, ``"yosys 0.70, nextpnr-ecp5 0.11.1"`` for place and route), then by configuration
(``"nic_scheduler DEPTH=16 NIS=1"``). :func:`regressions` compares a new measurement with
it: area may grow by at most :data:`AREA_GROWTH` (10 %), the LUT levels likewise, Fmax
(estimated or post-route) may drop by at most :data:`FMAX_DROP` (5 %). A change that
crosses a limit on purpose updates the stored baseline (``bench/rtl_synth_baseline.py``)
in the same commit, so the file's history shows each step of area and speed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

AREA_GROWTH = 0.10
FMAX_DROP = 0.05

#: the figures that may not grow by more than AREA_GROWTH
AREA_KEYS = ("cells", "flip_flops", "luts", "lut_levels", "lut4", "ccu2c", "ebr", "dsp")
#: the figures that may not drop by more than FMAX_DROP
SPEED_KEYS = ("fmax_mhz_est", "fmax_mhz")


def generic_key(yosys: str) -> str:
    return f"yosys {yosys}"


def ecp5_key(yosys: str, nextpnr: str) -> str:
    return f"yosys {yosys}, nextpnr-ecp5 {nextpnr}"


def regressions(stored: Mapping[str, float], measured: Mapping[str, float]) -> list[str]:
    """What got worse beyond the limits, one sentence per figure (empty: within them).

    A figure of the baseline that the measurement lacks is reported too (the measurement
    would otherwise pass by measuring less)."""
    out = []
    for k, base in stored.items():
        if k not in AREA_KEYS and k not in SPEED_KEYS:
            continue
        if k not in measured:
            out.append(f"{k}: in the baseline ({base}) but not measured")
            continue
        new = measured[k]
        if k in AREA_KEYS and new > base * (1 + AREA_GROWTH):
            out.append(f"{k} grew from {base} to {new} (+{(new / base - 1) * 100:.1f} %, limit "
                       f"+{AREA_GROWTH * 100:.0f} %)" if base else f"{k} grew from 0 to {new}")
        if k in SPEED_KEYS and new < base * (1 - FMAX_DROP):
            out.append(f"{k} dropped from {base} to {new} MHz ({(new / base - 1) * 100:.1f} %, limit "
                       f"-{FMAX_DROP * 100:.0f} %)")
    return out


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8")) if Path(path).exists() else {}


def figures(row: object, keys: tuple[str, ...]) -> dict[str, float]:
    """The baseline's figures of a synthesis or place-and-route row (a dataclass)."""
    return {k: getattr(row, k) for k in keys if getattr(row, k, None) is not None}


#: the scheduler's smallest configuration (every width 2): generic synthesis takes seconds
SMALL_SCHEDULER = {"depth": 2, "nis": 1, "flow_w": 2, "node_w": 2, "step_w": 2, "len_w": 2, "cnt_w": 2, "err_w": 2,
                   "tmo_w": 2}

#: configurations of the generic flow (hw_models.rtl.synth): name -> (fast enough for the default suite)
GENERIC_CONFIGS = {
    "nic_scheduler DEPTH=2 NIS=1 widths=2": True,
    "nic_reduce_add LANES=1 fp32": False,
    "nic_reduce_add LANES=1 int32": True,
    "nic_scheduler DEPTH=64 NIS=4": False,
}

#: configurations placed and routed on ECP5 (hw_models.rtl.pnr): minutes each
ECP5_CONFIGS = ("nic_scheduler DEPTH=16 NIS=1", "nic_scheduler DEPTH=64 NIS=1", "nic_scheduler DEPTH=64 NIS=4",
                "nic_scheduler DEPTH=64 NIS=4 SCHED_PIPE=1",
                "nic_datapath LANES=4 fp32 BUF_WORDS=64", "nic_datapath LANES=4 fp32 BUF_WORDS=64 ADD_LAT=6",
                "nic_datapath LANES=4 fp32 BUF_WORDS=64 ADD_LAT=7")

GENERIC_KEYS = ("cells", "flip_flops", "luts", "lut_levels", "fmax_mhz_est")
ECP5_KEYS = ("lut4", "ccu2c", "flip_flops", "ebr", "dsp", "fmax_mhz")


def measure_generic(name: str) -> dict[str, float]:
    """Generic synthesis (``synth -flatten; abc -lut 6; ltp``) of a GENERIC_CONFIGS entry."""
    from hw_models.rtl.synth import synth_datapath_module, synth_one  # noqa: PLC0415
    from nic.scheduler import SchedulerParams  # noqa: PLC0415

    if name == "nic_scheduler DEPTH=2 NIS=1 widths=2":
        return figures(synth_one(SchedulerParams(**SMALL_SCHEDULER)), GENERIC_KEYS)
    if name == "nic_scheduler DEPTH=64 NIS=4":
        return figures(synth_one(SchedulerParams(depth=64, nis=4)), GENERIC_KEYS)
    if name.startswith("nic_reduce_add LANES=1 "):
        return figures(synth_datapath_module("nic_reduce_add", 1, int(name.endswith("fp32"))), GENERIC_KEYS)
    raise KeyError(name)


def ecp5_job(name: str):
    """The hw_models.rtl.pnr job of an ECP5_CONFIGS entry."""
    from hw_models.rtl.pnr import datapath_job, scheduler_job  # noqa: PLC0415

    top, *params = name.split()
    kv = dict(p.split("=") for p in params if "=" in p)
    if top == "nic_scheduler":
        return scheduler_job(int(kv["DEPTH"]), int(kv["NIS"]), pipe=int(kv.get("SCHED_PIPE", 0)))
    return datapath_job(top, int(kv["LANES"]), int("fp32" in params), buf_words=int(kv["BUF_WORDS"]),
                        add_lat=int(kv.get("ADD_LAT", 0)), nis=int(kv.get("NIS", 1)))
