"""A sweep file run as ``hw-models sweep FILE`` runs it, with what it prints: the file's
points validated all at once (every invalid one reported), then with ``check`` only counted,
else the unfinished ones run on the chosen backend into the store with a progress bar, and
a summary line (failures listed). Interrupted, it says how to resume: every point run is
already stored.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional


def default_store(file: Path, spec_store: Optional[str]) -> Path:
    return Path(spec_store) if spec_store else Path("results") / "sweeps" / f"{file.stem}.sqlite"


def run_sweep_file(console, file: Path, store: Optional[Path], workers: Optional[int], dask: Optional[str],
                   seed: Optional[int], fresh: bool, check: bool) -> int:
    """Run (or with ``check`` validate and count) sweep file ``file``: the exit status, 0 when
    every point is done (or checked), 1 when some failed, 2 for invalid points, 130 when
    interrupted."""
    from hw_models.console import progress_bar
    from hw_models.sweep.execute import Summary, Tally, check_backend, iter_points, make_backend, restore_sigint, unfinished
    from hw_models.sweep.invalid import InvalidPoints
    from hw_models.sweep.kinds import get_kind
    from hw_models.sweep.spec import load_sweep, point_count
    from hw_models.sweep.store import SweepStore
    from noc.base.errors import HwModelsError
    from noc.base.files import why_missing

    if not file.is_file():
        raise HwModelsError(f"{file}: {'is a directory' if file.is_dir() else why_missing(file, 'no such sweep file')}")
    check_backend(workers, dask)
    restore_sigint()  # Ctrl-C stops it even as a script's background job
    spec = load_sweep(file, seed)
    kind = get_kind(spec.kind)
    sampled = (f"{spec.sample.method.replace('_', ' ')} sample of {spec.sample.points} points, seed "
               f"{spec.sample.seed}" if spec.sample else "every point of the grid")
    grid = f"{spec.grid_points:,}-point grid" if spec.grid_points is not None else "a continuous space"
    console.print(f"sweep {file}: kind {kind.name}, {len(spec.axes)} axes ({grid}); {sampled}")
    store_path = default_store(file, spec.store) if store is None else store
    invalid = InvalidPoints(store_path.parent, store_path.name)
    tally = Tally()
    with progress_bar(console, "invalid {task.fields[invalid]}") as progress:  # a million points take a while
        task = progress.add_task("validating points", total=point_count(spec), invalid=0)
        valid = iter_points(spec, kind, invalid, tally, lambda i: progress.update(task, completed=i,
                                                                                  invalid=invalid.count))
        # with --check only the keys are kept (a point's resolved config is dropped once it is checked)
        points = [p.key for p in valid] if check else list(valid)
    duplicates = tally.duplicates
    if invalid.count:  # the first invalid points, the count, the file with all of them; nothing runs
        invalid.close()
        for line in invalid.lines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    named = "--store" if store is not None else (f"{file}: store =" if spec.store else "")
    if check:
        finished = 0
        if store_path.exists():
            with SweepStore(store_path, create=False, named=named) as st:
                finished = len(st.done_keys(points))
        console.print(f"{len(points)} points valid" + (f" ({duplicates} duplicates of others dropped)" if duplicates
                                                       else "") + f"; {finished} finished in {store_path}")
        return 0
    summary = Summary(duplicates=duplicates)
    # a cluster that cannot be used is an error before the store is made or opened (nothing left behind)
    cluster = make_backend(kind.name, None, dask) if dask is not None else None
    try:
        with SweepStore(store_path, named=named) as st:
            todo = unfinished(points, kind, st, fresh=fresh, summary=summary)
            console.print(f"{len(points)} points" + (f" ({duplicates} duplicates dropped)" if duplicates else "")
                          + (f", {summary.finished_before} finished before" if summary.finished_before else "")
                          + f"; store {store_path}")
            backend, cluster = cluster, None  # execute closes it
            if todo and not _run_points(console, file, todo, kind, st, workers, dask, fresh, summary, backend):
                console.print(f"interrupted: {summary.done + summary.failed} point(s) run and stored in "
                              f"{store_path}; run the same command again to resume")
                return 130
            if not todo and backend is not None:
                backend.close()
    finally:
        if cluster is not None:  # the store could not be opened
            cluster.close()
    return _print_summary(console, summary, store_path)


def _run_points(console, file: Path, todo, kind, st, workers, dask, fresh: bool, summary, backend=None) -> bool:
    """Run ``todo`` with a progress bar (on ``backend``, else the one ``workers``/``dask``
    ask for); False when interrupted (what ran is stored)."""
    from hw_models.console import progress_bar
    from hw_models.sweep.execute import execute, make_backend

    backend = backend if backend is not None else make_backend(kind.name, workers, dask)
    where = (f"the Dask cluster at {dask}" if dask else "this process" if workers == 0 else
             f"{backend.workers} local worker process{'es' if backend.workers > 1 else ''}")
    console.print(f"running {len(todo)} points on {where}")
    progress = progress_bar(console, "done {task.fields[done]}, failed {task.fields[failed]}", eta=True)
    task = progress.add_task("points", total=len(todo), done=0, failed=0)

    def on_event(event, point, outcome):
        progress.update(task, advance=1, done=summary.done, failed=summary.failed,
                        description=f"point {point.index}")

    try:
        with progress:
            execute(todo, kind, st, backend, origin=f"sweep {file}", fresh=fresh, summary=summary, on_event=on_event)
    except KeyboardInterrupt:
        return False
    return True


def _print_summary(console, s, store_path: Path) -> int:
    """The closing line, and the first failures: 1 when any point failed."""
    from hw_models.sweep.spec import describe

    parts = [f"{s.points} points"]
    if s.finished_before:
        parts.append(f"{s.finished_before} finished before")
    if s.finished_elsewhere:
        parts.append(f"{s.finished_elsewhere} finished by another sweep meanwhile")
    ran = s.done + s.failed
    rate = f", {ran / s.wall_s:.1f} points/s" if ran and s.wall_s > 0 else ""
    parts.append(f"{ran} run now ({s.done} done, {s.failed} failed) in {s.wall_s:.1f} s{rate}" if ran else
                 "nothing left to run")
    console.print("; ".join(parts) + f"; store {store_path}")
    if not s.failures:
        return 0
    for p, err in s.failures[:10]:
        console.print(f"failed: point {p.index} ({describe(p.values)}): {err}", soft_wrap=True)
    more = f" ({len(s.failures) - 10} more)" if len(s.failures) > 10 else ""
    console.print(f"{s.failed} point(s) failed{more}; their errors are in the store (hw-models sweep status "
                  f"{store_path} --failed); a re-run runs them again")
    return 1
