"""End-to-end training iterations: workloads x all-reduce algorithms x scheduling policies.

The logic behind ``hw-models train`` and ``bench/training_endtoend.py``, on plain values:

* :func:`resolve_workloads` -- built-in names, ``all`` or JSON/TOML layer files, to
  :class:`~hw_models.training.workloads.Workload` values;
* :func:`workload_costs` -- each workload's :class:`~hw_models.training.costs.LayerCost`
  per layer on a device (:func:`hw_models.training.compute.layer_costs`);
* :func:`make_policies` -- policies by name (or ``all``) with their options, an option
  that applies to no chosen policy refused;
* :func:`run_matrix` -- one :func:`~hw_models.training.timeline.simulate` per (workload,
  algorithm, policy), each a :class:`TrainRun` (the steady-state figures);
* :func:`table_rows`, :func:`reduction_percent`, :func:`best_reductions` -- the reductions
  against ring (same workload and policy) and against a baseline policy (same workload and
  algorithm), as the CSV and the tables have them;
* :func:`algorithm_markdown`, :func:`policy_markdown` -- the Markdown tables of
  docs/training.md.

The communication models are handed in by the caller, one per algorithm label (any
:class:`~hw_models.training.comm.CommModel`: a NIC model, an alpha-beta model): this module
builds no network. :func:`nic_comms` makes them from an experiment already checked by
:func:`hw_models.experiment.resolve_experiment`, as the command does.

"Training-time reduction" is per iteration: ``100 * (1 - t / t_ring)`` %, which is the
reduction of a training run of a fixed number of iterations.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from hw_models.training.comm import CommModel
from hw_models.training.costs import LayerCost
from hw_models.training.policies import POLICIES, Policy, make_policy
from hw_models.training.timeline import TimelineResult, simulate
from hw_models.training.workloads import WORKLOADS, Workload, get_workload, load_workload_file
from noc.base.errors import ConfigError

MIB = 1 << 20
BASELINE_ALGORITHM = "ring"

# command-line option -> (policy, keyword argument of its class)
POLICY_OPTIONS: dict[str, tuple[str, str]] = {
    "fused": ("sequential", "fused"),
    "fusion_threshold_bytes": ("fusion", "threshold_bytes"),
    "slice_bytes": ("p3", "slice_bytes"),
    "partition_bytes": ("prophet", "partition_bytes"),
    "strict": ("prophet", "strict"),
    "dear_threshold_bytes": ("dear", "threshold_bytes"),
}


# ---------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------


def resolve_workloads(spec: str, flag: str = "--workloads") -> tuple[Workload, ...]:
    """The workloads ``spec`` names: comma-separated built-in names (:data:`WORKLOADS`),
    ``all`` (every built-in, in table order) or paths of JSON/TOML layer files. A name given
    twice counts once; two different workloads of one name are an error."""
    if not isinstance(spec, str) or not spec.replace(",", "").strip():
        raise ConfigError(f"{flag} {spec!r} names no workload (allowed: all, {', '.join(WORKLOADS)}, a .json/.toml "
                          "layer file or trace:PATH_PREFIX)")
    out: dict[str, Workload] = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        if item.lower() == "all":
            found = list(WORKLOADS.values())
        else:
            if item.startswith("trace:"):
                from hw_models.training.chakra import trace_workload as load  # noqa: PLC0415

                where = f"{flag} {item!r}"
            elif item.lower().endswith((".json", ".toml")) or "/" in item or Path(item).exists():
                load, where = load_workload_file, f"{flag} {item!r}"
            else:
                load, where = get_workload, flag  # its error names the item
            try:
                found = [load(item)]
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None
        for w in found:
            if w.name in out and out[w.name] is not w:
                raise ConfigError(f"{flag} {spec!r}: two different workloads are named {w.name!r} (rename one in its "
                                  "layer file)")
            out[w.name] = w
    return tuple(out.values())


def workload_costs(workloads: Sequence[Workload], batch: int, device, engine: str = "closed-form"
                   ) -> dict[str, tuple[LayerCost, ...]]:
    """Each workload's per-layer compute and gradient bytes for ``batch`` samples per worker
    on ``device`` (:func:`hw_models.training.compute.layer_costs`), by workload name."""
    from hw_models.training.compute import layer_costs  # noqa: PLC0415

    return {w.name: (tuple(w.layer_costs()) if hasattr(w, "layer_costs") else tuple(layer_costs(w, batch, device, engine)))
            for w in workloads}


def make_policies(spec: str, options: Mapping[str, Any] | None = None,
                  flags: Mapping[str, str] | None = None) -> tuple[Policy, ...]:
    """The policies ``spec`` names: comma-separated names of :data:`POLICIES`, or ``all`` (each
    once, in table order). ``options`` maps keys of :data:`POLICY_OPTIONS` to values (``None``:
    not given); a given option must apply to a chosen policy. ``flags`` names each option in
    errors (e.g. ``{"slice_bytes": "--slice-bytes"}``)."""
    flags = dict(flags or {})
    if not isinstance(spec, str) or not spec.replace(",", "").strip():
        raise ConfigError(f"{flags.get('policy', '--policy')} {spec!r} names no policy (allowed: all, "
                          f"{', '.join(POLICIES)})")
    names: list[str] = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        key = item.lower().replace("-", "_")
        if key == "all":
            names += list(POLICIES)
        elif key in POLICIES:
            names.append(key)
        else:
            raise ConfigError(f"{flags.get('policy', '--policy')} {item!r}: unknown policy (allowed: all, "
                              f"{', '.join(POLICIES)})")
    names = list(dict.fromkeys(names))
    kwargs: dict[str, dict[str, Any]] = {n: {} for n in names}
    for opt, value in (options or {}).items():
        if opt not in POLICY_OPTIONS:
            raise ConfigError(f"policy option {opt!r} is unknown (allowed: {', '.join(POLICY_OPTIONS)})")
        if value is None:
            continue
        policy, kwarg = POLICY_OPTIONS[opt]
        if policy not in names:
            raise ConfigError(f"{flags.get(opt, opt)} applies to the {policy} policy, which this run does not "
                              f"include (policies: {', '.join(names)}); add {policy} to --policy or leave the option "
                              "out")
        kwargs[policy][kwarg] = value
    out = []
    for n in names:
        try:
            out.append(make_policy(n, **kwargs[n]))
        except ConfigError as exc:
            given = [flags.get(o, o) for o, (p, _) in POLICY_OPTIONS.items()
                     if p == n and (options or {}).get(o) is not None]
            raise ConfigError(f"{', '.join(given) or n}: {exc}") from None
    return tuple(out)


def nic_comms(exp, design: str, model: str = "message", fixed_latency_s: float = 0.0) -> dict[str, CommModel]:
    """A :class:`~hw_models.training.comm.NicComm` per algorithm of ``exp`` (a
    :class:`hw_models.experiment.ResolvedExperiment`: its topology, routers, schedules and
    the NIC of ``design``), seeded with the config's ``run.seed`` (the functional
    verifier's inputs), by algorithm name."""
    from hw_models.training.comm import NicComm  # noqa: PLC0415

    nic = exp.nics[design]
    return {a: NicComm(exp.topology, s, nic, exp.router, model=model, fixed_latency_s=fixed_latency_s,
                       seed=int(exp.config.run.seed), algorithm=a)
            for a, s in exp.schedules.items()}


