"""Measure how long each slow check takes and merge the figures into tests/slow_durations.json,
which balances CI's slow shards (tests/slow_shards.py).

    python bench/slow_durations.py tests/rtl/test_axil.py tests/nic   # run these, one pytest each
    python bench/slow_durations.py --from-log LOG...                   # or read logs of such runs

Each path runs as ``python -m pytest -m slow -n 0 -p no:cacheprovider -q -vv --durations=0 PATH``
(one process: one core); a check's figure is its setup + call + teardown seconds from
pytest's duration report. A session or module fixture's cost lands on the first check that
uses it. The file keeps the command, the CPU, its core count and the load average of each
measurement, as the machine may be shared.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from slow_shards import DURATIONS_FILE  # noqa: E402

PYTEST = [sys.executable, "-m", "pytest", "-m", "slow", "-n", "0", "-p", "no:cacheprovider", "-q", "-vv",
          "--durations=0"]
LINE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)s (setup|call|teardown)\s+(\S.*?)\s*$")


def parse_durations(text: str) -> dict[str, float]:
    """pytest's ``--durations`` report -> node id -> setup + call + teardown seconds."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out[m[3]] = round(out.get(m[3], 0.0) + float(m[1]), 2)
    return out


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def merge(measured: dict[str, float], note: dict, path: Path = DURATIONS_FILE) -> None:
    data = json.loads(path.read_text()) if path.is_file() else {"measurements": [], "durations_s": {}}
    data["measurements"].append(note)
    data["durations_s"].update(measured)
    data["durations_s"] = dict(sorted(data["durations_s"].items()))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="Test files or directories to run (each in its own pytest).")
    ap.add_argument("--from-log", nargs="+", type=Path, default=[], help="Read these pytest logs instead of running.")
    ap.add_argument("--log-command", help="With --from-log: the command that wrote the logs (kept in the file).")
    ap.add_argument("--note", default="", help="Kept with the measurement, e.g. the machine's load.")
    ap.add_argument("--out", type=Path, default=DURATIONS_FILE, help="The durations file (default: %(default)s).")
    a = ap.parse_args()
    if not a.paths and not a.from_log:
        ap.error("give test paths to run or --from-log LOG")
    if a.from_log and not a.log_command:
        ap.error("--from-log needs --log-command: the command that wrote the logs")
    base = {"cpu": cpu_name(), "cores": os.cpu_count()}
    for log in a.from_log:
        got = parse_durations(log.read_text())
        merge(got, {**base, "command": a.log_command, "log": log.name, "note": a.note, "checks": len(got)}, a.out)
        print(f"{log}: {len(got)} checks, {sum(got.values()) / 60:.1f} min")
    for path in a.paths:
        load = os.getloadavg()[0]
        start = datetime.datetime.now(datetime.timezone.utc)
        p = subprocess.run([*PYTEST, path], cwd=ROOT, capture_output=True, text=True)
        got = parse_durations(p.stdout)
        merge(got, {**base, "command": " ".join(["python", *PYTEST[1:], path]), "exit_status": p.returncode,
                    "started_utc": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "load_avg_1min_at_start": round(load, 1),
                    "note": a.note, "checks": len(got)}, a.out)
        print(f"{path}: exit {p.returncode}, {len(got)} checks, {sum(got.values()) / 60:.1f} min")


if __name__ == "__main__":
    main()
