"""``hw-models plot``: the figures' lines against the rows' own numbers, the presets against
the allreduce command's table, the output formats and names, and no silent overwrite."""

from __future__ import annotations

import csv

import pytest

from cli_run import run
from hw_models.report.data import load_rows
from hw_models.report.figures import FigureSpec, generic_spec, preset_spec, render, series
from report_data import SIZES, write_csv, write_load_store, write_store

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "svg": b"<?xml", "pdf": b"%PDF"}


def test_speedup_preset_gives_the_allreduce_tables_speedup_over_ring(tmp_path):
    path = write_csv(tmp_path / "r.csv")
    rows = load_rows(path)
    lines = series(*preset_spec("speedup", rows))
    table = {(r["topology"], r["nic"], r["algorithm"], int(r["size_bytes"])): float(r["speedup_vs_ring"])
             for r in csv.DictReader(path.open())}
    assert len(lines) == 2 * 2 * 3  # per topology panel: 3 algorithms x 2 NIC designs
    checked = 0
    for s in lines:
        alg, nic = s.group, dict(s.parts)["nic"]
        assert s.xs == SIZES
        for x, y in zip(s.xs, s.ys):
            assert y == pytest.approx(table[(s.facet, nic, alg, x)], abs=6e-5)
            checked += 1
    assert checked == 36


def test_bandwidth_from_a_sweep_store_is_the_nccl_bus_bandwidth_of_its_cycles(tmp_path):
    rows = load_rows(write_store(tmp_path / "s.sqlite"))
    rows, spec = preset_spec("bandwidth", rows)
    lines = series(rows, spec)
    cycles = {(r["topology"], r["nic.design"], r["algorithm"], r["size_bytes"]): r["total_cycles"] for r in rows}
    assert {s.facet for s in lines} == {"torus:4x4", "mesh:4x4"}
    for s in lines:
        nic = dict(s.parts)["nic"]
        for x, y in zip(s.xs, s.ys):
            seconds = cycles[(s.facet, nic, s.group, x)] / 1e9
            assert y == pytest.approx(x / seconds / 1e9 * 2 * 15 / 16, rel=1e-4)


def test_load_latency_preset_draws_one_sorted_curve_per_topology(tmp_path):
    path, expected = write_load_store(tmp_path / "load.sqlite")
    lines = series(*preset_spec("load-latency", load_rows(path)))
    assert {s.group: dict(zip(s.xs, s.ys)) for s in lines} == expected


def test_training_preset_bars_each_workloads_reduction(tmp_path):
    path = tmp_path / "train.csv"
    rows = [{"workload": w, "algorithm": a, "policy": "fifo", "reduction_vs_ring_percent": v}
            for w, a, v in (("resnet50", "ring", 0.0), ("resnet50", "multitree", 12.5), ("alexnet", "ring", 0.0),
                            ("alexnet", "multitree", 30.25))]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    rows, spec = preset_spec("training", load_rows(path))
    lines = {s.group: dict(zip(s.xs, s.ys)) for s in series(rows, spec)}
    assert spec.kind == "bar"
    assert lines == {"ring": {"resnet50": 0.0, "alexnet": 0.0}, "multitree": {"resnet50": 12.5, "alexnet": 30.25}}


def test_rows_that_collide_at_one_x_are_an_error_naming_what_differs(tmp_path):
    rows = load_rows(write_csv(tmp_path / "r.csv"))
    rows = rows + [{**rows[0], "seed": 2, "total_cycles": 1.0}]
    with pytest.raises(Exception, match="differ in seed"):
        series(rows, generic_spec(rows, "size", "cycles", "algorithm", "topology"))


def test_plot_command_writes_each_format_named_after_its_content_and_never_overwrites(tmp_path, capsys):
    path = write_store(tmp_path / "s.sqlite")
    argv = ["plot", str(path), "--x", "size", "--y", "bus_gbps", "--color", "algorithm", "--facet", "topology"]
    for fmt in ("png", "svg", "pdf"):
        code, out, err = run([*argv, "--format", fmt], capsys)
        assert code == 0, err
        made = tmp_path / f"s_busbw_gbps_vs_size_bytes_by_algorithm_per_topology.{fmt}"
        assert made.read_bytes().startswith(MAGIC[fmt]) and str(made) in out
    before = made.read_bytes()
    code, out, err = run([*argv, "--format", "pdf"], capsys)
    assert code == 2 and "exists" in err and err.count("\n") == 1
    assert made.read_bytes() == before
    code, _, err = run([*argv, "--out", str(tmp_path / "p.svg")], capsys)
    assert code == 0 and (tmp_path / "p.svg").read_bytes().startswith(MAGIC["svg"])
    code, _, err = run(["plot", str(path), "--preset", "speedup"], capsys)
    assert code == 0 and (tmp_path / "s_speedup.png").exists()


def test_the_same_rows_give_byte_identical_svg_and_pdf(tmp_path):
    rows = load_rows(write_csv(tmp_path / "r.csv"))
    spec = FigureSpec("size_bytes", "busbw_gbps", "algorithm", None, "t", "x", "y")
    lines = series([r for r in rows if r["topology"] == "torus:4x4" and r["nic"] == "codesigned"], spec)
    for fmt in ("svg", "pdf"):
        assert render(spec, lines, fmt) == render(spec, lines, fmt)


@pytest.mark.parametrize("argv,words", [
    (["--x", "size", "--y", "nonsense"], ["--y 'nonsense'", "busbw_gbps"]),
    (["--preset", "load-latency"], ["load-latency", "offered_flits"]),
    (["--preset", "pie"], ["--preset 'pie'", "bandwidth"]),
    (["--x", "size", "--y", "cycles", "--out", "f.gif"], ["f.gif", ".png"]),
    (["--x", "size", "--y", "cycles", "--where", "nic=quantum"], ["nic=quantum", "no row"]),
])
def test_bad_plot_requests_name_what_is_wrong(tmp_path, capsys, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    path = write_csv(tmp_path / "r.csv")
    code, _, err = run(["plot", str(path), *argv], capsys)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1
    for w in words:
        assert w in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]


def test_nan_and_inf_points_are_left_out_with_a_note_and_all_of_them_is_an_error(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("size,latency\n1,2.0\n2,nan\n3,inf\n4,5.0\n")
    notes: list[str] = []
    (line,) = series(load_rows(path), generic_spec(load_rows(path), "size", "latency", None, None), notes)
    assert line.xs == (1, 4) and line.ys == (2.0, 5.0)
    assert notes == ["note: left out 2 of 4 row(s) whose 'size' or 'latency' is NaN or infinite"]
    code, _, err = run(["plot", str(path), "--x", "size", "--y", "latency", "--out", str(tmp_path / "f.png")], capsys)
    assert code == 0 and "left out 2 of 4" in err and (tmp_path / "f.png").read_bytes().startswith(MAGIC["png"])
    path.write_text("size,latency\n1,nan\n2,-inf\n")
    code, _, err = run(["plot", str(path), "--x", "size", "--y", "latency", "--out", str(tmp_path / "g.png")], capsys)
    assert code == 2 and "holds NaN or infinity there: nothing to plot" in err and len(err.strip().splitlines()) == 1
