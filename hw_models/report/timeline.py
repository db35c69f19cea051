"""Pictures of a training timeline: a Chrome / Perfetto trace and a PNG Gantt chart.

:func:`write_trace` writes the Chrome trace event format (JSON object form) that
ui.perfetto.dev and chrome://tracing open: one process for the worker class (all
``num_workers`` workers behave alike, so one stands for all), with a ``compute`` track
(a slice per forward, backward and update op) and a ``network`` track (a slice per
collective, its layers and bytes in the slice's arguments), and an instant marker where
each iteration starts. Times are microseconds, as the format has them.

:func:`plot_gantt` draws the same two tracks with matplotlib (Agg) into a PNG.

Neither replaces an existing file unless asked (``overwrite=True``); both write whole or
not at all, through :mod:`hw_models.report.writer`.
"""

from __future__ import annotations

from pathlib import Path

PID = 1
TID_COMPUTE, TID_NETWORK = 1, 2
OP_NAMES = {"forward": "fwd", "backward": "bwd", "update": "update", "global_update": "optimizer step"}
COLOURS = {"forward": "#4c72b0", "backward": "#dd8452", "update": "#8172b3", "global_update": "#8172b3",
           "allreduce": "#55a868", "reduce_scatter": "#c44e52", "all_gather": "#937860"}


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 6)


def _fmt_bytes(n: int) -> str:
    for unit, m in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= m:
            return f"{n / m:.3g} {unit}"
    return f"{n} B"


def _comm_name(result, ev) -> str:
    names = [result.layers[i].name for i in ev.layers]
    what = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]} ({len(names)} layers)"
    return f"{ev.kind} {what}, {_fmt_bytes(ev.nbytes)}"


def trace_document(result) -> dict:
    """The Chrome trace (JSON object form) of a :class:`~hw_models.training.timeline.TimelineResult`."""
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0,
         "args": {"name": f"worker (x{result.num_workers}, all alike): {result.policy}"}},
        {"ph": "M", "name": "thread_name", "pid": PID, "tid": TID_COMPUTE, "args": {"name": "compute"}},
        {"ph": "M", "name": "thread_name", "pid": PID, "tid": TID_NETWORK, "args": {"name": "network"}},
        {"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": TID_COMPUTE, "args": {"sort_index": 0}},
        {"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": TID_NETWORK, "args": {"sort_index": 1}},
    ]
    for it in result.iterations:
        events.append({"ph": "i", "s": "p", "name": f"iteration {it.iteration}", "pid": PID, "tid": TID_COMPUTE,
                       "ts": _us(it.start_s), "args": {"iteration_s": it.iteration_s}})
    for ev in result.compute_events:
        name = OP_NAMES[ev.op] + ("" if ev.layer < 0 else f" {result.layers[ev.layer].name}")
        args = {"iteration": ev.iteration}
        if ev.layer >= 0:
            args["layer"] = ev.layer
        events.append({"ph": "X", "name": name, "cat": ev.op, "pid": PID, "tid": TID_COMPUTE, "ts": _us(ev.start_s),
                       "dur": _us(ev.end_s - ev.start_s), "args": args})
    for ev in result.comm_events:
        events.append({"ph": "X", "name": _comm_name(result, ev), "cat": ev.kind, "pid": PID, "tid": TID_NETWORK,
                       "ts": _us(ev.start_s), "dur": _us(ev.end_s - ev.start_s),
                       "args": {"iteration": ev.iteration, "bytes": ev.nbytes,
                                "layers": [result.layers[i].name for i in ev.layers],
                                "pieces": [[p.layer, p.offset_bytes, p.nbytes] for p in ev.pieces]}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"policy": result.policy, "comm": result.comm, "num_workers": result.num_workers,
                          "steady_iteration_s": result.iteration_s}}


def write_trace(result, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write the Chrome / Perfetto trace of ``result`` to ``path`` (JSON; open it in
    ui.perfetto.dev or chrome://tracing). An existing file is an error unless ``overwrite``."""
    from hw_models.report.writer import write_trace_json  # noqa: PLC0415

    return write_trace_json(trace_document(result), path, overwrite=overwrite)


def plot_gantt(result, path: str | Path, *, overwrite: bool = False) -> Path:
    """A PNG Gantt chart of ``result``: compute and network tracks, ops and collectives
    coloured by kind, iteration starts dashed. An existing file is an error unless ``overwrite``."""
    from matplotlib.patches import Patch  # noqa: PLC0415

    from hw_models.report.writer import figure, legend_outside, write_figure  # noqa: PLC0415

    end_s = max([e.end_s for e in result.compute_events] + [e.end_s for e in result.comm_events] + [0.0])
    scale, unit = (1e3, "ms") if end_s >= 1e-3 else (1e6, "us")
    with figure(figsize=(12, 2.6)) as (fig, ax):
        ax.grid(False)
        rows = {"compute": 1.0, "network": 0.0}
        for row, kinds, kind_of, events in (
                ("compute", ("forward", "backward", "update", "global_update"), "op", result.compute_events),
                ("network", ("allreduce", "reduce_scatter", "all_gather"), "kind", result.comm_events)):
            for kind in kinds:
                bars = [(e.start_s * scale, (e.end_s - e.start_s) * scale) for e in events
                        if getattr(e, kind_of) == kind and e.end_s > e.start_s]
                if bars:
                    ax.broken_barh(bars, (rows[row] - 0.35, 0.7), facecolors=COLOURS[kind], edgecolor="white",
                                   linewidth=0.3)
        for x in [it.start_s for it in result.iterations] + [result.iterations[-1].end_s]:
            ax.axvline(x * scale, color="0.3", linestyle="--", linewidth=0.8)
        ax.set_yticks([rows["network"], rows["compute"]], ["network", "compute"])
        ax.set_xlabel(f"time ({unit})")
        ax.set_xlim(0, end_s * scale * 1.01 if end_s > 0 else 1)
        ax.set_title(f"{result.policy}: steady iteration {result.iteration_s * scale:.4g} {unit}, "
                     f"exposed communication {result.exposed_comm_s * scale:.4g} {unit}", fontsize=10)
        used = {e.op for e in result.compute_events} | {e.kind for e in result.comm_events}
        handles = [Patch(color=COLOURS[k], label=k.replace("_", " ")) for k in COLOURS if k in used
                   and k != "global_update"] + ([Patch(color=COLOURS["global_update"], label="optimizer step")]
                                                if "global_update" in used else [])
        legend_outside(ax, handles=handles)
        return write_figure(fig, path, replace=overwrite)


__all__ = ["plot_gantt", "trace_document", "write_trace"]
