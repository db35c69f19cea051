"""``hw-models noc run``: one load point of the flit-level network, from an experiment TOML
or a BookSim2 file (docs/noc.md), and what both ``noc`` commands share: the positional
arguments, the BookSim2 file's reading and output names, the run-time check, the output
directory, a load as a point of sweep kind ``noc_load`` (:func:`load_point`; run into the
output directory's ``runs.sqlite`` by :func:`run_stored`, the figures rendered from it).

* :func:`run_point` — one load point: table, CSV (with the configuration that wrote it),
  per-link CSV and PNG;
* :func:`run_booksim_point` — one BookSim2 run: its final statistics under BookSim2's names.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Optional

from hw_models.console import console
from noc.base.errors import ConfigError

SEED_HELP = "Seed, an integer in [0, 2**32 - 1] (default: the config's traffic.seed)."
YES_HELP = ("Start runs estimated to take longer than 10 minutes (without it they are refused, with the estimate: "
            "every link for every cycle the runs may take).")
ARGS_HELP = ("CONFIG (an experiment TOML, see docs/noc_example.toml); with --booksim: BookSim2 overrides key=value. "
             "A flag or override given replaces the file's key, one left out never does.")
BOOKSIM_HELP = "A BookSim2 config file, run with BookSim2's semantics and methodology (docs/noc.md)."
ORIGIN = "hw-models noc run"


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


def split_args(args: list[str] | None, booksim: Optional[Path], flags: dict) -> tuple[Optional[Path], list[str]]:
    """(CONFIG, BookSim2 overrides) from the positional arguments: CONFIG alone without
    --booksim, only key=value overrides with it (and none of the TOML flags)."""
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


def booksim_stem(run) -> str:
    """Output names: the network, the pattern and a hash of every BookSim2 value, so
    different configurations never share a file."""
    digest = hashlib.sha1(json.dumps(run.values, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"booksim_{run.topology.name.replace(':', '_')}_{run.traffic.pattern}_{digest}"


def booksim_base(t, router) -> dict:
    """The noc_load sections of a BookSim2 run's network: its topology by name with its
    three kinds of link latency, and its router."""
    import numpy as np

    def latency(mask) -> int:
        values = np.unique(t.link_latency_cycles[mask])
        return int(values[0]) if values.size else 1

    inject = (~t.is_router_link) & (t.link_src < t.num_endpoints)
    eject = (~t.is_router_link) & ~(t.link_src < t.num_endpoints)
    return {"network": {"topology": t.name, "nis_per_node": t.nis_per_node},
            "channels": {"router_latency_cycles": latency(t.is_router_link), "inject_latency_cycles": latency(inject),
                         "eject_latency_cycles": latency(eject)},
            "router": router.model_dump(mode="json")}


def load_point(base: dict, traffic, source: str, origin: str, booksim_topology=None):
    """(plan, resolved points) of one load as a point of sweep kind ``noc_load``: ``base``'s
    network, channels and router sections with ``traffic``; a BookSim2 run's (its topology
    given) checked to name that network."""
    from hw_models.sweep.plan import Plan, resolve
    from hw_models.sweep.kinds.noc_load import objects

    plan = Plan("noc_load", [{**base, "traffic": traffic.model_dump(mode="json")}], source, origin)
    points = resolve(plan)
    if booksim_topology is not None and objects(points[0].config)[0].to_dict() != booksim_topology.to_dict():
        raise ConfigError(f"{source}: its network {booksim_topology.name} is not one a noc_load point can name (its "
                          "links' latencies differ by more than the three kinds); it cannot be stored")
    return plan, points


def toml_base(config: Path) -> dict:
    """The noc_load sections of CONFIG (an experiment TOML): its network, channels and router,
    as a sweep file's [base] gives them (one key both ways)."""
    from noc.base.config import read_toml

    data = read_toml(config)
    return {k: data[k] for k in ("network", "channels", "router") if k in data}


