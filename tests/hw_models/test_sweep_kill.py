"""A real sweep process killed with SIGKILL mid-run loses no finished point and leaves no
partial row; the same command resumes it; two sweeps writing one store at once lose
nothing. Each point's stored metrics are checked against running the point here."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hw_models.sweep.kinds import get_kind
from hw_models.sweep.store import SweepStore

ROOT = Path(__file__).resolve().parents[2]


def _sweep_file(tmp_path: Path, points: int) -> Path:
    f = tmp_path / "kill.toml"
    f.write_text('kind = "allreduce"\n[base]\nnetwork.topology = "torus:2x2"\nallreduce.algorithm = "ring"\n'
                 f'[axes]\n"allreduce.size" = {{from = 4096, to = {4096 * points}, step = 4096}}\n')
    return f


def _command(f: Path, store: Path, workers: int) -> list[str]:
    return [sys.executable, "-m", "hw_models", "sweep", str(f), "--store", str(store), "--workers", str(workers)]


def _done_rows(store: Path) -> int:
    if not store.exists():
        return 0
    db = sqlite3.connect(str(store), timeout=30)
    try:
        return db.execute("SELECT COUNT(*) FROM points").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is not made yet
        return 0
    finally:
        db.close()


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _check_rows(store: Path, expected: int) -> dict[str, dict]:
    """Every row whole (a finished point, its metrics, under the key of its config), and the
    metrics of every 10th what the point gives when run here."""
    from hw_models.sweep.store import point_key

    kind = get_kind("allreduce")
    with SweepStore(store, create=False) as st:
        assert st.integrity_ok()
        rows = {r["key"]: r for r in st.rows()}
    assert len(rows) == expected
    for i, r in enumerate(sorted(rows.values(), key=lambda r: r["config"]["size_bytes"])):
        assert r["status"] == "done" and r["key"] == point_key("allreduce", r["config"], kind.model_versions())
        assert r["metrics"]["size_bytes"] == r["config"]["size_bytes"] and r["metrics"]["verified"] is True
        if i % 10 == 0:
            assert r["metrics"] == kind.run(r["config"]), r["config"]["size_bytes"]
    return rows


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the worker processes in /proc")
def test_sigkill_mid_run_loses_no_finished_point_and_the_sweep_resumes(tmp_path):
    n = 300
    f, store = _sweep_file(tmp_path, n), tmp_path / "s.sqlite"
    log = (tmp_path / "killed.log").open("w")
    proc = subprocess.Popen(_command(f, store, 1), cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while _done_rows(store) < 20:
        assert proc.poll() is None, (tmp_path / "killed.log").read_text()
        assert time.monotonic() < deadline, "the sweep stored no 20 points in 5 minutes"
        time.sleep(0.02)
    workers = _children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    kept = _done_rows(store)
    assert 20 <= kept < n, f"the sweep finished all {n} points before the kill: give it more points"
    before = _check_rows(store, kept)
    # the pool's worker process ends when its parent is gone
    assert workers, "no worker process found"
    for _ in range(100):
        if not any(Path(f"/proc/{w}").exists() and "Z" not in Path(f"/proc/{w}/stat").read_text().split()[2]
                   for w in workers):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"worker processes {workers} outlived their killed parent")
    # the same command resumes: the finished points are not run again
    p = subprocess.run(_command(f, store, 1), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{kept} finished before" in p.stdout and f"{n - kept} run now ({n - kept} done, 0 failed)" in p.stdout
    after = _check_rows(store, n)
    assert all(after[k] == row for k, row in before.items())  # untouched: same time, worker, figures


def test_two_sweeps_writing_one_store_at_once_lose_nothing(tmp_path):
    n = 150
    f, store = _sweep_file(tmp_path, n), tmp_path / "s.sqlite"
    procs = [subprocess.Popen(_command(f, store, 0), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    _check_rows(store, n)
