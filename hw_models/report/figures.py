"""Figures of result rows: any column against any other (``hw-models plot --x --y --color
--facet``) and the paper-style presets, drawn with matplotlib (Agg) to PNG, SVG or PDF.

A figure is first reduced to its :class:`Series` (one line per colour value, one panel per
facet value), which is what the tests check against the rows; :func:`render` then draws them
in the house style (:mod:`hw_models.report.writer`: colour = algorithm, line style = NIC,
one legend outside the panels, sizes in KiB/MiB/GiB). Rows that differ in a column that is
neither ``x``, ``color`` nor ``facet`` — both NIC designs, both models — are split into
lines of their own (the label names the value once, ``multitree, baseline NIC``, even when
two columns hold it), so a line never zigzags over two runs; what still collides at one
``x`` is an error naming the columns to filter with ``--where``.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from pathlib import Path

from hw_models.report.data import column
from hw_models.report.writer import (MODEL_MARKERS, OTHER_LINESTYLES, figure, figure_bytes, group_colours, line_label,
                                     nic_linestyle, size_axis)
from noc.base.errors import HwModelsError

FORMATS = ("png", "svg", "pdf")
PRESETS = ("bandwidth", "speedup", "load-latency", "training")
# columns that tell runs apart and split lines when they vary (short names of both sources)
SPLIT_COLUMNS = ("nic", "model", "nis_per_node", "design", "pattern", "kind")


@dataclass(frozen=True)
class Series:
    """One line of one panel: ``facet`` (the panel's value, "" for a single panel), ``label``
    and its points, sorted by ``x``."""

    facet: str
    label: str
    xs: tuple
    ys: tuple[float, ...]
    group: str = ""  # the colour value (lines of one value share a colour; split columns vary the dash)
    variant: int = 0  # which combination of the split columns' values (the line's dash)
    parts: tuple[tuple[str, str], ...] = ()  # (split column, value) that tell this line from the others


@dataclass(frozen=True)
class FigureSpec:
    """What a figure shows: the columns and the axis labels."""

    x: str
    y: str
    color: str | None
    facet: str | None
    title: str
    x_label: str
    y_label: str
    split: tuple[str, ...] = SPLIT_COLUMNS
    kind: str = "line"  # line | bar (a categorical x)


def _text(v) -> str:
    return "" if v is None else str(v)


def _num(v, col: str):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise HwModelsError(f"column {col!r} holds {v!r}, not a number")
    return v


def _finite(v) -> bool:
    return not isinstance(v, float) or math.isfinite(v)


def series(rows: list[dict], spec: FigureSpec, notes: list[str] | None = None) -> list[Series]:
    """The lines of ``spec`` over ``rows`` (module docstring). Rows whose x or y is NaN or
    infinite are left out of the figure, with a note appended to ``notes``."""
    rows = [r for r in rows if r.get(spec.x) not in (None, "") and r.get(spec.y) not in (None, "")]
    if not rows:
        raise HwModelsError(f"no row has both {spec.x!r} and {spec.y!r}")
    finite = [r for r in rows if _finite(r[spec.x]) and _finite(r[spec.y])]
    if not finite:
        raise HwModelsError(f"every row with {spec.x!r} and {spec.y!r} holds NaN or infinity there: nothing to plot")
    if len(finite) < len(rows) and notes is not None:
        notes.append(f"note: left out {len(rows) - len(finite)} of {len(rows)} row(s) whose {spec.x!r} or {spec.y!r} "
                     "is NaN or infinite")
    rows = finite
    out: list[Series] = []
    facets = list(dict.fromkeys(_text(r.get(spec.facet)) for r in rows)) if spec.facet else [""]
    for fv in facets:
        frows = [r for r in rows if not spec.facet or _text(r.get(spec.facet)) == fv]
        split = _distinct([c for c in spec.split if c not in (spec.x, spec.color, spec.facet)
                           and len({_text(r.get(c)) for r in frows}) > 1], frows)
        lines: dict[tuple, list[dict]] = {}
        variants: dict[tuple, int] = {}
        for r in frows:
            key = (_text(r.get(spec.color)) if spec.color else spec.y, *(_text(r.get(c)) for c in split))
            lines.setdefault(key, []).append(r)
        for key, lrows in lines.items():
            pts: dict = {}
            for r in lrows:
                xv = r[spec.x] if spec.kind == "bar" else _num(r[spec.x], spec.x)
                if xv in pts:
                    others = sorted(k for k in set(r) | set(pts[xv][1]) if k not in ("key", "finished_utc", "worker",
                                                                                       "wall_s", "origin")
                                    and not k.startswith("metrics.") and k != spec.y
                                    and _text(r.get(k)) != _text(pts[xv][1].get(k)))
                    raise HwModelsError(
                        f"two rows of line {' '.join(key)!r}{f' (panel {fv})' if fv else ''} at {spec.x} = {xv}: "
                        f"they differ in {', '.join(others[:6]) or 'nothing'}; keep one with --where KEY=VALUE "
                        "or show it with --color/--facet")
                pts[xv] = (_num(r[spec.y], spec.y), r)
            xs = list(pts) if spec.kind == "bar" else sorted(pts)
            parts = tuple(zip(split, key[1:]))
            variant = variants.setdefault(key[1:], len(variants))
            out.append(Series(fv, line_label(key[0], dict(parts)), tuple(xs), tuple(float(pts[x][0]) for x in xs),
                              key[0], variant, parts))
    return out


def _distinct(columns: list[str], rows: list[dict]) -> list[str]:
    """``columns`` without those that only repeat an earlier one (the ``nic`` a run reports
    and the ``design`` its config names: one value, two names)."""
    kept: list[str] = []
    for c in columns:
        if not any(len({(_text(r.get(k)), _text(r.get(c))) for r in rows})
                   == len({_text(r.get(k)) for r in rows}) == len({_text(r.get(c)) for r in rows}) for k in kept):
            kept.append(c)
    return kept


def generic_spec(rows: list[dict], x: str, y: str, color: str | None, facet: str | None) -> FigureSpec:
    cx, cy = column(rows, x, "--x"), column(rows, y, "--y")
    cc = column(rows, color, "--color") if color else None
    cf = column(rows, facet, "--facet") if facet else None
    kind = "line" if all(isinstance(r.get(cx), (int, float)) and not isinstance(r.get(cx), bool)
                         for r in rows if r.get(cx) not in (None, "")) else "bar"
    title = f"{cy} against {cx}" + (f" by {cc}" if cc else "") + (f", per {cf}" if cf else "")
    return FigureSpec(cx, cy, cc, cf, title, cx, cy, kind=kind)


def speedup_rows(rows: list[dict]) -> list[dict]:
    """``rows`` with ``speedup_over_ring``: the ring's total cycles over the row's, against the
    ring row of the same run (every config column but the algorithm, or for a CSV: topology,
    NIs, NIC, model, size, clock). Rows without a ring to compare with are left out."""
    cfg_cols = sorted({k for r in rows for k in r if k.startswith("config.")})
    if cfg_cols:
        keys = [c for c in cfg_cols if "algorithm" not in c and "schedule_options" not in c]
    else:
        keys = ["topology", "nis_per_node", "nic", "model", "size_bytes", "clock_ghz"]
    def run(r):
        return tuple(_text(r.get(k)) for k in keys)
    ring = {run(r): r["total_cycles"] for r in rows if r.get("algorithm") == "ring" and "total_cycles" in r}
    out = []
    for r in rows:
        base = ring.get(run(r))
        if base is not None and r.get("total_cycles"):
            out.append({**r, "speedup_over_ring": base / r["total_cycles"]})
    return out


def preset_spec(name: str, rows: list[dict]) -> tuple[list[dict], FigureSpec]:
    """The rows and spec of preset ``name`` (:data:`PRESETS`)."""
    have = {k for r in rows for k in r}

    def need(cols, what):
        missing = [c for c in cols if c not in have]
        if missing:
            raise HwModelsError(f"--preset {name}: the results hold no {what} (no column {', '.join(missing)})")

    if name == "bandwidth":
        need(("size_bytes", "busbw_gbps", "algorithm"), "all-reduce rows")
        return rows, FigureSpec("size_bytes", "busbw_gbps", "algorithm", "topology" if "topology" in have else None,
                                "all-reduce bus bandwidth", "all-reduce size", "bus bandwidth (GB/s)")
    if name == "speedup":
        need(("size_bytes", "total_cycles", "algorithm"), "all-reduce rows")
        srows = speedup_rows(rows)
        if not srows:
            raise HwModelsError(f"--preset {name}: no all-reduce row has a ring run of the same config to compare with")
        return srows, FigureSpec("size_bytes", "speedup_over_ring", "algorithm",
                                 "topology" if "topology" in have else None, "all-reduce speedup over ring",
                                 "all-reduce size", "speedup over ring (x)")
    if name == "load-latency":
        need(("offered_flits", "latency_avg"), "load points (noc_load)")
        varying = tuple(k for k in sorted(have) if k.startswith("config.") and "rate" not in k and "seed" not in k
                        and len({_text(r.get(k)) for r in rows}) > 1)
        return rows, FigureSpec("offered_flits", "latency_avg", "topology" if "topology" in have else None, None,
                                "load-latency", "offered load (flits/NI/cycle)", "average packet latency (cycles)",
                                split=SPLIT_COLUMNS + varying)
    if name == "training":
        need(("workload", "reduction_vs_ring_percent", "algorithm"), "training rows (hw-models train CSV)")
        return rows, FigureSpec("workload", "reduction_vs_ring_percent", "algorithm",
                                "policy" if "policy" in have else None, "training-iteration time reduction over ring",
                                "workload", "iteration time reduction over ring (%)", kind="bar")
    raise HwModelsError(f"--preset {name!r}: choose one of {', '.join(PRESETS)}")


def _line_style(s: Series):
    """(line style, marker) of a line: its NIC design's line style (co-designed solid,
    baseline dashed) and its model's marker; other split columns vary the dash."""
    parts = {c.split(".")[-1]: v for c, v in s.parts}
    nic = parts.get("nic", parts.get("design"))
    style = nic_linestyle(nic) if nic is not None else ("-", *OTHER_LINESTYLES)[s.variant % (1 + len(OTHER_LINESTYLES))]
    return style, MODEL_MARKERS.get(parts.get("model", ""), "o")