def run_stored(con, base: dict, traffic, source: str, out_dir: Path, what: str, booksim_topology=None):
    """(stats, reused): one load (:func:`load_point`) run into the output directory's sweep
    store, or the stored point reused, under a status line ``what``."""
    from hw_models.store import STORE_NAME
    from hw_models.sweep.kinds.noc_load import stats_from_metrics
    from hw_models.sweep.plan import run_plan

    plan, points = load_point(base, traffic, source, ORIGIN, booksim_topology)
    with con.status(what):
        ran = run_plan(plan, out_dir / STORE_NAME, points=points)
    return stats_from_metrics(ran.metrics[0]), ran.summary.done == 0


def stem(t, cfg) -> str:
    """File name stem: the parsed topology's normalised name (not the config's raw string) and the pattern."""
    return f"{t.name.replace(':', '_')}_{cfg.traffic.pattern}"


def output_dir(out: Optional[Path], cfg, config: Optional[Path], files: list[str]) -> Path:
    """Make the output directory (--out; else the config's out_dir, or results/noc for a
    BookSim2 file, ``cfg`` None: it has no out_dir key) and check ``files`` can be written
    there, before simulating (so a bad one costs no run); one-line errors naming --out or
    the config's out_dir."""
    from hw_models.store import check_output_dir

    out_dir = out if out is not None else Path(cfg.out_dir if cfg is not None else "results/noc")
    return check_output_dir(out_dir, "--out" if out is not None or cfg is None else f"{config}: out_dir =", files)


def fmt(x: float, digits: int = 2) -> str:
    return "-" if x != x else f"{x:,.{digits}f}"  # nan -> '-'


def check_time(t, traffic, points: int, yes: bool) -> None:
    """Refuse (with the estimate) runs of ``traffic`` on ``t`` estimated to take over 10 minutes, unless --yes."""
    from hw_models.estimate import check_long_run, traffic_cycles, traffic_seconds

    what = (f"{points} load point(s) of up to {traffic_cycles(traffic):,} cycles each" if points > 1
            else f"a run of up to {traffic_cycles(traffic):,} cycles") + f" on {t.name} ({t.num_links:,} links)"
    check_long_run(traffic_seconds(t, traffic, points), what, yes,
                   "fewer cycles (traffic.warmup_cycles, measure_cycles, drain_limit_cycles; BookSim2: sample_period, "
                   "max_samples) or a smaller network")


def _print_figures(con, title: str, rows: list[tuple[str, str]], first: tuple[str, str] | None = None) -> None:
    from hw_models.console import table

    con.print(table(title, ("figure", "value"), ([first] if first else []) + rows, ("figure",), show_header=False))


# --- BookSim2 ---------------------------------------------------------------------------------

def booksim_rows(run, stats) -> list[tuple[str, str]]:
    """BookSim2's final statistics, under its names, for what this model measures."""
    t = run.traffic
    return [
        ("Packet latency average", fmt(stats.latency_avg, 4)), ("Packet latency minimum", fmt(stats.latency_min, 0)),
        ("Packet latency maximum", fmt(stats.latency_max, 0)),
        ("Network latency average", fmt(stats.network_latency_avg, 4)),
        ("Injected packet rate average", fmt(stats.injected_flits / t.mean_packet_flits, 6)),
        ("Accepted packet rate average", fmt(stats.accepted_flits / t.mean_packet_flits, 6)),
        ("Injected flit rate average", fmt(stats.injected_flits, 6)),
        ("Accepted flit rate average", fmt(stats.accepted_flits, 6)),
        # BookSim2 counts routers traversed; no measured packet, no average
        ("Hops average", fmt(stats.hops_avg + 1 if stats.packets else float("nan"), 4)),
        ("Simulated cycles (to the end of the measured drain)", f"{stats.cycles}"),
    ]


