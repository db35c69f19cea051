"""The one way the project draws and writes a figure or a trace.

Every PNG (and SVG/PDF) goes through :func:`figure` (matplotlib's Agg backend, one house
style) and :func:`write_figure` / :func:`figure_bytes` (whole or absent, no date or random
id in the bytes); every Perfetto / Chrome trace through :func:`write_trace_json`. The style
rule, the same in every figure:

* colour = all-reduce algorithm (:func:`algorithm_colour`: fixed per registered algorithm,
  the default comparison first, so ``multitree`` is the same red in every figure);
* line style = NIC design (:func:`nic_linestyle`: co-designed solid, baseline dashed);
  marker = model (:data:`MODEL_MARKERS`);
* the legend outside the data (:func:`legend_outside`);
* message sizes as KiB / MiB / GiB on axes and in labels (:func:`size_axis`);
* a line's label names only what tells it apart from the other lines (:func:`line_label`);
* numbers in tables and reports: integers as integers (:func:`format_number`).
"""

from __future__ import annotations

import io
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

DPI = 120
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")  # matplotlib's tab10
NIC_LINESTYLES = {"codesigned": "-", "baseline": "--"}
OTHER_LINESTYLES = (":", "-.", (0, (5, 1, 1, 1)), (0, (1, 3)))
MODEL_MARKERS = {"message": "o", "flit": "s"}
BOUND_STYLE = {"color": "0.3", "linestyle": ":", "linewidth": 2}
# matplotlib writes these into a file unless told not to; none may vary between two runs
_NO_METADATA = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}}


