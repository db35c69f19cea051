"""The experiment commands print and write what they printed and wrote before they ran
through the sweep pipeline, and ``hw-models sweep`` gives the same rows.

``golden/<case>/`` holds, for one representative small run of each command, its command
line (``command.txt``), what it printed (``stdout.txt``, the progress bar's line left out)
and the CSV files it wrote, as recorded by ``golden/make_golden.sh`` with the code of the
release before the commands ran their points through :mod:`hw_models.sweep.plan`. Each
case here runs the command again in a scratch directory and compares byte for byte; the
one part allowed to differ is the name of the result store the runs were reused from or
appended to (a JSONL file then, the SQLite sweep store now). Then the same points run as a sweep file
through ``hw-models sweep`` give the command's rows, field for field, and a sweep into the
command's own store finds every point finished (one key for both ways of asking; for
``noc sweep-load`` and ``train`` the latter).
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from pathlib import Path

import pytest

from cli_run import run
from hw_models.sweep.store import SweepStore

GOLDEN = Path(__file__).parent / "golden"
# make_golden.sh left out every line with a heavy rule: the progress bar's last state (it
# shows wall time), and the tables' top rules with it
_PROGRESS = re.compile(r"━")
_STORE_NAME = re.compile(r"reused from [^;)]+")  # one store now; a JSONL store per model then
_STORE_PATH = re.compile(r"every run appended to [^;]+;")  # train: runs.sqlite now, a JSONL store then


def _text(text: str) -> str:
    """What a command printed, the progress bar's line left out, words joined by single
    spaces (a line wraps where the store's name ends) and the store's name as STORE."""
    kept = " ".join(ln for ln in text.splitlines() if not _PROGRESS.search(ln))
    text = _STORE_NAME.sub("reused from STORE", " ".join(kept.split()))
    return _STORE_PATH.sub("every run appended to STORE;", text)


def run_case(name: str, tmp_path, capsys, monkeypatch, reused: int = 0) -> tuple[str, Path]:
    """Run golden case ``name``'s command in ``tmp_path``; check it printed and wrote what
    the golden files hold (recorded in a fresh directory: 0 runs reused; ``reused`` says how
    many this run finds stored). What it printed, and its output directory."""
    case = GOLDEN / name
    argv = shlex.split((case / "command.txt").read_text())[1:]
    (tmp_path / "noc.toml").write_text((GOLDEN / "noc.toml").read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    code, out, err = run(argv, capsys)
    assert code == 0, err
    want = _text((case / "stdout.txt").read_text())
    assert _text(out) == (want.replace("runs (0 reused from", f"runs ({reused} reused from") if reused else want)
    written = {p.name: p for p in (tmp_path / "out").rglob("*.csv")}
    want = sorted(p.name for p in case.glob("*.csv"))
    assert sorted(written) == want
    for n in want:
        assert written[n].read_bytes() == (case / n).read_bytes(), n
    return out, tmp_path / argv[argv.index("--out") + 1]


def _csv_rows(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def _sweep(tmp_path, capsys, text: str, store: Path) -> str:
    f = tmp_path / "points.toml"
    f.write_text(text)
    code, out, err = run(["sweep", str(f), "--store", str(store), "--workers", "0"], capsys)
    assert code == 0, out + err
    return out


def _metrics(store: Path, kind: str) -> list[dict]:
    with SweepStore(store, create=False) as st:
        return [r["metrics"] for r in st.rows(kind=kind)]


def _as_csv_fields(value) -> str:
    return next(csv.reader([_csv_line(value)]))[0]


def _csv_line(value) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerow([value])
    return buf.getvalue()


def _check_allreduce_sweep(tmp_path, capsys, out_dir: Path, golden_csvs: list[Path], base: str, axes: str) -> None:
    """The allreduce points as a sweep: rows equal to the command's, field for field as CSV
    writes them; and a sweep into the command's store finds all of them finished."""
    sweep = f'kind = "allreduce"\n[base]\n{base}[axes]\n{axes}'
    fresh = tmp_path / "fresh.sqlite"
    _sweep(tmp_path, capsys, sweep, fresh)
    rows = [r for p in golden_csvs for r in _csv_rows(p)]
    by_point = {(m["algorithm"], m["size_bytes"], m["nic"], m["model"]): m for m in _metrics(fresh, "allreduce")}
    assert len(by_point) == len(rows)
    for r in rows:
        m = by_point[(r["algorithm"], int(r["size_bytes"]), r["nic"], r["model"])]
        for col, text in r.items():
            if col in ("speedup_vs_ring", "bound_percent", "optimum_cycles", "optimum_percent"):  # derived by the command
                continue
            assert _as_csv_fields(m[col]) == text, (r, col)
    out = _sweep(tmp_path, capsys, sweep, out_dir / "runs.sqlite")
    assert f"{len(rows)} finished before" in out and "nothing left to run" in out, out


def test_allreduce_reproduces_its_recorded_output_and_the_sweep_gives_its_rows(tmp_path, capsys, monkeypatch):
    _, out_dir = run_case("allreduce", tmp_path, capsys, monkeypatch)
    _check_allreduce_sweep(tmp_path, capsys, out_dir, [GOLDEN / "allreduce" / "torus_2x2_message.csv"],
                           'network.topology = "torus:2x2"\n',
                           '"nic.design" = ["codesigned", "baseline"]\n"allreduce.size" = [4096, 16384]\n'
                           '"allreduce.algorithm" = ["ring", "multitree"]\n')
    # run again: every run reused from the store, the same files
    out, _ = run_case("allreduce", tmp_path, capsys, monkeypatch, reused=8)
    assert "8 runs (8 reused from runs.sqlite)" in " ".join(out.split())


@pytest.mark.slow
def test_allreduce_at_both_levels_reproduces_its_recorded_output(tmp_path, capsys, monkeypatch):
    _, out_dir = run_case("allreduce_flit", tmp_path, capsys, monkeypatch)
    _check_allreduce_sweep(tmp_path, capsys, out_dir, [GOLDEN / "allreduce_flit" / f"torus_2x2_{m}.csv" for m in ("message", "flit")],
                           'network.topology = "torus:2x2"\nallreduce.size = 4096\n',
                           '"allreduce.model" = ["message", "flit"]\n"allreduce.algorithm" = ["ring", "dbtree"]\n')


def test_the_main_job_reproduces_its_recorded_output_and_the_sweep_gives_its_rows(tmp_path, capsys, monkeypatch):
    _, out_dir = run_case("demo", tmp_path, capsys, monkeypatch)
    _check_allreduce_sweep(tmp_path, capsys, out_dir, [GOLDEN / "demo" / "torus_4x4_c4_message.csv"],
                           'network.topology = "torus:4x4"\nnetwork.nis_per_node = 4\n',
                           '"nic.design" = ["codesigned", "baseline"]\n"allreduce.size" = "32KiB..64MiB"\n'
                           '"allreduce.algorithm" = ["ring", "ring2d", "dbtree", "multitree"]\n')


def _finished_in(tmp_path, capsys, sweep: str, store: Path, n: int) -> None:
    """A sweep of ``sweep``'s points into a fresh store gives the rows the command stored,
    byte for byte (each point's metrics as the store holds them, by key); and a sweep into
    the command's own store finds all ``n`` finished."""
    fresh = tmp_path / "fresh.sqlite"
    _sweep(tmp_path, capsys, sweep, fresh)
    by_key = [{r["key"]: json.dumps(r["metrics"], sort_keys=True) for r in _stored(path)} for path in (fresh, store)]
    assert len(by_key[0]) == n and by_key[0] == by_key[1]
    out = _sweep(tmp_path, capsys, sweep, store)
    assert f"{n} points" in out and f"{n} finished before" in out and "nothing left to run" in out, out


def _stored(store: Path) -> list[dict]:
    with SweepStore(store, create=False) as st:
        return list(st.rows())


def test_noc_sweep_load_reproduces_its_recorded_output_and_the_sweep_finds_its_points(tmp_path, capsys, monkeypatch):
    _, out_dir = run_case("noc_sweep_load", tmp_path, capsys, monkeypatch)
    with SweepStore(out_dir / "runs.sqlite", create=False) as st:
        rates = sorted(r["config"]["traffic"]["rate_packets"] for r in st.rows(kind="noc_load"))
    assert len(rates) == len(_csv_rows(GOLDEN / "noc_sweep_load" / "sweep_mesh_3x3_uniform.csv"))
    base = (GOLDEN / "noc.toml").read_text().split("[sweep]")[0].replace("[", "[base.")
    _finished_in(tmp_path, capsys, f'kind = "noc_load"\n{base}[axes]\n"traffic.rate_packets" = {rates!r}\n',
                 out_dir / "runs.sqlite", len(rates))


def test_noc_run_reproduces_its_recorded_output_and_the_sweep_gives_its_rows(tmp_path, capsys, monkeypatch):
    _, out_dir = run_case("noc_run", tmp_path, capsys, monkeypatch)
    base = (GOLDEN / "noc.toml").read_text().split("[sweep]")[0].replace("[", "[base.")
    _finished_in(tmp_path, capsys, f'kind = "noc_load"\n{base}[axes]\n"traffic.rate_packets" = [0.05]\n',
                 out_dir / "runs.sqlite", 1)
    # run again: the stored point is reused, the same files
    code, out, err = run(shlex.split((GOLDEN / "noc_run" / "command.txt").read_text())[1:], capsys)
    assert code == 0 and "(the run reused from runs.sqlite)" in " ".join(out.split()), err
    for path in (GOLDEN / "noc_run").glob("*.csv"):
        assert (out_dir / path.name).read_bytes() == path.read_bytes()


_SECONDS = re.compile(r"(│ +[0-9.]+ +│\n|,[0-9.]+\n)")  # rtl synth's last column: each synthesis's wall time


@pytest.mark.slow
def test_rtl_synth_reproduces_its_recorded_output_and_the_sweep_gives_its_rows(tmp_path, capsys, monkeypatch):
    """What rtl synth printed and wrote before its points ran through the pipeline, the
    wall-time column (seconds) left out."""
    case = GOLDEN / "rtl_synth"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    code, out, err = run(shlex.split((case / "command.txt").read_text())[1:], capsys)
    assert code in (0, None), err
    printed = "\n".join(ln for ln in out.splitlines() if not _PROGRESS.search(ln)) + "\n"
    assert _SECONDS.sub("|\n", printed) == _SECONDS.sub("|\n", (case / "stdout.txt").read_text())
    assert _SECONDS.sub("|\n", (tmp_path / "out" / "rtl" / "synth.csv").read_text()) == \
        _SECONDS.sub("|\n", (case / "synth.csv").read_text())
    # the points as a sweep: the same keys and metrics, run afresh (but the wall time), and in the
    # command's store every one found finished
    sweep = 'kind = "rtl_synth"\n[base]\ndepth = 16\n[axes]\nnis = [1, 2]\n'
    fresh = tmp_path / "fresh.sqlite"
    _sweep(tmp_path, capsys, sweep, fresh)
    mine = {r["key"]: r["metrics"] for r in _stored(tmp_path / "out" / "rtl" / "runs.sqlite")}
    got = {r["key"]: r["metrics"] for r in _stored(fresh)}
    assert sorted(got) == sorted(mine) and len(got) == 2
    for key, m in got.items():
        assert {**m, "seconds": 0} == {**mine[key], "seconds": 0}
    out = _sweep(tmp_path, capsys, sweep, tmp_path / "out" / "rtl" / "runs.sqlite")
    assert "2 finished before" in out and "nothing left to run" in out, out


def test_train_reproduces_its_recorded_output_and_the_sweep_finds_its_points(tmp_path, capsys, monkeypatch):
    _, out_dir = run_case("train", tmp_path, capsys, monkeypatch)
    _finished_in(tmp_path, capsys, 'kind = "training"\n[base]\nnetwork.topology = "torus:2x2"\n'
                 'network.nis_per_node = 1\ntraining.workload = "alexnet"\n[axes]\n'
                 '"training.algorithm" = ["ring", "multitree"]\n"training.policy" = ["wfbp", "p3"]\n',
                 out_dir / "runs.sqlite", 4)


# each train-system case's point, as a sweep file's [base] states the command's flags
_SYSTEM_POINTS = {"ps": 'servers = 2\nmodes = "sync,async"\n', "ssd": 'delays = "1,2"\n',
                  "easgd": 'variants = "sync,async"\n', "kfac": "",
                  "compression": 'compressors = "topk:0.01,onebit"\n',
                  "dlion": 'techniques = "none,priority"\n'}
_SYSTEM_ITERATIONS = {"dlion": 60}  # the others 300


@pytest.mark.parametrize("system", [pytest.param(s, marks=pytest.mark.slow) if s == "dlion" else s
                                    for s in _SYSTEM_POINTS])
def test_train_system_reproduces_its_recorded_output_and_the_sweep_gives_its_rows(system, tmp_path, capsys,
                                                                                    monkeypatch):
    from hw_models.sweep.kinds.train_system import tables

    _, out_dir = run_case(f"train_system_{system}", tmp_path, capsys, monkeypatch)
    _finished_in(tmp_path, capsys, f'kind = "train_system"\n[base]\nsystem = "{system}"\ntopology = "torus:2x2"\n'
                 f'nis = 1\nworkload = "alexnet"\nmax_iterations = {_SYSTEM_ITERATIONS.get(system, 300)}\n'
                 f'{_SYSTEM_POINTS[system]}', out_dir / "runs.sqlite", 1)
    # the CSV rows are the stored tables' (beside the columns the command adds)
    (metrics,) = [r["metrics"] for r in _stored(out_dir / "runs.sqlite")]
    timing, conv = tables(metrics)
    for rows, path in ((timing, _golden_csv(system, False)), (conv, _golden_csv(system, True))):
        assert [{k: r[k] for k in rows[0]} for r in _csv_rows(path)] == [
            {k: _as_csv_fields(v) for k, v in r.items()} for r in rows]
    # run again: the stored point is reused, the same files
    argv = shlex.split((GOLDEN / f"train_system_{system}" / "command.txt").read_text())[1:]
    code, out, err = run(argv, capsys)
    assert code == 0 and "(reused from runs.sqlite)" in out, err
    for convergence in (False, True):
        path = _golden_csv(system, convergence)
        assert (out_dir / path.name).read_bytes() == path.read_bytes()


def _golden_csv(system: str, convergence: bool) -> Path:
    (path,) = [p for p in (GOLDEN / f"train_system_{system}").glob("*.csv")
               if p.name.endswith("_convergence.csv") == convergence]
    return path


def test_maddpg_accel_reproduces_its_recorded_output_and_the_sweep_gives_its_rows(tmp_path, capsys, monkeypatch):
    _, out_dir = run_case("maddpg_accel", tmp_path, capsys, monkeypatch)
    with SweepStore(out_dir / "runs.sqlite", create=False) as st:
        assert len(list(st.rows(kind="maddpg_accel"))) == 2 * 2 * 98  # agents x interconnects x the search's designs
    # each row's design as a sweep point: the command's CSV row, and the metrics it stored
    rows = _csv_rows(GOLDEN / "maddpg_accel" / "accel.csv")
    sweep = ('kind = "maddpg_accel"\n[zip.design]\n' + "".join(
        f'{key} = {[int(r[col]) if col in ("agents", "pe", "lanes") else r[col] for r in rows]!r}\n'.replace("'", '"')
        for key, col in (("agents", "agents"), ('"accel.interconnect"', "interconnect"), ('"accel.pe"', "pe"),
                         ('"accel.lanes"', "lanes"), ('"accel.layer_balance"', "layer_balance"))))
    fresh = tmp_path / "fresh.sqlite"
    _sweep(tmp_path, capsys, sweep, fresh)
    mine = {r["key"]: r["metrics"] for r in _stored(out_dir / "runs.sqlite")}
    got = {(str(p["config"]["agents"]), p["config"]["accel"]["interconnect"]): p for p in _stored(fresh)}
    assert len(got) == len(rows)
    for r in rows:
        point = got[r["agents"], r["interconnect"]]
        assert json.dumps(point["metrics"], sort_keys=True) == json.dumps(mine[point["key"]], sort_keys=True)
        assert {c: r[c] for c in point["metrics"]["row_columns"].split(",")} == {
            c: _as_csv_fields(point["metrics"][f"row_{c}"]) for c in point["metrics"]["row_columns"].split(",")}
