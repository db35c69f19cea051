"""One style rule for every figure (hw_models.report.writer), checked on the drawn figures
themselves: colour = algorithm, line style = NIC, the legend outside the data, sizes in
KiB/MiB/GiB, labels that name each value once; integers printed as integers; one trace writer."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import hw_models.report.charts as charts
import hw_models.report.figures as figures
from hw_models.report.data import load_rows
from hw_models.report.writer import (NIC_LINESTYLES, algorithm_colour, format_number, write_figure,
                                     write_trace_json)
from noc.base.errors import HwModelsError
from cli_run import run
from report_data import CHROMIUM, SIZES, figures_decoded, results, write_store


def _captured(monkeypatch, module, name):
    """Run the drawing code for real, but keep the matplotlib figure it would write."""
    seen = []

    def keep(fig, *args, **kwargs):
        fig.canvas.draw()
        seen.append(fig)
        return b"" if name == "figure_bytes" else args[0]

    monkeypatch.setattr(module, name, keep)
    return seen


def _lines(ax):
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]


def _legend_outside(fig, legend):
    box = legend.get_window_extent()
    return all(box.x0 >= ax.get_window_extent().x1 - 1 for ax in fig.axes if ax.get_visible() and ax.has_data())


@pytest.mark.parametrize("nic_first", ["codesigned", "baseline"])
def test_the_main_jobs_plot_follows_the_style_rule(monkeypatch, tmp_path, nic_first):
    res = [r for r in results() if r.topology == "torus:4x4"]
    res.sort(key=lambda r: r.nic != nic_first)  # whichever NIC comes first, its line style is its own
    seen = _captured(monkeypatch, charts, "write_figure")
    charts.bandwidth_chart(res, tmp_path / "b.png", "t")
    (fig,) = seen
    ax = fig.axes[0]
    runs = [ln for ln in _lines(ax) if ln.get_label() != "bandwidth bound"]
    assert len(runs) == 3 * 2
    for ln in runs:
        algorithm, nic = ln.get_label().split(", ")
        assert nic in ("codesigned NIC", "baseline NIC")  # each value once, no "(codesigned, message)"
        assert ln.get_color() == algorithm_colour(algorithm)
        assert ln.get_linestyle() == NIC_LINESTYLES[nic.split()[0]]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["32KiB", "64KiB", "128KiB"]
    assert _legend_outside(fig, ax.get_legend())


def test_the_reports_figure_draws_the_same_algorithm_and_nic_the_same_way(monkeypatch, tmp_path):
    rows = load_rows(write_store(tmp_path / "s.sqlite"))
    random.Random(3).shuffle(rows)  # baseline rows may come first
    rows, spec = figures.preset_spec("bandwidth", rows)
    seen = _captured(monkeypatch, figures, "figure_bytes")
    figures.render(spec, figures.series(rows, spec))
    (fig,) = seen
    panels = [ax for ax in fig.axes if ax.has_data()]
    assert len(panels) == 2  # torus and mesh
    for ax in panels:
        for ln in _lines(ax):
            algorithm, nic = ln.get_label().split(", ")  # 'ring, baseline NIC': not also 'design baseline'
            assert ln.get_color() == algorithm_colour(algorithm)
            assert ln.get_linestyle() == NIC_LINESTYLES[nic.removesuffix(" NIC")]
        assert [t.get_text() for t in ax.get_xticklabels()] == ["32KiB", "64KiB", "128KiB"]
        assert ax.get_legend() is None
    (legend,) = fig.legends  # one legend, beside the panels
    assert len(legend.get_texts()) == 3 * 2 and _legend_outside(fig, legend)


def test_series_name_a_value_that_two_columns_hold_once(tmp_path):
    rows = load_rows(write_store(tmp_path / "s.sqlite"))
    assert all(r["nic"] == r["design"] for r in rows)  # the run's nic and its config's nic.design
    lines = figures.series(*figures.preset_spec("bandwidth", rows))
    assert {s.label for s in lines} == {f"{a}, {n} NIC" for a in ("ring", "multitree", "dbtree")
                                        for n in ("codesigned", "baseline")}
    assert all(s.xs == SIZES and [c for c, _ in s.parts] == ["nic"] for s in lines)


def test_algorithm_colours_are_fixed_by_the_registry_not_by_the_order_of_a_figure():
    assert algorithm_colour("multitree") == algorithm_colour("multitree", ["multitree"])
    assert len({algorithm_colour(a) for a in ("ring", "ring2d", "dbtree", "multitree", "bidir_ring",
                                              "ring2d_4dir", "halving_doubling")}) == 7


@pytest.mark.parametrize("value, text", [(15660.0, "15660"), (4529, "4529"), (15660.4, "15660"), (123456.0, "123456"),
                                         (0.9278, "0.9278"), (15.4, "15.4"), (2.5e-05, "2.5e-05"), (None, ""),
                                         (True, "True"), ("ring", "ring"), (float("nan"), "nan")])
def test_numbers_in_tables_print_integers_as_integers(value, text):
    assert format_number(value) == text


def test_the_reports_table_prints_cycle_counts_as_integers(tmp_path):
    from hw_models.report.html import page

    rows = load_rows(write_store(tmp_path / "s.sqlite"))
    text, _ = page(rows, "s.sqlite")
    cycles = {r["total_cycles"] for r in rows}
    assert any(c >= 1e4 for c in cycles)
    for c in cycles:
        assert f"<td>{int(round(c))}</td>" in text
    assert "e+0" not in text.split("<h2>Rows</h2>")[1]


def test_figures_are_whole_and_the_same_bytes_each_time(tmp_path):
    from hw_models.report.writer import figure

    def draw(path, **kw):
        with figure() as (fig, ax):
            ax.plot([1, 2, 3], [3, 1, 2])
            return write_figure(fig, path, **kw)

    a, b = draw(tmp_path / "a.png"), draw(tmp_path / "b.png")
    assert a.read_bytes() == b.read_bytes() and a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    draw(a)  # replaced by default
    with pytest.raises(HwModelsError, match="--gantt .*a.png: the file exists"):
        draw(a, replace=False, named="--gantt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png"]  # no temporary file left


def test_the_trace_writer_writes_compact_json_and_never_replaces_a_file(tmp_path):
    doc = {"traceEvents": [{"name": "x", "ph": "X", "ts": 0, "dur": 1, "pid": 1, "tid": 1}]}
    out = write_trace_json(doc, tmp_path / "t.json", named="--trace")
    assert json.loads(out.read_text()) == doc and " " not in out.read_text()
    with pytest.raises(HwModelsError, match="--trace .*t.json: the file exists"):
        write_trace_json({"traceEvents": []}, out, named="--trace")
    assert json.loads(out.read_text()) == doc
    write_trace_json({"traceEvents": []}, out, overwrite=True)
    assert json.loads(out.read_text()) == {"traceEvents": []}


EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "sweeps" / "allreduce_sizes.toml"


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)")
def test_the_example_sweeps_html_report_follows_the_style_rule(monkeypatch, tmp_path, capsys):
    """docs/examples/sweeps/allreduce_sizes.toml run, its HTML report opened in headless
    Chromium (every figure decodes), and the page's figures and table checked: colour =
    algorithm, line style = NIC (co-designed solid as in the main job's plot), each value
    named once in a label, one legend beside the panels, sizes in KiB/MiB, cycle counts as
    integers."""
    from hw_models.report import html

    store = tmp_path / "s.sqlite"
    code, out, err = run(["sweep", str(EXAMPLE), "--store", str(store), "--workers", "0"], capsys)
    assert code == 0, out + err
    code, _, err = run(["report", str(store), "--out", str(tmp_path / "r.html")], capsys)
    assert code == 0, err
    assert figures_decoded(tmp_path / "r.html", tmp_path / "profile") == (2, 2)

    rows = load_rows(store)
    assert len(rows) == 4 * 8 * 2  # algorithms x sizes 32 KiB..4 MiB x NIC designs
    text = (tmp_path / "r.html").read_text()
    table = text.split("<h2>Rows</h2>")[1]
    assert "e+0" not in table
    for c in {r["total_cycles"] for r in rows}:
        assert f"<td>{int(round(c))}</td>" in table
    seen = _captured(monkeypatch, figures, "figure_bytes")
    assert [name for name, *_ in html.figures(rows)] == ["bandwidth", "speedup"]
    assert len(seen) == 2
    sizes = ["32KiB", "64KiB", "128KiB", "256KiB", "512KiB", "1MiB", "2MiB", "4MiB"]
    for fig in seen:
        panels = [ax for ax in fig.axes if ax.has_data()]
        labels = set()
        for ax in panels:
            assert ax.get_legend() is None
            assert [t.get_text() for t in ax.get_xticklabels()] == sizes
            for ln in _lines(ax):
                algorithm, nic = ln.get_label().split(", ")
                assert nic in ("codesigned NIC", "baseline NIC")
                assert ln.get_color() == algorithm_colour(algorithm)
                assert ln.get_linestyle() == NIC_LINESTYLES[nic.removesuffix(" NIC")]
                labels.add(ln.get_label())
        (legend,) = fig.legends
        assert sorted(t.get_text() for t in legend.get_texts()) == sorted(labels) and _legend_outside(fig, legend)
    assert NIC_LINESTYLES["codesigned"] == "-"  # solid, as bandwidth_chart draws it in the main job's plot
