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
into the output directory (files are written whole or not at all).

With ``--booksim`` the configuration is a BookSim2 file instead (its ``key = value;``
syntax; the arguments after it are BookSim2 overrides, as on its own command line), run with
BookSim2's semantics and methodology (:mod:`noc.booksim_config`); ``run`` prints BookSim2's
final statistics under its names and writes them to CSV.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from pydantic import Field

app = typer.Typer(help="Flit-level network: synthetic traffic runs and load-latency sweeps.", no_args_is_help=True)


@functools.cache
def experiment_model():
    """The TOML schema (built on first use: it imports the numba kernels' modules)."""
    from hw_models.config import NetworkConfig
    from noc.config import StrictModel
    from noc.flit import FlitNetworkConfig
    from noc.flit_traffic import TrafficConfig
    from noc.flitsim_sweep import SweepConfig

    class ChannelConfig(StrictModel):
        """Latency per kind of link (unset: network.link_latency_cycles), e.g. BookSim2's:
        2-cycle torus channels, injection 2 (its channel and its injection step), ejection 1."""

        router_latency_cycles: Optional[int] = Field(None, ge=1, le=100_000, description="Router-to-router links.")
        inject_latency_cycles: Optional[int] = Field(None, ge=1, le=100_000, description="NI-to-router links.")
        eject_latency_cycles: Optional[int] = Field(None, ge=1, le=100_000, description="Router-to-NI links.")

    class NocExperimentConfig(StrictModel):
        """A flit-level network experiment: network (as in every hw-models config), per-kind
        channel latencies, router, traffic, sweep."""

        network: NetworkConfig = NetworkConfig()
        channels: ChannelConfig = ChannelConfig()
        router: FlitNetworkConfig = FlitNetworkConfig()
        traffic: TrafficConfig = TrafficConfig()
        sweep: SweepConfig = SweepConfig()
        out_dir: str = Field("results/noc", min_length=1, description="Directory for CSV and PNG files.")

    return NocExperimentConfig


def load_experiment(config: Path, pattern: Optional[str] = None, seed: Optional[int] = None, rate: Optional[float] = None):
    """Read and validate CONFIG (flags override ``[traffic]`` keys); returns (config, topology).

    The routing is ``router.routing``, or ``network.routing`` when the router's is "auto";
    two different explicit choices are an error. ``network.link_bytes_per_cycle`` matters only
    with ``router.flit_bytes`` set (links narrower than a flit then carry one flit every
    ``flit_bytes / link_bytes_per_cycle`` cycles; otherwise a link carries one flit per cycle);
    ``clock_ghz`` does not change the flit-level model."""
    from hw_models.cli.schedule_cmd import resolve_topology
    from hw_models.config import resolve_router
    from noc.config import read_toml, validate
    from noc.errors import ConfigError

    data = read_toml(config)
    overrides = {k: v for k, v in (("pattern", pattern), ("seed", seed), ("rate_packets", rate)) if v is not None}
    source = str(config)
    if overrides:
        traffic = data.get("traffic", {})
        if isinstance(traffic, dict):  # otherwise validation reports the bad section
            data = {**data, "traffic": {**traffic, **overrides}}
        source += " (with flags)"
    cfg = validate(data, experiment_model(), source=source)
    net = cfg.network
    cfg = cfg.model_copy(update={"router": resolve_router(net, cfg.router, str(config))})
    links = {"link_latency_cycles": net.link_latency_cycles, "link_bytes_per_cycle": net.link_bytes_per_cycle}
    t = resolve_topology(net.topology, net.nis_given, flag=f"{config}: network.nis_per_node =", spec_flag="network.topology =",
                         **links)
    ch = cfg.channels
    if ch.model_fields_set:
        t = t.with_latencies(**{f"{kind}_cycles": getattr(ch, f"{kind}_latency_cycles") or net.link_latency_cycles
                                for kind in ("router", "inject", "eject")})
    # fail before any progress bar: the pattern must suit the topology, the routing the VCs
    from noc.flit import build_network
    from noc.flit_traffic import destinations

    destinations(cfg.traffic.pattern, t, cfg.traffic.perm_seed)
    build_network(t, cfg.router)
    if cfg.router.flow_control == "vct" and max(cfg.traffic.packet_flits) > cfg.router.vc_depth_flits:
        raise ConfigError(f"{config}: traffic.packet_flits up to {max(cfg.traffic.packet_flits)} flits do not fit a VC "
                          f"(router.vc_depth_flits = {cfg.router.vc_depth_flits}) under virtual cut-through")
    return cfg, t


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
    from noc.errors import ConfigError

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


