"""A command's run as a sweep: its points, validated by their kind, run where the store does
not hold them finished, and their metrics read back from the store in the plan's order.

Every experiment command (``hw-models allreduce``, ``demo``, ...) turns its flags into a
:class:`Plan` (points of one sweep kind) and calls :func:`run_plan`; ``hw-models sweep`` runs
the same points by the same path (:mod:`hw_models.sweep.execute`), so a point has one key
(:func:`hw_models.sweep.store.point_key`) whichever way it was asked for, and a command run
again reuses what is stored. In this process by default (``workers = 0``): each point is
committed before the next one starts, an error of the input raised by a point propagates
(the command prints it on one line), and Ctrl-C keeps every finished point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from hw_models.sweep.execute import InProcess, Point, Summary, execute, make_backend, unfinished
from hw_models.sweep.kinds import get_kind
from hw_models.sweep.store import SweepStore, canonical_json, point_key
from noc.base.errors import HwModelsError


@dataclass(frozen=True)
class Plan:
    """The points a command runs: configs of sweep kind ``kind`` (as a sweep file's
    ``[base]`` and axes make them), in the order the command renders them."""

    kind: str
    configs: list[dict]
    source: str  # names the points in messages (the config file, or the command)
    origin: str  # the store's origin column: 'hw-models allreduce', ...
    labels: list[str] = field(default_factory=list)  # one per config, for the progress line


@dataclass
class PlanRun:
    points: list[Point]
    metrics: list[dict]  # per point, in the plan's order
    summary: Summary
    store: Path


def resolve(plan: Plan) -> list[Point]:
    """The plan's points, each validated by its kind (an error of one stops the command), in
    order; a config listed twice is one point listed twice."""
    kind = get_kind(plan.kind)
    versions = kind.model_versions()
    points = []
    for i, config in enumerate(plan.configs, 1):
        resolved = kind.validate(config, plan.source)
        points.append(Point(i, {"label": plan.labels[i - 1]} if plan.labels else {}, resolved,
                            point_key(kind.name, resolved, versions), canonical_json(resolved)))
    return points


def run_plan(plan: Plan, store_path: str | Path, *, fresh: bool = False, workers: int | None = 0,
             dask: str | None = None, on_event: Callable[[str, Point, Any], None] | None = None,
             points: list[Point] | None = None) -> PlanRun:
    """Run ``plan`` into the sweep store at ``store_path`` (module docstring) and read every
    point's metrics back from it. ``workers``/``dask`` choose the backend as ``hw-models
    sweep --workers/--dask`` do (0: this process). ``on_event(event, point, outcome)``
    follows each point run (``done``/``failed``/``elsewhere``)."""
    kind = get_kind(plan.kind)
    points = resolve(plan) if points is None else points
    distinct = list({p.key: p for p in points}.values())
    summary = Summary()
    # a cluster that cannot be used is an error before the store is made or opened (nothing left behind)
    cluster = make_backend(kind.name, workers, dask) if dask is not None else None
    try:
        with SweepStore(store_path) as st:
            todo = unfinished(distinct, kind, st, fresh=fresh, summary=summary)
            backend, cluster = cluster, None  # execute closes it
            if todo:
                backend = backend or (InProcess(kind.name, raising=True) if workers == 0 else
                                      make_backend(kind.name, workers, dask))
                execute(todo, kind, st, backend, origin=plan.origin, fresh=fresh, summary=summary,
                        on_event=on_event)
            elif backend is not None:
                backend.close()
            if summary.failures:
                p, error = summary.failures[0]
                raise HwModelsError(f"{plan.source}: point {p.index} failed: {error}")
            found = st.metrics_of([p.key for p in distinct])
    finally:
        if cluster is not None:  # the store could not be opened
            cluster.close()
    missing = [p for p in distinct if p.key not in found]
    if missing:  # pragma: no cover - execute stores every point it runs
        raise HwModelsError(f"{store_path}: point {missing[0].index} is not in the store after its run")
    return PlanRun(points, [found[p.key] for p in points], summary, Path(store_path))

