"""A training system's run as ``hw-models train-system SYSTEM`` makes it: the setting resolved
(network as ``hw-models train`` resolves it, workload, convergence task), the system's own
parameters, the timing and convergence tables printed, and both CSVs written under names
that hash every setting, so a run never replaces another run's files (the same command
writes the same bytes again). The work is :mod:`hw_models.training.systems`'.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def run_train_system(sysname: str, *, workload, batch, device, topology, nis, algorithm, config, preset, task, lr,
                     target, max_iterations, seed, out: Path, **system_flags) -> None:
    """Resolve, check the outputs, run and report ``sysname``; ``system_flags``: its own options
    by parameter name (compressors, fix, ..., inverse_efficiency), None where not given."""
    from hw_models.console import console as make_console
    from hw_models.store import check_output_dir, write_csv_atomic
    from hw_models.training.systems.setup import resolve_setting, run_system, system_params

    st, desc, settings = resolve_setting(sysname, workload, batch, device, topology, nis, algorithm, config, preset, task,
                                  lr, target, max_iterations, seed)
    n = st.comm.num_workers
    f = system_flags
    params = system_params(sysname, n, f["compressors"], f["fix"], f["average_every"], f["servers"], f["placement"],
                           f["modes"], f["stragglers"], f["delays"], f["variants"], f["alpha"], f["tau"],
                           f["inverse_efficiency"], st)
    settings.update({k: v for k, v in params.items() if k != "objects"})
    digest = hashlib.sha1(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:10]
    stem = f"train_system_{sysname}_{st.topology.name.replace(':', '_')}_{st.workload.name}_{digest}"
    check_output_dir(out, "--out", [f"{stem}.csv", f"{stem}_convergence.csv"])

    console = make_console(140)
    console.print(f"{sysname} on {desc}; task {task}"
                  + (f" ({st.task.workers} workers, batch {st.task.batch}, lr {st.lr:g}, target {st.target:g})"
                     if st.task is not None else "") + f"; seed {seed}", soft_wrap=True)
    timing, conv = run_system(sysname, st, params["objects"], seed)
    _table(console, f"{sysname}: time per iteration on {st.workload.name}", timing)
    if conv:
        _table(console, f"{sysname}: convergence on digits ({task})", conv)
    meta = {k: settings[k] for k in ("topology", "workload", "batch", "device", "algorithm", "seed")}
    written = [write_csv_atomic(out / f"{stem}.csv", [{**r, **meta} for r in _uniform(timing)])]
    if conv:
        written.append(write_csv_atomic(out / f"{stem}_convergence.csv",
                                        [{**r, "task": task, **meta} for r in _uniform(conv)]))
    console.print(f"wrote {', '.join(str(w) for w in written)}", soft_wrap=True)


def _uniform(rows: list[dict]) -> list[dict]:
    """Rows with one set of columns (in first-seen order), blanks where a row has none."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    return [{c: r.get(c, "") for c in cols} for r in rows]


def _fmt(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "nan"
        return f"{v:.4g}"
    return str(v)


def _table(console, title: str, rows: list[dict]) -> None:
    from rich.table import Table

    rows = _uniform(rows)
    table = Table(title=title)
    cols = [c for c in rows[0] if c != "system"]
    for c in cols:
        table.add_column(c.replace("_", " "), justify="left" if c == "run" else "right")
    for r in rows:
        table.add_row(*[_fmt(r[c]) for c in cols])
    console.print(table)