# ---------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainRun:
    """One simulated (workload, algorithm, policy): steady-state seconds per iteration
    (:class:`~hw_models.training.timeline.TimelineResult`), collectives and bytes per
    iteration, the workload's gradient bytes and the number of workers."""

    workload: str
    algorithm: str
    policy: str
    iteration_s: float
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    overlap_ratio: float
    idle_s: float
    collectives_per_iteration: int
    comm_bytes_per_iteration: int
    grad_bytes: int
    num_workers: int

    @classmethod
    def from_result(cls, workload: str, algorithm: str, result: TimelineResult) -> "TrainRun":
        steady = {k: v for k, v in result.row().items() if k != "comm"}
        return cls(workload, algorithm, grad_bytes=sum(x.grad_bytes for x in result.layers), **steady)

    def row(self) -> dict:
        return asdict(self)


RunKey = tuple[str, str, str]  # (workload, algorithm, policy label)


def run_matrix(costs: Mapping[str, Sequence[LayerCost]], comms: Mapping[str, CommModel], policies: Sequence[Policy],
               *, iterations: int = 3, on_run: Callable[[RunKey, TrainRun], None] | None = None,
               before_run: Callable[[RunKey], None] | None = None,
               keep: Callable[[RunKey], bool] | None = None
               ) -> tuple[tuple[TrainRun, ...], dict[RunKey, TimelineResult]]:
    """Simulate every workload of ``costs`` (name -> layer costs) with every communication
    model of ``comms`` (algorithm label -> model) under every policy, workload by workload.
    ``before_run(key)`` and ``on_run(key, run)`` report progress; the full
    :class:`~hw_models.training.timeline.TimelineResult` of the runs ``keep(key)`` accepts is
    returned too (e.g. for a trace)."""
    labels = [p.label for p in policies]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"policies {labels}: two policies with one label (the same policy and options twice)")
    runs, kept = [], {}
    for w, layers in costs.items():
        for a, comm in comms.items():
            for p in policies:
                key = (w, a, p.label)
                if before_run is not None:
                    before_run(key)
                res = simulate(layers, comm, p, iterations=iterations)
                run = TrainRun.from_result(w, a, res)
                runs.append(run)
                if keep is not None and keep(key):
                    kept[key] = res
                if on_run is not None:
                    on_run(key, run)
    return tuple(runs), kept


