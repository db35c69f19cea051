"""``hw-models noc``: synthetic-traffic runs and load–latency sweeps of the flit-level network.

    hw-models noc run CONFIG [--rate 0.1] [--pattern uniform] [--seed 1] [--out DIR]
    hw-models noc sweep-load CONFIG [--pattern uniform] [--seed 1] [--out DIR]
    hw-models noc run --booksim BOOKSIM_FILE [key=value ...] [--out DIR]
    hw-models noc sweep-load --booksim BOOKSIM_FILE [key=value ...] [--out DIR]

CONFIG is a TOML file (docs/noc_example.toml; every key is documented in docs/noc.md):
``[network]`` (:class:`hw_models.config.NetworkConfig`, as in every hw-models config:
topology, link latency, NIs per node), ``[router]`` (:class:`noc.flit.FlitNetworkConfig`),
``[traffic]`` (:class:`noc.flit_traffic.TrafficConfig`), ``[sweep]``
(:class:`noc.flitsim_sweep.SweepConfig`) and a top-level ``out_dir``. Both commands print a table and write CSV and PNG
into the output directory (files are written whole or not at all, under unique temporary names). ``run`` records
its configuration in its CSV and says so when it replaces another configuration's run of the same name. ``sweep-load``
also appends every finished point to a result store (``<stem>.jsonl``): Ctrl-C or a deadlock at a high load keeps
the points finished before it (written to the CSV and PNG as well), and the same command resumes from the store.

With ``--booksim`` the configuration is a BookSim2 file instead (its ``key = value;``
syntax; the arguments after it are BookSim2 overrides, as on its own command line), run with
BookSim2's semantics and methodology (:mod:`noc.booksim_config`); ``run`` prints BookSim2's
final statistics under its names and writes them to CSV.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from hw_models.noc_experiment import load_noc_experiment as load_experiment

app = typer.Typer(help="Flit-level network: synthetic traffic runs and load-latency sweeps.", no_args_is_help=True)


def load_booksim(path: Path, overrides: list[str]):
    """Read a BookSim2 file with ``key=value`` overrides into a :class:`noc.booksim_config.BookSimRun`
    (one-line errors naming the file and key); checks the pattern fits the topology."""
    from noc.booksim_config import from_booksim, read_booksim
    from noc.flit import build_network
    from noc.flit_traffic import destinations

    run = from_booksim(read_booksim(path, overrides), str(path))
    destinations(run.traffic.pattern, run.topology, run.traffic.perm_seed)
    build_network(run.topology, run.network)
    return run


def _split_args(args: list[str] | None, booksim: Optional[Path], flags: dict) -> tuple[Optional[Path], list[str]]:
    """(CONFIG, BookSim2 overrides) from the positional arguments: CONFIG alone without
    --booksim, only key=value overrides with it (and none of the TOML flags)."""
    from noc.base.errors import ConfigError

    args = list(args or [])
    if booksim is None:
        if len(args) != 1:
            raise ConfigError("expected one CONFIG (a TOML file), or --booksim FILE [key=value ...]; got "
                              f"{len(args)} arguments")
        return Path(args[0]), []
    bad = [a for a in args if "=" not in a]
    if bad:
        raise ConfigError(f"with --booksim the arguments are BookSim2 overrides key=value; got {bad[0]!r}")
    given = [name for name, value in flags.items() if value is not None]
    if given:
        raise ConfigError(f"{given[0]} does not go with --booksim; give the BookSim2 key instead "
                          "(injection_rate=..., traffic=..., seed=...)")
    return None, args


def _booksim_out_dir(out: Optional[Path], files: list[str]) -> Path:
    """The output directory of a --booksim run (--out, default results/noc: a BookSim2 file
    has no out_dir key), checked before simulating."""
    from hw_models.store import check_output_dir

    return check_output_dir(out if out is not None else Path("results/noc"), "--out", files)


def _booksim_stem(run) -> str:
    """Output names: the network, the pattern and a hash of every BookSim2 value, so
    different configurations never share a file."""
    import hashlib
    import json

    digest = hashlib.sha1(json.dumps(run.values, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"booksim_{run.topology.name.replace(':', '_')}_{run.traffic.pattern}_{digest}"


def booksim_rows(run, stats) -> list[tuple[str, str]]:
    """BookSim2's final statistics, under its names, for what this model measures."""
    t = run.traffic
    return [
        ("Packet latency average", _fmt(stats.latency_avg, 4)), ("Packet latency minimum", _fmt(stats.latency_min, 0)),
        ("Packet latency maximum", _fmt(stats.latency_max, 0)),
        ("Network latency average", _fmt(stats.network_latency_avg, 4)),
        ("Injected packet rate average", _fmt(stats.injected_flits / t.mean_packet_flits, 6)),
        ("Accepted packet rate average", _fmt(stats.accepted_flits / t.mean_packet_flits, 6)),
        ("Injected flit rate average", _fmt(stats.injected_flits, 6)),
        ("Accepted flit rate average", _fmt(stats.accepted_flits, 6)),
        ("Hops average", _fmt(stats.hops_avg + 1, 4)),  # BookSim2 counts routers traversed
        ("Simulated cycles (to the end of the measured drain)", f"{stats.cycles}"),
    ]


