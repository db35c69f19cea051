"""Rows and figures of ``hw-models maddpg accel``: one update per design, by phase; the
design-space search and its Pareto front."""

from __future__ import annotations

from pathlib import Path

from hw_models.report.writer import PALETTE, figure, legend_outside, write_figure

PHASE_COLORS = {"transfer": "tab:gray", "critic": "tab:blue", "actor": "tab:orange", "targets": "tab:green",
                "interconnect": "tab:red"}


def throughput_cells(thr, cpu) -> dict:
    """The columns a row gains with a CPU profile ``cpu``: throughput ``thr`` and speed-ups."""
    return {"cpu_update_ms": f"{thr.cpu_update_s * 1e3:.3f}", "training_speedup": f"{thr.training_speedup:.2f}",
            "cpu_env_steps_per_s": f"{thr.cpu_env_steps_per_s:.0f}",
            "serial_env_steps_per_s": f"{thr.serial_env_steps_per_s:.0f}",
            "overlapped_env_steps_per_s": f"{thr.overlapped_env_steps_per_s:.0f}",
            "serial_speedup": f"{thr.serial_speedup:.2f}", "overlapped_speedup": f"{thr.overlapped_speedup:.2f}",
            "cpu_machine": cpu.machine, "cpu_measured": cpu.measured}


def phase_figure(rows: list[dict], path: Path, title: str) -> Path:
    """Stacked bars: one per (agents, interconnect), the update's critical-path µs by phase."""
    labels = [f"{r['agents']}a {r['interconnect']}\n{r['pe']}x{r['lanes']}{'w' if r['layer_balance'] == 'work' else ''}"
              for r in rows]
    with figure(figsize=(max(6.0, 0.9 * len(rows) + 2), 4.5)) as (fig, ax):
        bottom = [0.0] * len(rows)
        for p, color in PHASE_COLORS.items():
            vals = [float(r[f"{p}_cycles"]) / float(r["clock_mhz"]) for r in rows]
            ax.bar(range(len(rows)), vals, bottom=bottom, color=color, label=p)
            bottom = [b + v for b, v in zip(bottom, vals)]
        for k, r in enumerate(rows):
            note = "" if r["fits"] == "yes" else "does not fit"
            if "training_speedup" in r:
                note = (note + "\n" if note else "") + f"{r['training_speedup']}x"
            if note:
                ax.text(k, bottom[k], note, ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(rows)), labels, fontsize=7)
        ax.set_ylabel("µs per update (critical path)")
        return _finish(fig, ax, title, path)


def pareto_figure(groups: dict, path: Path, title: str) -> Path:
    """Per agent count: every design (update µs against DSPs; hollow: does not fit) and the
    Pareto front of the fitting ones."""
    from maddpg.accel.search import pareto

    with figure(figsize=(7, 4.5)) as (fig, ax):
        for k, (n, pts) in enumerate(sorted(groups.items())):
            color = PALETTE[k % len(PALETTE)]
            ok = [p for p in pts if p.result.fits]
            bad = [p for p in pts if not p.result.fits]
            ax.scatter([p.result.resources.dsp for p in ok], [p.result.update_s * 1e6 for p in ok], s=10, color=color,
                       alpha=0.5)
            ax.scatter([p.result.resources.dsp for p in bad], [p.result.update_s * 1e6 for p in bad], s=10,
                       facecolors="none", edgecolors=color, alpha=0.3)
            front = pareto(pts)
            ax.plot([p.result.resources.dsp for p in front], [p.result.update_s * 1e6 for p in front], "-o", ms=4,
                    color=color, label=f"{n} agents: Pareto front ({len(front)})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("DSP slices")
        ax.set_ylabel("µs per update")
        return _finish(fig, ax, title, path)


def _finish(fig, ax, title: str, path: Path) -> Path:
    """Title the figure, put its legend outside the data and write it to ``path``."""
    ax.set_title(title, fontsize=9)
    legend_outside(ax)
    fig.tight_layout()
    return write_figure(fig, path)
