"""The all-reduce comparison: algorithms x sizes x NIC designs x models on one topology, as
points of sweep kind ``allreduce`` (:mod:`hw_models.sweep.kinds.allreduce`).

:func:`allreduce_plan` turns a command's checked choices into the points it runs, in the
order its table lists them; :mod:`hw_models.sweep.plan` runs them into the sweep store
(one key per point; what is stored is reused, an interrupted run resumes) and reads their
metrics back; :func:`result_of` makes each point's metrics an
:class:`~nic.result.AllreduceResult` again. :func:`table_rows` adds speedup over ring and
the share of the bandwidth bound (:func:`hw_models.report.charts.bandwidth_chart` draws them).
"""

from __future__ import annotations

import copy
from pathlib import Path

from hw_models.sweep.plan import Plan
from nic.result import AllreduceResult

KIND = "allreduce"


def allreduce_plan(data: dict, *, algorithms: list[str], sizes_bytes: list[int], designs: list[str],
                   models: list[str], tree_order: str = "ours", source: str = "hw-models allreduce",
                   origin: str = "hw-models allreduce") -> Plan:
    """The points of ``data`` (an experiment config's data, flags set in it) for every model,
    design, size and algorithm, in that order (the last varies fastest)."""
    base = copy.deepcopy(data)
    own = base.pop("allreduce", {}) or {}
    extra = {"element_bytes": own["element_bytes"]} if isinstance(own, dict) and "element_bytes" in own else {}
    configs, labels = [], []
    for m in models:
        for d in designs:
            for s in sizes_bytes:
                for a in algorithms:
                    point = copy.deepcopy(base)
                    point["nic"] = {**(point.get("nic") or {}), "design": d}
                    point["allreduce"] = {"algorithm": a, "size": s, "model": m, "tree_order": tree_order, **extra}
                    configs.append(point)
                    labels.append(f"{m} {a} {s} {d}")
    return Plan(KIND, configs, source, origin, labels)


def result_of(metrics: dict) -> AllreduceResult:
    """The :class:`AllreduceResult` a point's metrics (:meth:`AllreduceResult.row`) hold: its
    row, table and figure are the run's."""
    return AllreduceResult(
        topology=metrics["topology"], algorithm=metrics["algorithm"], nic=metrics["nic"], model=metrics["model"],
        size_bytes=metrics["size_bytes"], num_nodes=metrics["num_nodes"], nis_per_node=metrics["nis_per_node"],
        total_cycles=metrics["total_cycles"], clock_ghz=metrics["clock_ghz"], bound_cycles=metrics["bound_cycles"],
        verified=metrics["verified"], step_end_cycles=(0.0,) * metrics["steps"],
        link_utilisation_mean=metrics["link_utilisation_mean"], link_utilisation_max=metrics["link_utilisation_max"],
        seed=metrics["seed"])


def run_sweep(plan: Plan, store_path: str | Path, *, fresh: bool = False, workers: int | None = 0,
              dask: str | None = None, on_event=None) -> tuple[list[AllreduceResult], int]:
    """(the results of ``plan``'s points in its order, how many were reused from the store):
    the points run into the sweep store at ``store_path`` (:func:`hw_models.sweep.plan.run_plan`)."""
    from hw_models.sweep.plan import run_plan

    ran = run_plan(plan, store_path, fresh=fresh, workers=workers, dask=dask, on_event=on_event)
    return [result_of(m) for m in ran.metrics], len(ran.points) - ran.summary.done


def table_rows(results: list[AllreduceResult], optimum=None) -> list[dict]:
    """CSV/table rows with speedup over ring (same size, NIC and model), % of the bound and,
    given ``optimum`` (the topology's :func:`nic.collectives.optimal_bound`), the exact
    throughput optimum's cycles and the share of it reached."""
    ring = {(r.size_bytes, r.nic, r.model): r.total_cycles for r in results if r.algorithm == "ring"}
    rows = []
    for r in results:
        row = r.row()
        base = ring.get((r.size_bytes, r.nic, r.model))
        row["speedup_vs_ring"] = round(base / r.total_cycles, 4) if base and r.total_cycles > 0 else ""
        row["bound_percent"] = round(100 * r.bound_fraction, 2)
        if optimum is not None:
            opt = float(optimum.all_reduce_cycles(r.size_bytes))
            row["optimum_cycles"] = round(opt, 3)
            row["optimum_percent"] = round(100 * opt / r.total_cycles, 2) if r.total_cycles > 0 else ""
        rows.append(row)
    return rows


def calibration_rows(results: list[AllreduceResult]) -> list[dict]:
    """Message level against flit level for every (size, algorithm, NIC) run by both:
    both cycle counts and the message model's deviation in per cent (negative: faster)."""
    by_model: dict[str, dict[tuple, AllreduceResult]] = {"message": {}, "flit": {}}
    for r in results:
        by_model[r.model][(r.size_bytes, r.algorithm, r.nic)] = r
    rows = []
    for key, f in by_model["flit"].items():
        m = by_model["message"].get(key)
        if m is None:
            continue
        rows.append({"size_bytes": key[0], "algorithm": key[1], "nic": key[2], "flit_cycles": f.total_cycles,
                     "message_cycles": m.total_cycles,
                     "message_vs_flit_percent": round(100 * (m.total_cycles / f.total_cycles - 1), 3),
                     "clock_ghz": f.clock_ghz, "flit_us": round(f.seconds * 1e6, 6),
                     "message_us": round(m.seconds * 1e6, 6)})
    return rows

