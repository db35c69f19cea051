"""``hw-models sweep``: design-space sweeps into a resumable SQLite store (docs/sweeps.md).

    hw-models sweep FILE [--store S] [--workers N | --dask tcp://host:port] [--seed N] [--fresh] [--check]
    hw-models sweep export STORE --csv OUT.csv [--parquet OUT.parquet] [--kind K] [--overwrite]
    hw-models sweep import-jsonl JSONL... --store S [--config TOML]
    hw-models sweep status STORE [--failed]
    hw-models sweep kinds

``hw-models sweep FILE`` is ``hw-models sweep run FILE``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup

from hw_models.cli.options import Dask


class _RunByDefault(TyperGroup):
    """``hw-models sweep FILE ...`` runs FILE: a first argument that is not a subcommand
    (nor --help) is the ``run`` command's."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_RunByDefault, no_args_is_help=True,
                  help="Design-space sweeps: a sweep file's points, validated all at once, run locally or on a Dask "
                       "cluster into a resumable SQLite store; export to CSV or Parquet.")


@app.command(name="run")
def run_cmd(
    file: Path = typer.Argument(..., help="The sweep file (TOML; docs/sweeps.md).", show_default=False),
    store: Optional[Path] = typer.Option(None, "--store", "-s", help="The results store (default: the file's "
                                         "store key, else results/sweeps/<file name>.sqlite)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", help="Local worker processes (default: one per "
                                          "core; 0 runs the points in this process)."),
    dask: Dask = None,
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the sampling (replaces the file's [sample] seed)."),
    fresh: bool = typer.Option(False, "--fresh", help="Run again the points already finished in the store; their new "
                               "rows replace the old (default: skip them, resume)."),
    check: bool = typer.Option(False, "--check", help="Validate every point and say how many are finished; run none."),
) -> None:
    """Run a sweep file: every point validated first (all invalid ones reported, exit 2), then the unfinished ones run."""
    from hw_models.console import console
    from hw_models.sweep.run_file import run_sweep_file

    code = run_sweep_file(console(highlight=False), file, store, workers, dask, seed, fresh, check)
    if code:
        raise typer.Exit(code)


@app.command()
def export(
    store: Path = typer.Argument(..., help="The sweep store (SQLite).", show_default=False),
    csv: Optional[Path] = typer.Option(None, "--csv", help="Write the rows as CSV to this new file."),
    parquet: Optional[Path] = typer.Option(None, "--parquet", help="Write the rows as Parquet to this new file "
                                           "(needs pyarrow: pip install 'hw-models[parquet]')."),
    kind: Optional[str] = typer.Option(None, "--kind", help="Only the points of this kind."),
    status: Optional[str] = typer.Option(None, "--status", help="Only done or only failed points."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output file (default: refuse)."),
) -> None:
    """Export a store's points: one row each, config.* and metrics.* columns."""
    from hw_models.sweep.export import flat_rows, write_csv, write_parquet
    from hw_models.sweep.store import STATUSES, SweepStore
    from noc.base.errors import HwModelsError

    if csv is None and parquet is None:
        raise HwModelsError("give --csv FILE and/or --parquet FILE")
    if status is not None and status not in STATUSES:
        raise HwModelsError(f"--status {status!r}: choose one of {', '.join(STATUSES)}")
    if csv is not None and parquet is not None and csv.resolve() == parquet.resolve():
        raise HwModelsError(f"--csv and --parquet name one file, {csv}")
    with SweepStore(store, create=False) as st:
        if kind is not None and kind not in {k for k, _, _ in st.counts()}:
            have = sorted({k for k, _, _ in st.counts()})
            raise HwModelsError(f"--kind {kind!r}: {store} holds no point of that kind (it holds: "
                                f"{', '.join(have) or 'none'})")
        rows = flat_rows(st, kind=kind, status=status)
    if not rows:  # an empty file (not even a header) would read as an export of nothing gone wrong
        which = " ".join(x for x in (status, kind) if x)
        raise HwModelsError(f"{store}: holds no {which + ' ' if which else ''}points to export; nothing written")
    written = []
    for path, write in ((csv, write_csv), (parquet, write_parquet)):
        if path is not None:
            written.append(str(write(rows, path, overwrite=overwrite)))
    typer.echo(f"wrote {len(rows)} row(s) to {' and '.join(written)}")


@app.command(name="import-jsonl")
def import_jsonl_cmd(
    files: list[Path] = typer.Argument(..., help="JSONL result stores of hw-models allreduce, noc sweep-load or "
                                       "train.", show_default=False),
    store: Path = typer.Option(..., "--store", "-s", help="The sweep store to copy them into (made if missing).",
                               show_default=False),
    config: Optional[Path] = typer.Option(None, "--config", help="The TOML the runs were made with (an experiment "
                                          "config; for noc sweep-load points, the noc config; default: the "
                                          "defaults): the runs it reproduces become points the commands reuse."),
) -> None:
    """Copy JSONL result stores into a sweep store; the commands and sweeps then reuse the runs they match."""
    from hw_models.sweep.jsonl import check_jsonl, import_jsonl
    from hw_models.sweep.store import SweepStore
    from noc.base.config import read_toml

    for f in files:  # all of them readable JSONL stores, before the sweep store is made
        check_jsonl(f)
    data = read_toml(config) if config is not None else None
    with SweepStore(store, named="--store") as st:
        for f in files:
            r = import_jsonl(f, st, data)
            kinds = ", ".join(f"{n} {k}" for k, n in r.imported.items()) or "0"
            skipped = "; ".join(f"{n} skipped: {why}" for why, n in r.skipped.items())
            typer.echo(f"{f}: imported {kinds} record(s)" + (f" ({r.matched} as finished points)" if r.matched else "")
                       + (f"; {r.already} already in {store}" if r.already else "") + (f"; {skipped}" if skipped else ""))


@app.command()
def status(
    store: Path = typer.Argument(..., help="The sweep store (SQLite).", show_default=False),
    failed: bool = typer.Option(False, "--failed", help="List the failed points and their errors."),
) -> None:
    """Points per kind and status; with --failed, the errors."""
    from hw_models.console import console as make_console, table
    from hw_models.sweep.store import SweepStore

    console = make_console(highlight=False)
    with SweepStore(store, create=False) as st:
        console.print(table(f"sweep store {store}", ("kind", "status", "points"),
                            [(k, s, f"{n:,}") for k, s, n in st.counts()], ("kind", "status")))
        if failed:
            for r in st.rows(status="failed"):
                console.print(f"{r['kind']} {r['key'][:12]} {r['finished_utc']}: {r['error']}", soft_wrap=True)


@app.command()
def kinds() -> None:
    """The experiment kinds a sweep file can name."""
    from hw_models.sweep.kinds import get_kind, kind_names

    for name in kind_names():
        typer.echo(f"{name}: {get_kind(name).summary}")
