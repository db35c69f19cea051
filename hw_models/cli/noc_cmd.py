"""``hw-models noc``: synthetic-traffic runs and load–latency sweeps of the flit-level network.

    hw-models noc run CONFIG [--rate 0.1] [--pattern uniform] [--seed 1] [--out DIR]
    hw-models noc sweep-load CONFIG [--pattern uniform] [--seed 1] [--out DIR]
    hw-models noc run --booksim BOOKSIM_FILE [key=value ...] [--out DIR]
    hw-models noc sweep-load --booksim BOOKSIM_FILE [key=value ...] [--out DIR]

CONFIG is a TOML file (docs/noc_example.toml; every key is documented in docs/noc.md):
``[network]`` (:class:`hw_models.config.NetworkConfig`, as in every hw-models config:
topology, link latency, NIs per node), ``[router]`` (:class:`noc.flit.FlitNetworkConfig`),
``[traffic]`` (:class:`noc.flit_traffic.TrafficConfig`), ``[sweep]``
(:class:`noc.flitsim_sweep.SweepConfig`) and a top-level ``out_dir``. Both commands print a table and write CSV and PNG
into the output directory (files are written whole or not at all, under unique temporary names). ``run`` records
its configuration in its CSV and says so when it replaces another configuration's run of the same name. ``sweep-load``
runs every load point as a point of sweep kind ``noc_load`` into the output directory's sweep store
(``<out>/runs.sqlite``): Ctrl-C or a deadlock at a high load keeps the points finished before it (written to the
CSV and PNG as well), and the same command resumes from the store. The work is :mod:`hw_models.noc_run`'s and
:mod:`hw_models.noc_sweep`'s.

With ``--booksim`` the configuration is a BookSim2 file instead (its ``key = value;``
syntax; the arguments after it are BookSim2 overrides, as on its own command line), run with
BookSim2's semantics and methodology (:mod:`noc.booksim_config`); ``run`` prints BookSim2's
final statistics under its names and writes them to CSV.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from hw_models.cli.options import Dask, Fresh, Workers
from hw_models.noc_run import ARGS_HELP, BOOKSIM_HELP, SEED_HELP, YES_HELP

app = typer.Typer(help="Flit-level network: synthetic traffic runs and load-latency sweeps.", no_args_is_help=True)

_OUT_HELP = "Output directory (default: the config's out_dir; results/noc with --booksim)."


@app.command()
def run(
    args: Optional[list[str]] = typer.Argument(None, help=ARGS_HELP, show_default=False),
    booksim: Optional[Path] = typer.Option(None, "--booksim", help=BOOKSIM_HELP),
    rate: Optional[float] = typer.Option(None, "--rate", help="Offered load in packets/NI/cycle (default: the config's traffic.rate_packets)."),
    pattern: Optional[str] = typer.Option(None, "--pattern", help="Traffic pattern (default: the config's)."),
    seed: Optional[int] = typer.Option(None, "--seed", help=SEED_HELP),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help=_OUT_HELP),
    yes: bool = typer.Option(False, "--yes", help=YES_HELP),
) -> None:
    """One load point: warm-up, measurement, drain. Prints latency, throughput, hops, link use; writes CSV and PNG."""
    from hw_models.noc_run import run_booksim_point, run_point, split_args

    config, overrides = split_args(args, booksim, {"--rate": rate, "--pattern": pattern, "--seed": seed})
    if booksim is not None:
        return run_booksim_point(booksim, overrides, out, yes)
    run_point(config, rate, pattern, seed, out, yes)


@app.command(name="sweep-load")
def sweep_load_cmd(
    args: Optional[list[str]] = typer.Argument(None, help=ARGS_HELP, show_default=False),
    booksim: Optional[Path] = typer.Option(None, "--booksim", help=BOOKSIM_HELP + " Its injection_rate is swept."),
    pattern: Optional[str] = typer.Option(None, "--pattern", help="Traffic pattern (default: the config's)."),
    seed: Optional[int] = typer.Option(None, "--seed", help=SEED_HELP),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help=_OUT_HELP),
    yes: bool = typer.Option(False, "--yes", help=YES_HELP),
    fresh: Fresh = False,
    workers: Workers = None,
    dask: Dask = None,
) -> None:
    """Offered load from near zero to saturation: zero-load latency, saturation throughput; table, CSV and PNG.

    Every finished point is kept in the output directory's sweep store (runs.sqlite), so an interrupted sweep resumes."""
    from hw_models.noc_sweep import sweep_load

    sweep_load(args, booksim, pattern, seed, out, yes, fresh, workers, dask)