@contextmanager
def figure(nrows: int = 1, ncols: int = 1, figsize: tuple[float, float] = (9, 5), squeeze: bool = True,
           **subplots_kw) -> Iterator[tuple]:
    """``(fig, axes)`` of a new figure in the house style (Agg, no screen), closed on exit."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    with plt.rc_context({"svg.hashsalt": "hw-models", "svg.fonttype": "none", "axes.grid": True,
                         "grid.alpha": 0.3, "legend.fontsize": "small"}):
        fig, axes = plt.subplots(nrows, ncols, figsize=figsize, squeeze=squeeze, **subplots_kw)
        try:
            yield fig, axes
        finally:
            plt.close(fig)


def figure_bytes(fig, fmt: str = "png", **savefig_kw) -> bytes:
    """``fig`` as bytes in ``fmt`` (png, svg, pdf): the same figure, the same bytes."""
    buf = io.BytesIO()
    kw = {"dpi": DPI, "bbox_inches": "tight", "metadata": _NO_METADATA[fmt], **savefig_kw}
    fig.savefig(buf, format=fmt, **kw)
    return buf.getvalue()


def write_figure(fig, path: str | Path, *, replace: bool = True, named: str = "", **savefig_kw) -> Path:
    """Write ``fig`` to ``path`` (its suffix the format, default png) whole or not at all,
    with the bytes of :func:`figure_bytes`. ``replace`` (the commands' PNGs beside their
    CSVs): over an existing file (:func:`noc.base.figures.save_figure`: a temporary file of a
    unique name, renamed). Otherwise an existing file is an error naming it as ``named`` (a
    flag) and the figure never replaces one (:func:`hw_models.sweep.export.write_new_file`)."""
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    if replace:
        from noc.base.figures import save_figure  # noqa: PLC0415

        return save_figure(fig, path, **{"metadata": _NO_METADATA.get(fmt, {}), **savefig_kw})
    from hw_models.sweep.export import write_new_file  # noqa: PLC0415

    data = figure_bytes(fig, fmt, **savefig_kw)
    return write_new_file(path, lambda tmp: tmp.write_bytes(data), named=named)


def write_trace_json(doc: Mapping, path: str | Path, *, overwrite: bool = False, named: str = "") -> Path:
    """Write the Chrome / Perfetto trace ``doc`` (``{"traceEvents": [...], ...}``; opens in
    ui.perfetto.dev and chrome://tracing) to ``path`` as compact JSON, whole or not at all.
    Without ``overwrite`` an existing file is an error naming it as ``named`` (a flag) and the
    new file never replaces one that appears meanwhile (:func:`hw_models.sweep.export.write_new_file`)."""
    from hw_models.sweep.export import write_new_file  # noqa: PLC0415

    text = json.dumps(doc, separators=(",", ":"))
    return write_new_file(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), overwrite=overwrite,
                          named=named)


def replacing_note(path: str | Path, held: str, kept: str, also: str = "") -> str:
    """The note a command prints before it replaces an output file (and ``also`` its figure)
    that held other results: ``note: replacing PATH and its PNG, which held HELD; KEPT`` --
    KEPT saying where those results stay."""
    return f"note: replacing {path}{f' and {also}' if also else ''}, which held {held}; {kept}"


def algorithm_colour(name: str, others: list[str] | None = None) -> str:
    """The colour of algorithm ``name`` in every figure: the default comparison's algorithms
    first (ring, ring2d, dbtree, multitree), then the rest of the registry in its order.
    A name the registry does not hold (a topology, a policy) takes the next colour by its
    place in ``others`` (the figure's colour values in order)."""
    from nic.collectives import ALGORITHMS, DEFAULT_ALGORITHMS  # noqa: PLC0415

    order = list(dict.fromkeys([*DEFAULT_ALGORITHMS, *ALGORITHMS]))
    if name in order:
        return PALETTE[order.index(name) % len(PALETTE)]
    rest = [o for o in (others or [name]) if o not in order]
    return PALETTE[rest.index(name) % len(PALETTE)] if name in rest else PALETTE[-1]


def group_colours(names: list[str]) -> dict[str, str]:
    """Colours of a figure's colour values: algorithms as :func:`algorithm_colour` has them;
    other values (topologies, policies) the palette in their order."""
    from nic.collectives import ALGORITHMS  # noqa: PLC0415

    if any(n in ALGORITHMS for n in names):
        return {n: algorithm_colour(n, names) for n in names}
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}


def nic_linestyle(design: str, others: list[str] | None = None):
    """Co-designed NIC solid, baseline dashed, in every figure; another value by its place in ``others``."""
    if design in NIC_LINESTYLES:
        return NIC_LINESTYLES[design]
    rest = [o for o in (others or [design]) if o not in NIC_LINESTYLES]
    return OTHER_LINESTYLES[rest.index(design) % len(OTHER_LINESTYLES)] if design in rest else OTHER_LINESTYLES[0]


def line_label(first: str, parts: Mapping[str, str]) -> str:
    """A line's label: ``first`` (its colour value) and the ``parts`` (column -> value) that
    tell it apart from the figure's other lines, each once: ``multitree, baseline NIC, flit model``."""
    def part(column: str, value: str) -> str:
        short = column.split(".")[-1]
        if short in ("nic", "design"):
            return f"{value} NIC"
        if short == "model":
            return f"{value} model"
        return f"{short} {value}"

    seen: list[str] = []
    for column, value in parts.items():
        text = part(column, value)
        if text not in seen:
            seen.append(text)
    return ", ".join([first, *seen]) if first else ", ".join(seen)


def legend_outside(ax, **legend_kw):
    """The legend of ``ax`` to the right of its data area, never over a curve."""
    kw = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0, "fontsize": "small",
          **legend_kw}
    return ax.legend(**kw)


def size_axis(ax, sizes_bytes, axis: str = "x") -> None:
    """A log2 axis of message sizes, its ticks at ``sizes_bytes`` (every other one beyond 12)
    labelled in KiB / MiB / GiB."""
    from noc.base.units import format_size_bytes  # noqa: PLC0415

    xs = sorted({int(x) for x in sizes_bytes if x > 0})
    if not xs:
        return
    ticks = xs if len(xs) <= 12 else xs[::2]
    labels = [format_size_bytes(x) for x in ticks]
    if axis == "x":
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, labels, rotation=30, ha="right")
    else:
        ax.set_yscale("log", base=2)
        ax.set_yticks(ticks, labels)
    ax.minorticks_off()


def format_number(v) -> str:
    """A number for a table or report: an integer (or a float that is one, or any float of
    10000 or more, rounded) as an integer (``15660``, never ``1.566e+04``); another float to
    4 significant digits; anything else as text ("" for None)."""
    if v is None:
        return ""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if v != v or v in (float("inf"), float("-inf")):
        return str(v)
    if v.is_integer() or abs(v) >= 1e4:
        return str(int(round(v)))
    return f"{v:.4g}"


__all__ = ["BOUND_STYLE", "MODEL_MARKERS", "NIC_LINESTYLES", "PALETTE", "algorithm_colour", "figure", "figure_bytes",
           "format_number", "group_colours", "legend_outside", "line_label", "nic_linestyle", "replacing_note", "size_axis",
           "write_figure", "write_trace_json"]
