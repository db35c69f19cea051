"""The AXI-Lite register map (rtl/nic_regs.v in rtl/nic_axil_scheduler.v): the cocotb benches
of tests/rtl/axil_bench.py driven by cocotbext-axi's AXI-Lite master, on Icarus (every
parameter set) and Verilator (one set; the others with ``-m slow``); lint of the wrapper;
and the register map's one description (hw_models/rtl/regmap.py) against the Verilog
offsets and the table in docs/rtl.md.
"""

from __future__ import annotations

import re

import pytest

from rtl_matrix import SIMS
from hw_models.rtl import regmap as R
from hw_models.rtl.axil import run_benches
from hw_models.rtl.lint import lint_warnings
from hw_models.toolchain import REPO_ROOT, RTL_DIR, axil_sources
from nic.scheduler import SchedulerParams

#: parameter sets of the wrapper: name -> scheduler parameters
AXIL_PARAMS = {
    "d16n2": SchedulerParams(depth=16, nis=2),
    # narrow fields: a 3-bit timeout, saturating 3-bit error counter, non-power-of-two DEPTH
    "d6n3narrow": SchedulerParams(depth=6, nis=3, flow_w=3, node_w=3, step_w=4, len_w=6, cnt_w=2, err_w=3, tmo_w=3),
    "d1n1": SchedulerParams(depth=1, nis=1),
    # every field at its widest
    "d8n4wide": SchedulerParams(depth=8, nis=4, flow_w=16, node_w=16, step_w=16, len_w=32, cnt_w=8, err_w=32, tmo_w=32),
}
VERILATOR_DEFAULT = {"d16n2"}
BENCHES = ["reset_values_and_access", "load_random_tables_and_read_back", "run_schedules", "error_flags_irq_w1c_mask",
           "heavy_backpressure"]

_RUNS: dict[tuple[str, str], dict] = {}


def _outcomes(sim: str, tag: str, tmp_root) -> dict:
    """Every bench of (sim, tag), run once in one simulator launch: bench -> None or failure text."""
    key = (sim, tag)
    if key not in _RUNS:
        _RUNS[key] = run_benches(sim, AXIL_PARAMS[tag], tmp_root / f"axil-{sim}-{tag}")
    return _RUNS[key]


def _cases():
    out = []
    for sim in SIMS:
        name = sim.values[0] if hasattr(sim, "values") else sim
        marks = tuple(sim.marks) if hasattr(sim, "values") else ()
        for tag in AXIL_PARAMS:
            slow = name == "verilator" and tag not in VERILATOR_DEFAULT
            for b in BENCHES:
                out.append(pytest.param(b, name, tag, id=f"{b}-{name}-{tag}",
                                        marks=marks + ((pytest.mark.slow,) if slow else ())))
    return out


@pytest.mark.parametrize("bench,sim,tag", _cases())
def test_axil_bench(bench, sim, tag, tmp_path_factory):
    outcomes = _outcomes(sim, tag, tmp_path_factory.getbasetemp())
    assert bench in outcomes, f"bench {bench} did not run; log: {outcomes['_log']}"
    assert outcomes[bench] is None, f"{bench} failed on {sim} {tag}: {outcomes[bench]} (log: {outcomes['_log']})"


@pytest.mark.parametrize("tag", list(AXIL_PARAMS))
def test_verilator_lint_of_the_wrapper_is_clean(tag):
    assert lint_warnings(axil_sources(), "nic_axil_scheduler", AXIL_PARAMS[tag].verilog_parameters()) is None


def test_the_verilog_offsets_are_the_register_map():
    text = (RTL_DIR / "nic_regs.v").read_text()
    found = {m.group(1): int(m.group(2), 16) for m in re.finditer(r"localparam \[7:0\] A_(\w+) = 8'h([0-9A-Fa-f]+);", text)}
    assert found == {r.name: r.offset for r in R.REGISTERS}
    assert f"32'h{R.ID_VALUE >> 16:04X}_{R.ID_VALUE & 0xFFFF:04X}" in text


def test_the_docs_table_is_the_register_map():
    doc = (REPO_ROOT / "docs" / "rtl.md").read_text()
    assert R.markdown_table() in doc, "docs/rtl.md's register table differs from hw_models.rtl.regmap.markdown_table()"


def test_register_fields_do_not_overlap_and_fit_32_bits():
    for r in R.REGISTERS:
        used = 0
        for f in r.fields:
            assert f.lsb + f.width <= 32, (r.name, f.name)
            assert used & f.mask == 0, (r.name, f.name)
            used |= f.mask
    offsets = [r.offset for r in R.REGISTERS]
    assert len(set(offsets)) == len(offsets) and all(o % 4 == 0 for o in offsets)


def test_pack_refuses_a_value_wider_than_its_field_and_round_trips():
    with pytest.raises(ValueError, match="ENTRY_W0.op = 4 does not fit 2 bits"):
        R.pack("ENTRY_W0", op=4)
    words = R.entry_words(2, 0xABCD, 0x1234, 0xFEDC, 0x89ABCDEF, 1, 0xA5, src=0x7777, src_chk=1)
    back = {**R.unpack("ENTRY_W0", words["ENTRY_W0"]), **R.unpack("ENTRY_W1", words["ENTRY_W1"]),
            **R.unpack("ENTRY_W2", words["ENTRY_W2"]), **R.unpack("ENTRY_W3", words["ENTRY_W3"])}
    assert back == {"op": 2, "dep_op": 1, "src_chk": 1, "dep_count": 0xA5, "step": 0xFEDC, "flow": 0xABCD,
                    "peer": 0x1234, "len": 0x89ABCDEF, "src": 0x7777}
