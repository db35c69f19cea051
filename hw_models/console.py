"""The terminal output the commands share: a console as wide as the terminal, or a fixed
width when the output goes to a pipe or a file (so a log shows the lines a terminal shows),
and the progress bar of a run of points."""

from __future__ import annotations

import sys


def console(pipe_width: int = 120, **options):
    """A rich console: the terminal's width on a terminal, ``pipe_width`` columns otherwise."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else pipe_width, **options)


def progress_bar(con, *columns, eta: bool = False):
    """A rich progress bar on ``con``: the task's description, the bar, done / total,
    ``columns`` (text templates over the task's fields), the time elapsed and, with ``eta``,
    the time remaining."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    tail = (TextColumn("ETA"), TimeRemainingColumn()) if eta else ()
    return Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    *(TextColumn(c) for c in columns), TimeElapsedColumn(), *tail, console=con)


def table(title: str, columns, rows, left=(), **options):
    """A rich table titled ``title``: a column per name in ``columns`` (right-justified, but
    those named in ``left``), a row per tuple of cells in ``rows``; ``options`` go to the
    table (e.g. ``show_header=False``)."""
    from rich.table import Table

    out = Table(title=title, **options)
    for col in columns:
        out.add_column(col, justify="left" if col in left else "right")
    for cells in rows:
        out.add_row(*cells)
    return out
