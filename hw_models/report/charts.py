"""The figures the commands write beside their CSV files, drawn in the house style of
:mod:`hw_models.report.writer` (colour = algorithm, line style = NIC, legend outside the
data, sizes in KiB/MiB/GiB) and written whole or not at all:

* :func:`bandwidth_chart` -- ``hw-models allreduce`` (and ``demo``): bus bandwidth against size;
* :func:`training_chart` -- ``hw-models train``: relative iteration time per workload;
* :func:`load_latency_chart`, :func:`link_utilisation_chart` -- ``hw-models noc sweep-load`` / ``run``;
* :func:`learning_curve_chart`, :func:`seeds_curve_chart` -- ``hw-models maddpg train``.

Each takes plain values (results, rows, arrays) and a path, and returns the path written.
"""

from __future__ import annotations

from pathlib import Path

from hw_models.report.writer import (BOUND_STYLE, MODEL_MARKERS, PALETTE, algorithm_colour, figure, legend_outside,
                                     line_label, nic_linestyle, size_axis, write_figure)


def bandwidth_chart(results: list, path: str | Path, title: str) -> Path:
    """Bus bandwidth (GB/s) against size of all-reduce ``results`` (:class:`nic.result.AllreduceResult`):
    a line per algorithm (and NIC design and model, when the results hold several), and the
    bandwidth bound."""
    lines: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
    for r in results:
        lines.setdefault((r.algorithm, r.nic, r.model), []).append((r.size_bytes, r.busbw_gbps))
    nics = list(dict.fromkeys(k[1] for k in lines))
    models = list(dict.fromkeys(k[2] for k in lines))
    with figure(figsize=(9, 5)) as (fig, ax):
        for (algo, nic, model), pts in lines.items():
            pts.sort()
            parts = {**({"nic": nic} if len(nics) > 1 else {}), **({"model": model} if len(models) > 1 else {})}
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=MODEL_MARKERS.get(model, "o"), markersize=3,
                    label=line_label(algo, parts), color=algorithm_colour(algo), linestyle=nic_linestyle(nic, nics))
        if results:
            bound = {}
            for r in results:
                secs = r.bound_cycles / (r.clock_ghz * 1e9)
                bound[r.size_bytes] = r.size_bytes / secs / 1e9 * 2 * (r.num_nodes - 1) / r.num_nodes if secs > 0 else 0
            xs = sorted(bound)
            ax.plot(xs, [bound[x] for x in xs], label="bandwidth bound", **BOUND_STYLE)
            size_axis(ax, xs)
        ax.set_xlabel("all-reduce size")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        legend_outside(ax)
        return write_figure(fig, path)


def training_chart(runs: list, path: str | Path, title: str) -> Path:
    """Each training run's iteration time relative to a baseline on the same workload, one bar
    per run, grouped by workload, with the compute time (the floor) marked. One policy: bars
    are algorithms (coloured as in every figure), relative to ring. Several: one panel per
    algorithm, bars are policies, relative to the first policy."""
    work = list(dict.fromkeys(r.workload for r in runs))
    algos = list(dict.fromkeys(r.algorithm for r in runs))
    pols = list(dict.fromkeys(r.policy for r in runs))
    at = {(r.workload, r.algorithm, r.policy): r for r in runs}
    if len(pols) == 1:
        panels = [(f"{pols[0]}: iteration time relative to ring",
                   [(a, algorithm_colour(a), lambda w, a=a: at[(w, a, pols[0])]) for a in algos],
                   lambda w: at.get((w, "ring", pols[0])) or at[(w, algos[0], pols[0])])]
    else:
        panels = [(f"{a}: iteration time relative to {pols[0]}",
                   [(p, PALETTE[k % len(PALETTE)], lambda w, a=a, p=p: at[(w, a, p)]) for k, p in enumerate(pols)],
                   lambda w, a=a: at[(w, a, pols[0])]) for a in algos]
    size = (max(7, 1.2 * len(work) * max(1, len(panels[0][1])) / 3 + 3), 3.2 * len(panels))
    with figure(len(panels), 1, figsize=size, squeeze=False) as (fig, axes):
        for ax, (name, bars, base) in zip(axes[:, 0], panels):
            width = 0.8 / len(bars)
            for k, (label, colour, get) in enumerate(bars):
                xs = [i - 0.4 + width * (k + 0.5) for i in range(len(work))]
                ys = [get(w).iteration_s / base(w).iteration_s for w in work]
                ax.bar(xs, ys, width, label=label, color=colour)
                floor = [get(w).compute_s / base(w).iteration_s for w in work]
                ax.plot(xs, floor, linestyle="none", marker="_", markersize=10, color="black",
                        label="compute only" if k == 0 else None)
            ax.axhline(1.0, color="0.4", linewidth=0.8, linestyle="--")
            ax.set_xticks(range(len(work)), work, rotation=20, fontsize=8)
            ax.set_ylabel("relative iteration time")
            ax.set_title(name, fontsize=9)
            ax.set_ylim(bottom=0)
            ax.grid(False, axis="x")
            legend_outside(ax)
        fig.suptitle(title, fontsize=10)
        fig.tight_layout(rect=(0, 0, 1, 0.97))
        return write_figure(fig, path)


