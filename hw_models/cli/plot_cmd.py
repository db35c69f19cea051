"""``hw-models plot``: a figure of a sweep store or a results CSV (docs/reports.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from hw_models.cli.options import Overwrite, Results, Where
from hw_models.report.figures import FORMATS, PRESETS
from noc.base.errors import HwModelsError


def plot(
    results: Results,
    x: Optional[str] = typer.Option(None, "--x", help="Column on the x axis (e.g. size)."),
    y: Optional[str] = typer.Option(None, "--y", help="Column on the y axis (e.g. bus_gbps)."),
    color: Optional[str] = typer.Option(None, "--color", help="Column whose values are the lines."),
    facet: Optional[str] = typer.Option(None, "--facet", help="Column whose values are the panels."),
    preset: Optional[str] = typer.Option(None, "--preset", help=f"{', '.join(PRESETS[:-1])} or {PRESETS[-1]} "
                                         "(instead of --x/--y)."),
    where: Where = [],
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output file; .png, .svg or .pdf (default: "
                                       "RESULTS_<what it shows>.<--format> beside RESULTS)."),
    fmt: str = typer.Option("png", "--format", help=f"{', '.join(FORMATS[:-1])} or {FORMATS[-1]}, for the default "
                            "output name."),
    overwrite: Overwrite = False,
) -> None:
    """Plot one column against another (or a preset figure) to PNG, SVG or PDF."""
    from hw_models.report.data import filter_rows, load_rows
    from hw_models.report.figures import (FORMATS, default_name, figure_name, generic_spec, output_format,
                                          preset_spec, render, series)
    from hw_models.sweep.export import write_new_file

    if preset is None and (x is None or y is None):
        raise HwModelsError("give --x and --y, or --preset (bandwidth, speedup, load-latency, training)")
    if preset is not None and (x or y or color or facet):
        raise HwModelsError(f"--preset {preset} sets the axes itself; leave out --x/--y/--color/--facet")
    if fmt not in FORMATS:
        raise HwModelsError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if out is not None:
        fmt = output_format(out)
    rows = filter_rows(load_rows(results), where)
    if preset is not None:
        rows, spec = preset_spec(preset, rows)
    else:
        spec = generic_spec(rows, x, y, color, facet)
    notes: list[str] = []
    lines = series(rows, spec, notes)
    for note in notes:
        typer.echo(note, err=True)
    path = out or default_name(results, figure_name(spec, preset), fmt)
    data = render(spec, lines, fmt)
    write_new_file(path, lambda tmp: tmp.write_bytes(data), overwrite=overwrite, named="--out")
    typer.echo(f"wrote {path} ({len(lines)} line(s), {sum(len(s.xs) for s in lines)} point(s))")