def _run_booksim_cmd(path: Path, overrides: list[str], out: Optional[Path], yes: bool = False) -> None:
    from rich.table import Table

    from hw_models.store import write_csv_atomic
    from noc.flit_traffic import run_traffic

    run = load_booksim(path, overrides)
    _check_time(run.topology, run.traffic, 1, yes)
    stem = _booksim_stem(run)
    out_dir = _booksim_out_dir(out, [f"{stem}.csv"])
    console = _console()
    for note in run.notes:
        console.print(f"note: {note}")
    tr = run.traffic
    with console.status(f"simulating {run.topology.name} with BookSim2's semantics, {tr.pattern} at "
                        f"{tr.rate_packets:g} packets/node/cycle, seed {tr.seed} ..."):
        stats = run_traffic(run.topology, run.network, tr)
    title = (f"{path}: {run.topology.name}, {tr.pattern}, {tr.rate_packets:g} packets/node/cycle, seed {tr.seed} "
             f"(BookSim2 semantics)")
    table = Table(title=title, show_header=False)
    table.add_column("statistic")
    table.add_column("value", justify="right")
    if not stats.stable:
        table.add_row("verdict", f"UNSTABLE: {stats.verdict} (BookSim2 prints no final statistics then)")
    rows = booksim_rows(run, stats)
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    record = {"file": str(path), "overrides": " ".join(overrides), "verdict": "stable" if stats.stable else "unstable",
              **{k: (str(v) if isinstance(v, list) else v) for k, v in run.values.items()},
              **{k.lower().replace(" ", "_").replace("(", "").replace(")", ""): v for k, v in rows}}
    csv_path = write_csv_atomic(out_dir / f"{stem}.csv", [record])
    console.print(f"wrote {csv_path}")


def _stem(t, cfg) -> str:
    """File name stem: the parsed topology's normalised name (not the config's raw string) and the pattern."""
    return f"{t.name.replace(':', '_')}_{cfg.traffic.pattern}"


def _output_dir(out: Optional[Path], cfg, config: Path, files: list[str]) -> Path:
    """Make the output directory and check ``files`` can be written there, before simulating
    (so a bad one costs no run); one-line errors naming --out or the config's out_dir."""
    from hw_models.store import check_output_dir

    out_dir = out if out is not None else Path(cfg.out_dir)
    return check_output_dir(out_dir, "--out" if out is not None else f"{config}: out_dir =", files)


def _console():
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 120)


def _fmt(x: float, digits: int = 2) -> str:
    return "-" if x != x else f"{x:,.{digits}f}"  # nan -> '-'


_SEED_HELP = "Seed, an integer in [0, 2**32 - 1] (default: the config's traffic.seed)."
_YES_HELP = ("Start runs estimated to take longer than 10 minutes (without it they are refused, with the estimate: "
             "every link for every cycle the runs may take).")


def _check_time(t, traffic, points: int, yes: bool) -> None:
    """Refuse (with the estimate) runs of ``traffic`` on ``t`` estimated to take over 10 minutes, unless --yes."""
    from hw_models.estimate import check_long_run, traffic_cycles, traffic_seconds

    what = (f"{points} load point(s) of up to {traffic_cycles(traffic):,} cycles each" if points > 1
            else f"a run of up to {traffic_cycles(traffic):,} cycles") + f" on {t.name} ({t.num_links:,} links)"
    check_long_run(traffic_seconds(t, traffic, points), what, yes,
                   "fewer cycles (traffic.warmup_cycles, measure_cycles, drain_limit_cycles; BookSim2: sample_period, "
                   "max_samples) or a smaller network")


