"""``hw-models noc sweep-load``: a load-latency sweep whose every point is a point of sweep
kind ``noc_load``, run one at a time (in this process unless ``--workers``/``--dask``) through :mod:`hw_models.sweep.plan`
into the output directory's sweep store (``<out>/runs.sqlite``), where the next load is
chosen from the points before it (:func:`noc.flitsim_sweep.sweep_load`). A point the store
holds finished is reused (a re-run resumes; ``--fresh`` runs every point again); Ctrl-C, a
deadlock or SIGKILL keep every point finished before it. Table, CSV and PNG are rendered from
the points' stored metrics (docs/noc.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from hw_models.console import console, progress_bar
from hw_models.noc_run import (booksim_base, booksim_stem, check_time, fmt, load_booksim, load_point, output_dir, stem,
                               time_columns, toml_base)

ORIGIN = "hw-models noc sweep-load"


@dataclass(frozen=True)
class LoadSweep:
    """A sweep-load checked and resolved: the network, the sweep's choices, the point each
    load becomes and where the outputs go."""

    topology: object  # noc.topology.Topology
    router: object  # noc.flit.FlitNetworkConfig
    traffic: object  # noc.flit_traffic.TrafficConfig
    sweep: object  # noc.flitsim_sweep.SweepConfig
    base: dict  # the noc_load point's network, channels and router sections
    source: str  # the config file, in messages
    out_dir: Path
    stem: str
    booksim: bool
    store_path: Path  # the output directory's sweep store
    clock_ghz: float = 1.0  # network.clock_ghz: the tables' and CSV's times in ns


def resolve(args: list[str] | None, booksim: Optional[Path], pattern: Optional[str], seed: Optional[int],
            out: Optional[Path], yes: bool) -> LoadSweep:
    """Every check before the first point: the config, the run time, the output files."""
    from hw_models.noc_experiment import load_noc_experiment
    from hw_models.noc_run import split_args
    from hw_models.store import STORE_NAME
    from noc.flitsim_sweep import SweepConfig

    config, overrides = split_args(args, booksim, {"--pattern": pattern, "--seed": seed})
    if booksim is not None:  # cfg None: a BookSim2 file has no out_dir key (results/noc) and no clock (1 GHz)
        run, cfg = load_booksim(booksim, overrides), None
        t, router, tr, sweep, name = run.topology, run.network, run.traffic, SweepConfig(), "sweep_" + booksim_stem(run)
    else:
        cfg, t = load_noc_experiment(config, pattern, seed)
        router, tr, sweep, name = cfg.router, cfg.traffic, cfg.sweep, f"sweep_{stem(t, cfg)}"
    check_time(t, tr, sweep.max_points, yes)
    out_dir = output_dir(out, cfg, config, [f"{name}.{ext}" for ext in ("csv", "png")] + [STORE_NAME])
    base = booksim_base(t, router) if cfg is None else toml_base(config)
    return LoadSweep(t, router, tr, sweep, base, str(booksim or config), out_dir, name, cfg is None,
                     out_dir / STORE_NAME, cfg.network.clock_ghz if cfg is not None else 1.0)


class StoredPoints:
    """The sweep's ``run_point``: a load's point (``base`` with the load's traffic) run
    through the sweep executor into the store at ``store_path`` (reused when finished there,
    unless ``fresh``), its :class:`noc.flit_traffic.RunStats` read back from the stored
    metrics. :meth:`stored` only reads: the sweep as far as the store holds it."""

    def __init__(self, s: LoadSweep, fresh: bool, workers: Optional[int] = None, dask: Optional[str] = None) -> None:
        self.s, self.fresh, self.workers, self.dask = s, fresh, workers, dask
        self.asked: set[str] = set()  # the keys of the points this sweep asked for

    def _points(self, traffic):
        return load_point(self.s.base, traffic, self.s.source, ORIGIN, self.s.topology if self.s.booksim else None)

    def __call__(self, traffic):
        from hw_models.sweep.kinds.noc_load import stats_from_metrics
        from hw_models.job import backend
        from hw_models.sweep.plan import run_plan

        plan, points = self._points(traffic)
        self.asked.add(points[0].key)
        ran = run_plan(plan, self.s.store_path, fresh=self.fresh, points=points, **backend(self.workers, self.dask))
        return stats_from_metrics(ran.metrics[0]), ran.summary.done == 0

    def stored(self, traffic):
        """The point's stats when the store holds it finished (with ``fresh``: only a point
        this sweep asked for); a KeyboardInterrupt otherwise, which ends the sweep there."""
        from hw_models.sweep.kinds.noc_load import stats_from_metrics
        from hw_models.sweep.store import SweepStore

        _, points = self._points(traffic)
        key = points[0].key
        with SweepStore(self.s.store_path) as st:
            found = st.metrics_of([key]) if key in self.asked or not self.fresh else {}
        if key not in found:
            raise KeyboardInterrupt
        return stats_from_metrics(found[key]), True


def _as_stored(s: LoadSweep, points: StoredPoints, partial):
    """The sweep as far as the store holds it, once it was interrupted: the points finished
    before the interrupt, and the one it may have caught after it was stored."""
    from noc.base.errors import HwModelsError
    from noc.flitsim_sweep import SweepInterrupted, sweep_load as sweep

    try:
        return sweep(s.topology, s.router, s.traffic, s.sweep, run_point=points.stored)
    except SweepInterrupted as exc:
        return exc.result
    except HwModelsError:  # the deadlock or bad first point the sweep met before: as interrupted
        return partial


def sweep_load(args: list[str] | None, booksim: Optional[Path], pattern: Optional[str], seed: Optional[int],
               out: Optional[Path], yes: bool, fresh: bool, workers: Optional[int] = None,
               dask: Optional[str] = None) -> None:
    """The whole command: resolve, sweep with a progress bar, print and write (module docstring)."""
    import typer

    from noc.base.errors import ConfigError
    from noc.flitsim_sweep import SweepDeadlockError, SweepInterrupted, sweep_load as sweep

    s = resolve(args, booksim, pattern, seed, out, yes)
    con = console()
    t, router, tr = s.topology, s.router, s.traffic
    con.print(f"load sweep on {t.name} ({t.num_endpoints} NIs), {tr.pattern} traffic, packets of "
              f"{tr.packet_flits} flits, {router.num_vcs} VCs x {router.vc_depth_flits} flits, "
              f"{router.flow_control}, {router.allocator if router.sw_allocator == 'vc_first' else router.sw_allocator}"
              f"{', BookSim2 semantics and methodology' if s.booksim else ''}; seed {tr.seed}")
    title = f"{t.name}, {tr.pattern} traffic"
    points = StoredPoints(s, fresh, workers, dask)
    progress = progress_bar(con)
    task = progress.add_task("load points", total=s.sweep.max_points)

    def on_point(i, load, stats, saturated):
        progress.update(task, completed=i, description=f"{load:.4f} flits/NI/cycle: "
                        f"{'saturated' if saturated else fmt(stats.latency_avg, 1) + ' cycles'}")

    try:
        with progress:
            try:
                res = sweep(t, router, tr, s.sweep, on_point=on_point, run_point=points)
            except ConfigError as exc:  # a first point that is not at near-zero load
                raise ConfigError(f"{s.source}: {exc}") from None
            progress.update(task, total=len(res.points), completed=len(res.points))
    except SweepInterrupted as exc:  # Ctrl-C: show and write what is finished; the store keeps it for a re-run
        part = _as_stored(s, points, exc.result)
        print_sweep(con, t, tr, part, clock_ghz=s.clock_ghz)
        written = write_sweep(con, s, part, title + " (interrupted)") if part.points else []
        con.print(f"interrupted after {len(part.points)} point(s) (of at most {s.sweep.max_points}): "
                  + (f"wrote them to {' and '.join(map(str, written))}; " if written else "")
                  + f"finished points are kept in {s.store_path}; run the same command again to resume")
        raise typer.Exit(130) from None
    except SweepDeadlockError as exc:  # the points before the deadlock are results: show and write them
        part = exc.result
        print_sweep(con, t, tr, part, deadlock_flits=exc.offered_flits, clock_ghz=s.clock_ghz)
        written = write_sweep(con, s, part, title + f" (deadlock at {exc.offered_flits:.4g})",
                              deadlock_flits=exc.offered_flits) if part.points else []
        kept = (f"the {len(part.points)} point(s) measured before it are in {' and '.join(map(str, written))}"
                if written else "no point was measured before it")
        raise type(exc)(f"{s.source}: {exc}; {kept}", part, exc.offered_flits) from None
    print_sweep(con, t, tr, res, clock_ghz=s.clock_ghz)
    con.print(f"zero-load latency {res.zero_load_latency_cycles:.2f} cycles measured at {res.points[0].offered_flits:.4g} "
              f"flits/NI/cycle (analytic {res.zero_load_latency_analytic_cycles:.2f})")
    con.print(saturation_line(res, s.sweep.max_points))
    written = write_sweep(con, s, res, title)
    reused = f" ({res.reused_points} point(s) reused from {s.store_path.name})" if res.reused_points else ""
    con.print(f"wrote {' and '.join(map(str, written))}{reused}")


def print_sweep(con, t, tr, res, deadlock_flits: float | None = None, clock_ghz: float = 1.0) -> None:
    """The load-latency table of ``res`` (with a last row for a load that deadlocked):
    latencies in cycles and the average in ns at ``clock_ghz``."""
    from hw_models.console import table

    rows = []
    for p in res.points:
        st = p.stats
        u = st.link_utilisation[t.is_router_link] if st.link_utilisation.size else st.link_utilisation
        rows.append((f"{p.offered_flits:.4f}", fmt(st.accepted_flits, 4), fmt(st.latency_avg, 1),
                     fmt(st.latency_avg / clock_ghz, 1), fmt(st.latency_p50, 0), fmt(st.latency_p99, 0),
                     fmt(st.network_latency_avg, 1), fmt(st.hops_avg, 2), fmt(float(u.max()) if u.size else 0.0, 3),
                     "saturated" if p.saturated else "ok"))
    if deadlock_flits is not None:
        rows.append((f"{deadlock_flits:.4f}", *["-"] * 8, "DEADLOCK"))
    con.print(table(f"load-latency: {t.name}, {tr.pattern} (cycles; ns at {clock_ghz:g} GHz)", ("offered", "accepted",
                    "lat avg", "lat ns", "p50", "p99", "net lat", "hops", "max link", "verdict"), rows))


def write_sweep(con, s: LoadSweep, res, title: str, deadlock_flits: float | None = None) -> list[Path]:
    """Write the sweep's CSV and PNG (each whole, under a unique temporary name), under the
    output directory's lock, so that two sweeps into one folder replace these files one
    after the other; when they held other points (another configuration's sweep of the
    same topology and pattern, or an unfinished one), a note says so: every point stays in
    the store."""
    from hw_models.job import write_rows
    from hw_models.report.charts import load_latency_chart

    rows = [time_columns(dict(r, clock_ghz=s.clock_ghz), s.clock_ghz) for r in res.rows]
    return write_rows(con, s.out_dir / f"{s.stem}.csv", rows, f"every point measured stays in {s.store_path}",
                      lambda png: load_latency_chart(res, png, title, deadlock_flits=deadlock_flits),
                      held="other points (another configuration's sweep of this topology and pattern, or an "
                           "unfinished sweep)")


def saturation_line(res, max_points: int) -> str:
    """The sweep's saturation finding, or why there is none."""
    tail = f"peak accepted {fmt(res.peak_accepted_flits, 4)}; uniform bisection bound {res.bound_flits:.4f}"
    if res.saturation_reached:
        return (f"saturation throughput {res.saturation_offered_flits:.4f} flits/NI/cycle offered (first saturated "
                f"{res.first_saturated_flits:.4f}, {100 * res.saturation_offered_flits / res.bound_flits:.0f} % of the "
                f"bound), {tail}")
    top = res.highest_offered_flits
    if top >= res.max_offered_flits:
        why = (f"saturation not reached: no point saturated up to {top:.4f} flits/NI/cycle, the most the traffic "
               f"generator offers (one packet per NI per cycle; an on/off source alpha / (alpha + beta) of that)")
    else:
        why = (f"saturation not reached within {max_points} points (highest load {top:.4f} flits/NI/cycle, not "
               f"saturated; raise sweep.max_points or sweep.step_flits)")
    return f"{why}; {tail}"
