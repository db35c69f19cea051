"""The all-reduce comparison as ``hw-models allreduce`` and ``hw-models demo`` run it: a
request (the flags, as plain values) checked and resolved into the points of sweep kind
``allreduce``, run into the output directory's sweep store, and rendered from it — tables,
CSV, PNG and, when asked, a Perfetto trace (docs/allreduce.md).

* :class:`AllreduceRequest` — what the flags ask for (:data:`DEMO`: the main job's);
* :func:`resolve` — every check before a run (the config whole with the flags, the models'
  limits, the flit level's time, the output paths) and the plan of points;
* :func:`run_allreduce` — the header, the runs (:func:`hw_models.allreduce_sweep.run_sweep`)
  and what they render to.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from noc.base.errors import HwModelsError

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


@dataclass(frozen=True)
class AllreduceRequest:
    """The flags of ``hw-models allreduce`` (None: the config's value)."""

    topology: Optional[str] = None
    nis: Optional[int] = None
    algorithms: Optional[str] = None
    sizes: Optional[str] = None
    nic: Optional[str] = None
    variant: Optional[str] = None
    lockstep: Optional[bool] = None
    step_priority: Optional[bool] = None
    flow_control: Optional[str] = None
    packet_bytes: Optional[int] = None
    tree_order: str = "ours"
    reduction: Optional[str] = None
    model: str = "message"
    config: Optional[Path] = None
    preset: Optional[str] = None
    out: Optional[Path] = None
    fresh: bool = False
    seed: Optional[int] = None
    yes: bool = False
    trace: Optional[Path] = None
    workers: Optional[int] = None  # 0 (this process) unless dask
    dask: Optional[str] = None


# the main job (the README's first command): the MultiTree paper's headline comparison
DEMO = AllreduceRequest(topology="torus:4x4", nis=4, algorithms="ring,ring2d,dbtree,multitree", sizes="32KiB..64MiB",
                        nic="both", model="message")


@dataclass(frozen=True)
class AllreduceSetup:
    """A request checked and resolved: what the runs take and where they go."""

    request: AllreduceRequest
    source: str
    exp: object  # hw_models.experiment.ResolvedExperiment
    designs: list
    models: list
    plan: object  # hw_models.sweep.plan.Plan
    out_dir: Path
    store_path: Path
    flit_seconds: float
    note: str

    @property
    def topo_stem(self) -> str:
        return self.exp.topology.name.replace(":", "_")


def _check_choices(req: AllreduceRequest) -> list[str]:
    """The models --model asks for; --tree-order checked (--topology is, by flag_overlay)."""
    from nic.allreduce import MODELS
    from nic.collectives.multitree import TREE_ORDERS

    if req.model not in (*MODELS, "both"):
        raise HwModelsError(f"--model {req.model!r}: choose one of {', '.join(MODELS)} or both")
    if req.tree_order not in TREE_ORDERS:
        raise HwModelsError(f"--tree-order {req.tree_order!r}: choose one of {', '.join(TREE_ORDERS)}")
    return list(MODELS) if req.model == "both" else [req.model]


def resolve(req: AllreduceRequest) -> AllreduceSetup:
    """Every check before a run, in the order the command has always made them."""
    from hw_models.allreduce_sweep import allreduce_plan
    from hw_models.config import check_config_file, experiment_data
    from hw_models.estimate import check_flit_cycles, check_long_run, flit_allreduce_seconds
    from hw_models.experiment import check_model_network, config_with_flags, data_with_flags, resolve_experiment
    from hw_models.flags import flag_overlay
    from hw_models.job import output_dir
    from hw_models.store import STORE_NAME, check_new_file, check_output_dir

    check_new_file(req.trace, "--trace")
    check_config_file(req.config)
    data, source = experiment_data(req.config, req.preset)
    models = _check_choices(req)
    design_choice, names, overrides, flags, drop = flag_overlay(
        topology=req.topology, nis=req.nis, algorithms=req.algorithms, nic=req.nic, variant=req.variant,
        lockstep=req.lockstep, step_priority=req.step_priority, flow_control=req.flow_control,
        packet_bytes=req.packet_bytes, reduction=req.reduction, sizes=req.sizes, seed=req.seed)
    cfg = config_with_flags(data, source, overrides, flags, drop)
    designs = ["codesigned", "baseline"] if design_choice == "both" else [design_choice or cfg.nic.design]
    schedule_options = {"multitree": {"tree_order": req.tree_order}} if req.tree_order != "ours" else {}
    # everything `hw-models config show` checks, with the flags; then what only these models need
    exp = resolve_experiment(cfg, source, flags=flags, designs=designs, algorithms=names,
                             schedule_options=schedule_options)
    t = exp.topology
    note = ("note: the paper's mesh routers have credit delay 2 (its tori 1): for its meshes use --preset "
            "isca2021_mesh") if req.preset == "isca2021" and t.name.startswith("mesh") else ""
    out_dir, named = output_dir(req.out, cfg, source, "allreduce")
    for d in designs:  # a router that does not fit the topology (or, at flit level, a NIC design) fails here
        for m in sorted(models, key="flit".__ne__):  # the flit level's limits first
            check_model_network(exp, d, m, source)
    algorithms = list(exp.schedules)
    # a flit-level run of a big all-reduce takes hours: estimated first, and run only with --yes
    flit_seconds = 0.0
    if "flit" in models:
        runs = [(exp.schedules[a], exp.nics[d], s) for d in designs for s in exp.sizes_bytes for a in algorithms]
        flit_seconds = flit_allreduce_seconds(t, exp.router, runs)
        check_long_run(flit_seconds, "the flit-level runs", req.yes, "--model message, or smaller --sizes")
        check_flit_cycles(t, runs)
    # the output files, before the runs: not after them
    stem = t.name.replace(":", "_")
    check_output_dir(out_dir, named, [STORE_NAME] + [f"{stem}_{m}.{ext}" for m in models for ext in ("csv", "png")]
                     + ([f"{stem}_calibration.csv"] if len(models) > 1 else []))
    plan = allreduce_plan(data_with_flags(data, overrides, drop), algorithms=algorithms, sizes_bytes=exp.sizes_bytes,
                          designs=designs, models=models, tree_order=req.tree_order, source=source)
    return AllreduceSetup(req, source, exp, designs, models, plan, out_dir, out_dir / STORE_NAME, flit_seconds, note)


def _print_header(con, s: AllreduceSetup) -> None:
    from hw_models.estimate import format_duration

    t, router, seed = s.exp.topology, s.exp.router, s.exp.config.run.seed
    con.print(f"all-reduce on {t.name} ({t.num_nodes} nodes, {t.nis_per_node} NI(s)/node), {' and '.join(s.models)}-level "
              f"model, NIC {', '.join(s.designs)}; {len(s.plan.configs)} runs; verifier seed {seed}"
              + (f"; arbiter seed {router.arbiter_seed}" if router.arbiter_seed is not None else "")
              + f"; results in {s.out_dir}")
    if s.flit_seconds >= 60:
        con.print(f"estimated flit-level time: {format_duration(s.flit_seconds)} on this machine (rough; reused runs "
                  "take none)")
    if s.note:
        con.print(s.note)
    con.print("NIC: " + nic_description(s.exp.nics[s.designs[0]], s.designs))
    for note in s.exp.left_out:
        con.print(f"left out of the default algorithms: {note}")


def _run(con, s: AllreduceSetup):
    """(results, runs reused): the plan's points run into the store, a progress bar over them."""
    from hw_models import allreduce_sweep
    from hw_models.job import backend, run_points
    from noc.base.units import format_size_bytes

    def describe(point):
        c = point.config
        return f"{c['model']} {c['algorithm']} {format_size_bytes(c['size_bytes'])} {c['nic']['design']}"

    req = s.request
    return run_points(con, len(s.plan.configs), s.store_path, lambda on_event: allreduce_sweep.run_sweep(
        s.plan, s.store_path, fresh=req.fresh, **backend(req.workers, req.dask), on_event=on_event), describe)


def _write_rows(con, s: AllreduceSetup, name: str, rows: list[dict], draw=None) -> list[Path]:
    from hw_models.job import write_rows

    return write_rows(con, s.out_dir / f"{s.topo_stem}_{name}.csv", rows, f"every run stays in {s.store_path}", draw)


def _render(con, s: AllreduceSetup, results: dict) -> list[Path]:
    """The tables, CSV and PNG of every model (and the calibration of one against the other)."""
    from hw_models.allreduce_sweep import calibration_rows, table_rows
    from hw_models.console import table
    from hw_models.report.charts import bandwidth_chart
    from noc.base.units import format_seconds, format_size_bytes

    from nic.collectives import optimal_bound

    t, written, left = s.exp.topology, [], ("algorithm", "NIC")
    optimum = optimal_bound(t)
    for m in s.models:
        rows = table_rows(results[m], optimum)
        con.print(table(f"all-reduce on {t.name}: {m}-level, clock {s.exp.config.network.clock_ghz:g} GHz",
                        ("size", "algorithm", "NIC", "cycles", "time", "bus GB/s", "vs ring", "% of bound",
                         "% of optimum"),
                        [(format_size_bytes(r["size_bytes"]), r["algorithm"], r["nic"], f"{r['total_cycles']:,.0f}",
                          format_seconds(r["time_us"] * 1e-6), f"{r['busbw_gbps']:.2f}",
                          f"{r['speedup_vs_ring']:.2f}x" if r["speedup_vs_ring"] != "" else "-",
                          f"{r['bound_percent']:.1f}", f"{r['optimum_percent']:.1f}") for r in rows], left))
        written += _write_rows(con, s, m, rows, lambda p, m=m: bandwidth_chart(
            results[m], p, f"all-reduce on {t.name} ({m}-level model)"))
    if len(s.models) > 1:
        rows = calibration_rows(results["message"] + results["flit"])
        con.print(table(f"message level against flit level on {t.name} (negative: the message model is faster)",
                        ("size", "algorithm", "NIC", "flit cycles", "message cycles", "flit time", "message vs flit"),
                        [(format_size_bytes(r["size_bytes"]), r["algorithm"], r["nic"], f"{r['flit_cycles']:,.0f}",
                          f"{r['message_cycles']:,.0f}", format_seconds(r["flit_us"] * 1e-6),
                          f"{r['message_vs_flit_percent']:+.2f} %") for r in rows], left))
        written += _write_rows(con, s, "calibration", rows)
    return written


def _trace(s: AllreduceSetup, results: dict) -> Path:
    """The runs again, keeping their per-transfer times (the same results), as a Perfetto trace."""
    from hw_models.report.trace import TracedRun, write_trace
    from noc.base.units import format_size_bytes

    from nic.collectives import build, size_options, timing_options

    exp, nic = s.exp, s.exp.nics[s.designs[0]]

    def schedule(r):  # the run's schedule: that of its size (and NIC) for a builder that takes the size
        sized = size_options(r.algorithm, r.size_bytes)
        if not sized:
            return exp.schedules[r.algorithm]
        return build(exp.topology, r.algorithm, **sized,
                     **timing_options(r.algorithm, exp.nics.get(r.nic, nic), exp.router))

    return write_trace(s.request.trace, exp.topology, [
        TracedRun(f"{r.algorithm} {format_size_bytes(r.size_bytes)} {r.nic} {m}", schedule(r),
                  nic.model_copy(update={"design": r.nic}), exp.router, r.size_bytes, m, exp.config.run.seed)
        for m in s.models for r in results[m]])[0]


def run_allreduce(req: AllreduceRequest) -> None:
    """Check, run and render ``req`` (module docstring)."""
    from hw_models.console import console

    s = resolve(req)
    con = console()
    _print_header(con, s)
    all_results, reused = _run(con, s)
    results = {m: [r for r in all_results if r.model == m] for m in s.models}
    written = _render(con, s, results)
    if s.models == ["message"] and "baseline" in s.designs:
        con.print(BASELINE_MESSAGE_NOTE)
    if "message" in s.models and s.exp.nics[s.designs[0]].tx_buffer_flits > 0:
        con.print(TX_QUEUE_MESSAGE_NOTE)
    if req.trace is not None:
        written.append(_trace(s, results))
    con.print(f"{len(all_results)} runs ({reused} reused from {s.store_path.name}); "
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
