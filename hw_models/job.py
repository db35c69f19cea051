"""What every experiment command does around its runs, written once: the output directory
chosen, the plan's points run into the sweep store under a progress bar (Ctrl-C keeps every
finished point and exits 130), and a CSV (with its PNG) written under the output
directory's lock, with a note when it held other runs."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

OTHER_RUNS = "other runs than this command's"


def output_dir(out: Optional[Path], cfg, source: str, command: str) -> tuple[Path, str]:
    """(the output directory, the name its errors give): ``--out``, or the config's
    ``run.out_dir``/``command``."""
    if out is not None:
        return out, "--out"
    return Path(cfg.run.out_dir) / command, f"{source}: run.out_dir = {cfg.run.out_dir!r}: its directory"


def backend(workers: Optional[int], dask: Optional[str]) -> dict:
    """``run_plan``'s ``workers``/``dask`` from a command's ``--workers``/``--dask``: this
    process (0) unless either is given; both given is refused by the executor, as
    ``hw-models sweep`` refuses it."""
    return {"workers": 0 if workers is None and dask is None else workers, "dask": dask}


def run_points(con, total: int, store_path: Path, run: Callable, describe: Callable, last: Optional[str] = None):
    """``run(on_event)`` (a run of ``total`` points into the store at ``store_path``, calling
    ``on_event(event, point, outcome)`` after each) under a progress bar whose line
    ``describe(point)`` names the point just run (``last``: the line once all ran); what it
    returns. Ctrl-C: a line saying where the finished runs are kept, and exit 130."""
    import typer

    from hw_models.console import progress_bar

    with progress_bar(con) as progress:
        task = progress.add_task("simulating", total=total)

        def on_event(event, point, outcome):
            progress.update(task, advance=1, description=describe(point))

        try:
            out = run(on_event)
        except KeyboardInterrupt:
            progress.stop()
            con.print(f"interrupted: finished runs are kept in {store_path}; run the same command again to resume")
            raise typer.Exit(130) from None
        progress.update(task, completed=total, **({"description": last} if last else {}))
    return out


def run_plan_points(con, plan, store_path: Path, describe: Callable, *, fresh: bool = False,
                    workers: Optional[int] = None, dask: Optional[str] = None, points=None, last: Optional[str] = None):
    """``plan`` (its resolved ``points``, when given) run into the sweep store at
    ``store_path`` by :func:`hw_models.sweep.plan.run_plan` on the ``--workers``/``--dask``
    backend (:func:`backend`), under :func:`run_points`' progress bar; the plan's run."""
    from hw_models.sweep.plan import run_plan

    return run_points(con, len(plan.configs if points is None else points), store_path, lambda on_event: run_plan(
        plan, store_path, fresh=fresh, **backend(workers, dask), on_event=on_event, points=points), describe, last)


def write_rows(con, csv_path: Path, rows: list[dict], kept: str, draw: Optional[Callable] = None,
               held: str = OTHER_RUNS) -> list[Path]:
    """CSV ``csv_path`` of ``rows`` (and, with ``draw``, ``draw(png_path)`` beside it) written
    under its directory's lock, so that two commands into one folder replace these files one
    after the other; a note first when the CSV held ``held`` (``kept``: where they stay)."""
    from hw_models.report.writer import replacing_note
    from hw_models.store import csv_holds_other_rows, locked_directory, write_csv_atomic

    with locked_directory(csv_path.parent):  # another command writing here waits: its note and files come after
        if csv_holds_other_rows(csv_path, rows):
            con.print(replacing_note(csv_path, held, kept, also="its PNG" if draw else ""), soft_wrap=True)
        written = [write_csv_atomic(csv_path, rows)]
        if draw is not None:
            written.append(draw(csv_path.with_suffix(".png")))
    return written