_ARGS_HELP = "CONFIG (an experiment TOML, see docs/noc_example.toml); with --booksim: BookSim2 overrides key=value."
_BOOKSIM_HELP = "A BookSim2 config file, run with BookSim2's semantics and methodology (docs/noc.md)."


@app.command()
def run(
    args: Optional[list[str]] = typer.Argument(None, help=_ARGS_HELP, show_default=False),
    booksim: Optional[Path] = typer.Option(None, "--booksim", help=_BOOKSIM_HELP),
    rate: Optional[float] = typer.Option(None, "--rate", help="Offered load in packets/NI/cycle (default: the config's traffic.rate_packets)."),
    pattern: Optional[str] = typer.Option(None, "--pattern", help="Traffic pattern (default: the config's)."),
    seed: Optional[int] = typer.Option(None, "--seed", help=_SEED_HELP),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default: the config's out_dir; results/noc with --booksim)."),
    yes: bool = typer.Option(False, "--yes", help=_YES_HELP),
) -> None:
    """One load point: warm-up, measurement, drain. Prints latency, throughput, hops, link use; writes CSV and PNG."""
    config, overrides = _split_args(args, booksim, {"--rate": rate, "--pattern": pattern, "--seed": seed})
    if booksim is not None:
        return _run_booksim_cmd(booksim, overrides, out, yes)
    import numpy as np
    from rich.table import Table

    from hw_models.report.charts import link_utilisation_chart
    from hw_models.store import locked_directory, write_csv_atomic
    from noc.flit_traffic import run_traffic
    from noc.flitsim_sweep import bisection_bound_flits, zero_load_latency_cycles

    cfg, t = load_experiment(config, pattern, seed, rate)
    tr = cfg.traffic
    _check_time(t, tr, 1, yes)
    stem = f"run_{_stem(t, cfg)}_{tr.rate_packets:g}"
    out_dir = _output_dir(out, cfg, config, [f"{stem}.csv", f"{stem}_links.csv", f"{stem}_links.png"])
    console = _console()
    with console.status(f"simulating {t.name}, {tr.pattern} at {tr.rate_packets:g} packets/NI/cycle ..."):
        stats = run_traffic(t, cfg.router, tr)
    analytic = zero_load_latency_cycles(t, cfg.router, tr)
    router_links = np.nonzero(t.is_router_link)[0]
    util = stats.link_utilisation
    table = Table(title=f"{t.name}, {tr.pattern}, {tr.rate_packets:g} packets/NI/cycle "
                        f"({stats.offered_flits:.4g} flits/NI/cycle), seed {tr.seed}", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("verdict", "stable" if stats.stable else "SATURATED / UNSTABLE (measured packets not drained)"),
        ("offered (flits/NI/cycle)", _fmt(stats.offered_flits, 4)),
        ("accepted (flits/NI/cycle)", _fmt(stats.accepted_flits, 4)),
        ("uniform bisection bound (flits/NI/cycle)", _fmt(bisection_bound_flits(t, cfg.router.flit_bytes), 4)),
        ("packet latency avg / p50 / p99 (cycles)", f"{_fmt(stats.latency_avg)} / {_fmt(stats.latency_p50, 0)} / {_fmt(stats.latency_p99, 0)}"),
        ("network latency avg (cycles)", _fmt(stats.network_latency_avg)),
        ("zero-load latency, analytic (cycles)", _fmt(analytic)),
        ("hops avg (router to router)", _fmt(stats.hops_avg, 3)),
        ("measured packets delivered", f"{stats.packets:,}"),
        ("router-link utilisation mean / max", f"{_fmt(float(util[router_links].mean()) if router_links.size else 0.0, 3)} / "
                                               f"{_fmt(float(util[router_links].max()) if router_links.size else 0.0, 3)}"),
        ("simulated cycles", f"{stats.cycles:,}"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)

    row = {"topology": t.name, "pattern": tr.pattern, "rate_packets": tr.rate_packets, "seed": tr.seed, **stats.row(),
           "zero_load_latency_analytic": round(analytic, 3), **_run_config_columns(cfg, t)}
    link_rows = [{"link": int(l), "src": int(t.link_src[l]), "dst": int(t.link_dst[l]), "router_link": bool(t.is_router_link[l]),
                  "utilisation": round(float(util[l]), 5)} for l in range(t.num_links)]
    csv_path = out_dir / f"{stem}.csv"
    with locked_directory(out_dir):  # another run into this folder waits: its comparison comes after these files
        other = _other_configuration(csv_path, row)
        if other is not None:
            console.print(f"note: replacing {csv_path} and its _links.csv and _links.png ({other}); give --out "
                          "another directory to keep both", soft_wrap=True)
        csv_path = write_csv_atomic(csv_path, [row])
        links_path = write_csv_atomic(out_dir / f"{stem}_links.csv", link_rows)
        png_path = link_utilisation_chart(t, util, out_dir / f"{stem}_links.png",
                                          f"{t.name} {tr.pattern} @ {stats.offered_flits:.3g} flits/NI/cycle")
    console.print(f"wrote {csv_path}, {links_path} and {png_path}")


# columns of a run's CSV that its file name does not show: they tell the configuration that wrote it
_NAMED_TRAFFIC_KEYS = ("pattern", "rate_packets", "seed")  # in the name or a column of their own
_NETWORK_KEYS_IN_TOPOLOGY = ("topology", "nis_per_node")  # the topology column shows them


def _run_config_columns(cfg, t) -> dict:
    """The configuration of a ``noc run`` as CSV columns: ``config_hash`` (a hash of the
    topology with its link latencies and widths, ``[router]`` and ``[traffic]``: everything
    that determines the result) and every key as ``<section>.<key>``."""
    import hashlib
    import json

    fields = {"topology": t.to_dict(), "router": cfg.router.model_dump(mode="json"),
              "traffic": cfg.traffic.model_dump(mode="json")}
    columns = {"config_hash": hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]}
    skip = {"network": _NETWORK_KEYS_IN_TOPOLOGY, "traffic": _NAMED_TRAFFIC_KEYS}
    for section in ("network", "channels", "router", "traffic"):
        for key, value in getattr(cfg, section).model_dump(mode="json").items():
            if key not in skip.get(section, ()):
                columns[f"{section}.{key}"] = json.dumps(value) if isinstance(value, (list, dict)) else value
    return columns