def run_booksim_point(path: Path, overrides: list[str], out: Optional[Path], yes: bool = False) -> None:
    """One run of a BookSim2 file: its final statistics printed and written to CSV."""
    from hw_models.store import STORE_NAME, write_csv_atomic

    run = load_booksim(path, overrides)
    check_time(run.topology, run.traffic, 1, yes)
    name = booksim_stem(run)
    out_dir = output_dir(out, None, None, [f"{name}.csv", STORE_NAME])
    con = console()
    for note in run.notes:
        con.print(f"note: {note}")
    tr = run.traffic
    stats, reused = run_stored(con, booksim_base(run.topology, run.network), tr, str(path), out_dir,
                               f"simulating {run.topology.name} with BookSim2's semantics, {tr.pattern} at "
                               f"{tr.rate_packets:g} packets/node/cycle, seed {tr.seed} ...", run.topology)
    rows = booksim_rows(run, stats)
    verdict = None if stats.stable else ("verdict", f"UNSTABLE: {stats.verdict} (BookSim2 prints no final statistics "
                                                    "then)")
    _print_figures(con, f"{path}: {run.topology.name}, {tr.pattern}, {tr.rate_packets:g} packets/node/cycle, seed "
                        f"{tr.seed} (BookSim2 semantics)", rows, verdict)
    if stats.stable and not stats.packets:
        con.print("note: no packet was measured (none was created in the sample periods after the warm-up), so "
                  "there is no latency or hop average; raise injection_rate, sample_period or max_samples")
    record = {"file": str(path), "overrides": " ".join(overrides), "verdict": "stable" if stats.stable else "unstable",
              **{k: (str(v) if isinstance(v, list) else v) for k, v in run.values.items()},
              **{k.lower().replace(" ", "_").replace("(", "").replace(")", ""): v for k, v in rows}}
    csv_path = write_csv_atomic(out_dir / f"{name}.csv", [record])
    con.print(f"wrote {csv_path}" + (f" (the run reused from {STORE_NAME})" if reused else ""))


# --- one load point of an experiment TOML ------------------------------------------------------

def run_point(config: Path, rate: Optional[float], pattern: Optional[str], seed: Optional[int], out: Optional[Path],
              yes: bool) -> None:
    """One load point: warm-up, measurement, drain; table, CSV, per-link CSV and PNG."""
    from hw_models.noc_experiment import load_noc_experiment
    from hw_models.store import STORE_NAME

    cfg, t = load_noc_experiment(config, pattern, seed, rate)
    tr = cfg.traffic
    check_time(t, tr, 1, yes)
    name = f"run_{stem(t, cfg)}_{tr.rate_packets:g}"
    out_dir = output_dir(out, cfg, config, [f"{name}.csv", f"{name}_links.csv", f"{name}_links.png", STORE_NAME])
    con = console()
    stats, reused = run_stored(con, toml_base(config), tr, str(config), out_dir, f"simulating {t.name}, "
                               f"{tr.pattern} at {tr.rate_packets:g} packets/NI/cycle ...")
    _print_figures(con, f"{t.name}, {tr.pattern}, {tr.rate_packets:g} packets/NI/cycle "
                        f"({stats.offered_flits:.4g} flits/NI/cycle), seed {tr.seed}", _point_figures(t, cfg, stats))
    _write_point(con, t, cfg, stats, out_dir, name, f" (the run reused from {STORE_NAME})" if reused else "")


def _point_figures(t, cfg, stats) -> list[tuple[str, str]]:
    import numpy as np

    from noc.base.units import cycles_to_seconds, format_seconds
    from noc.flitsim_sweep import bisection_bound_flits, zero_load_latency_cycles

    router_links = np.nonzero(t.is_router_link)[0]
    util = stats.link_utilisation[router_links]
    return [
        ("verdict", "stable" if stats.stable else "SATURATED / UNSTABLE (measured packets not drained)"),
        ("offered (flits/NI/cycle)", fmt(stats.offered_flits, 4)),
        ("accepted (flits/NI/cycle)", fmt(stats.accepted_flits, 4)),
        ("uniform bisection bound (flits/NI/cycle)", fmt(bisection_bound_flits(t, cfg.router.flit_bytes), 4)),
        ("packet latency avg / p50 / p99 (cycles)",
         f"{fmt(stats.latency_avg)} / {fmt(stats.latency_p50, 0)} / {fmt(stats.latency_p99, 0)}"),
        (f"packet latency avg / p99 (ns at {cfg.network.clock_ghz:g} GHz)",
         f"{fmt(stats.latency_avg / cfg.network.clock_ghz)} / {fmt(stats.latency_p99 / cfg.network.clock_ghz)}"),
        ("network latency avg (cycles)", fmt(stats.network_latency_avg)),
        ("zero-load latency, analytic (cycles)", fmt(zero_load_latency_cycles(t, cfg.router, cfg.traffic))),
        ("hops avg (router to router)", fmt(stats.hops_avg, 3)),
        ("measured packets delivered", f"{stats.packets:,}"),
        ("router-link utilisation mean / max", f"{fmt(float(util.mean()) if util.size else 0.0, 3)} / "
                                               f"{fmt(float(util.max()) if util.size else 0.0, 3)}"),
        ("simulated cycles",
         f"{stats.cycles:,} ({format_seconds(cycles_to_seconds(stats.cycles, cfg.network.clock_ghz))})"),
    ]


