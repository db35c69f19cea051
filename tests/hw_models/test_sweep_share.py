"""Two sweeps on one store share its points (each computed once, counted by the kind
itself), a claim whose owner has ended is taken over, a sweep started as a background job
of a script stops on SIGINT, and local workers end at once with a SIGKILLed sweep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hw_models.sweep.store import PointRecord, SweepStore, _start_time, point_key

ROOT = Path(__file__).resolve().parents[2]

COUNTED = '''
import os, time
from hw_models.sweep.kinds import Kind


def run(resolved):
    with open(os.environ["COUNT_FILE"], "a") as f:  # one line per computation, whoever runs it
        f.write(f"{resolved['x']} {os.getpid()}\\n")
    if os.environ.get("POINT_S") == "busy":  # holds the GIL for minutes, as a Numba kernel does
        sum(range(10**11))
    else:
        time.sleep(float(os.environ.get("POINT_S", "0.02")))
    return {"twice": 2 * resolved["x"]}


KIND = Kind(name="counted", summary="counts its computations", validate=lambda point, source="point": dict(point),
            run=run, model_versions=lambda: {"counted": 1})
'''


def _kind_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "kinds"
    folder.mkdir(exist_ok=True)
    (folder / "counted.py").write_text(COUNTED)
    return folder


def _sweep(tmp_path: Path, store: Path, points: int, workers: int, count: Path, point_s: float | str = 0.02):
    f = tmp_path / "counted.toml"
    f.write_text(f'kind = "counted"\n[axes]\nx = {{from = 1, to = {points}, step = 1}}\n')
    code = ("import sys, hw_models.sweep.kinds as k; k.__path__.append(sys.argv[1]); from hw_models.cli import main; "
            "main(sys.argv[2:])")
    env = {**os.environ, "COUNT_FILE": str(count), "POINT_S": str(point_s), "PYTHONPATH": str(ROOT)}
    return [sys.executable, "-c", code, str(_kind_folder(tmp_path)), "sweep", str(f), "--store", str(store),
            "--workers", str(workers)], env


def _computations(count: Path) -> list[int]:
    return [int(line.split()[0]) for line in count.read_text().splitlines()] if count.exists() else []


@pytest.mark.parametrize("workers", [0, 2])
def test_two_sweeps_on_one_store_compute_each_point_once(tmp_path, workers):
    store, count, n = tmp_path / "s.sqlite", tmp_path / "count.txt", 60
    cmd, env = _sweep(tmp_path, store, n, workers, count)
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    done = _computations(count)
    assert sorted(done) == list(range(1, n + 1))  # every point once, none twice
    with SweepStore(store, create=False) as st:
        rows = list(st.rows())
        assert sorted(r["metrics"]["twice"] for r in rows) == [2 * x for x in range(1, n + 1)]
        assert st.db.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0  # every claim ended


def _record(x: int) -> PointRecord:
    return PointRecord(point_key("toy", {"x": x}, {}), "toy", "done", {"x": x}, {}, {"y": x}, None, 0.1, "c", "t")


def test_a_claim_of_a_live_process_is_left_to_it_and_one_of_an_ended_process_taken_over(tmp_path):
    keys = [_record(x).key for x in range(3)]
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host = os.uname().nodename
    with SweepStore(tmp_path / "s.sqlite") as st:
        st.put_many([_record(0)])
        live = f"{host}:1:{_start_time(1)}"  # init runs as long as the machine does
        dead = f"{host}:{int(ended.stdout)}:1"
        st.db.executemany("INSERT INTO claims VALUES (?, ?, 0)", [(keys[1], live), (keys[2], dead)])
        mine, done, busy = st.claim(keys)
        assert (mine, done, busy) == ([keys[2]], {keys[0]}, {keys[1]})
        assert dict(st.db.execute("SELECT key, owner FROM claims")) == {keys[1]: live, keys[2]: st.owner}
        st.put_many([_record(2)])  # writing the point ends its claim
        assert dict(st.db.execute("SELECT key, owner FROM claims")) == {keys[1]: live}


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the worker processes in /proc")
def test_a_sweep_in_a_scripts_background_job_stops_on_sigint(tmp_path):
    store, count = tmp_path / "s.sqlite", tmp_path / "count.txt"
    cmd, env = _sweep(tmp_path, store, 500, 0, count, point_s=0.1)
    script = tmp_path / "bg.sh"
    script.write_text(textwrap.dedent(f"""\
        {' '.join(f"'{c}'" for c in cmd)} > {tmp_path}/out.txt 2>&1 &
        pid=$!
        while [ ! -s {count} ]; do sleep 0.1; done
        kill -INT $pid
        wait $pid
        echo "rc=$?"
        """))
    t0 = time.monotonic()
    out = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "rc=130", (out.stdout, (tmp_path / "out.txt").read_text())
    assert len(_computations(count)) < 500 and time.monotonic() - t0 < 300


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


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_busy_in_a_point_end_with_a_sigkilled_sweep_not_when_the_point_ends(tmp_path):
    store, count = tmp_path / "s.sqlite", tmp_path / "count.txt"
    cmd, env = _sweep(tmp_path, store, 20, 2, count, point_s="busy")  # each worker minutes inside a point
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while len(_computations(count)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = _children(proc.pid)
    assert len(workers) == 2
    proc.kill()
    t0 = time.monotonic()
    proc.wait()
    while any(_running(w) for w in workers) and time.monotonic() - t0 < 30:
        time.sleep(0.01)
    gone = not any(_running(w) for w in workers)
    for w in workers:  # pragma: no cover - only when the test fails
        if _running(w):
            os.kill(w, signal.SIGKILL)
    assert gone  # a point's sum takes minutes: the workers ended with the sweep, not after their point
