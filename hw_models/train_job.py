"""Training iterations as ``hw-models train`` runs them: a request (the flags, as plain
values) checked and resolved into points of sweep kind ``training`` (one per workload x
algorithm x policy), run through :mod:`hw_models.sweep.plan` into the output directory's
sweep store (``<out>/runs.sqlite``), and rendered from the stored metrics — table, summary,
CSV, PNG and, when asked, a Perfetto trace and a Gantt PNG of one run (docs/training.md).

* :class:`TrainRequest` — what the flags ask for;
* :func:`resolve` — every check before a run, in the order the command has always made
  them, and the plan;
* :func:`run_train` — the header, the runs, what they render to.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from noc.base.errors import ConfigError, HwModelsError

TX_QUEUE_NOTE = ("note: with a transmit queue (nic.tx_buffer_flits) the message model is least accurate below about "
                 "1 MiB (up to 33 % fast on some 4-NI runs at 256 KiB; docs/allreduce.md), and most layers' gradients "
                 "are smaller: check the figures that matter with --model flit.")
ORIGIN = "hw-models train"


@dataclass(frozen=True)
class TrainRequest:
    """The flags of ``hw-models train`` (None: the config's value, or the default; the
    defaults are the command's)."""

    workloads: str
    batch: int
    device: str
    engine: str
    topology: Optional[str]
    nis: Optional[int]
    algorithms: Optional[str]
    nic: Optional[str]
    variant: Optional[str]
    model: str
    policy: str
    fusion_threshold: Optional[str]
    slice_bytes: Optional[str]
    partition_bytes: Optional[str]
    strict: Optional[bool]
    dear_threshold: Optional[str]
    fused: Optional[bool]
    iterations: int
    config: Optional[Path]
    preset: Optional[str]
    out: Optional[Path]
    seed: Optional[int]
    trace: Optional[Path]
    gantt: Optional[Path]
    trace_run: Optional[str]
    yes: bool
    fresh: bool
    export_chakra: Optional[Path] = None
    workers: Optional[int] = None  # 0 (this process) unless dask
    dask: Optional[str] = None


@dataclass(frozen=True)
class TrainSetup:
    request: TrainRequest
    source: str
    cfg: object  # hw_models.config.ExperimentConfig, flags applied
    exp: object  # hw_models.experiment.ResolvedExperiment
    design: str
    algorithms: list
    policies: tuple
    plan: object  # hw_models.sweep.plan.Plan
    pick: Optional[tuple]  # (workload, algorithm, policy label) of --trace / --gantt
    out_dir: Path
    stem: str
    store_path: Path  # the output directory's sweep store


def _size_flag(flag: str, text: Optional[str], zero: bool = True) -> Optional[int]:
    """``text`` (e.g. 8MiB, 4096, or 0 where ``zero``) as bytes; errors name ``flag``."""
    from noc.base.units import parse_size_bytes

    if text is None:
        return None
    if zero and text.strip() == "0":
        return 0
    try:
        return parse_size_bytes(text.strip())
    except ConfigError as exc:
        raise HwModelsError(f"{flag}: {exc}" + ("; or 0" if zero else "")) from None


def _check_scalars(req: TrainRequest):
    """The flags checked on their own; the device."""
    from hw_models.training.compute import ENGINES, get_device
    from nic.allreduce import MODELS

    from hw_models.estimate import MAX_BATCH_SAMPLES, MAX_TRAINING_ITERATIONS

    if isinstance(req.batch, bool) or not 1 <= req.batch <= MAX_BATCH_SAMPLES:
        raise HwModelsError(f"--batch {req.batch}: must be an integer in 1..{MAX_BATCH_SAMPLES:,} (samples per worker)")

    if not 2 <= req.iterations <= MAX_TRAINING_ITERATIONS:
        raise HwModelsError(f"--iterations {req.iterations}: must be 2..{MAX_TRAINING_ITERATIONS:,} (the first "
                            "iteration is not steady state; the figures are steady-state means)")
    try:
        dev = get_device(req.device)
    except ConfigError as exc:
        raise HwModelsError(f"--device: {exc}") from None
    if req.engine not in ENGINES:
        raise HwModelsError(f"--engine {req.engine!r}: choose one of {', '.join(ENGINES)}")
    if req.model not in MODELS:
        raise HwModelsError(f"--model {req.model!r}: choose one of {', '.join(MODELS)}")
    return dev


def _policies(req: TrainRequest) -> tuple[tuple, dict]:
    """The policies --policy asks for, with their options (endtoend's names -> values)."""
    from hw_models.training import endtoend as e2e

    options = {"fusion_threshold_bytes": _size_flag("--fusion-threshold", req.fusion_threshold),
               "slice_bytes": _size_flag("--slice-bytes", req.slice_bytes, zero=False),
               "partition_bytes": _size_flag("--partition-bytes", req.partition_bytes, zero=False),
               "strict": req.strict, "dear_threshold_bytes": _size_flag("--dear-threshold", req.dear_threshold),
               "fused": req.fused}
    flags = {"fusion_threshold_bytes": "--fusion-threshold", "slice_bytes": "--slice-bytes",
             "partition_bytes": "--partition-bytes", "dear_threshold_bytes": "--dear-threshold",
             "strict": "--strict" if req.strict else "--no-strict", "fused": "--fused" if req.fused else "--per-layer",
             "policy": "--policy"}
    return e2e.make_policies(req.policy, options, flags), options


def _check_trace_files(req: TrainRequest) -> None:
    from hw_models.store import check_new_file

    if req.trace_run is not None and not (req.trace or req.gantt):
        raise HwModelsError("--trace-run chooses the run of --trace and --gantt; give one of them")
    check_new_file(req.trace, "--trace")
    check_new_file(req.gantt, "--gantt")
    if req.trace is not None and req.gantt is not None and req.trace.resolve() == req.gantt.resolve():
        raise HwModelsError(f"--trace and --gantt name one file, {req.trace}")


def resolve(req: TrainRequest) -> TrainSetup:
    """Every check before a run, in the order the command has always made them, and the plan."""
    from hw_models.config import experiment_data
    from hw_models.experiment import check_model_network, config_with_flags, data_with_flags, resolve_experiment
    from hw_models.flags import flag_overlay
    from hw_models.config import check_config_file
    from hw_models.job import output_dir
    from hw_models.store import STORE_NAME, check_output_dir
    from hw_models.training import endtoend as e2e
    from nic.variants import DESIGNS

    check_config_file(req.config)
    data, source = experiment_data(req.config, req.preset)
    dev = _check_scalars(req)
    policies, options = _policies(req)
    works = workload_specs(req.workloads)
    design, names, overrides, flags, drop = flag_overlay(
        topology=req.topology, nis=req.nis, algorithms=req.algorithms, nic=req.nic, variant=req.variant,
        seed=req.seed, designs=tuple(DESIGNS))
    cfg = config_with_flags(data, source, overrides, flags, drop)
    design = design or cfg.nic.design
    exp = resolve_experiment(cfg, source, flags=flags, designs=[design], algorithms=names)
    check_model_network(exp, design, req.model, source)
    algos = list(exp.schedules)
    pick = (_trace_pick(req.trace_run, [w for _, w in works], algos, policies)
            if (req.trace or req.gantt or req.trace_run) else None)
    _check_trace_files(req)
    if req.model == "flit":
        _check_flit_time(req, exp, design, algos, [w for _, w in works], dev)
    out_dir, named = output_dir(req.out, cfg, source, "train")
    tag = policies[0].name if len(policies) == 1 else (
        "all_policies" if len(policies) == len(e2e.POLICIES) else "-".join(p.name for p in policies))
    stem = f"train_{exp.topology.name.replace(':', '_')}_{req.model}_{tag}"
    check_output_dir(out_dir, named, [f"{stem}.csv", f"{stem}.png", STORE_NAME])
    for flag, path in (("--trace", req.trace), ("--gantt", req.gantt)):
        if path is not None:
            check_output_dir(path.parent, f"{flag} {path}: its directory")
    plan = _plan(req, data_with_flags(data, overrides, drop), design, works, algos, policies, options, source)
    from hw_models.estimate import check_long_run, training_seconds

    check_long_run(training_seconds(len(plan.configs), req.iterations),
                   f"{len(plan.configs)} training runs of {req.iterations:,} iterations", req.yes,
                   "fewer --iterations (the figures are steady-state means), workloads or policies")
    return TrainSetup(req, source, cfg, exp, design, algos, policies, plan, pick, out_dir, stem, out_dir / STORE_NAME)


def workload_specs(spec: str) -> list[tuple[str, object]]:
    """(the spec of one workload, the workload) for each workload ``spec`` names, in order:
    a built-in's name, or the layer file's path as given."""
    from hw_models.training import endtoend as e2e

    works = e2e.resolve_workloads(spec)  # the whole spec checked first, as --workloads
    out: dict[str, tuple[str, object]] = {}
    for item in (s.strip() for s in spec.split(",")):
        if item:
            for w in e2e.resolve_workloads(item):
                out.setdefault(w.name, (w.name if item.lower() == "all" else item, w))
    return [out[w.name] for w in works]


def _check_flit_time(req: TrainRequest, exp, design: str, algos: list, works: list, dev) -> None:
    from hw_models.estimate import check_flit_cycles, check_long_run, flit_allreduce_seconds
    from hw_models.training import endtoend as e2e

    costs = e2e.workload_costs(works, req.batch, dev, req.engine)
    sizes = sorted({x.grad_bytes for layers in costs.values() for x in layers if x.grad_bytes > 0})
    runs = [(exp.schedules[a], exp.nics[design], s) for a in algos for s in sizes]
    secs = flit_allreduce_seconds(exp.topology, exp.router, runs)
    check_long_run(secs, "the flit-level all-reduces (one per layer gradient size, at least)", req.yes,
                   "--model message, or fewer or smaller workloads")
    check_flit_cycles(exp.topology, runs)


def _plan(req: TrainRequest, data: dict, design: str, works, algos, policies, options: dict, source: str):
    """One training point per workload x algorithm x policy, in the table's order."""
    import copy

    from hw_models.sweep.kinds.training import OPTION_KEYS
    from hw_models.sweep.plan import Plan
    from hw_models.training.endtoend import POLICY_OPTIONS

    point_key = {opt: key for key, opt in OPTION_KEYS.items()}  # the kind's names of the policy options
    base = copy.deepcopy(data)
    base.pop("allreduce", None)  # the algorithms are the points'; a point's config has no [allreduce]
    base["nic"] = {**(base.get("nic") or {}), "design": design}
    configs, labels = [], []
    for spec, w in works:
        for a in algos:
            for p in policies:
                own = {point_key[o]: v for o, v in options.items() if v is not None and POLICY_OPTIONS[o][0] == p.name}
                configs.append({**copy.deepcopy(base), "training": {
                    "workload": spec, "algorithm": a, "policy": p.name, "batch": req.batch, "device": req.device,
                    "engine": req.engine, "model": req.model, "iterations": req.iterations, **own}})
                labels.append(f"{w.name} / {a} / {p.label}")
    return Plan("training", configs, source, ORIGIN, labels)


def _trace_pick(text: Optional[str], works, algos: list[str], policies) -> tuple[str, str, str]:
    """The (workload, algorithm, policy label) of --trace and --gantt."""
    from nic.collectives import algorithm_name

    if text is None:
        return works[0].name, algos[-1], policies[0].label
    parts = [p.strip() for p in text.split("/")]
    if len(parts) != 3 or not all(parts):
        raise HwModelsError(f"--trace-run {text!r}: give WORKLOAD/ALGORITHM/POLICY, e.g. "
                            f"{works[0].name}/{algos[-1]}/{policies[0].name}")
    w, a, p = parts
    names = [x.name for x in works]
    if w not in names:
        raise HwModelsError(f"--trace-run {text!r}: workload {w!r} is not run (run: {', '.join(names)})")
    try:
        a = algorithm_name(a)
    except HwModelsError:
        pass
    if a not in algos:
        raise HwModelsError(f"--trace-run {text!r}: algorithm {parts[1]!r} is not run (run: {', '.join(algos)})")
    by_name = {x.name: x.label for x in policies}
    key = p.lower().replace("-", "_")
    if key not in by_name:
        raise HwModelsError(f"--trace-run {text!r}: policy {p!r} is not run (run: {', '.join(by_name)})")
    return w, a, by_name[key]


# --- the run and its outputs ---------------------------------------------------------------------

def _print_header(con, s: TrainSetup) -> None:
    req, t, network, nic_cfg = s.request, s.exp.topology, s.exp.router, s.exp.nics[s.design]
    n = len(s.plan.configs)
    n_works = n // (len(s.algorithms) * len(s.policies))
    con.print(f"training iterations on {t.name} ({t.num_nodes} workers, {t.nis_per_node} NI(s)/node), "
              f"{s.design} NIC, {req.model}-level all-reduces at {nic_cfg.clock_ghz:g} GHz; {n_works} workload(s) x "
              f"{len(s.algorithms)} algorithm(s) x {len(s.policies)} polic{'y' if len(s.policies) == 1 else 'ies'} = "
              f"{n} runs; {req.batch} samples per worker on {req.device} ({req.engine}); verifier seed "
              f"{s.cfg.run.seed} (the timing models are deterministic)"
              + (f"; arbiter seed {network.arbiter_seed}" if network.arbiter_seed is not None else "")
              + f"; results in {s.out_dir}", soft_wrap=True)
    for note in s.exp.left_out:
        con.print(f"left out of the default algorithms: {note}")
    con.print("each distinct all-reduce size is simulated once per algorithm and cached", soft_wrap=True)


def _run(con, s: TrainSetup):
    """(the runs in the plan's order, runs reused, sizes simulated now per algorithm): the
    plan's points run into the store, a progress bar over them."""
    from hw_models.job import backend, run_plan_points
    from hw_models.sweep.kinds.training import forget_comms, simulations, train_run
    from hw_models.sweep.plan import resolve as resolve_points

    req = s.request
    points = resolve_points(s.plan)
    forget_comms()  # each size this command's runs need is simulated once per algorithm, and counted
    ran = run_plan_points(con, s.plan, s.store_path, lambda point: point.values.get("label", ""), fresh=req.fresh,
                          workers=req.workers, dask=req.dask, points=points, last="done")
    runs = [train_run(p.config, m) for p, m in zip(points, ran.metrics)]
    here = backend(req.workers, req.dask)["workers"] == 0  # else the workers simulated, uncounted
    sims = {a: simulations(points[0].config, a) for a in s.algorithms} if here else None
    return points, runs, len(points) - ran.summary.done, sims


def run_train(req: TrainRequest) -> None:
    """Check, run and render ``req`` (module docstring)."""
    from hw_models.console import console
    from hw_models.training import endtoend as e2e

    s = resolve(req)
    con = console()
    if req.export_chakra is not None:
        _export_chakra(con, s)
        return
    _print_header(con, s)
    points, runs, reused, sims = _run(con, s)
    rows = e2e.table_rows(runs)
    _print_table(con, rows, s.exp.topology.name, e2e.baseline_policy(runs))
    for line in _summary_lines(runs, s.algorithms, s.policies):
        con.print(line, soft_wrap=True)
    written = _write(con, s, runs, rows)
    if s.pick is not None:
        written += _trace(con, s, points)
    done = "; ".join(f"{a}: " + (", ".join(f"{n} {k.replace('_', '-')}" for k, n in c.items() if n) or "none")
                     for a, c in sims.items()) if sims is not None else "not counted (the runs ran on workers)"
    if req.model == "message" and s.exp.nics[s.design].tx_buffer_flits > 0:
        con.print(TX_QUEUE_NOTE, soft_wrap=True)
    con.print(f"{len(runs)} runs" + (f" ({reused} reused from {s.store_path.name})" if reused else "")
              + f"; distinct sizes simulated ({req.model} level) per algorithm: {done}; every run appended to "
              f"{s.store_path}; wrote {', '.join(str(w) for w in written)}", soft_wrap=True)


def _export_chakra(con, s: TrainSetup) -> None:
    """--export-chakra DIR: each workload's iteration as one Chakra ET per node of the topology
    (compute in whole µs, one all-reduce per layer gradient, WFBP order); nothing is run."""
    from hw_models.training import chakra
    from hw_models.training import endtoend as e2e
    from hw_models.training.compute import get_device

    req = s.request
    works = [w for _, w in workload_specs(req.workloads)]
    costs = e2e.workload_costs(works, req.batch, get_device(req.device), req.engine)
    ranks = s.exp.topology.num_nodes
    for w in works:
        prefix = chakra.export_workload(req.export_chakra, w.name, chakra.layer_nodes(costs[w.name]), ranks)
        con.print(f"{w.name}: {ranks} ranks -> {prefix}.0.et .. {prefix}.{ranks - 1}.et", soft_wrap=True)


def _write(con, s: TrainSetup, runs, rows: list[dict]) -> list[Path]:
    """The CSV (the rows with the configuration) and PNG."""
    from hw_models.job import write_rows
    from hw_models.report.charts import training_chart

    req = s.request
    config_fields = {"topology": s.exp.topology.name, "nic": s.design, "model": req.model, "batch": req.batch,
                     "device": req.device, "engine": req.engine, "iterations": req.iterations, "config": s.source,
                     "seed": int(s.cfg.run.seed)}
    return write_rows(con, s.out_dir / f"{s.stem}.csv", [{**r, **config_fields} for r in rows],
                      f"every run stays in {s.store_path}", lambda png: training_chart(
                          runs, png, f"training iterations on {s.exp.topology.name}, {s.design} NIC, {req.model} "
                          f"level, batch {req.batch} on {req.device}"))


def _trace(con, s: TrainSetup, points) -> list[Path]:
    """The --trace and --gantt of the picked run (its timeline simulated again: the same figures)."""
    from hw_models.report.timeline import plot_gantt, write_trace
    from hw_models.sweep.kinds.training import timeline

    w, a, label = s.pick
    by_name = {p.label: p.name for p in s.policies}
    point = next(p for p in points if (p.config["workload"], p.config["algorithm"], p.config["policy"])
                 == (w, a, by_name[label]))
    res = timeline(point.config)
    con.print(f"trace of {' / '.join(s.pick)}: steady iteration {res.iteration_s * 1e3:.4g} ms", soft_wrap=True)
    written = []
    if s.request.trace is not None:
        written.append(write_trace(res, s.request.trace))
    if s.request.gantt is not None:
        written.append(plot_gantt(res, s.request.gantt))
    return written


def _pct(x) -> str:
    return "-" if x is None or x != x else f"{x:+.1f} %"


def _print_table(con, rows: list[dict], topo: str, policy_baseline: Optional[str]) -> None:
    from hw_models.console import table
    from hw_models.training.endtoend import reduction_column

    cols = ["workload", "algorithm", "policy", "iteration ms", "compute ms", "exposed ms", "overlap", "vs ring"]
    pcol = reduction_column(policy_baseline) if policy_baseline else None
    if pcol:
        cols.append(f"vs {policy_baseline}")
    con.print(table(f"training iterations on {topo} (steady state; reduction: shorter iteration, in per cent)", cols,
                    [(r["workload"], r["algorithm"], r["policy"], f"{r['iteration_s'] * 1e3:,.3f}",
                      f"{r['compute_s'] * 1e3:,.3f}", f"{r['exposed_comm_s'] * 1e3:,.3f}", f"{r['overlap_ratio']:.2f}",
                      _pct(r.get("reduction_vs_ring_percent")), *([_pct(r.get(pcol))] if pcol else []))
                     for r in rows], ("workload", "algorithm", "policy")))


def _summary_lines(runs, algos: list[str], policies) -> list[str]:
    """One policy: each algorithm's largest reduction against ring and against the fastest
    other algorithm. Several: per algorithm, the fastest policy on each workload."""
    from hw_models.training.endtoend import baseline_policy, best_reductions, reduction_percent

    out = []
    if len(policies) > 1:
        base = baseline_policy(runs)
        for a in algos:
            parts = []
            for w in dict.fromkeys(r.workload for r in runs):
                mine = {r.policy: r.iteration_s for r in runs if r.workload == w and r.algorithm == a}
                best = min(mine, key=mine.get)
                parts.append(f"{w} {best} ({reduction_percent(mine[best], mine[base]):+.1f} % against {base})")
            out.append(f"fastest policy with {a}: " + "; ".join(parts))
        return out
    if len(algos) < 2:
        return out
    p = policies[0]
    parts = []
    for a in algos:
        if a == "ring":
            continue
        ring, best = best_reductions(runs, a, p.label)
        text = f"{a} {ring.percent:+.1f} % against ring ({ring.workload})"
        if len(algos) > 2:
            text += f", {best.percent:+.1f} % against the fastest other algorithm ({best.workload})"
        parts.append(text)
    out.append(f"largest reduction under {p.label}: " + "; ".join(parts))
    return out