def render(spec: FigureSpec, lines: list[Series], fmt: str = "png"):
    """The figure as bytes in ``fmt`` (deterministic: no dates or random ids in it)."""
    facets = list(dict.fromkeys(s.facet for s in lines))
    n = len(facets)
    cols = min(n, 3)
    rows_n = (n + cols - 1) // cols
    colours = group_colours(list(dict.fromkeys(s.group for s in lines)))
    with figure(rows_n, cols, figsize=(6 * cols, 4 * rows_n), squeeze=False) as (fig, axes):
        legend: dict = {}
        for i, fv in enumerate(facets):
            ax = axes[i // cols][i % cols]
            fl = [s for s in lines if s.facet == fv]
            if spec.kind == "bar":
                cats = list(dict.fromkeys(x for s in fl for x in s.xs))
                width = 0.8 / max(len(fl), 1)
                for j, s in enumerate(fl):
                    pos = [cats.index(x) + (j - (len(fl) - 1) / 2) * width for x in s.xs]
                    ax.bar(pos, s.ys, width=width, label=s.label, color=colours[s.group])
                ax.set_xticks(range(len(cats)), [str(c) for c in cats], rotation=30, ha="right")
            else:
                for s in fl:
                    style, marker = _line_style(s)
                    ax.plot(s.xs, s.ys, marker=marker, markersize=3, label=s.label, color=colours[s.group],
                            linestyle=style)
                if spec.x.endswith("_bytes"):
                    size_axis(ax, [x for s in fl for x in s.xs])
            ax.set_title(f"{spec.facet.split('.')[-1]} {fv}" if spec.facet else spec.title, fontsize=10)
            ax.set_xlabel(spec.x_label)
            ax.set_ylabel(spec.y_label)
            for handle, label in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(label, handle)
        for k in range(n, rows_n * cols):
            axes[k // cols][k % cols].axis("off")
        if spec.facet:
            fig.suptitle(spec.title)
        fig.tight_layout()
        # one legend for every panel, to the right of them all: never over a curve
        fig.legend(list(legend.values()), list(legend), loc="upper left", bbox_to_anchor=(1.0, 0.95),
                   fontsize="small")
        return figure_bytes(fig, fmt)


def output_format(path: str | Path, flag: str = "--out") -> str:
    fmt = Path(path).suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise HwModelsError(f"{flag} {path}: the suffix {Path(path).suffix or '(none)'!r} names no figure format; "
                            f"use one of {', '.join('.' + f for f in FORMATS)}")
    return fmt


def default_name(results: Path, what: str, fmt: str) -> Path:
    """``<results stem>_<what>.<fmt>`` beside the results: named after what it holds."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in what)
    return results.with_name(f"{results.stem}_{safe}.{fmt}")


def figure_name(spec: FigureSpec, preset: str | None) -> str:
    if preset:
        return preset
    short = [c.split(".")[-1] if c else c for c in (spec.y, spec.x, spec.color, spec.facet)]
    return f"{short[0]}_vs_{short[1]}" + (f"_by_{short[2]}" if spec.color else "") + \
        (f"_per_{short[3]}" if spec.facet else "")
