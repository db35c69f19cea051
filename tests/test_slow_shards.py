"""CI's rotation of the slow checks (tests/slow_shards.py): every check in exactly one shard,
N consecutive landed commits run every shard, and nothing depends on the order of collection."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from slow_shards import (DURATIONS_FILE, Sharding, ShardSpecError, balanced, ci_shard, first_parent_commits,
                         load_durations, parse_shard)

TESTS = Path(__file__).resolve().parent

#: A stand-in test module: 30 slow checks (6 of them with known durations), 4 default ones.
MODULE = '''
import pytest

@pytest.mark.slow
@pytest.mark.parametrize("i", range(30))
def test_slow(i):
    pass

@pytest.mark.parametrize("i", range(4))
def test_default(i):
    pass
'''
KNOWN = {f"test_mod.py::test_slow[{i}]": s for i, s in enumerate([50.0, 40.0, 30.0, 20.0, 10.0, 5.0])}


def _collect(tmp: Path, *args: str) -> set[str]:
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "slow_shards", "--collect-only", "-q",
                        "-p", "no:cacheprovider", "--slow-durations", str(tmp / "durations.json"), *args],
                       cwd=tmp, capture_output=True, text=True, env={"PYTHONPATH": str(TESTS), "PATH": ""})
    assert p.returncode == 0, p.stdout + p.stderr
    return {line for line in p.stdout.splitlines() if "::" in line}


@pytest.fixture
def module_dir(tmp_path):
    import json

    (tmp_path / "test_mod.py").write_text(MODULE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long\n")
    (tmp_path / "durations.json").write_text(json.dumps({"cpu_s": KNOWN}))
    return tmp_path


def test_the_option_puts_every_slow_check_in_exactly_one_shard(module_dir):
    all_slow = _collect(module_dir, "-m", "slow")
    defaults = _collect(module_dir, "-m", "not slow")
    assert len(all_slow) == 30 and len(defaults) == 4
    shards = [_collect(module_dir, "-m", "slow", "--slow-shard", f"{k}/3") for k in range(3)]
    assert set().union(*shards) == all_slow
    assert sum(len(s) for s in shards) == len(all_slow)  # disjoint
    assert all(shards)
    # The default checks are not the option's business.
    assert _collect(module_dir, "-m", "not slow", "--slow-shard", "1/3") == defaults
    # The three longest known checks (50, 40, 30 s) go to three different shards.
    longest = [f"test_mod.py::test_slow[{i}]" for i in range(3)]
    assert sorted(next(k for k, s in enumerate(shards) if n in s) for n in longest) == [0, 1, 2]


@pytest.mark.parametrize("bad", ["6/6", "-1/6", "1/0", "a/6", "3", ""])
def test_a_bad_shard_is_refused_with_what_is_allowed(bad):
    with pytest.raises(ShardSpecError, match=r"--slow-shard = .*0 <= K < N"):
        parse_shard(bad)


def test_the_assignment_does_not_depend_on_order_or_on_what_was_collected():
    rng = random.Random(7)
    durations = {f"tests/x.py::test[{i}]": rng.choice([0.5, 3.0, 60.0, rng.uniform(0, 900)]) for i in range(300)}
    durations["tests/x.py::tie_a"] = durations["tests/x.py::tie_b"] = 60.0
    items = list(durations.items())
    rng.shuffle(items)
    assert balanced(dict(items), 6) == balanced(durations, 6)
    unknown = [f"tests/new.py::test[{i}]" for i in range(200)]
    full = Sharding(6, durations)
    ids = list(durations) + unknown
    whole = {n: full.shard_of(n) for n in ids}
    rng.shuffle(ids)
    assert {n: Sharding(6, dict(items)).shard_of(n) for n in ids} == whole
    subset = ids[:37]
    assert {n: full.shard_of(n) for n in subset} == {n: whole[n] for n in subset}
    # Unknown checks spread over every shard by their hash.
    assert {whole[n] for n in unknown} == set(range(6))


def test_the_shards_are_balanced_within_the_greedy_bound():
    rng = random.Random(3)
    durations = {f"t{i}": rng.expovariate(1 / 60) for i in range(500)}
    for n in (2, 3, 6, 7):
        loads = Sharding(n, durations).expected_seconds(durations)
        # Longest-first greedy: no shard exceeds the mean by more than the longest check.
        assert max(loads) <= sum(durations.values()) / n + max(durations.values()) + 1e-9
        assert sum(loads) == pytest.approx(sum(durations.values()))


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env=env).stdout


def test_six_consecutive_landed_commits_run_every_shard(tmp_path):
    """One CI run per commit landed on the main line, merges of many-commit branches included."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shards = []

    def land(message: str) -> None:
        shards.append(ci_shard(first_parent_commits(repo), 6))

    for i in range(4):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}")
        land(f"c{i}")
    for b in range(3):  # a branch of 1 + 2b commits merged with --no-ff, then a direct commit
        _git(repo, "checkout", "-q", "-b", f"topic{b}")
        for j in range(1 + 2 * b):
            _git(repo, "commit", "-q", "--allow-empty", "-m", f"topic{b} {j}")
        _git(repo, "checkout", "-q", "main")
        _git(repo, "merge", "-q", "--no-ff", "-m", f"merge topic{b}", f"topic{b}")
        land(f"merge{b}")
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"after{b}")
        land(f"after{b}")
    assert all(b == (a + 1) % 6 for a, b in zip(shards, shards[1:])), shards
    for start in range(len(shards) - 5):
        assert set(shards[start:start + 6]) == set(range(6))
    # A plain commit count would jump at each merge and skip shards.
    plain = int(_git(repo, "rev-list", "--count", "HEAD"))
    assert plain > first_parent_commits(repo)


def test_the_durations_file_covers_slow_checks_with_the_command_that_measured_them():
    data = load_durations()
    assert DURATIONS_FILE.is_file() and data
    assert all(n.startswith("tests/") and "::" in n and s >= 0 for n, s in data.items())
    import json

    notes = json.loads(DURATIONS_FILE.read_text())["measurements"]
    assert notes and all(m["command"] and m["cpu"] for m in notes)