def load_latency_chart(res, path: str | Path, title: str, deadlock_flits: float | None = None) -> Path:
    """A load sweep (:class:`noc.flitsim_sweep.SweepResult`): packet latency (average, p99)
    and accepted throughput against offered load, with the zero-load latency, the saturation
    load, the bisection bound and where a deadlock was seen."""
    x = [p.offered_flits for p in res.points]
    with figure(1, 2, figsize=(12, 4.2)) as (fig, (ax1, ax2)):
        ax1.plot(x, [p.stats.latency_avg for p in res.points], "o-", label="average")
        ax1.plot(x, [p.stats.latency_p99 for p in res.points], "s--", label="p99", alpha=0.7)
        ax1.axhline(res.zero_load_latency_analytic_cycles, color="k", linestyle=":", label="zero-load (analytic)")
        if res.saturation_reached:
            ax1.axvline(res.saturation_offered_flits, color="r", linestyle=":", label="saturation")
        if deadlock_flits is not None:
            for ax in (ax1, ax2):
                ax.axvline(deadlock_flits, color="m", linestyle="--", label="deadlock")
        ax1.set_yscale("log")
        ax1.set_xlabel("offered load (flits/NI/cycle)")
        ax1.set_ylabel("packet latency (cycles)")
        legend_outside(ax1)
        ax2.plot(x, [p.stats.accepted_flits for p in res.points], "o-", label="accepted")
        ax2.plot(x, x, "k:", label="offered")
        ax2.axhline(res.bound_flits, color="g", linestyle="--", label="uniform bisection bound")
        ax2.set_xlabel("offered load (flits/NI/cycle)")
        ax2.set_ylabel("accepted throughput (flits/NI/cycle)")
        legend_outside(ax2)
        fig.suptitle(title)
        fig.tight_layout()
        return write_figure(fig, path)


def link_utilisation_chart(topology, util, path: str | Path, title: str) -> Path:
    """The utilisation of every router-to-router link of ``topology`` (``util``: flits/cycle
    per link), most used first."""
    import numpy as np  # noqa: PLC0415

    links = np.nonzero(topology.is_router_link)[0]
    u = np.sort(util[links])[::-1] if links.size else np.zeros(0)
    with figure(figsize=(8, 4)) as (fig, ax):
        ax.bar(np.arange(u.size), u, width=1.0)
        ax.set_xlabel("router-to-router links, most used first")
        ax.set_ylabel("utilisation (flits/cycle)")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"link utilisation: {title}")
        return write_figure(fig, path)


def learning_curve_chart(rewards, mean100, random_return: float | None, path: str | Path, title: str) -> Path:
    """Episode rewards of one training run, their mean over the last 100 episodes and the
    return of a random policy."""
    with figure(figsize=(7, 4)) as (fig, ax):
        ax.plot(rewards, lw=0.5, alpha=0.4, label="episode reward")
        ax.plot(mean100, lw=1.8, label="mean of last 100")
        if random_return is not None:
            ax.axhline(random_return, color="k", ls="--", lw=1, label=f"random policy ({random_return:.1f})")
        ax.set_xlabel("episode")
        ax.set_ylabel("episode reward (sum over agents)")
        ax.set_title(title)
        legend_outside(ax)
        return write_figure(fig, path)


def seeds_curve_chart(seeds: list[int], curves, mean, std, path: str | Path, title: str) -> Path:
    """Each seed's mean-of-100 curve (thin), their mean and a +-1 standard deviation band."""
    import numpy as np  # noqa: PLC0415

    x = np.arange(len(mean))
    with figure(figsize=(7, 4)) as (fig, ax):
        for k, s in enumerate(seeds):
            ax.plot(x, curves[k], lw=0.6, alpha=0.5, label=f"seed {s}")
        ax.plot(x, mean, lw=2, color="k", label=f"mean of {len(seeds)} seeds")
        ax.fill_between(x, mean - std, mean + std, color="k", alpha=0.15, label="±1 std across seeds")
        ax.set_xlabel("episode")
        ax.set_ylabel("episode reward, mean of last 100")
        ax.set_title(title)
        legend_outside(ax)
        return write_figure(fig, path)


__all__ = ["bandwidth_chart", "learning_curve_chart", "link_utilisation_chart", "load_latency_chart",
           "seeds_curve_chart", "training_chart"]