def _run_booksim_cmd(path: Path, overrides: list[str], out: Optional[Path]) -> None:
    from rich.table import Table

    from hw_models.store import write_csv_atomic
    from noc.flit_traffic import run_traffic

    run = load_booksim(path, overrides)
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


def _save_png(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    os.replace(tmp, path)
    return path


def _fmt(x: float, digits: int = 2) -> str:
    return "-" if x != x else f"{x:,.{digits}f}"  # nan -> '-'


_ARGS_HELP = "CONFIG (an experiment TOML, see docs/noc_example.toml); with --booksim: BookSim2 overrides key=value."
_BOOKSIM_HELP = "A BookSim2 config file, run with BookSim2's semantics and methodology (docs/noc.md)."


@app.command()
def run(
    args: Optional[list[str]] = typer.Argument(None, help=_ARGS_HELP, show_default=False),
    booksim: Optional[Path] = typer.Option(None, "--booksim", help=_BOOKSIM_HELP),
    rate: Optional[float] = typer.Option(None, "--rate", help="Offered load in packets/NI/cycle (default: the config's traffic.rate_packets)."),
    pattern: Optional[str] = typer.Option(None, "--pattern", help="Traffic pattern (default: the config's)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed (default: the config's traffic.seed)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default: the config's out_dir; results/noc with --booksim)."),
) -> None:
    """One load point: warm-up, measurement, drain. Prints latency, throughput, hops, link use; writes CSV and PNG."""
    config, overrides = _split_args(args, booksim, {"--rate": rate, "--pattern": pattern, "--seed": seed})
    if booksim is not None:
        return _run_booksim_cmd(booksim, overrides, out)
    import numpy as np
    from rich.table import Table

    from hw_models.store import write_csv_atomic
    from noc.flit_traffic import run_traffic
    from noc.flitsim_sweep import bisection_bound_flits, zero_load_latency_cycles

    cfg, t = load_experiment(config, pattern, seed, rate)
    tr = cfg.traffic
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
           "zero_load_latency_analytic": round(analytic, 3)}
    csv_path = write_csv_atomic(out_dir / f"{stem}.csv", [row])
    link_rows = [{"link": int(l), "src": int(t.link_src[l]), "dst": int(t.link_dst[l]), "router_link": bool(t.is_router_link[l]),
                  "utilisation": round(float(util[l]), 5)} for l in range(t.num_links)]
    links_path = write_csv_atomic(out_dir / f"{stem}_links.csv", link_rows)
    png_path = _plot_links(t, util, out_dir / f"{stem}_links.png", f"{t.name} {tr.pattern} @ {stats.offered_flits:.3g} flits/NI/cycle")
    console.print(f"wrote {csv_path}, {links_path} and {png_path}")


def _plot_links(t, util, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    links = np.nonzero(t.is_router_link)[0]
    u = np.sort(util[links])[::-1] if links.size else np.zeros(0)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar(np.arange(u.size), u, width=1.0)
    ax.set_xlabel("router-to-router links, most used first")
    ax.set_ylabel("utilisation (flits/cycle)")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"link utilisation: {title}")
    try:
        return _save_png(fig, path)
    finally:
        plt.close(fig)