def time_columns(row: dict, clock_ghz: float) -> dict:
    """A load point's CSV row with its latencies in ns at ``clock_ghz`` added."""
    out = dict(row)
    for k in ("latency_avg", "latency_p50", "latency_p99", "network_latency_avg"):
        v = row.get(k)
        out[f"{k}_ns"] = "" if v is None or v == "" else round(float(v) / clock_ghz, 4)
    return out


def _write_point(con, t, cfg, stats, out_dir: Path, name: str, reused: str) -> None:
    """The run's CSV (with its configuration), per-link CSV and PNG, under the directory's
    lock, with a note when they held another configuration's run."""
    from hw_models.report.charts import link_utilisation_chart
    from hw_models.report.writer import replacing_note
    from hw_models.store import locked_directory, write_csv_atomic
    from noc.flitsim_sweep import zero_load_latency_cycles

    tr, util = cfg.traffic, stats.link_utilisation
    row = {"topology": t.name, "pattern": tr.pattern, "rate_packets": tr.rate_packets, "seed": tr.seed, **stats.row(),
           "zero_load_latency_analytic": round(zero_load_latency_cycles(t, cfg.router, tr), 3)}
    row = {**time_columns(row, cfg.network.clock_ghz), **_run_config_columns(cfg, t)}  # the clock: network.clock_ghz
    link_rows = [{"link": int(l), "src": int(t.link_src[l]), "dst": int(t.link_dst[l]),
                  "router_link": bool(t.is_router_link[l]), "utilisation": round(float(util[l]), 5)}
                 for l in range(t.num_links)]
    csv_path = out_dir / f"{name}.csv"
    with locked_directory(out_dir):  # another run into this folder waits: its comparison comes after these files
        other = _other_configuration(csv_path, row)
        if other is not None:
            con.print(replacing_note(csv_path, other, "give --out another directory to keep both",
                                     also="its _links.csv and _links.png"), soft_wrap=True)
        csv_path = write_csv_atomic(csv_path, [row])
        links_path = write_csv_atomic(out_dir / f"{name}_links.csv", link_rows)
        png_path = link_utilisation_chart(t, util, out_dir / f"{name}_links.png",
                                          f"{t.name} {tr.pattern} @ {stats.offered_flits:.3g} flits/NI/cycle")
    con.print(f"wrote {csv_path}, {links_path} and {png_path}{reused}")


# columns of a run's CSV that its file name does not show: they tell the configuration that wrote it
_NAMED_TRAFFIC_KEYS = ("pattern", "rate_packets", "seed")  # in the name or a column of their own
_NETWORK_KEYS_IN_TOPOLOGY = ("topology", "nis_per_node")  # the topology column shows them


def _run_config_columns(cfg, t) -> dict:
    """The configuration of a ``noc run`` as CSV columns: ``config_hash`` (a hash of the
    topology with its link latencies and widths, ``[router]`` and ``[traffic]``: everything
    that determines the result) and every key as ``<section>.<key>``."""
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
        return "a run whose configuration is not recorded: written by an earlier version, or not by this command"
    if old["config_hash"] == row["config_hash"]:
        return None
    new = {k: "" if v is None else str(v) for k, v in row.items()}
    keys = ["seed"] + [k for k in new if "." in k]
    changed = [f"{k} {old[k] or 'unset'} -> {new[k] or 'unset'}" for k in keys if k in old and old[k] != new[k]]
    if not changed:  # e.g. the links' latencies of the [network] topology spec
        changed = [f"config_hash {old['config_hash']} -> {row['config_hash']}"]
    return ("a run of another configuration: " + ", ".join(changed[:4])
            + (f" and {len(changed) - 4} more" if len(changed) > 4 else ""))
