"""Measure how long each slow check takes and merge the figures into tests/slow_durations.json,
which balances CI's slow shards (tests/slow_shards.py).

    python bench/slow_durations.py tests/rtl/test_axil.py tests/nic   # run these, one pytest each

Each path runs as ``python -m pytest -m slow -n 0 -p no:cacheprovider -p slow_durations -q PATH``
(one process; this file is also the pytest plugin that times each check). Per check it keeps
the wall seconds and the CPU seconds of setup + call + teardown, the CPU time counting this
process and the subprocesses it waited for (simulator builds, Yosys, commands under test):
the CPU figure hardly moves with the load of a shared machine and is what a shard costs on
an idle one (two workers: half a shard's CPU seconds). A session or module fixture's cost
lands on the first check that uses it. The file keeps the command, the CPU model, its core
count and the load average of each measurement. ``--from-log`` reads the wall seconds of
pytest ``--durations=0`` logs instead (no CPU figure).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from slow_shards import DURATIONS_FILE  # noqa: E402

PYTEST = [sys.executable, "-m", "pytest", "-m", "slow", "-n", "0", "-p", "no:cacheprovider", "-p", "slow_durations",
          "-q"]
OUT_ENV = "HWM_SLOW_DURATIONS_OUT"
LINE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)s (setup|call|teardown)\s+(\S.*?)\s*$")


def parse_durations(text: str) -> dict[str, float]:
    """pytest's ``--durations`` report -> node id -> setup + call + teardown seconds."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out[m[3]] = round(out.get(m[3], 0.0) + float(m[1]), 2)
    return out


# --- the pytest plugin (-p slow_durations, with bench/ on PYTHONPATH) -----------------------------

def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


try:
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        import time

        wall0, cpu0 = time.perf_counter(), _cpu_s()
        yield
        out = os.environ.get(OUT_ENV)
        if out:
            with open(out, "a") as f:
                f.write(json.dumps({"nodeid": item.nodeid, "wall_s": round(time.perf_counter() - wall0, 2),
                                    "cpu_s": round(_cpu_s() - cpu0, 2)}) + "\n")
except ImportError:  # pragma: no cover
    pass


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def merge(wall: dict[str, float], cpu: dict[str, float], note: dict, path: Path = DURATIONS_FILE) -> None:
    data = json.loads(path.read_text()) if path.is_file() else {"measurements": [], "cpu_s": {}, "wall_s": {}}
    data["measurements"].append(note)
    for key, new in (("cpu_s", cpu), ("wall_s", wall)):
        data[key].update(new)
        data[key] = dict(sorted(data[key].items()))
    for nodeid in wall:  # a wall-only figure replaces an older CPU figure of the same check
        if nodeid not in cpu:
            data["cpu_s"].pop(nodeid, None)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="Test files or directories to run (each in its own pytest).")
    ap.add_argument("--from-log", nargs="+", type=Path, default=[], help="Read these pytest logs instead of running.")
    ap.add_argument("--from-record", nargs="+", type=Path, default=[],
                    help="Merge these per-check records (JSON lines the plugin wrote, e.g. of an interrupted run).")
    ap.add_argument("--log-command", help="With --from-log/--from-record: the command that wrote them (kept in the file).")
    ap.add_argument("--note", default="", help="Kept with the measurement, e.g. the machine's load.")
    ap.add_argument("--out", type=Path, default=DURATIONS_FILE, help="The durations file (default: %(default)s).")
    a = ap.parse_args()
    if not a.paths and not a.from_log and not a.from_record:
        ap.error("give test paths to run, --from-log LOG or --from-record FILE")
    if (a.from_log or a.from_record) and not a.log_command:
        ap.error("--from-log and --from-record need --log-command: the command that wrote them")
    base = {"cpu": cpu_name(), "cores": os.cpu_count()}
    for log in a.from_log:
        got = parse_durations(log.read_text())
        merge(got, {}, {**base, "command": a.log_command, "log": log.name, "note": a.note, "checks": len(got)}, a.out)
        print(f"{log}: {len(got)} checks, {sum(got.values()) / 60:.1f} min wall")
    for record in a.from_record:
        rows = [json.loads(x) for x in record.read_text().splitlines() if x.strip()]
        merge({r["nodeid"]: r["wall_s"] for r in rows}, {r["nodeid"]: r["cpu_s"] for r in rows},
              {**base, "command": a.log_command, "record": record.name, "note": a.note, "checks": len(rows)}, a.out)
        print(f"{record}: {len(rows)} checks, {sum(r['cpu_s'] for r in rows) / 60:.1f} CPU min")
    for path in a.paths:
        load = os.getloadavg()[0]
        start = datetime.datetime.now(datetime.timezone.utc)
        with tempfile.TemporaryDirectory() as tmp:
            rec = Path(tmp) / "durations.jsonl"
            env = {**os.environ, OUT_ENV: str(rec),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "bench"), os.environ.get("PYTHONPATH")]))}
            p = subprocess.run([*PYTEST, path], cwd=ROOT, env=env, capture_output=True, text=True)
            rows = [json.loads(x) for x in rec.read_text().splitlines()] if rec.exists() else []
        wall = {r["nodeid"]: r["wall_s"] for r in rows}
        cpu = {r["nodeid"]: r["cpu_s"] for r in rows}
        merge(wall, cpu, {**base, "command": " ".join(["python", *PYTEST[1:], path]), "exit_status": p.returncode,
                          "started_utc": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                          "load_avg_1min_at_start": round(load, 1), "load_avg_1min_at_end": round(os.getloadavg()[0], 1),
                          "note": a.note, "checks": len(rows)}, a.out)
        print(f"{path}: exit {p.returncode}, {len(rows)} checks, {sum(cpu.values()) / 60:.1f} CPU min, "
              f"{sum(wall.values()) / 60:.1f} min wall")

if __name__ == "__main__":
    main()