@app.command(name="sweep-load")
def sweep_load_cmd(
    args: Optional[list[str]] = typer.Argument(None, help=_ARGS_HELP, show_default=False),
    booksim: Optional[Path] = typer.Option(None, "--booksim", help=_BOOKSIM_HELP + " Its injection_rate is swept."),
    pattern: Optional[str] = typer.Option(None, "--pattern", help="Traffic pattern (default: the config's)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed (default: the config's traffic.seed)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default: the config's out_dir; results/noc with --booksim)."),
) -> None:
    """Offered load from near zero to saturation: zero-load latency, saturation throughput; table, CSV and PNG."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from hw_models.store import write_csv_atomic
    from noc.errors import ConfigError
    from noc.flitsim_sweep import SweepConfig, sweep_load

    config, overrides = _split_args(args, booksim, {"--pattern": pattern, "--seed": seed})
    if booksim is not None:
        run = load_booksim(booksim, overrides)
        t, router, tr, sweep = run.topology, run.network, run.traffic, SweepConfig()
        stem = "sweep_" + _booksim_stem(run)
        out_dir = _booksim_out_dir(out, [f"{stem}.csv", f"{stem}.png"])
        config = booksim
    else:
        cfg, t = load_experiment(config, pattern, seed)
        router, tr, sweep = cfg.router, cfg.traffic, cfg.sweep
        stem = f"sweep_{_stem(t, cfg)}"
        out_dir = _output_dir(out, cfg, config, [f"{stem}.csv", f"{stem}.png"])
    console = _console()
    console.print(f"load sweep on {t.name} ({t.num_endpoints} NIs), {tr.pattern} traffic, packets of "
                  f"{tr.packet_flits} flits, {router.num_vcs} VCs x {router.vc_depth_flits} flits, "
                  f"{router.flow_control}, {router.allocator if router.sw_allocator == 'vc_first' else router.sw_allocator}"
                  f"{', BookSim2 semantics and methodology' if booksim is not None else ''}; seed {tr.seed}")
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task("load points", total=sweep.max_points)

        def on_point(i, load, stats, saturated):
            progress.update(task, completed=i, description=f"{load:.4f} flits/NI/cycle: "
                            f"{'saturated' if saturated else _fmt(stats.latency_avg, 1) + ' cycles'}")

        try:
            res = sweep_load(t, router, tr, sweep, on_point=on_point)
        except ConfigError as exc:  # a first point that is not at near-zero load
            raise ConfigError(f"{config}: {exc}") from None
        progress.update(task, total=len(res.points), completed=len(res.points))
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
    console.print(table)
    console.print(f"zero-load latency {res.zero_load_latency_cycles:.2f} cycles measured at {res.points[0].offered_flits:.4g} "
                  f"flits/NI/cycle (analytic {res.zero_load_latency_analytic_cycles:.2f})")
    console.print(_saturation_line(res, sweep.max_points))
    csv_path = write_csv_atomic(out_dir / f"{stem}.csv", res.rows)
    png_path = _plot_sweep(res, out_dir / f"{stem}.png", f"{t.name}, {tr.pattern} traffic")
    console.print(f"wrote {csv_path} and {png_path}")


def _saturation_line(res, max_points: int) -> str:
    """The sweep's saturation finding, or why there is none."""
    tail = f"peak accepted {_fmt(res.peak_accepted_flits, 4)}; uniform bisection bound {res.bound_flits:.4f}"
    if res.saturation_reached:
        return (f"saturation throughput {res.saturation_offered_flits:.4f} flits/NI/cycle offered (first saturated "
                f"{res.first_saturated_flits:.4f}, {100 * res.saturation_offered_flits / res.bound_flits:.0f} % of the "
                f"bound), {tail}")
    top = res.highest_offered_flits
    if top >= res.max_offered_flits:
        why = (f"saturation not reached: no point saturated up to {top:.4f} flits/NI/cycle, one packet per NI per "
               f"cycle, the most the traffic generator offers")
    else:
        why = (f"saturation not reached within {max_points} points (highest load {top:.4f} flits/NI/cycle, not "
               f"saturated; raise sweep.max_points or sweep.step_flits)")
    return f"{why}; {tail}"


def _plot_sweep(res, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [p.offered_flits for p in res.points]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    ax1.plot(x, [p.stats.latency_avg for p in res.points], "o-", label="average")
    ax1.plot(x, [p.stats.latency_p99 for p in res.points], "s--", label="p99", alpha=0.7)
    ax1.axhline(res.zero_load_latency_analytic_cycles, color="k", linestyle=":", label="zero-load (analytic)")
    if res.saturation_reached:
        ax1.axvline(res.saturation_offered_flits, color="r", linestyle=":", label="saturation")
    ax1.set_yscale("log")
    ax1.set_xlabel("offered load (flits/NI/cycle)")
    ax1.set_ylabel("packet latency (cycles)")
    ax1.legend()
    ax2.plot(x, [p.stats.accepted_flits for p in res.points], "o-", label="accepted")
    ax2.plot(x, x, "k:", label="offered")
    ax2.axhline(res.bound_flits, color="g", linestyle="--", label="uniform bisection bound")
    ax2.set_xlabel("offered load (flits/NI/cycle)")
    ax2.set_ylabel("accepted throughput (flits/NI/cycle)")
    ax2.legend()
    fig.suptitle(title)
    try:
        return _save_png(fig, path)
    finally:
        plt.close(fig)
