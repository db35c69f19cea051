"""Yosys synthesis of small configurations (the sweep is `hw-models rtl synth`)."""

from __future__ import annotations

import pytest

from hw_models.rtl.synth import DelayModel, lut_levels, synth_one, to_csv
from nic.scheduler import SchedulerParams


def test_a_small_scheduler_synthesises_and_its_state_and_depth_are_counted():
    p = SchedulerParams(depth=2, nis=1, flow_w=2, node_w=2, step_w=2, len_w=2, cnt_w=2, err_w=2)
    r = synth_one(p)
    # per entry in flip-flops: valid, issued, op(2), flow, step, dep_op, dep_count, count (peer
    # and len are in the table RAM, which generic synthesis maps to flip-flops as well)
    entry_bits = 1 + 1 + 2 + p.flow_w + p.step_w + 1 + 2 * p.cnt_w
    assert r.flip_flops >= p.depth * entry_bits
    assert r.cells > r.flip_flops and r.luts > 0
    assert 0 < r.lut_levels < r.luts
    assert r.fmax_mhz_est == DelayModel().fmax_mhz(r.lut_levels)
    assert to_csv([r]).splitlines()[1].startswith("2,1,")


def test_the_fmax_estimate_is_the_stated_formula():
    assert DelayModel(ns_per_level=0.5, fixed_ns=1.0).fmax_mhz(8) == 200.0
    assert lut_levels("x\nLongest topological path in nic_scheduler (length=37):\n") == 37


@pytest.mark.slow
def test_lut_levels_grow_with_log_depth_not_depth():
    # the ripple chain this replaced: 32 levels at DEPTH 16, 64 at 32, 129 at 64 (docs/rtl.md)
    narrow = dict(nis=1, flow_w=4, node_w=4, step_w=4, len_w=4, cnt_w=2, err_w=4)
    lv = {d: synth_one(SchedulerParams(depth=d, **narrow)).lut_levels for d in (8, 64)}
    assert lv[64] - lv[8] <= 12  # three more tree levels, not 56 more chain steps


@pytest.mark.slow
def test_the_table_fields_without_a_parallel_compare_go_to_lut_ram():
    r = synth_one(SchedulerParams(depth=64, nis=1), xilinx=True)
    assert r.xc7_lutram > 0 or r.xc7_bram18 > 0
    # the state and the compared fields stay in flip-flops: under the 2 x (8 + 24) bits of
    # peer and len per entry that the RAM took
    assert r.xc7_ffs < 64 * (1 + 1 + 2 + 8 + 8 + 1 + 2 * 4) + 1200


def test_the_int32_reduction_adder_synthesises_to_an_adder_and_the_fp32_one_is_deeper():
    from hw_models.rtl.synth import synth_datapath_module

    i = synth_datapath_module("nic_reduce_add", 1, 0)
    f = synth_datapath_module("nic_reduce_add", 1, 1)
    # combinational: no flip-flops; a 32-bit add is a few dozen 6-LUTs, the fp32 add (align,
    # add, normalise, round) several hundred and many more levels
    assert i.flip_flops == 0 and f.flip_flops == 0
    assert 16 <= i.luts <= 200 and f.luts > 3 * i.luts
    assert f.lut_levels > i.lut_levels


def test_the_register_map_synthesises_on_top_of_the_scheduler():
    p = SchedulerParams(depth=2, nis=1, flow_w=2, node_w=2, step_w=2, len_w=2, cnt_w=2, err_w=2, tmo_w=4)
    alone = synth_one(p)
    axil = synth_one(p, top="nic_axil_scheduler")
    # at least the staging registers (op 2, dep_op, src_chk, dep_count, step, flow, peer,
    # len, src), the timeout, the 4 flags and their 4 enables stay flip-flops
    staging = 2 + 1 + 1 + p.cnt_w + p.step_w + p.flow_w + p.node_w + p.len_w + p.node_w
    assert axil.flip_flops - alone.flip_flops >= staging + p.tmo_w + 8
    assert axil.luts > alone.luts


def test_parameters_an_older_top_does_not_declare_are_not_set():
    from hw_models.rtl.synth import _chparams

    old = "module nic_scheduler #(\n    parameter DEPTH = 64,\n    parameter ERR_W = 16\n) ();"
    assert _chparams(SchedulerParams(depth=8), old) == "-set DEPTH 8 -set ERR_W 16"
