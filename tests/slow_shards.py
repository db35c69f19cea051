"""The slow checks split into shards of about equal running time, for CI's rotation.

``pytest -m slow --slow-shard K/N`` runs shard K (0 <= K < N) of the slow checks (the
default checks it leaves alone). ``.ci/run`` picks K as the number of commits on the first-
parent line of HEAD modulo N, so each commit that lands on the main line runs the next
shard and any N consecutive ones run every slow check.

The assignment depends on the durations file and the node id alone, never on the order or
the subset a run collects: the tests the file holds, longest first (ties by node id), each
go to the shard with the least time so far (ties to the lowest K); a test the file does not
hold goes to shard ``sha256(node id) mod N``. ``python tests/slow_shards.py`` prints the
shards' expected times.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

#: Measured seconds per slow check, CPU and wall (bench/slow_durations.py writes it).
DURATIONS_FILE = Path(__file__).with_name("slow_durations.json")


class ShardSpecError(ValueError):
    """A --slow-shard value that is not K/N with 0 <= K < N."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N)."""
    m = re.fullmatch(r"\s*([0-9]{1,6})\s*/\s*([0-9]{1,6})\s*", text or "")
    if not m or int(m[2]) < 1 or int(m[1]) >= int(m[2]):
        raise ShardSpecError(f"--slow-shard = {text!r}: give K/N with integers 0 <= K < N (e.g. 0/6)")
    return int(m[1]), int(m[2])


def load_durations(path: Path = DURATIONS_FILE) -> dict[str, float]:
    """Node id -> seconds from the durations file: CPU seconds where measured (what a check
    costs on an idle machine), else wall seconds; empty when the file does not exist."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return {k: float(v) for k, v in {**data.get("wall_s", {}), **data.get("cpu_s", {})}.items()}


def balanced(durations: Mapping[str, float], shards: int) -> dict[str, int]:
    """Longest-processing-time-first: node id -> shard for every test in ``durations``."""
    heap = [(0.0, k) for k in range(shards)]
    out = {}
    for nodeid, seconds in sorted(durations.items(), key=lambda kv: (-kv[1], kv[0])):
        load, k = heapq.heappop(heap)
        out[nodeid] = k
        heapq.heappush(heap, (load + seconds, k))
    return out


def hashed_shard(nodeid: str, shards: int) -> int:
    return int.from_bytes(hashlib.sha256(nodeid.encode()).digest()[:8], "big") % shards


class Sharding:
    """The shard of any node id, for N shards and one durations table."""

    def __init__(self, shards: int, durations: Mapping[str, float] | None = None):
        self.shards = shards
        self.durations = dict(load_durations() if durations is None else durations)
        self._known = balanced(self.durations, shards)

    def shard_of(self, nodeid: str) -> int:
        known = self._known.get(nodeid)
        return known if known is not None else hashed_shard(nodeid, self.shards)

    def expected_seconds(self, nodeids: Iterable[str]) -> list[float]:
        """Each shard's total of the known durations among ``nodeids``."""
        total = [0.0] * self.shards
        for n in nodeids:
            total[self.shard_of(n)] += self.durations.get(n, 0.0)
        return total


def ci_shard(first_parent_commits: int, shards: int) -> int:
    """The shard a CI run of a commit runs: its first-parent commit count modulo N."""
    return first_parent_commits % shards


def first_parent_commits(repo: Path) -> int:
    """Commits on the first-parent line of HEAD: one more for each commit that lands on the
    main line, a merge counting once however many commits its branch had."""
    import subprocess

    shallow = subprocess.run(["git", "-C", str(repo), "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True, check=True).stdout.strip()
    if shallow == "true":
        raise SystemExit("error: a shallow clone cannot count its commits; fetch the history (git fetch --unshallow) "
                         "or choose the shard with SLOW_SHARD=K")
    out = subprocess.run(["git", "-C", str(repo), "rev-list", "--count", "--first-parent", "HEAD"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


# --- the pytest side (tests/conftest.py re-exports these hooks; elsewhere: -p slow_shards) -------

def pytest_addoption(parser):
    parser.addoption("--slow-shard", metavar="K/N", default=None,
                     help="Run only shard K (0 <= K < N) of the slow checks, balanced by tests/slow_durations.json; "
                          "checks not marked slow are not affected.")
    parser.addoption("--slow-durations", metavar="PATH", type=Path, default=DURATIONS_FILE,
                     help="The durations file --slow-shard balances by (default: tests/slow_durations.json).")


def pytest_collection_modifyitems(config, items):
    spec = config.getoption("--slow-shard")
    if spec is None:
        return
    import pytest

    try:
        k, n = parse_shard(spec)
    except ShardSpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    sharding = Sharding(n, load_durations(config.getoption("--slow-durations")))
    keep, drop = [], []
    for item in items:
        elsewhere = item.get_closest_marker("slow") is not None and sharding.shard_of(item.nodeid) != k
        (drop if elsewhere else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="The slow checks' shards: expected times, or the shard CI runs now.")
    ap.add_argument("--shards", type=int, default=6, help="Number of shards (default: %(default)s).")
    ap.add_argument("--ci-shard", action="store_true",
                    help="Print K/N for this checkout's HEAD (first-parent commit count mod N) and exit.")
    a = ap.parse_args()
    if a.ci_shard:
        print(f"{ci_shard(first_parent_commits(Path(__file__).resolve().parents[1]), a.shards)}/{a.shards}")
    else:
        s = Sharding(a.shards)
        for k, seconds in enumerate(s.expected_seconds(s.durations)):
            count = sum(1 for x in s.durations if s.shard_of(x) == k)
            print(f"shard {k}/{a.shards}: {count:4d} measured checks, {seconds / 60:6.1f} min")