def _other_configuration(csv_path: Path, row: dict) -> str | None:
    """None when ``csv_path`` is missing or was written by a run of the same configuration as
    ``row``'s; otherwise, for the note, what differs (the keys and values, old -> new)."""
    import csv

    try:
        with csv_path.open(newline="", encoding="utf-8") as f:
            old = next(csv.DictReader(f), None)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, csv.Error):
        old = None
    if old is None or not old.get("config_hash"):
        return "its configuration is not recorded in it: written by an earlier version, or not by this command"
    if old["config_hash"] == row["config_hash"]:
        return None
    new = {k: "" if v is None else str(v) for k, v in row.items()}
    keys = ["seed"] + [k for k in new if "." in k]
    changed = [f"{k} {old[k] or 'unset'} -> {new[k] or 'unset'}" for k in keys if k in old and old[k] != new[k]]
    if not changed:  # e.g. the links' latencies of the [network] topology spec
        changed = [f"config_hash {old['config_hash']} -> {row['config_hash']}"]
    return ("written by another configuration: " + ", ".join(changed[:4])
            + (f" and {len(changed) - 4} more" if len(changed) > 4 else ""))


@app.command(name="sweep-load")
def sweep_load_cmd(
    args: Optional[list[str]] = typer.Argument(None, help=_ARGS_HELP, show_default=False),
    booksim: Optional[Path] = typer.Option(None, "--booksim", help=_BOOKSIM_HELP + " Its injection_rate is swept."),
    pattern: Optional[str] = typer.Option(None, "--pattern", help="Traffic pattern (default: the config's)."),
    seed: Optional[int] = typer.Option(None, "--seed", help=_SEED_HELP),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default: the config's out_dir; results/noc with --booksim)."),
    yes: bool = typer.Option(False, "--yes", help=_YES_HELP),
    fresh: bool = typer.Option(False, "--fresh", help="Simulate again the points already in the result store; their "
                               "new records supersede the old (default: reuse them, resume)."),
) -> None:
    """Offered load from near zero to saturation: zero-load latency, saturation throughput; table, CSV and PNG.

    Every finished point is kept in a result store (<stem>.jsonl), so an interrupted sweep resumes."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hw_models.store import ResultStore
    from noc.base.errors import ConfigError
    from noc.flitsim_sweep import SweepConfig, SweepDeadlockError, SweepInterrupted, sweep_load

    config, overrides = _split_args(args, booksim, {"--pattern": pattern, "--seed": seed})
    if booksim is not None:
        run = load_booksim(booksim, overrides)
        t, router, tr, sweep = run.topology, run.network, run.traffic, SweepConfig()
        _check_time(t, tr, sweep.max_points, yes)
        stem = "sweep_" + _booksim_stem(run)
        out_dir = _booksim_out_dir(out, [f"{stem}.{ext}" for ext in ("csv", "png", "jsonl")])
        config = booksim
    else:
        cfg, t = load_experiment(config, pattern, seed)
        router, tr, sweep = cfg.router, cfg.traffic, cfg.sweep
        _check_time(t, tr, sweep.max_points, yes)
        stem = f"sweep_{_stem(t, cfg)}"
        out_dir = _output_dir(out, cfg, config, [f"{stem}.{ext}" for ext in ("csv", "png", "jsonl")])
    console = _console()
    store = ResultStore(out_dir / f"{stem}.jsonl")
    points = _SweepPoints(store, t, router, fresh)
    console.print(f"load sweep on {t.name} ({t.num_endpoints} NIs), {tr.pattern} traffic, packets of "
                  f"{tr.packet_flits} flits, {router.num_vcs} VCs x {router.vc_depth_flits} flits, "
                  f"{router.flow_control}, {router.allocator if router.sw_allocator == 'vc_first' else router.sw_allocator}"
                  f"{', BookSim2 semantics and methodology' if booksim is not None else ''}; seed {tr.seed}")
    progress = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console)
    task = progress.add_task("load points", total=sweep.max_points)

    def on_point(i, load, stats, saturated):
        progress.update(task, completed=i, description=f"{load:.4f} flits/NI/cycle: "
                        f"{'saturated' if saturated else _fmt(stats.latency_avg, 1) + ' cycles'}")

    title = f"{t.name}, {tr.pattern} traffic"
    try:
        with progress:
            try:
                res = sweep_load(t, router, tr, sweep, on_point=on_point, points=points)
            except ConfigError as exc:  # a first point that is not at near-zero load
                raise ConfigError(f"{config}: {exc}") from None
            progress.update(task, total=len(res.points), completed=len(res.points))
    except SweepInterrupted as exc:  # Ctrl-C: show and write what is finished; the store keeps it for a re-run
        part = exc.result
        _print_sweep(console, t, tr, part)
        written = _write_sweep(console, store, part, out_dir, stem, title + " (interrupted)") if part.points else []
        console.print(f"interrupted after {len(part.points)} point(s) (of at most {sweep.max_points}): "
                      + (f"wrote them to {' and '.join(map(str, written))}; " if written else "")
                      + f"finished points are kept in {store.path}; run the same command again to resume")
        raise typer.Exit(130) from None
    except SweepDeadlockError as exc:  # the points before the deadlock are results: show and write them
        part = exc.result
        _print_sweep(console, t, tr, part, deadlock_flits=exc.offered_flits)
        written = _write_sweep(console, store, part, out_dir, stem, title + f" (deadlock at {exc.offered_flits:.4g})",
                               deadlock_flits=exc.offered_flits) if part.points else []
        kept = (f"the {len(part.points)} point(s) measured before it are in {' and '.join(map(str, written))}"
                if written else "no point was measured before it")
        raise type(exc)(f"{config}: {exc}; {kept}", part, exc.offered_flits) from None
    _print_sweep(console, t, tr, res)
    console.print(f"zero-load latency {res.zero_load_latency_cycles:.2f} cycles measured at {res.points[0].offered_flits:.4g} "
                  f"flits/NI/cycle (analytic {res.zero_load_latency_analytic_cycles:.2f})")
    console.print(_saturation_line(res, sweep.max_points))
    written = _write_sweep(console, store, res, out_dir, stem, title)
    reused = f" ({res.reused_points} point(s) reused from {store.path.name})" if res.reused_points else ""
    console.print(f"wrote {' and '.join(map(str, written))}{reused}")


class _SweepPoints:
    """The sweep's :class:`noc.flitsim_sweep.PointStore` over a :class:`hw_models.store.ResultStore`:
    one record per finished load point, under a key that hashes everything that determines
    it (topology, router, traffic with its rate, the flit model's version). Several
    configurations' points share one store file without mixing; ``fresh`` reads none."""

    def __init__(self, store, topology, router, fresh: bool) -> None:
        self.store, self.topology, self.router = store, topology, router
        self.done = {} if fresh else {r["key"]: r for r in store.records()}

    def key(self, traffic) -> str:
        import hashlib
        import json

        from noc.flit import MODEL_VERSION

        fields = {"topology": self.topology.to_dict(), "router": self.router.model_dump(mode="json"),
                  "traffic": traffic.model_dump(mode="json"), "flit_model_version": MODEL_VERSION}
        digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]
        return f"{self.topology.name}|{traffic.pattern}|{traffic.rate_packets!r}|{digest}"

    def get(self, traffic):
        record = self.done.get(self.key(traffic))
        return None if record is None else _stats_from_record(record)

    def put(self, traffic, stats) -> None:
        self.store.append(self.key(traffic), _stats_record(stats))


