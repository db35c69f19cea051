"""``hw-models train``: training iterations end to end, workloads x all-reduce algorithms x policies.

The network, NIC and algorithms are checked as ``hw-models allreduce`` checks them
(:func:`hw_models.experiment.resolve_experiment`); the runs and tables are
:mod:`hw_models.training.endtoend`'s. Outputs: ``<out>/train_<topology>_<model>_<policy>.csv``
and ``.png`` (replaced by the next command of the same name, with a note when they held
other runs), every run appended to ``<out>/train_<topology>_<model>.jsonl``, and on request a
Perfetto/Chrome trace and a Gantt PNG of one run (never replacing an existing file).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Optional

import typer

from hw_models.flags import flag_overlay
from hw_models.training.compute import DEFAULT_DEVICE, ENGINES, device_choices
from hw_models.training.policies import POLICIES
from hw_models.training.workloads import WORKLOADS
from nic.collectives import algorithm_choices
from nic.variants import DESIGNS, VARIANTS
from noc.base.errors import ConfigError, HwModelsError

DEFAULT_BATCH = 16
TX_QUEUE_NOTE = ("note: with a transmit queue (nic.tx_buffer_flits) the message model is least accurate below about "
                 "1 MiB (up to 33 % fast on some 4-NI runs at 256 KiB; docs/allreduce.md), and most layers' gradients "
                 "are smaller: check the figures that matter with --model flit.")


def train(
    workloads: str = typer.Option("all", "--workloads", "-w", help=f"Comma-separated: all, {', '.join(WORKLOADS)}, "
                                  "or a .json/.toml layer file (docs/training_workloads.md)."),
    batch: int = typer.Option(DEFAULT_BATCH, "--batch", "-b", help="Samples per worker per iteration."),
    device: str = typer.Option(DEFAULT_DEVICE, "--device", help=f"Compute device preset: {device_choices()}."),
    engine: str = typer.Option("closed-form", "--engine", help=f"Systolic-array timing: {' or '.join(ENGINES)} "
                               "(SCALE-Sim itself; slow)."),
    topology: Optional[str] = typer.Option(None, "--topology", "-t", help="Topology spec (default: the config's, "
                                           "torus:4x4)."),
    nis: Optional[int] = typer.Option(None, "--nis", help="NIs per node on direct networks (default: the config's)."),
    algorithms: Optional[str] = typer.Option(None, "--algorithms", "-a", help="Comma-separated all-reduce algorithms: "
                                             f"{algorithm_choices()} (default: the config's). Ring is always run: the "
                                             "reductions are against it."),
    nic: Optional[str] = typer.Option(None, "--nic", help=f"NIC design: {' or '.join(DESIGNS)} (default: the "
                                      "config's)."),
    variant: Optional[str] = typer.Option(None, "--variant", help="The MultiTree paper's NIC variants "
                                          f"{', '.join(VARIANTS)} (sets --nis and the NIC's flow control; as `hw-models "
                                          "allreduce`)."),
    model: str = typer.Option("message", "--model", help="All-reduce model: message (fast) or flit (cycle level, "
                              "slow)."),
    policy: str = typer.Option("wfbp", "--policy", "-p", help="Communication scheduling: "
                               f"{', '.join(POLICIES)}, a comma-separated list, or all."),
    fusion_threshold: Optional[str] = typer.Option(None, "--fusion-threshold", help="fusion: bucket size, e.g. 8MiB "
                                                   "or 0 (one bucket per layer; default 64MiB)."),
    slice_bytes: Optional[str] = typer.Option(None, "--slice-bytes", help="p3: slice size (default 1MiB)."),
    partition_bytes: Optional[str] = typer.Option(None, "--partition-bytes", help="prophet: cut gradients into "
                                                  "partitions of this size (default: whole gradients)."),
    strict: Optional[bool] = typer.Option(None, "--strict/--no-strict", help="prophet: idle the network when no "
                                          "gradient fits the time to the next one (default: --no-strict)."),
    dear_threshold: Optional[str] = typer.Option(None, "--dear-threshold", help="dear: bucket size, or 0 (default "
                                                 "25MiB)."),
    fused: Optional[bool] = typer.Option(None, "--fused/--per-layer", help="sequential: one all-reduce of all "
                                         "gradients, or one per layer (default)."),
    iterations: int = typer.Option(3, "--iterations", help="Iterations simulated (>= 2; figures are the mean of "
                                   "all but the first)."),
    config: Optional[Path] = typer.Option(None, "--config", help="Experiment TOML (see `hw-models config show`)."),
    preset: Optional[str] = typer.Option(None, "--preset", help="A named config instead of a file: isca2021."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default: the config's "
                                       "run.out_dir/train)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the all-reduce verifier's random input vectors, "
                                       "an integer in [0, 2**32 - 1] (the timing models are deterministic; default: "
                                       "the config's)."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="Write the Perfetto/Chrome trace JSON of one run "
                                         "(--trace-run) to this new file."),
    gantt: Optional[Path] = typer.Option(None, "--gantt", help="Write a Gantt PNG of one run (--trace-run) to this "
                                         "new file."),
    trace_run: Optional[str] = typer.Option(None, "--trace-run", help="WORKLOAD/ALGORITHM/POLICY of --trace and "
                                            "--gantt (default: the first workload, the last algorithm, the first "
                                            "policy)."),
    yes: bool = typer.Option(False, "--yes", help="Run flit-level all-reduces estimated to take longer than 10 "
                             "minutes."),
) -> None:
    """Simulate training iterations: per workload, iteration time and reduction against ring; write CSV and PNG."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hw_models.config import experiment_data
    from hw_models.experiment import check_model_network, config_with_flags, resolve_experiment
    from hw_models.report.charts import training_chart
    from hw_models.report.writer import replacing_note
    from hw_models.store import ResultStore, check_output_dir, csv_holds_other_rows, write_csv_atomic
    from hw_models.training import endtoend as e2e
    from hw_models.training.compute import get_device
    from nic.allreduce import MODELS

    # ---- everything checked before anything is simulated or written --------------------
    if config is not None and not config.is_file():
        raise HwModelsError(f"--config {config}: {'is a directory' if config.is_dir() else 'no such file'}")
    data, source = experiment_data(config, preset)
    if isinstance(batch, bool) or batch < 1:
        raise HwModelsError(f"--batch {batch}: must be an integer >= 1 (samples per worker)")
    if iterations < 2:
        raise HwModelsError(f"--iterations {iterations}: must be >= 2 (the first iteration is not steady state)")
    try:
        dev = get_device(device)
    except ConfigError as exc:
        raise HwModelsError(f"--device: {exc}") from None
    if engine not in ENGINES:
        raise HwModelsError(f"--engine {engine!r}: choose one of {', '.join(ENGINES)}")
    if model not in MODELS:
        raise HwModelsError(f"--model {model!r}: choose one of {', '.join(MODELS)}")
    options = {"fusion_threshold_bytes": _size_flag("--fusion-threshold", fusion_threshold),
               "slice_bytes": _size_flag("--slice-bytes", slice_bytes, zero=False),
               "partition_bytes": _size_flag("--partition-bytes", partition_bytes, zero=False),
               "strict": strict, "dear_threshold_bytes": _size_flag("--dear-threshold", dear_threshold),
               "fused": fused}
    option_flags = {"fusion_threshold_bytes": "--fusion-threshold", "slice_bytes": "--slice-bytes",
                    "partition_bytes": "--partition-bytes", "dear_threshold_bytes": "--dear-threshold",
                    "strict": "--strict" if strict else "--no-strict", "fused": "--fused" if fused else "--per-layer",
                    "policy": "--policy"}
    policies = e2e.make_policies(policy, options, option_flags)
    works = e2e.resolve_workloads(workloads)
    design, names, overrides, flags, drop = flag_overlay(topology=topology, nis=nis, algorithms=algorithms, nic=nic,
                                                         variant=variant, seed=seed, designs=tuple(DESIGNS))
    cfg = config_with_flags(data, source, overrides, flags, drop)
    design = design or cfg.nic.design
    exp = resolve_experiment(cfg, source, flags=flags, designs=[design], algorithms=names)
    check_model_network(exp, design, model, source)
    t, network, nic_cfg = exp.topology, exp.router, exp.nics[design]
    algos = list(exp.schedules)
    pick = _trace_pick(trace_run, works, algos, policies) if (trace or gantt or trace_run) else None
    if trace_run is not None and not (trace or gantt):
        raise HwModelsError("--trace-run chooses the run of --trace and --gantt; give one of them")
    for flag, path in (("--trace", trace), ("--gantt", gantt)):
        if path is not None:
            if path.is_dir():
                raise HwModelsError(f"{flag} {path}: is a directory; give a file name")
            if path.exists():
                raise HwModelsError(f"{flag} {path}: exists (another run's output?); choose another file name")
    if trace is not None and gantt is not None and trace.resolve() == gantt.resolve():
        raise HwModelsError(f"--trace and --gantt name one file, {trace}")
    costs = e2e.workload_costs(works, batch, dev, engine)
    if model == "flit":
        from hw_models.estimate import check_long_run, flit_allreduce_seconds

        sizes = sorted({x.grad_bytes for layers in costs.values() for x in layers if x.grad_bytes > 0})
        secs = flit_allreduce_seconds(t, network, [(exp.schedules[a], nic_cfg, s) for a in algos for s in sizes])
        check_long_run(secs, "the flit-level all-reduces (one per layer gradient size, at least)", yes,
                       "--model message, or fewer or smaller workloads")
    # ---- outputs: checked before the runs --------------------------------------------
    out_dir = out or Path(cfg.run.out_dir) / "train"
    topo_stem = t.name.replace(":", "_")
    tag = policies[0].name if len(policies) == 1 else (
        "all_policies" if len(policies) == len(e2e.POLICIES) else "-".join(p.name for p in policies))
    stem = f"train_{topo_stem}_{model}_{tag}"
    store_name = f"train_{topo_stem}_{model}.jsonl"
    check_output_dir(out_dir, "--out" if out else f"{source}: run.out_dir = {cfg.run.out_dir!r}: its directory",
                     [f"{stem}.csv", f"{stem}.png", store_name])
    for flag, path in (("--trace", trace), ("--gantt", gantt)):
        if path is not None:
            check_output_dir(path.parent, f"{flag} {path}: its directory")
    store = ResultStore(out_dir / store_name)

    # ---- runs --------------------------------------------------------------------------
    comms = e2e.nic_comms(exp, design, model)
    console = Console(width=None if sys.stdout.isatty() else 120)
    n_runs = len(costs) * len(comms) * len(policies)
    console.print(f"training iterations on {t.name} ({t.num_nodes} workers, {t.nis_per_node} NI(s)/node), "
                  f"{design} NIC, {model}-level all-reduces at {nic_cfg.clock_ghz:g} GHz; {len(costs)} workload(s) x "
                  f"{len(comms)} algorithm(s) x {len(policies)} polic{'y' if len(policies) == 1 else 'ies'} = {n_runs} "
                  f"runs; {batch} samples per worker on {device} ({engine}); verifier seed {cfg.run.seed} (the timing "
                  f"models are deterministic)"
                  + (f"; arbiter seed {network.arbiter_seed}" if network.arbiter_seed is not None else "")
                  + f"; results in {out_dir}", soft_wrap=True)
    for note in exp.left_out:
        console.print(f"left out of the default algorithms: {note}")
    console.print("each distinct all-reduce size is simulated once per algorithm and cached", soft_wrap=True)
    kept = {}
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        task = progress.add_task("simulating", total=n_runs)
        current = {"run": ""}

        def before(key):
            current["run"] = " / ".join(key)
            progress.update(task, description=current["run"])

        def on_call(label, kind, nbytes):
            progress.update(task, description=f"{current['run']}: {label} {kind.replace('_', '-')} "
                            f"{_fmt_bytes(nbytes)}")

        watched = {a: _Watched(c, a, on_call) for a, c in comms.items()}
        try:
            runs, kept = e2e.run_matrix(costs, watched, policies, iterations=iterations, before_run=before,
                                        on_run=lambda key, run: progress.advance(task),
                                        keep=(lambda key: key == pick) if pick else None)
        except KeyboardInterrupt:
            progress.stop()
            console.print("interrupted: nothing written")
            raise typer.Exit(130) from None
        progress.update(task, description="done")

    # ---- tables and files ------------------------------------------------------------
    rows = e2e.table_rows(runs)
    pb = e2e.baseline_policy(runs)
    _print_table(console, rows, t.name, pb)
    for line in _summary_lines(runs, algos, policies):
        console.print(line, soft_wrap=True)
    config_fields = {"topology": t.name, "nic": design, "model": model, "batch": batch, "device": device,
                     "engine": engine, "iterations": iterations, "config": source, "seed": int(cfg.run.seed)}
    csv_rows = [{**r, **config_fields} for r in rows]
    run_hash = _config_hash(config_fields, exp, nic_cfg, costs)
    for r in csv_rows:
        store.append(f"{r['workload']}|{r['algorithm']}|{r['policy']}|{run_hash}", r)
    csv_path, png_path = out_dir / f"{stem}.csv", out_dir / f"{stem}.png"
    with store.locked():  # another command writing these files waits: its note and its files come after
        if csv_holds_other_rows(csv_path, csv_rows):
            console.print(replacing_note(csv_path, "other runs than this command's", f"every run stays in {store.path}",
                                         also="its PNG"), soft_wrap=True)
        written = [write_csv_atomic(csv_path, csv_rows),
                   training_chart(runs, png_path, f"training iterations on {t.name}, {design} NIC, {model} level, "
                                             f"batch {batch} on {device}")]
    if pick is not None:
        from hw_models.report.timeline import plot_gantt, write_trace

        res = kept[pick]
        console.print(f"trace of {' / '.join(pick)}: steady iteration {res.iteration_s * 1e3:.4g} ms", soft_wrap=True)
        if trace is not None:
            written.append(write_trace(res, trace))
        if gantt is not None:
            written.append(plot_gantt(res, gantt))
    sims = []
    for a, c in comms.items():
        done = ", ".join(f"{n} {k.replace('_', '-')}" for k, n in c.cache_info().items() if n)
        sims.append(f"{a}: {done or 'none'}")
    if model == "message" and nic_cfg.tx_buffer_flits > 0:
        console.print(TX_QUEUE_NOTE, soft_wrap=True)
    console.print(f"{n_runs} runs; distinct sizes simulated ({model} level) per algorithm: {'; '.join(sims)}; every "
                  f"run appended to {store.path}; wrote {', '.join(str(w) for w in written)}", soft_wrap=True)


