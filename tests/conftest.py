"""Test-session settings shared by every test directory."""

from __future__ import annotations

import os
import signal

from slow_shards import pytest_addoption, pytest_collection_modifyitems  # noqa: F401  (--slow-shard K/N)


def pytest_configure(config):
    # pytest-xdist starts its workers with SIGINT ignored, and a process started from a
    # worker inherits that; the tests of Ctrl-C (in this process and in the commands they
    # start) need Python's usual KeyboardInterrupt, as a user's terminal gives it.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        signal.signal(signal.SIGINT, signal.default_int_handler)