def _stats_record(stats) -> dict:
    """A :class:`noc.flit_traffic.RunStats` as plain JSON data (its arrays as lists)."""
    import dataclasses

    import numpy as np

    out = {}
    for f in dataclasses.fields(stats):
        v = getattr(stats, f.name)
        out[f.name] = v.tolist() if isinstance(v, np.ndarray) else v.item() if isinstance(v, np.generic) else v
    return out


def _stats_from_record(record: dict):
    """The RunStats of a stored point, or None when the record does not hold one (the point
    is then simulated again and its new record supersedes this one)."""
    import dataclasses

    import numpy as np

    from noc.flit_traffic import RunStats

    names = {f.name for f in dataclasses.fields(RunStats)}
    data = {k: v for k, v in record.items() if k in names}
    if set(data) != names:
        return None
    try:
        data["link_utilisation"] = np.asarray(data["link_utilisation"], dtype=np.float64)
        counts = [data["packets"], data["cycles"]]
        if data["link_utilisation"].ndim != 1 or not isinstance(data["stable"], bool) \
                or not all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
            return None
        return RunStats(**data)
    except (TypeError, ValueError):
        return None


def _print_sweep(console, t, tr, res, deadlock_flits: float | None = None) -> None:
    """The load-latency table of ``res`` (with a last row for a load that deadlocked)."""
    from rich.table import Table

    table = Table(title=f"load-latency: {t.name}, {tr.pattern}")
    for col in ("offered", "accepted", "lat avg", "p50", "p99", "net lat", "hops", "max link", "verdict"):
        table.add_column(col, justify="right")
    for p in res.points:
        s = p.stats
        u = s.link_utilisation[t.is_router_link] if s.link_utilisation.size else s.link_utilisation
        table.add_row(f"{p.offered_flits:.4f}", _fmt(s.accepted_flits, 4), _fmt(s.latency_avg, 1), _fmt(s.latency_p50, 0),
                      _fmt(s.latency_p99, 0), _fmt(s.network_latency_avg, 1), _fmt(s.hops_avg, 2),
                      _fmt(float(u.max()) if u.size else 0.0, 3),
                      "saturated" if p.saturated else "ok")
    if deadlock_flits is not None:
        table.add_row(f"{deadlock_flits:.4f}", *["-"] * 7, "DEADLOCK")
    console.print(table)