# ---------------------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------------------


def reduction_percent(iteration_s: float, baseline_s: float) -> float:
    """How much shorter ``iteration_s`` is than ``baseline_s``, in per cent of the baseline
    (negative: longer); ``nan`` when the baseline is 0."""
    return 100.0 * (1.0 - iteration_s / baseline_s) if baseline_s > 0 else math.nan


def baseline_policy(runs: Sequence[TrainRun]) -> str | None:
    """The policy the others are compared with: ``wfbp`` if run, else the first; ``None``
    when one policy was run."""
    labels = list(dict.fromkeys(r.policy for r in runs))
    if len(labels) < 2:
        return None
    return "wfbp" if "wfbp" in labels else labels[0]


def table_rows(runs: Sequence[TrainRun], baseline_algorithm: str = BASELINE_ALGORITHM,
               policy_baseline: str | None = "auto") -> list[dict]:
    """The runs as flat rows (CSV) with ``reduction_vs_<algorithm>_percent`` (against the same
    workload and policy on ``baseline_algorithm``, when it was run) and, with several
    policies, ``reduction_vs_<policy>_percent`` (against the same workload and algorithm
    under ``policy_baseline``; ``"auto"``: :func:`baseline_policy`)."""
    by_key = {(r.workload, r.algorithm, r.policy): r for r in runs}
    pb = baseline_policy(runs) if policy_baseline == "auto" else policy_baseline
    algos = {r.algorithm for r in runs}
    out = []
    for r in runs:
        row = r.row()
        if baseline_algorithm in algos:
            base = by_key.get((r.workload, baseline_algorithm, r.policy))
            row[reduction_column(baseline_algorithm)] = (
                reduction_percent(r.iteration_s, base.iteration_s) if base is not None else math.nan)
        if pb is not None:
            base = by_key.get((r.workload, r.algorithm, pb))
            row[reduction_column(pb)] = (
                reduction_percent(r.iteration_s, base.iteration_s) if base is not None else math.nan)
        out.append(row)
    return out


def reduction_column(label: str) -> str:
    """The CSV column of the reduction against ``label`` (an algorithm or a policy label):
    ``reduction_vs_<label, non-alphanumerics as _>_percent``."""
    slug = "".join(c if c.isalnum() else "_" for c in label).strip("_")
    while "__" in slug:
        slug = slug.replace("__", "_")
    return f"reduction_vs_{slug}_percent"


@dataclass(frozen=True)
class BestReduction:
    """The largest reduction of ``algorithm`` over a workload against ``against`` (an
    algorithm, or ``best other``: the fastest of the other algorithms on that workload)."""

    algorithm: str
    against: str
    percent: float
    workload: str


