"""The RTL runs as ``hw-models rtl regress`` and ``hw-models rtl synth`` make them, below the
commands: the regression's jobs (random schedules and MultiTree node tables), run with a
progress bar and summarised into ``summary-<sim>.json``; the synthesis sweep's checks,
tables (cost per DEPTH x NIS, the DEPTH MultiTree's tables need, the data path) and CSV.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from noc.base.errors import ConfigError

DATAPATH_LANES = (1, 2, 4, 8, 16)


def scheduler_params(depth: int, nis: int):
    from nic.scheduler import SchedulerParams

    return SchedulerParams(depth=depth, nis=nis)


def check_sim(sim: str) -> None:
    """--sim names a supported simulator (checked before any build)."""
    from hw_models.toolchain import SIMULATORS

    if sim not in SIMULATORS:
        raise ConfigError(f"--sim = {sim!r} is not supported; choose one of {', '.join(SIMULATORS)}")


def node_tables(specs: list[str]) -> dict[str, tuple]:
    """MultiTree node tables of each -t spec ('none' skipped, duplicates once): a bad spec fails here, early."""
    from hw_models.rtl.stimulus import multitree_node_tables

    return {spec: multitree_node_tables(spec) for spec in dict.fromkeys(specs) if spec != "none"}


# --- rtl regress -------------------------------------------------------------------------

# random schedules per regression run: each is built and then simulated on the RTL (the
# default is 200); more than this is a run of hours, better split with --first-seed
MAX_REGRESS_SEEDS = 10_000


def check_seeds(seeds: int, first_seed: int) -> None:
    """Every seed of first_seed .. first_seed + seeds - 1 is a valid seed, and there are at
    most :data:`MAX_REGRESS_SEEDS` of them."""
    from noc.base.config import check_seed

    if seeds > MAX_REGRESS_SEEDS:
        raise ConfigError(f"--seeds {seeds}: at most {MAX_REGRESS_SEEDS:,} random schedules per run (each is "
                          f"simulated on the RTL); split a longer regression with --first-seed")
    check_seed(first_seed, "--first-seed")
    if seeds:  # the last seed of the range follows the same rule
        check_seed(first_seed + seeds - 1, f"--first-seed {first_seed} with --seeds {seeds}: the last seed")


def regress_jobs(seeds: int, first_seed: int, depth: int, nis: int, topos: dict) -> list[tuple]:
    """(label, params, episodes) per job: ``seeds`` random schedules on DEPTH x NIS, then every
    node table of MultiTree on each topology (at the DEPTH and NIS its tables need)."""
    from hw_models.rtl.regress import random_episodes
    from hw_models.rtl.stimulus import params_for_tables, table_episodes

    if not seeds and not topos:
        raise ConfigError("nothing to compare: --seeds 0 and no topology (-t none); give --seeds N >= 1 "
                          "or a -t topology")
    jobs = []
    if seeds:
        p = scheduler_params(depth, nis)
        jobs.append((f"random x{seeds} (DEPTH={depth}, NIS={nis})", p,
                     random_episodes(p, range(first_seed, first_seed + seeds))))
    for spec, (tables, tnis, _src) in topos.items():
        p = params_for_tables(tables, tnis)
        jobs.append((f"MultiTree {spec} (DEPTH={p.depth}, NIS={p.nis})", p, table_episodes(tables, spec)))
    return jobs


def run_regress_jobs(console, sim: str, jobs: list[tuple], out: Path, waves: bool) -> tuple[list, float]:
    """Run the jobs in order, stopping after the first that fails: ([(label, result)], wall seconds)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hw_models.rtl.regress import regress as run

    results = []
    t0 = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as prog:
        for k, (label, p, eps) in enumerate(jobs):
            task = prog.add_task(f"{sim} {label}", total=len(eps))
            r = run(sim, p, eps, out_dir=out / f"{sim}-{k}", waves=waves or None,
                    on_progress=lambda n, task=task: prog.update(task, completed=n))
            prog.update(task, completed=r.schedules)
            results.append((label, r))
            if not r.ok:
                break
    return results, time.perf_counter() - t0


def print_problems(console, results: list) -> None:
    for label, r in results:
        if r.mismatch_text:
            console.print(f"[red]MISMATCH[/red] {label}: {r.mismatch_text}")
        if r.error:
            console.print(f"[red]ERROR[/red] {label}: {r.error}")
        for cyc, what in r.violations:
            console.print(f"[red]SCOREBOARD[/red] {label}: cycle {cyc}: {what}")


def write_regress_summary(sim: str, results: list, wall: float, out: Path) -> str:
    """``summary-<sim>.json`` in ``out``, and the one line that says it all."""
    from noc.base.files import replace_atomically

    schedules = sum(r.schedules for _, r in results)
    cycles = sum(r.cycles for _, r in results)
    mism = sum(r.mismatches for _, r in results)
    sim_s = sum(r.sim_wall_s for _, r in results)
    summary = {"sim": sim, "schedules": schedules, "cycles_compared": cycles, "mismatches": mism,
               "simulated_cycles_per_s": round(cycles / sim_s, 1) if sim_s else 0.0, "wall_s": round(wall, 1),
               "jobs": [{"label": label, "schedules": r.schedules, "cycles": r.cycles, "mismatches": r.mismatches,
                         "error": r.error, "cycles_per_s": round(r.cycles_per_s, 1)} for label, r in results]}
    summary_text = json.dumps(summary, indent=1)
    replace_atomically(out / f"summary-{sim}.json", lambda tmp: tmp.write_text(summary_text, encoding="utf-8"))
    return (f"{sim}: {schedules} schedules, {cycles} cycles compared, {mism} mismatches, "
            f"{summary['simulated_cycles_per_s']:,.0f} simulated cycles/s, wall {wall:.1f} s")


