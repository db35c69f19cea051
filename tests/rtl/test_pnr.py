"""Place and route on ECP5 (hw_models.rtl.pnr): reading nextpnr's report and Yosys's cell
counts, the --pnr flag's check; a real run of a small design with ``-m slow``.

``data/nextpnr_report_nic_scheduler_d64n4.json`` is nextpnr-ecp5 0.11.1's ``--report`` of
the scheduler at DEPTH 64, NIS 4 (LFE5U-85F-6, CABGA381, out of context, 125 MHz
target, seed 1, after Yosys 0.70 ``synth_ecp5``), as written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hw_models.rtl.pnr import (Ecp5Part, PnrRow, datapath_job, ecp5_counts, markdown_table, place_and_route,
                               pnr_jobs, read_report, scheduler_job, sources_for)
from hw_models.toolchain import ToolchainError

REPORT = Path(__file__).parent / "data" / "nextpnr_report_nic_scheduler_d64n4.json"


def test_the_report_gives_fmax_and_a_critical_path_whose_delays_add_up_to_its_period():
    raw = json.loads(REPORT.read_text())
    r = read_report(raw)
    assert r["fmax_mhz"] == round(raw["fmax"]["clk"]["achieved"], 2) and r["target_mhz"] == 125.0
    # the period the path's steps add up to is the reported Fmax (two figures nextpnr writes apart)
    assert abs(1000.0 / r["crit_ns"] - r["fmax_mhz"]) < 0.05
    assert 0 < r["crit_routing_ns"] < r["crit_ns"]
    # a register-to-register path: it leaves a flip-flop's Q and ends at a flip-flop's data input
    assert r["crit_from"].endswith(".Q") and "TRELLIS_FF" in r["crit_from"] and "TRELLIS_FF" in r["crit_to"]
    steps = raw["critical_paths"][0]["path"]
    assert r["crit_logic_levels"] == sum(s["type"] == "logic" for s in steps) > 0
    assert r["comb_used"] == raw["utilization"]["TRELLIS_COMB"]["used"]


def test_a_report_without_the_clock_is_refused():
    raw = json.loads(REPORT.read_text())
    with pytest.raises(ToolchainError, match="no clock 'clk'"):
        read_report({**raw, "fmax": {}})
    with pytest.raises(ToolchainError, match="critical path"):
        read_report({**raw, "critical_paths": []})


def test_ecp5_cell_counts():
    stat = {"design": {"num_cells_by_type": {"LUT4": 10, "CCU2C": 3, "TRELLIS_FF": 7, "DP16KD": 2, "PFUMX": 4,
                                             "MULT18X18D": 1, "$scopeinfo": 5}}}
    assert ecp5_counts(stat) == {"lut4": 10, "ccu2c": 3, "flip_flops": 7, "ebr": 2, "dsp": 1}


def test_jobs_cover_every_depth_and_ni_count_then_the_data_path_lanes():
    jobs = pnr_jobs([16, 64], [1, 4], [4])
    assert [j.label for j in jobs] == ["DEPTH=16 NIS=1", "DEPTH=64 NIS=1", "DEPTH=16 NIS=4", "DEPTH=64 NIS=4",
                                       "LANES=4 fp32 BUF_WORDS=64", "LANES=4 fp32 BUF_WORDS=64 NIS=4"]
    assert jobs[-2].top == "nic_datapath" and dict(jobs[-2].parameters) == {"LANES": 4, "FMT": 1, "BUF_WORDS": 64}
    assert dict(jobs[-1].parameters) == {"LANES": 4, "FMT": 1, "BUF_WORDS": 64, "NIS": 4}
    names = {p.name for p in sources_for("nic_datapath")}
    assert "nic_fp32_add.v" in names and "nic_scheduler.v" not in names
    assert "nic_regs.v" in {p.name for p in sources_for("nic_axil_scheduler")}
    with pytest.raises(ToolchainError):
        datapath_job("nic_top", 1, 1)
    pipelined = pnr_jobs([16], [1], [4], add_lats=[5])[-1]
    assert pipelined.label == "LANES=4 fp32 BUF_WORDS=64 ADD_LAT=5"
    assert dict(pipelined.parameters) == {"LANES": 4, "FMT": 1, "BUF_WORDS": 64, "ADD_LAT": 5}


def test_the_markdown_table_names_the_part_and_the_tools():
    raw = read_report(json.loads(REPORT.read_text()))
    row = PnrRow(top="nic_scheduler", label="DEPTH=64 NIS=4", lut4=1, ccu2c=2, flip_flops=3, ebr=4, dsp=0, **raw,
                 part=Ecp5Part().label(), seed=1, yosys="0.70", nextpnr="0.11.1", seconds=1.0)
    text = markdown_table([row])
    assert text.startswith("LFE5U-85F-6CABGA381, Yosys 0.70 synth_ecp5, nextpnr-ecp5 0.11.1")
    assert f"| {raw['fmax_mhz']:.1f} |" in text and "`step_TRELLIS_FF_Q_5.Q`" in text


@pytest.mark.slow
def test_a_small_scheduler_places_and_routes(tmp_path):
    job = scheduler_job(2, 1)
    small = (("DEPTH", 2), ("NIS", 1), ("FLOW_W", 2), ("NODE_W", 2), ("STEP_W", 2), ("LEN_W", 2), ("CNT_W", 2),
             ("ERR_W", 2), ("TMO_W", 2))
    job = type(job)(top="nic_scheduler", parameters=small, label="small")
    r = place_and_route(job, sources_for("nic_scheduler"), work_dir=tmp_path)
    assert r.fmax_mhz > 0 and abs(1000.0 / r.crit_ns - r.fmax_mhz) < 0.05
    # nextpnr's packed LUT4 slots hold at least Yosys's LUT4s and both halves of every carry cell
    assert r.comb_used >= r.lut4 + 2 * r.ccu2c
    # state per entry: valid, issued, op (2), flow, step, dep_op, dep_count, count (at least)
    assert r.flip_flops >= 2 * (1 + 1 + 2 + 2 + 2 + 1 + 2 + 2)
    assert (tmp_path / "report.json").exists() and (tmp_path / "netlist.json").exists()