# ---------------------------------------------------------------------------------------
# helpers of this command
# ---------------------------------------------------------------------------------------


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


class _Watched:
    """A communication model that reports each call (kind, bytes) before making it."""

    def __init__(self, comm, label: str, on_call):
        self._comm, self._label, self._on_call = comm, label, on_call
        self._last = None
        self.num_workers = comm.num_workers

    def _call(self, kind: str, nbytes: int) -> float:
        if (kind, nbytes) != self._last:
            self._last = (kind, nbytes)
            self._on_call(self._label, kind, nbytes)
        return getattr(self._comm, f"{kind}_s")(nbytes)

    def allreduce_s(self, nbytes: int) -> float:
        return self._call("allreduce", nbytes)

    def reduce_scatter_s(self, nbytes: int) -> float:
        return self._call("reduce_scatter", nbytes)

    def all_gather_s(self, nbytes: int) -> float:
        return self._call("all_gather", nbytes)

    def describe(self) -> str:
        from hw_models.training.comm import describe

        return describe(self._comm)


def _fmt_bytes(n: int) -> str:
    for unit, m in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= m:
            return f"{n / m:.3g} {unit}"
    return f"{n} B"


def _pct(x) -> str:
    return "-" if x is None or x != x else f"{x:+.1f} %"


