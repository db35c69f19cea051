"""A training system's run as ``hw-models train-system SYSTEM`` makes it: the setting resolved
(network as ``hw-models train`` resolves it, workload, convergence task) and the system's own
parameters checked, the run as one point of sweep kind ``train_system`` run into the output
directory's sweep store (``<out>/runs.sqlite``: run again, it is reused), and the timing and
convergence tables printed and both CSVs written from the stored metrics, under names that
hash every setting, so a run never replaces another run's files (the same command writes
the same bytes again). The work is :mod:`hw_models.training.systems`'.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

ORIGIN = "hw-models train-system"


def run_train_system(sysname: str, *, workload, batch, device, topology, nis, algorithm, config, preset, task, lr,
                     target, max_iterations, seed, out: Optional[Path], yes: bool = False, **system_flags) -> None:
    """Resolve, check the outputs, run and report ``sysname``; ``system_flags``: its own options
    by parameter name (compressors, fix, ..., inverse_efficiency), None where not given; a run
    estimated past 10 minutes is refused unless ``yes`` (:func:`hw_models.estimate.check_long_run`)."""
    from hw_models.config import experiment_data
    from hw_models.estimate import check_long_run, profiled_seconds
    from hw_models.console import console as make_console
    from hw_models.experiment import config_with_flags
    from hw_models.job import output_dir, run_plan_points
    from hw_models.store import STORE_NAME, check_output_dir, write_csv_atomic
    from hw_models.sweep.kinds.train_system import OPTIONS, tables
    from hw_models.sweep.plan import Plan
    from hw_models.training.systems import SYSTEMS
    from hw_models.training.systems.profiled import TIMING_ITERATIONS
    from hw_models.training.systems.setup import convergence_runs, profiled_configs, resolve_setting, system_params

    st, desc, settings = resolve_setting(sysname, workload, batch, device, topology, nis, algorithm, config, preset,
                                         task, lr, target, max_iterations, seed)
    params = system_params(sysname, st.comm.num_workers, *(system_flags[k] for k in OPTIONS), st=st)
    runs = convergence_runs(sysname, params, task)
    n = st.comm.num_workers
    bsp, period = profiled_configs(sysname, params, n)
    its = max_iterations if task != "none" else min(max_iterations, TIMING_ITERATIONS)  # to the target at worst
    timed = f" and {bsp + period} configurations timed iteration by iteration on the profiles" if bsp + period else ""
    check_long_run(SYSTEMS[sysname].seconds(runs, max_iterations, n)
                   + profiled_seconds(bsp, period, its, len(st.layers)),
                   f"{runs} {sysname} convergence runs of up to {max_iterations:,} iterations on {n} workers{timed}",
                   yes, "fewer --max-iterations (or fewer runs)")
    settings.update({k: v for k, v in params.items() if k != "objects"})
    digest = hashlib.sha1(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:10]
    stem = f"train_system_{sysname}_{st.topology.name.replace(':', '_')}_{st.workload.name}_{digest}"
    data, source = experiment_data(config, preset)  # checked by resolve_setting; a flag left out never overrides it
    out, named = output_dir(out, config_with_flags(data, source, {}, {}), source, "train_system")
    check_output_dir(out, named, [f"{stem}.csv", f"{stem}_convergence.csv", STORE_NAME])
    point = {"system": sysname, "workload": workload, "batch": batch, "device": device, "preset": preset,
             "topology": topology, "nis": nis, "algorithm": algorithm, "task": task, "lr": lr, "target": target,
             "max_iterations": max_iterations, "seed": seed, **{k: v for k, v in system_flags.items() if v is not None}}
    if config is not None:
        point["experiment"] = experiment_data(config)[0]
    plan = Plan("train_system", [{k: v for k, v in point.items() if v is not None}], ORIGIN, ORIGIN, [sysname])

    console = make_console(140)
    console.print(f"{sysname} on {desc}; task {task}"
                  + (f" ({st.task.workers} workers, batch {st.task.batch}, lr {st.lr:g}, target {st.target:g})"
                     if st.task is not None else "") + f"; seed {seed}", soft_wrap=True)
    store = out / STORE_NAME
    ran = run_plan_points(console, plan, store, lambda p: sysname)
    timing, conv = tables(ran.metrics[0])
    _table(console, f"{sysname}: time per iteration on {st.workload.name}", timing)
    if conv:
        _table(console, f"{sysname}: convergence on digits ({task})", conv)
    meta = {k: settings[k] for k in ("topology", "workload", "batch", "device", "algorithm", "seed")}
    written = [write_csv_atomic(out / f"{stem}.csv", [{**r, **meta} for r in timing])]
    if conv:
        written.append(write_csv_atomic(out / f"{stem}_convergence.csv", [{**r, "task": task, **meta} for r in conv]))
    reused = " (reused from runs.sqlite)" if ran.summary.done == 0 else ""
    console.print(f"wrote {', '.join(str(w) for w in written)}{reused}", soft_wrap=True)


def _table(console, title: str, rows: list[dict]) -> None:
    from hw_models.console import table
    from hw_models.report.writer import format_number

    cols = [c for c in rows[0] if c != "system"]
    console.print(table(title, [c.replace("_", " ") for c in cols],  # None printed as "None"
                        [[str(r[c]) if r[c] is None else format_number(r[c]) for c in cols] for r in rows], ("run",)))
