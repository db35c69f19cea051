"""``hw-models report``: one self-contained HTML page of a sweep store or a results CSV."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from hw_models.cli.options import Overwrite, Results, Where


def report(
    results: Results,
    where: Where = [],
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output .html (default: RESULTS_report.html beside "
                                       "RESULTS)."),
    overwrite: Overwrite = False,
) -> None:
    """Write one HTML page with the preset figures (embedded) and a table of the rows."""
    from hw_models.report.data import filter_rows, load_rows
    from hw_models.report.figures import default_name
    from hw_models.report.html import page
    from hw_models.sweep.export import write_new_file
    from noc.base.errors import HwModelsError

    if out is not None and out.suffix.lower() not in (".html", ".htm"):
        raise HwModelsError(f"--out {out}: give an .html file")
    rows = filter_rows(load_rows(results), where)
    text, n_figures = page(rows, str(results))
    path = out or default_name(results, "report", "html")
    write_new_file(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), overwrite=overwrite, named="--out")
    typer.echo(f"wrote {path} ({n_figures} figure(s), {len(rows)} row(s))")
