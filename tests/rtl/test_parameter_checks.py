"""Every RTL module rejects impossible parameters: its ``initial`` block stops the
simulation with ``$fatal`` and a message naming the module, the parameter and its value
(Icarus; the scheduler's own widths are in test_regress.py). A width of 0 is not among the
cases: Icarus already refuses to elaborate a zero-width vector."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from hw_models.toolchain import RTL_DIR, axil_sources, datapath_sources, have_icarus, rtl_sources

pytestmark = pytest.mark.skipif(not have_icarus(), reason="Icarus Verilog (iverilog) is not installed")

# (module, its sources, a bad override, the text the check prints)
CASES = [
    ("nic_sched_entry", [RTL_DIR / "nic_sched_entry.v"], "NIS=17", "NIS = 17 out of range 1..16"),
    ("nic_sched_entry", [RTL_DIR / "nic_sched_entry.v"], "CNT_W=9", "CNT_W = 9 out of range 1..8"),
    ("nic_sched_entry", [RTL_DIR / "nic_sched_entry.v"], "FLOW_W=17", "FLOW_W = 17 out of range 1..16"),
    # 16 ports need a 4-bit count of earlier ports (0..15); 3 bits cannot hold it
    ("nic_sched_entry", [RTL_DIR / "nic_sched_entry.v"], "NIS=16 PRIOR_W=3", "PRIOR_W = 3 out of range"),
    ("nic_sched_entry", [RTL_DIR / "nic_sched_entry.v"], "PIPE=2", "PIPE = 2 out of range 0..1"),
    ("nic_scheduler", rtl_sources(), "SCHED_PIPE=2", "nic_scheduler: SCHED_PIPE = 2 out of range 0..1"),
    ("nic_sched_mux", [RTL_DIR / "nic_sched_mux.v"], "N=0", "N = 0 must be at least 1"),
    ("nic_sched_ram", [RTL_DIR / "nic_sched_ram.v"], "DEPTH=5 ADDR_W=2", "cannot address DEPTH = 5 words"),
    ("nic_sched_ram", [RTL_DIR / "nic_sched_ram.v"], "DEPTH=4 ADDR_W=17", "ADDR_W = 17 out of range 1..16"),
    ("nic_axil_scheduler", None, "AXIL_ADDR_W=6", "nic_axil_scheduler: AXIL_ADDR_W = 6 out of range 7..16"),
    ("nic_axil_scheduler", None, "DEPTH=16 ADDR_W=5", "nic_axil_scheduler: ADDR_W is derived"),
    ("nic_top", None, "LANES=3", "nic_top: LANES = 3 must be 1, 2, 4, 8 or 16"),
    ("nic_top", None, "FMT=2", "nic_top: FMT = 2 must be 0 (int32) or 1 (fp32)"),
    ("nic_top", None, "BUF_WORDS=64 BA_W=7", "nic_top: BA_W is derived"),
    ("nic_top", None, "ADD_LAT=8", "nic_top: ADD_LAT = 8 out of range 0..7"),
    ("nic_top", None, "NIS=17", "nic_top: NIS = 17 out of range 1..16"),
    ("nic_top", None, "NIS=4 NI_W=1", "nic_top: NI_W is derived"),
    ("nic_top", None, "SCHED_PIPE=2", "nic_top: SCHED_PIPE = 2 out of range 0..1"),
    ("nic_datapath", None, "NIS=0", "nic_datapath: NIS = 0 out of range 1..16"),
    ("nic_reduce_add", [RTL_DIR / "nic_fp32_add.v", RTL_DIR / "nic_reduce_add.v"], "ADD_LAT=8",
     "nic_reduce_add: ADD_LAT = 8 out of range 0..7"),
    ("nic_fp32_add", [RTL_DIR / "nic_fp32_add.v"], "LAT=8", "nic_fp32_add: LAT = 8 out of range 0..7"),
]


def _sources(module, sources):
    if sources is not None:
        return sources
    return axil_sources() if module == "nic_axil_scheduler" else datapath_sources()


def _run(module, sources, overrides, tmp_path):
    vvp = tmp_path / "x.vvp"
    ps = [f"-P{module}.{kv}" for kv in overrides.split()] if overrides else []
    subprocess.run(["iverilog", "-g2012", "-s", module, *ps, "-o", str(vvp), *map(str, _sources(module, sources))],
                   check=True, capture_output=True)
    p = subprocess.run([shutil.which("vvp"), "-n", str(vvp)], capture_output=True, text=True, timeout=60)
    return p.stdout + p.stderr


@pytest.mark.parametrize("module,sources,bad,message", CASES,
                         ids=[f"{m}-{b.replace(' ', '-')}" for m, _, b, _ in CASES])
def test_a_bad_parameter_stops_the_simulation_naming_it(module, sources, bad, message, tmp_path):
    out = _run(module, sources, bad, tmp_path)
    assert message in out and "FATAL" in out.upper(), out


@pytest.mark.parametrize("module", sorted({m for m, *_ in CASES}))
def test_the_defaults_pass_the_check(module, tmp_path):
    out = _run(module, next(s for m, s, *_ in CASES if m == module), "", tmp_path)
    assert "fatal" not in out.lower(), out
