"""The RTL tests' simulators and HDL parameter matrix (imported by tests/rtl/test_*.py).

Each (simulator, parameter set) is built once per session (``hw_models.rtl.regress.build``
caches it; build directories live in sim_build/, gitignored) and reused by every test.
Icarus is a system package: without it its half of the tests is skipped with the reason.
``WAVES=1`` builds with tracing and dumps FST (Icarus) / VCD (Verilator) next to each
run's results (``hw-models rtl regress --waves`` does the same).
"""

from __future__ import annotations

import pytest

from hw_models.toolchain import have_icarus
from nic.scheduler import SchedulerParams

#: The HDL parameter matrix: name -> parameters.
HDL_PARAMS = {
    # a 4x4 node's MultiTree table, one NI
    "d64n1": SchedulerParams(depth=64, nis=1),
    # a 4x4 node's MultiTree table, four NIs (torus:4x4:c4)
    "d64n4": SchedulerParams(depth=64, nis=4),
    # small, non-power-of-two table, odd NI count, narrow fields (saturating counter, masking)
    "d6n3narrow": SchedulerParams(depth=6, nis=3, flow_w=3, node_w=3, step_w=4, len_w=6, cnt_w=2, err_w=3),
    # the smallest table: one entry, one NI
    "d1n1": SchedulerParams(depth=1, nis=1),
    # two NIs and every field at its widest (but CNT_W, whose top bit would take 128 messages)
    "d8n2wide": SchedulerParams(depth=8, nis=2, flow_w=16, node_w=16, step_w=16, len_w=32, cnt_w=4, err_w=32),
    # the most NIs (receive ports) one scheduler serves
    "d16n16": SchedulerParams(depth=16, nis=16),
    # the pipelined variant (SCHED_PIPE 1): registered eligibility and receive checks
    "d6n3narrowp1": SchedulerParams(depth=6, nis=3, flow_w=3, node_w=3, step_w=4, len_w=6, cnt_w=2, err_w=3, pipe=1),
    "d64n4p1": SchedulerParams(depth=64, nis=4, pipe=1),
    "d1n1p1": SchedulerParams(depth=1, nis=1, pipe=1),
}

#: Parameter sets that run only with ``-m slow`` (each is a Verilator build and a minute of benches).
SLOW_TAGS = {"d8n2wide", "d16n16", "d64n4p1", "d1n1p1"}


def tag_params(tags=None):
    """``pytest.param`` per parameter-set tag, the slow ones marked slow."""
    return [pytest.param(t, marks=pytest.mark.slow) if t in SLOW_TAGS else t for t in (tags or HDL_PARAMS)]

SIMS = [
    "verilator",
    pytest.param("icarus", marks=pytest.mark.skipif(not have_icarus(), reason="Icarus Verilog (iverilog) is not installed: "
                                                      "sudo apt-get install -y iverilog")),
]
