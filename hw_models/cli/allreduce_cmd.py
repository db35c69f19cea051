"""``hw-models allreduce``: the headline comparison of all-reduce algorithms and NIC designs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from hw_models.cli.nic_flags import nic_choices
from nic.collectives import DEFAULT_ALGORITHMS, algorithm_choices
from nic.variants import DESIGNS, variant_help
from noc.base.errors import ConfigError, HwModelsError

# Printed under message-level results that include the baseline NIC: its per-packet runs are
# where the message model is least accurate (docs/allreduce.md, "Calibration").
BASELINE_MESSAGE_NOTE = (
    "note: the baseline NIC's per-packet runs are where the message model is least accurate: against the flit "
    "level it is off by more than 20 % on some of them (halving-doubling on tori, the bidirectional ring on a "
    "fat-tree, the double binary tree at some sizes; docs/allreduce.md, \"Calibration\"). Check the points "
    "that matter with --model both.")

# Printed under message-level results of a NIC with a transmit queue (docs/allreduce.md,
# "The experiment config").
TX_QUEUE_MESSAGE_NOTE = (
    "note: with a transmit queue (nic.tx_buffer_flits) a node's next step overlaps its previous one in the network; "
    "the message model misses part of that contention below about 1 MiB (up to 33 % fast on 4-NI runs at 256 KiB; "
    "docs/allreduce.md). Use --model flit for those points.")


def allreduce(
    topology: Optional[str] = typer.Option(None, "--topology", "-t", help="Topology spec (default: the config's, torus:4x4)."),
    nis: Optional[int] = typer.Option(None, "--nis", help="NIs per node on direct networks (default: the config's)."),
    algorithms: Optional[str] = typer.Option(
        None, "--algorithms", "-a", help=f"Comma-separated: {algorithm_choices()} "
        f"(default: the config's, {','.join(DEFAULT_ALGORITHMS)}, leaving out those the topology does not fit). "
        "Ring is always run: the speedups are over it."),
    sizes: Optional[str] = typer.Option(None, "--sizes", "-s", help="e.g. 32KiB..64MiB (doubling) or 1MiB,16MiB "
                                        "(default: the config's, 32KiB..4MiB)."),
    nic: Optional[str] = typer.Option(None, "--nic", help="NIC design: "
                                      + ", ".join(f"{name} ({what})" for name, what in DESIGNS.items())
                                      + ", or both (default: the config's [nic] design, codesigned)."),
    variant: Optional[str] = typer.Option(None, "--variant", help=f"The MultiTree paper's NIC variants: {variant_help()}; "
                                          "co-designed NIC with lockstep and step priority. Sets --nis; the switches "
                                          "below override its parts."),
    lockstep: Optional[bool] = typer.Option(None, "--lockstep/--no-lockstep", help="Strict lockstep from schedule "
                                            "tables (the co-designed NIC) or send-when-ready (the baseline NIC)."),
    step_priority: Optional[bool] = typer.Option(None, "--step-priority/--no-step-priority", help="Packets carry "
                                                 "their schedule step as switch priority (default: the design's)."),
    flow_control: Optional[str] = typer.Option(None, "--flow-control", help="bulk (one head flit per transfer) or "
                                               "packet (one per --packet-bytes); default: the design's."),
    packet_bytes: Optional[int] = typer.Option(None, "--packet-bytes", help="Payload bytes per packet in packet mode "
                                               "(default: the config's, 256)."),
    tree_order: str = typer.Option("ours", "--tree-order", help="MultiTree's trees: ours, or paper (as the paper's "
                                   "public implementation builds them; 2D torus and mesh)."),
    reduction: Optional[str] = typer.Option(None, "--reduction", help="free, chunk (the node sums a REDUCE once it is "
                                            "all in) or stream (as it arrives); rate and latency from [nic]."),
    model: str = typer.Option("message", "--model", help="message (fast, any size), flit (cycle-level reference), "
                              "or both (and the message model's deviation from the flit level)."),
    config: Optional[Path] = typer.Option(None, "--config", help="Experiment TOML (see `hw-models config show`)."),
    preset: Optional[str] = typer.Option(None, "--preset", help="A named config instead of a file: isca2021."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default: the config's run.out_dir/allreduce)."),
    fresh: bool = typer.Option(False, "--fresh", help="Run again the runs already in the result store; their new "
                               "records supersede the old (default: reuse them, resume)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the functional verifier's random input "
                                       "vectors, an integer in [0, 2**32 - 1] (the timing models are deterministic; "
                                       "default: the config's)."),
    yes: bool = typer.Option(False, "--yes", help="Run flit-level runs estimated to take longer than 10 minutes "
                             "(without it they are refused, with the estimate)."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="Also write a Chrome/Perfetto trace JSON of every run "
                                         "to this new file: a track per NI and per busy link, a slice per transfer "
                                         "(docs/reports.md)."),
) -> None:
    """Simulate all-reduces and print cycles, bus bandwidth, speedup over ring and % of the bound; write CSV and PNG."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from hw_models.allreduce_sweep import Job, calibration_rows, run_sweep, table_rows
    from hw_models.report.charts import bandwidth_chart
    from hw_models.report.writer import replacing_note
    from hw_models.config import experiment_data
    from hw_models.estimate import check_long_run, flit_allreduce_seconds, format_duration
    from hw_models.experiment import config_with_flags, resolve_experiment
    from hw_models.store import ResultStore, check_output_dir, csv_holds_other_rows, write_csv_atomic
    from noc.base.units import format_size_bytes
    from nic.allreduce import MODELS
    from nic.nic_config import check_message_router
    from nic.collectives import algorithm_name
    from nic.collectives.multitree import TREE_ORDERS
    from nic.scheduler import MAX_NIS as MAX_SCHEDULER_NIS
    from nic.flit_cosim import flit_network

    if trace is not None and (trace.exists() or trace.is_symlink()):
        raise HwModelsError(f"--trace {trace}: {'is a directory' if trace.is_dir() else 'the file exists'}; give a new "
                            "file name")
    if config is not None and not config.is_file():
        raise HwModelsError(f"--config {config}: {'is a directory' if config.is_dir() else 'no such file'}")
    data, source = experiment_data(config, preset)
    if topology is not None and not topology.strip():
        raise HwModelsError("--topology is empty; give a spec such as torus:4x4")
    if model not in (*MODELS, "both"):
        raise HwModelsError(f"--model {model!r}: choose one of {', '.join(MODELS)} or both")
    models = list(MODELS) if model == "both" else [model]
    if tree_order not in TREE_ORDERS:
        raise HwModelsError(f"--tree-order {tree_order!r}: choose one of {', '.join(TREE_ORDERS)}")
    if algorithms is not None and not algorithms.replace(",", "").strip():
        raise HwModelsError(f"--algorithms {algorithms!r} names no algorithm")
    names = None if algorithms is None else list(dict.fromkeys(algorithm_name(a) for a in algorithms.split(",")
                                                               if a.strip()))
    # the flags go into the keys they stand for and are checked with the config, by the same
    # rules (hw_models.experiment); errors in them name the flag
    design_choice, overrides, flags, nis = nic_choices(nic, variant, lockstep, step_priority, flow_control,
                                                        packet_bytes, reduction, nis)
    drop: tuple[str, ...] = ()
    if topology is not None:
        # a --topology flag stands alone: the config's NI count and routing belong to the config's topology
        overrides["network.topology"], flags["network.topology"] = topology, "--topology"
        drop = ("network.nis_per_node", "network.routing")
    if nis is not None:  # --nis, or the NI count of a --variant
        overrides["network.nis_per_node"], flags["network.nis_per_node"] = nis, "--nis"
    if names is not None:  # checked by algorithm_name (it takes aliases), named as the flag below
        flags["allreduce.algorithms"] = "--algorithms"
    for key, flag, value in (("allreduce.sizes", "--sizes", sizes), ("run.seed", "--seed", seed)):
        if value is not None:
            overrides[key], flags[key] = value, flag
    cfg = config_with_flags(data, source, overrides, flags, drop)
    net = cfg.network
    designs = list(DESIGNS) if design_choice == "both" else [design_choice or cfg.nic.design]
    schedule_options = {"multitree": {"tree_order": tree_order}} if tree_order != "ours" else {}
    # everything `hw-models config show` checks, with the flags; then what only these models need
    exp = resolve_experiment(cfg, source, flags=flags, designs=designs, algorithms=names,
                             schedule_options=schedule_options)
    t, network, nic_cfg = exp.topology, exp.router, exp.nics[designs[0]]
    if preset == "isca2021" and t.name.startswith("mesh"):
        console_note = ("note: the paper's mesh routers have credit delay 2 (its tori 1): for its meshes use "
                        "--preset isca2021_mesh")
    else:
        console_note = ""
    size_list = exp.sizes_bytes
    run_seed = cfg.run.seed
    out_dir = out or Path(cfg.run.out_dir) / "allreduce"
    # a router that does not fit the topology (or, at flit level, a NIC design) fails here, before any run
    try:
        for d in designs:
            if "flit" in models:
                flit_network(t, exp.nics[d], network)
            if "message" in models:
                check_message_router(t, exp.routes, exp.nics[d], network)
    except ConfigError as exc:
        raise ConfigError(f"{source} on {t.name}: {exc}") from None
    if "flit" in models and t.nis_per_node > MAX_SCHEDULER_NIS:
        raise HwModelsError(f"{t.name}: {t.nis_per_node} NIs per node; the flit level's NIC scheduler serves at most "
                            f"{MAX_SCHEDULER_NIS} (docs/nic_scheduler.md)")
    schedules, left_out = exp.schedules, exp.left_out
    names = list(schedules)
    # a flit-level run of a big all-reduce takes hours: estimated first, and run only with --yes
    flit_seconds = 0.0
    if "flit" in models:
        flit_seconds = flit_allreduce_seconds(t, network, [(schedules[a], exp.nics[d], s) for d in designs
                                                              for s in size_list for a in names])
        check_long_run(flit_seconds, "the flit-level runs", yes, "--model message, or smaller --sizes")
    # the output files, before the runs: not after them
    topo_stem = t.name.replace(":", "_")
    check_output_dir(out_dir, "--out" if out else f"{source}: run.out_dir = {cfg.run.out_dir!r}: its directory",
                     [f"{topo_stem}_{m}.{ext}" for m in models for ext in ("jsonl", "csv", "png")]
                     + ([f"{topo_stem}_calibration.csv"] if len(models) > 1 else []))
    stores = {m: ResultStore(out_dir / f"{topo_stem}_{m}.jsonl") for m in models}
    jobs = {m: [Job(a, s, d, m) for d in designs for s in size_list for a in names] for m in models}
    n_jobs = sum(len(j) for j in jobs.values())
    console = Console(width=None if sys.stdout.isatty() else 120)
    console.print(f"all-reduce on {t.name} ({t.num_nodes} nodes, {t.nis_per_node} NI(s)/node), {' and '.join(models)}-level "
                  f"model, NIC {', '.join(designs)}; {n_jobs} runs; verifier seed {run_seed}"
                  + (f"; arbiter seed {network.arbiter_seed}" if network.arbiter_seed is not None else "")
                  + f"; results in {out_dir}")
    if flit_seconds >= 60:
        console.print(f"estimated flit-level time: {format_duration(flit_seconds)} on this machine (rough; reused runs "
                      "take none)")
    if console_note:
        console.print(console_note)
    console.print("NIC: " + nic_description(nic_cfg, designs))
    for note in left_out:
        console.print(f"left out of the default algorithms: {note}")
    results: dict[str, list] = {}
    reused_count = 0
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        task = progress.add_task("simulating", total=n_jobs)

        def on_result(job, res, reused):
            nonlocal reused_count
            reused_count += reused
            progress.update(task, advance=1,
                            description=f"{job.model} {job.algorithm} {format_size_bytes(job.size_bytes)} {job.nic}")

        for m in models:
            try:
                results[m] = run_sweep(t, jobs[m], nic=nic_cfg, network=network, store=stores[m], seed=run_seed,
                                       on_result=on_result, fresh=fresh, schedules=schedules,
                                       schedule_options=schedule_options)
            except KeyboardInterrupt:
                progress.stop()
                console.print(f"interrupted: finished runs are kept in {stores[m].path}; run the same command again "
                              "to resume")
                raise typer.Exit(130) from None
    written = []
    for m in models:
        rows = table_rows(results[m])
        table = Table(title=f"all-reduce on {t.name}: {m}-level, clock {net.clock_ghz:g} GHz")
        for col in ("size", "algorithm", "NIC", "cycles", "bus GB/s", "vs ring", "% of bound"):
            table.add_column(col, justify="left" if col in ("algorithm", "NIC") else "right")
        for r in rows:
            table.add_row(format_size_bytes(r["size_bytes"]), r["algorithm"], r["nic"], f"{r['total_cycles']:,.0f}",
                          f"{r['busbw_gbps']:.2f}", f"{r['speedup_vs_ring']:.2f}x" if r["speedup_vs_ring"] != "" else "-",
                          f"{r['bound_percent']:.1f}")
        console.print(table)
        csv_path = out_dir / f"{topo_stem}_{m}.csv"
        with stores[m].locked():  # another command writing these files waits: its note and its files come after
            if csv_holds_other_rows(csv_path, rows):
                console.print(replacing_note(csv_path, "other runs than this command's",
                                             f"every run stays in {stores[m].path}", also="its PNG"), soft_wrap=True)
            written.append(write_csv_atomic(csv_path, rows))
            written.append(bandwidth_chart(results[m], out_dir / f"{topo_stem}_{m}.png",
                                           f"all-reduce on {t.name} ({m}-level model)"))
    if len(models) > 1:
        rows = calibration_rows(results["message"] + results["flit"])
        table = Table(title=f"message level against flit level on {t.name} (negative: the message model is faster)")
        for col in ("size", "algorithm", "NIC", "flit cycles", "message cycles", "message vs flit"):
            table.add_column(col, justify="left" if col in ("algorithm", "NIC") else "right")
        for r in rows:
            table.add_row(format_size_bytes(r["size_bytes"]), r["algorithm"], r["nic"], f"{r['flit_cycles']:,.0f}",
                          f"{r['message_cycles']:,.0f}", f"{r['message_vs_flit_percent']:+.2f} %")
        console.print(table)
        csv_path = out_dir / f"{topo_stem}_calibration.csv"
        with stores["message"].locked():
            if csv_holds_other_rows(csv_path, rows):
                console.print(replacing_note(csv_path, "other runs than this command's", "every run stays in "
                                             + " and ".join(str(st.path) for st in stores.values())), soft_wrap=True)
            written.append(write_csv_atomic(csv_path, rows))
    if models == ["message"] and "baseline" in designs:
        console.print(BASELINE_MESSAGE_NOTE)
    if "message" in models and nic_cfg.tx_buffer_flits > 0:
        console.print(TX_QUEUE_MESSAGE_NOTE)
    if trace is not None:  # the runs again, keeping their per-transfer times (the same results)
        from hw_models.report.trace import TracedRun, write_trace

        written.append(write_trace(trace, t, [TracedRun(f"{j.algorithm} {format_size_bytes(j.size_bytes)} {j.nic} {m}",
                                                        schedules[j.algorithm], nic_cfg.model_copy(update={"design": j.nic}),
                                                        network, j.size_bytes, m, run_seed)
                                              for m in models for j in jobs[m]])[0])
    n_runs = sum(len(r) for r in results.values())
    console.print(f"{n_runs} runs ({reused_count} reused from {', '.join(st.path.name for st in stores.values())}); "
                  f"every schedule verified on exact integers; wrote {', '.join(str(w) for w in written)}")


def nic_description(nic, designs) -> str:
    """One line saying which NIC parts run: design(s), flow control, priority, reduction."""
    parts = []
    for d in designs:
        n = nic.model_copy(update={"design": d})
        fc = "bulk transfers" if n.bulk else f"{n.packet_bytes} B packets"
        parts.append(f"{d} ({'lockstep' if d == 'codesigned' else 'send when ready'}, {fc}, step priority "
                     f"{'on' if n.prioritised else 'off'})")
    red = "free" if nic.reduction == "free" else (
        f"{nic.reduction}, {nic.reduce_elements_per_cycle:g} elements/cycle in granules of "
        f"{nic.reduce_granule_elements}, latency {nic.reduce_latency_cycles}")
    tx = f"; transmit queue {nic.tx_buffer_flits} flits" if nic.tx_buffer_flits else ""
    return "; ".join(parts) + f"; reduction {red}{tx}"
