"""Every output file is replaced whole, through a temporary file of its own: another run
writing the same file at the same moment does not make this one crash or lose its file,
and a program reading the previous file keeps reading it whole.

The race is made deterministic: the first rename of a run (``os.replace``, which
``Path.replace`` calls too) first lets a whole second run write the same file. A writer with
one fixed temporary name then renames the other run's temporary file away and fails on its
own (FileNotFoundError)."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

from cli_run import run
from hw_models.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _main(argv) -> int:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code or 0


def _other_run_at_first_rename(monkeypatch, other, when=lambda dst: True):
    """Before the first ``os.replace`` onto a path for which ``when(dst)`` holds, run ``other()``
    (another run writing the same outputs) to its end."""
    real = os.replace
    state = {"ran": False}

    def replace(src, dst, *args, **kwargs):
        if not state["ran"] and when(Path(dst)):
            state["ran"] = True
            other()
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    return state


def _no_temporary_files(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp") or ".tmp." in p.name]


# ---- noc.base.files.replace_atomically, the one primitive (hw_models.store re-exports it) -------


def test_the_store_re_exports_the_noc_primitive():
    from hw_models import store
    from noc.base import files

    assert store.replace_atomically is files.replace_atomically


def test_durable_replace_keeps_the_old_file_when_the_write_fails(tmp_path):
    from noc.base.files import replace_atomically

    target = tmp_path / "f.bin"
    target.write_bytes(b"old")

    def fail(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        replace_atomically(target, fail, durable=True)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]


# ---- 1. hw-models schedule --format json --out -----------------------------------------


def test_two_schedule_commands_writing_one_json_both_finish(tmp_path, monkeypatch, capsys):
    out = tmp_path / "s.json"
    argv = ["schedule", "-t", "ring:4", "--format", "json", "--out", str(out)]
    inner = {}
    _other_run_at_first_rename(monkeypatch, lambda: inner.setdefault("code", _main([*argv, "-a", "dbtree"])))
    code = _main([*argv, "-a", "ring"])
    assert (inner["code"], code) == (0, 0), capsys.readouterr().err
    assert json.loads(out.read_text())["algorithm"] == "ring"  # the last rename wins, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


# ---- 2. maddpg's learning curve ------------------------------------------------------------


def test_two_maddpg_runs_writing_one_learning_curve_both_finish(tmp_path, monkeypatch):
    from hw_models.maddpg_outputs import write_outputs

    other = lambda: write_outputs(tmp_path, [1.0, 2.0, 3.0], None, "other")  # noqa: E731
    state = _other_run_at_first_rename(monkeypatch, other, when=lambda dst: dst.suffix == ".png")
    csv_path, png_path = write_outputs(tmp_path, [-5.0, -4.0], -7.5, "this")
    assert state["ran"]
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the other run wrote its CSV while this one was renaming its PNG: each file is one run's, whole
    assert [r["reward"] for r in csv.DictReader(csv_path.open())] == ["1.000000", "2.000000", "3.000000"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["learning_curve.png", "rewards.csv"]


def test_the_learning_curve_is_a_whole_figure_in_the_house_style(tmp_path):
    """The 7 x 4 inch figure at 120 dpi (hw_models.report.writer), widened by its legend,
    which stands outside the data."""
    from PIL import Image

    from hw_models.maddpg_outputs import write_outputs

    _csv, png = write_outputs(tmp_path, [0.0, 1.0], None, "t")
    img = Image.open(png)
    img.load()  # the whole file decodes
    assert [round(d) for d in img.info["dpi"]] == [120, 120]
    assert img.size[0] > 7 * 120 * 0.9 and 4 * 120 * 0.8 < img.size[1] < 4 * 120 * 1.1


# ---- 3. bench/message_calibration.py's flit cache and CSV ---------------------------------


def _bench():
    spec = importlib.util.spec_from_file_location("message_calibration", ROOT / "bench" / "message_calibration.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_two_benchmarks_sharing_a_flit_cache_both_finish_and_keep_each_others_totals(tmp_path, monkeypatch):
    from noc.flit import FlitNetworkConfig

    bench = _bench()
    path = tmp_path / "flit.json"
    net = FlitNetworkConfig()
    a, b = bench.FlitCache(path, 1024), bench.FlitCache(path, 1024)
    _other_run_at_first_rename(monkeypatch, lambda: b.put(net, "ring/ring:4/codesigned", 200.0))
    a.put(net, "dbtree/ring:4/codesigned", 100.0)
    b.put(net, "ring/torus:2x2/baseline", 300.0)  # after a's: b keeps a's total too
    table = bench.FlitCache(path, 1024)
    assert table.get(net, "dbtree/ring:4/codesigned") == 100.0
    assert table.get(net, "ring/ring:4/codesigned") == 200.0
    assert table.get(net, "ring/torus:2x2/baseline") == 300.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flit.json"]


# ---- 4. maddpg checkpoints (noc.base.files.replace_atomically, durable) ------------------------


def test_two_checkpoint_saves_into_one_file_both_finish(tmp_path, monkeypatch):
    from maddpg.checkpoint import load_npz, save_npz_atomic

    ck = tmp_path / "checkpoint.npz"
    _other_run_at_first_rename(monkeypatch, lambda: save_npz_atomic(ck, {"w": np.zeros(3)}, {"episode": 1}))
    save_npz_atomic(ck, {"w": np.arange(3.0)}, {"episode": 2})
    arrays, meta = load_npz(ck, ["w"])
    assert meta["episode"] == 2 and arrays["w"].tolist() == [0.0, 1.0, 2.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.npz"]


def test_an_interrupted_checkpoint_save_keeps_the_previous_one(tmp_path, monkeypatch):
    from maddpg import checkpoint

    ck = tmp_path / "checkpoint.npz"
    checkpoint.save_npz_atomic(ck, {"w": np.ones(2)}, {"episode": 5})

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", interrupted)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save_npz_atomic(ck, {"w": np.zeros(2)}, {"episode": 6})
    assert checkpoint.load_npz(ck)[1]["episode"] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.npz"]


# ---- 5. rtl regress / synth and topology describe --json: replaced, not rewritten in place -


def _reader_of(path: Path, content: str):
    """A program that opened the previous ``path`` and has not read it yet."""
    path.write_text(content)
    return path.open()


def test_rtl_regress_replaces_its_summary_whole(tmp_path, monkeypatch, capsys):
    from hw_models.rtl import regress as R

    def result(sim, p, eps, **kwargs):
        return R.RegressionResult(sim=sim, params=p.verilog_parameters(), schedules=len(eps), cycles=10 * len(eps),
                                  mismatches=0, mismatch_text=None, mismatch=None, wall_s=0.1, sim_wall_s=0.1,
                                  cycles_per_s=100.0)

    monkeypatch.setattr(R, "regress", result)
    out = tmp_path / "rr"
    out.mkdir()
    old = json.dumps({"schedules": 999, "note": "the previous run's summary"}, indent=1)
    reader = _reader_of(out / "summary-verilator.json", old)
    code, _out, err = run(["rtl", "regress", "--seeds", "0", "-t", "torus:4x4", "--out", str(out)], capsys)
    assert code in (0, None), err
    assert reader.read() == old  # whole: the new summary is a new file renamed over the old
    reader.close()
    assert json.loads((out / "summary-verilator.json").read_text())["schedules"] == 16
    _no_temporary_files(out)


def test_rtl_synth_replaces_its_csv_whole(tmp_path, monkeypatch, capsys):
    from hw_models.rtl import synth as Y

    monkeypatch.setattr(Y, "synth_one", lambda params, **kw: Y.SynthRow(
        depth=params.depth, nis=params.nis, cells=1, flip_flops=1, luts=1, ff_bits_per_entry=1.0, lut_levels=2,
        fmax_mhz_est=555.6, seconds=0.0))
    out = tmp_path / "s.csv"
    old = "depth,nis\n" + "64,4\n" * 100
    reader = _reader_of(out, old)
    code, _out, err = run(["rtl", "synth", "--depths", "16", "--nis", "1", "-t", "none", "--out", str(out)], capsys)
    assert code in (0, None), err
    assert reader.read() == old
    reader.close()
    assert out.read_text().splitlines()[1:] == ["16,1,1,1,1,1.0,2,555.6,0.0"]
    _no_temporary_files(tmp_path)


def test_topology_describe_replaces_its_json_whole(tmp_path, capsys):
    out = tmp_path / "t.json"
    old = json.dumps({"name": "the previous topology", "pad": "x" * 5000})
    reader = _reader_of(out, old)
    code, _out, err = run(["topology", "describe", "ring:4", "--json", str(out)], capsys)
    assert code in (0, None), err
    assert reader.read() == old
    reader.close()
    assert json.loads(out.read_text())["name"] == "ring:4"
    _no_temporary_files(tmp_path)
