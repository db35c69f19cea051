"""The wheel works outside the checkout (slow: builds it, installs it with its dependencies
into a fresh virtual environment, and runs the CLI from an empty directory).

What it checks, against the checkout itself: the installed copy imports from the venv, not
from this tree; it finds the Verilog it ships; its code version carries the same source
digest as this tree (so the digest is computed honestly without git); ``config show
--preset isca2021`` prints the preset file's values; ``demo`` writes the 96 runs and agrees
to the cycle with the checkout's ``hw-models allreduce`` on the same points; ``rtl regress``
on Icarus compares the model with the shipped RTL without a mismatch.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from hw_models.provenance import PACKAGES, source_digest
from hw_models.toolchain import REPO_ROOT, have_icarus

pytestmark = pytest.mark.slow

#: The files besides the packages and rtl/ that building the wheel reads.
BUILD_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md")


def _run(cmd: list[str], cwd: Path, env: dict | None = None, timeout: float = 1800) -> str:
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout


def _install(tmp: Path) -> tuple[Path, dict, Path]:
    """Build the wheel, install it into a fresh venv; (venv, environment for its commands, an empty directory)."""
    # From a copy of what the build reads, so no stale build/ of the checkout leaks into the wheel.
    src = tmp / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in PACKAGES + ("rtl",):
        shutil.copytree(REPO_ROOT / name, src / name, ignore=skip)
    for f in [*BUILD_FILES, *REPO_ROOT.glob("LICEN[CS]E*")]:
        shutil.copy2(REPO_ROOT / f, src / Path(f).name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist", src], cwd=tmp)
    wheels = sorted((tmp / "dist").glob("hw_models-*.whl"))
    assert len(wheels) == 1, wheels
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp)  # no --system-site-packages
    # Dependencies from the configured index, through pip's own cache.
    _run([venv / "bin" / "python", "-m", "pip", "install", "-q", wheels[0]], cwd=tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["XDG_CACHE_HOME"] = str(tmp / "cache")  # its own Numba cache and simulator builds
    work = tmp / "work"
    work.mkdir()
    return venv, env, work


def _check_self_contained(venv: Path, env: dict, work: Path) -> None:
    out = _run([venv / "bin" / "python", "-c",
                "import json, hw_models, hw_models.toolchain as t; from hw_models.provenance import code_version; "
                "print(json.dumps({'pkg': hw_models.__file__, 'rtl': str(t.RTL_DIR), 'checkout': t.IN_CHECKOUT, "
                "'verilog': sorted(p.name for p in t.RTL_DIR.glob('*.v')), 'version': code_version()}))"],
               cwd=work, env=env)
    info = json.loads(out)
    assert Path(info["pkg"]).is_relative_to(venv) and Path(info["rtl"]).is_relative_to(venv), info
    assert info["checkout"] is False
    assert info["verilog"] == sorted(p.name for p in (REPO_ROOT / "rtl").glob("*.v"))
    # The same files, hashed without git, give the checkout's digest (and no git part).
    assert info["version"].endswith(f", sources {source_digest(REPO_ROOT, REPO_ROOT / 'rtl')}"), info["version"]
    assert ", git " not in info["version"]
    assert list(work.iterdir()) == []


def _check_preset(venv: Path, env: dict, work: Path) -> None:
    shown = tomllib.loads(_run([venv / "bin" / "hw-models", "config", "show", "--preset", "isca2021"], cwd=work,
                               env=env))
    preset = tomllib.loads((REPO_ROOT / "hw_models" / "presets" / "isca2021.toml").read_text())
    for section, values in preset.items():
        if isinstance(values, dict):
            for key, value in values.items():
                assert shown[section][key] == value, (section, key)


def _check_demo(venv: Path, env: dict, work: Path, ref_dir: Path) -> None:
    _run([venv / "bin" / "hw-models", "demo", "--out", "demo"], cwd=work, env=env)
    rows = list(csv.DictReader(open(work / "demo" / "torus_4x4_c4_message.csv")))
    assert len(rows) == 96 and (work / "demo" / "torus_4x4_c4_message.png").stat().st_size > 0
    assert all(r["verified"] == "True" for r in rows)
    # The checkout's own command on a few of the demo's points gives the same cycles.
    ref_dir.mkdir()
    _run([Path(sys.executable).parent / "hw-models", "allreduce", "-t", "torus:4x4", "--nis", "4",
          "-a", "ring,ring2d,dbtree,multitree", "-s", "32KiB,4MiB", "--nic", "both", "--model", "message",
          "-o", ref_dir / "out"], cwd=ref_dir)
    ref = list(csv.DictReader(open(ref_dir / "out" / "torus_4x4_c4_message.csv")))
    assert len(ref) == 16

    def cycles(rs):
        return {(r["algorithm"], r["nic"], r["size_bytes"]): r["total_cycles"] for r in rs}

    demo = cycles(rows)
    assert {k: demo[k] for k in cycles(ref)} == cycles(ref)


def _check_rtl_regress(venv: Path, env: dict, work: Path) -> None:
    out = _run([venv / "bin" / "hw-models", "rtl", "regress", "--sim", "icarus", "--seeds", "3", "-t", "none",
                "--out", "regress"], cwd=work, env=env)
    assert "3 schedules" in out and " 0 mismatches" in out, out
    assert (Path(env["XDG_CACHE_HOME"]) / "hw-models" / "sim_build").is_dir()  # not in site-packages
    assert not list(venv.glob("lib/python*/site-packages/sim_build"))


@pytest.mark.skipif(not have_icarus(), reason="Icarus Verilog (iverilog) is not installed")
def test_wheel_works_from_an_empty_directory(tmp_path):
    """One test, in order (one wheel and one venv, also under pytest-xdist)."""
    venv, env, work = _install(tmp_path)
    _check_self_contained(venv, env, work)
    _check_preset(venv, env, work)
    _check_rtl_regress(venv, env, work)
    _check_demo(venv, env, work, tmp_path / "ref")
