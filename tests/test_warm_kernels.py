"""The warm-up of tests/conftest.py names each of tests/warm_kernels.py's jobs exactly once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import WARM_GROUPS
from warm_kernels import JOBS

SCRIPT = Path(__file__).with_name("warm_kernels.py")


def test_the_groups_run_every_job_once():
    named = [job for group in WARM_GROUPS for job in group]
    assert sorted(named) == sorted(JOBS)


def test_an_unknown_job_is_refused_with_the_known_ones():
    r = subprocess.run([sys.executable, str(SCRIPT), "nonesuch"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "nonesuch" in r.stderr and all(job in r.stderr for job in JOBS)