def _write_sweep(console, store, res, out_dir: Path, stem: str, title: str, deadlock_flits: float | None = None) -> list[Path]:
    """Write the sweep's CSV and PNG (each whole, under a unique temporary name). Under the
    store's lock, so that two sweeps into one folder replace these files one after the
    other; when they held other points (another configuration's sweep of the same topology
    and pattern, or an unfinished one), a note says so: every point stays in the store."""
    from hw_models.report.charts import load_latency_chart
    from hw_models.report.writer import replacing_note
    from hw_models.store import csv_holds_other_rows, write_csv_atomic

    csv_path, png_path = out_dir / f"{stem}.csv", out_dir / f"{stem}.png"
    with store.locked():
        if csv_holds_other_rows(csv_path, res.rows):
            console.print(replacing_note(csv_path, "other points (another configuration's sweep of this topology and "
                                         "pattern, or an unfinished sweep)", f"every point measured stays in {store.path}",
                                         also="its PNG"), soft_wrap=True)
        written = [write_csv_atomic(csv_path, res.rows),
                   load_latency_chart(res, png_path, title, deadlock_flits=deadlock_flits)]
    return written


def _saturation_line(res, max_points: int) -> str:
    """The sweep's saturation finding, or why there is none."""
    tail = f"peak accepted {_fmt(res.peak_accepted_flits, 4)}; uniform bisection bound {res.bound_flits:.4f}"
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