def regress_failed(results: list) -> bool:
    return any(r.mismatches or r.error or r.violations for _, r in results)


# --- rtl synth ---------------------------------------------------------------------------

def synth_plan(depths: list[int], nis: list[int], lanes: list[int], ns_per_level: float, fixed_ns: float):
    """The synthesis sweep's parameters checked (each DEPTH and NIS as the scheduler takes
    them, the data path's LANES, the Fmax model's numbers): its delay model."""
    from hw_models.rtl.synth import DelayModel

    for n in lanes:
        if n not in DATAPATH_LANES:
            raise ConfigError(f"--datapath = {n}: LANES must be one of {', '.join(map(str, DATAPATH_LANES))}")
    for d in depths:
        scheduler_params(d, 1)
    for n in nis:
        scheduler_params(16, n)
    for name, v in (("--ns-per-level", ns_per_level), ("--fixed-ns", fixed_ns)):
        if not (v >= 0 and v < 1e6) or (name == "--ns-per-level" and v == 0):
            raise ConfigError(f"{name} = {v}: must be a positive number of ns (--fixed-ns may be 0)")
    return DelayModel(ns_per_level=ns_per_level, fixed_ns=fixed_ns)


def check_add_lats(lats: list[int]) -> list[int]:
    """``--add-lat`` values the adder offers (hw_models.rtl.datapath_ref.ADD_LATS)."""
    from hw_models.rtl.datapath_ref import ADD_LATS

    for v in lats:
        if v not in ADD_LATS:
            raise ConfigError(f"--add-lat = {v}: ADD_LAT must be one of {', '.join(map(str, ADD_LATS))}")
    return lats


def _table(title: str, columns, rows):
    """A rich table of ``rows`` (cells printed with str), every column right-aligned."""
    from rich.table import Table

    table = Table(title=title)
    for c in columns:
        table.add_column(c, justify="right")
    for r in rows:
        table.add_row(*(str(v) for v in r))
    return table


def synth_table(rows: list, top: str, rev: str | None, delay):
    from hw_models.rtl.synth import fields_of

    what = f"rtl/ at {rev}" if rev else "rtl/"
    cols = fields_of(rows)
    return _table(f"{top} ({what}): Yosys synth -flatten; abc -lut 6; ltp -noff (other parameters at defaults); Fmax "
                  f"estimated as 1000 / ({delay.fixed_ns:g} + {delay.ns_per_level:g} x LUT levels) MHz", cols,
                  [[getattr(r, f) for f in cols] for r in rows])


def depth_table(topos: dict):
    """Entries per node of MultiTree's tables on each topology and the DEPTH that holds them."""
    def row(spec, tables, tnis):
        m = max(len(t) for t in tables)
        return spec, len(tables), tnis, m, 1 << max(0, (m - 1).bit_length())

    return _table("MultiTree node tables: entries per node and the DEPTH that holds them",
                  ("topology", "nodes", "NIs/node", "max entries", "DEPTH needed"),
                  [row(spec, tables, tnis) for spec, (tables, tnis, _src) in topos.items()])


def datapath_table(console, lanes: list[int], delay):
    """Synthesise the reduction adder (fp32, int32) and nic_datapath (fp32) at each LANES."""
    from hw_models.rtl.synth import synth_datapath_module

    dp_rows = []
    with console.status("synthesising the data path...") as status:
        for n in lanes:
            for module, fmt in (("nic_reduce_add", 1), ("nic_reduce_add", 0), ("nic_datapath", 1)):
                status.update(f"synthesising {module} LANES={n} {('int32', 'fp32')[fmt]}")
                dp_rows.append(synth_datapath_module(module, n, fmt, delay=delay))
    return _table("Data path (rtl/ working tree): the same Yosys flow and Fmax estimate", dp_rows[0].as_dict(),
                  [r.as_dict().values() for r in dp_rows])


def pnr_markdown(console, depths: list[int], nis: list[int], lanes: list[int], top: str,
                 add_lats: list[int] | None = None) -> str:
    """Place and route every scheduler (DEPTH x NIS) and data path (ADD_LAT x LANES) with nextpnr-ecp5;
    the post-route table as Markdown."""
    from hw_models.rtl.pnr import markdown_table, pnr_jobs, pnr_sweep

    with console.status("placing and routing (nextpnr-ecp5)...") as status:
        rows = pnr_sweep(pnr_jobs(depths, nis, lanes, top=top, add_lats=add_lats or [0]),
                         on_row=lambda r: status.update(f"routed {r.top} {r.label} ({r.seconds:.0f} s)"))
    return markdown_table(rows)
