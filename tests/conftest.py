"""Test-session settings shared by every test directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slow_shards import pytest_addoption, pytest_collection_modifyitems  # noqa: F401  (--slow-shard K/N)


def pytest_configure(config):
    # pytest-xdist starts its workers with SIGINT ignored, and a process started from a
    # worker inherits that; the tests of Ctrl-C (in this process and in the commands they
    # start) need Python's usual KeyboardInterrupt, as a user's terminal gives it.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        signal.signal(signal.SIGINT, signal.default_int_handler)


# The warm-up's jobs (tests/warm_kernels.py) in two groups of about equal compile time: the
# flit network's kernels (the co-simulation first: the traffic run then reuses its network
# step) and the message-level loop with the MADDPG batch kernels.
WARM_GROUPS = (("cosim", "traffic", "cosim_narrow"), ("maddpg", "message"))


def _warm_up_wanted(config) -> bool:
    """Only for a whole default run in two or more worker processes (``make test``): there
    the workers would compile the same kernels at once; one process compiles each only once
    anyway, and a run of a few files or tests (paths, ``-k``, ``-m``) compiles only what it needs."""
    if os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get("HW_MODELS_WARM_UP", "1") == "0":
        return False
    try:
        workers = int(config.getoption("numprocesses", 0) or 0)
    except (TypeError, ValueError):  # -n auto: pytest-xdist resolves it later
        workers = os.cpu_count() or 1
    return (workers >= 2 and not config.option.collectonly and config.option.markexpr == "not slow"
            and not config.option.keyword and config.args_source == pytest.Config.ArgsSource.TESTPATHS)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """Compile the heaviest Numba kernels into the cache before pytest-xdist starts the
    workers (its own sessionstart runs last): each kernel once, the groups in parallel.
    A job that fails only costs its time: the tests that need the kernel compile it."""
    if not _warm_up_wanted(session.config):
        return
    script = Path(__file__).with_name("warm_kernels.py")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    say = reporter.write_line if reporter is not None else print
    t0 = time.perf_counter()
    say(f"warm-up: compiling the heaviest Numba kernels once, {len(WARM_GROUPS)} processes "
        f"(HW_MODELS_WARM_UP=0 skips it)")
    procs = [subprocess.Popen([sys.executable, str(script), *group], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for group in WARM_GROUPS]
    for group, proc in zip(WARM_GROUPS, procs):
        out, _ = proc.communicate()
        if proc.returncode != 0:
            tail = " | ".join(out.strip().splitlines()[-3:])
            say(f"warm-up: warning: {' '.join(group)} failed (exit {proc.returncode}): {tail}")
    say(f"warm-up: done in {time.perf_counter() - t0:.0f} s")