def _print_table(console, rows: list[dict], topo: str, policy_baseline: Optional[str]) -> None:
    from rich.table import Table

    from hw_models.training.endtoend import reduction_column

    table = Table(title=f"training iterations on {topo} (steady state; reduction: shorter iteration, in per cent)")
    cols = ["workload", "algorithm", "policy", "iteration ms", "compute ms", "exposed ms", "overlap", "vs ring"]
    pcol = reduction_column(policy_baseline) if policy_baseline else None
    if pcol:
        cols.append(f"vs {policy_baseline}")
    for c in cols:
        table.add_column(c, justify="left" if c in ("workload", "algorithm", "policy") else "right")
    for r in rows:
        cells = [r["workload"], r["algorithm"], r["policy"], f"{r['iteration_s'] * 1e3:,.3f}",
                 f"{r['compute_s'] * 1e3:,.3f}", f"{r['exposed_comm_s'] * 1e3:,.3f}", f"{r['overlap_ratio']:.2f}",
                 _pct(r.get("reduction_vs_ring_percent"))]
        if pcol:
            cells.append(_pct(r.get(pcol)))
        table.add_row(*cells)
    console.print(table)


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


def _config_hash(fields: dict, exp, nic_cfg, costs) -> str:
    """A short hash of everything that determines this command's runs (store keys)."""
    from nic.collectives import SCHEDULE_VERSION
    from nic.message_sim import MODEL_VERSION as MESSAGE_MODEL_VERSION
    from noc.flit import MODEL_VERSION as FLIT_MODEL_VERSION

    blob = json.dumps({**fields, "topology": exp.topology.to_dict(), "nic": nic_cfg.key_fields(),
                       "network": exp.router.key_fields(), "schedule_version": SCHEDULE_VERSION,
                       "model_version": MESSAGE_MODEL_VERSION if fields["model"] == "message" else FLIT_MODEL_VERSION,
                       "costs": {w: [[x.name, x.fwd_s, x.bwd_s, x.grad_bytes] for x in layers]
                                 for w, layers in costs.items()}}, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]