def best_reductions(runs: Sequence[TrainRun], algorithm: str, policy: str,
                    baseline_algorithm: str = BASELINE_ALGORITHM) -> tuple[BestReduction, BestReduction]:
    """Over the workloads run under ``policy``: ``algorithm``'s largest reduction against
    ``baseline_algorithm``, and against the best of the other algorithms (per workload, the
    shortest iteration among them)."""
    mine = [r for r in runs if r.policy == policy]
    work = list(dict.fromkeys(r.workload for r in mine))
    vs_base, vs_best = [], []
    for w in work:
        at = {r.algorithm: r.iteration_s for r in mine if r.workload == w}
        if algorithm not in at:
            continue
        if baseline_algorithm in at:
            vs_base.append((reduction_percent(at[algorithm], at[baseline_algorithm]), w))
        others = [t for a, t in at.items() if a != algorithm]
        if others:
            vs_best.append((reduction_percent(at[algorithm], min(others)), w))
    if not vs_base or not vs_best:
        raise ConfigError(f"best_reductions: {algorithm!r} under {policy!r} has no {baseline_algorithm} or other "
                          "algorithm to compare with")
    b, bw = max(vs_base)
    o, ow = max(vs_best)
    return BestReduction(algorithm, baseline_algorithm, b, bw), BestReduction(algorithm, "best other", o, ow)


# ---------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------


def _ms(s: float) -> str:
    return f"{s * 1e3:,.2f}"


def _pct(p: float) -> str:
    return "-" if p != p else f"{p:+.1f} %"


def algorithm_markdown(runs: Sequence[TrainRun], policy: str, baseline_algorithm: str = BASELINE_ALGORITHM) -> str:
    """A Markdown table, one row per workload: compute and gradient size, then each
    algorithm's iteration time (ms) under ``policy`` and its reduction against
    ``baseline_algorithm`` (positive: shorter)."""
    mine = [r for r in runs if r.policy == policy]
    if not mine:
        raise ConfigError(f"no run under policy {policy!r}")
    algos = list(dict.fromkeys(r.algorithm for r in mine))
    work = list(dict.fromkeys(r.workload for r in mine))
    at = {(r.workload, r.algorithm): r for r in mine}
    head = ["workload", "compute (ms)", "gradients (MiB)"] + [
        f"{a} (ms)" if a == baseline_algorithm else f"{a} (ms, vs {baseline_algorithm})" for a in algos]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for w in work:
        first = at[(w, algos[0])]
        cells = [w, _ms(first.compute_s), f"{first.grad_bytes / MIB:,.1f}"]
        base = at.get((w, baseline_algorithm))
        for a in algos:
            r = at.get((w, a))
            if r is None:
                cells.append("-")
            elif a == baseline_algorithm or base is None:
                cells.append(_ms(r.iteration_s))
            else:
                cells.append(f"{_ms(r.iteration_s)} ({_pct(reduction_percent(r.iteration_s, base.iteration_s))})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def policy_markdown(runs: Sequence[TrainRun], workload: str, algorithm: str,
                    compare_with: Sequence[str] = ("wfbp",)) -> str:
    """A Markdown table of every policy run on ``workload`` with ``algorithm``: iteration,
    compute, communication and exposed communication (ms), overlap, collectives per
    iteration, and the reduction against each policy of ``compare_with`` that was run."""
    mine = [r for r in runs if r.workload == workload and r.algorithm == algorithm]
    if not mine:
        raise ConfigError(f"no run of {workload!r} with {algorithm!r}")
    by_policy = {r.policy: r for r in mine}
    bases = [p for p in compare_with if p in by_policy]
    head = ["policy", "iteration (ms)", "compute (ms)", "communication (ms)", "exposed (ms)", "overlap",
            "collectives"] + [f"vs {p}" for p in bases]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in mine:
        cells = [r.policy, _ms(r.iteration_s), _ms(r.compute_s), _ms(r.comm_s), _ms(r.exposed_comm_s),
                 f"{r.overlap_ratio:.2f}", f"{r.collectives_per_iteration:,}"]
        cells += [_pct(reduction_percent(r.iteration_s, by_policy[p].iteration_s)) for p in bases]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


__all__ = ["BASELINE_ALGORITHM", "BestReduction", "POLICY_OPTIONS", "TrainRun", "algorithm_markdown",
           "baseline_policy", "best_reductions", "make_policies", "nic_comms", "policy_markdown", "reduction_column",
           "reduction_percent",
           "resolve_workloads", "run_matrix", "table_rows", "workload_costs"]
