"""Yosys synthesis of one small configuration (the sweep is `hw-models rtl synth`)."""

from __future__ import annotations

from hw_models.rtl.synth import synth_one, to_csv
from nic.scheduler import SchedulerParams


def test_a_small_scheduler_synthesises_and_its_flip_flops_are_counted():
    p = SchedulerParams(depth=2, nis=1, flow_w=2, node_w=2, step_w=2, len_w=2, cnt_w=2, err_w=2)
    r = synth_one(p)
    # per entry: valid, issued, op(2), flow, peer, step, len, dep_op, dep_count, count = 2+2+2*4+1+2+2 = 17 bits
    entry_bits = 1 + 1 + 2 + p.flow_w + p.node_w + p.step_w + p.len_w + 1 + 2 * p.cnt_w
    assert r.flip_flops >= p.depth * entry_bits
    assert r.cells > r.flip_flops and r.luts > 0
    assert to_csv([r]).splitlines()[1].startswith("2,1,")
