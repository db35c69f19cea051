"""cocotb test measuring the simulator alone: free-running clock, no Python per cycle.

Loads a table of always-ready sends, starts it, then holds ``send_ready`` and every
``ni_done`` high (each NI finishes the cycle after it starts) and lets ``$HWM_RTL_JOB``'s
``cycles`` clock edges pass with the C++ clock (Verilator, Icarus GPI clock). Entries are
offered only while pending, so the run is repeated: load DEPTH entries (one step each),
start, clock 4*DEPTH+8 cycles without Python, check done, clear; only the free-running
stretches are timed.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, Timer

from hw_models.rtl.cocotb_regress import load_job
from hw_models.rtl.stimulus import PIN_INPUTS


@cocotb.test()
async def raw_speed(dut):
    job, p = load_job(os.environ["HWM_RTL_JOB"])
    for name in PIN_INPUTS:
        getattr(dut, name).value = 0
    dut.rst.value = 1
    Clock(dut.clk, 10, unit="ns", impl="gpi").start()
    await FallingEdge(dut.clk)
    await FallingEdge(dut.clk)  # a whole cycle of rst, whatever the clock's first level
    dut.rst.value = 0
    total = 0
    t_sim = 0.0
    rounds = 0
    while total < job["cycles"]:
        # load DEPTH entries (one step each, no dependencies), start, run to done
        for a in range(p.depth):
            dut.load_valid.value = 1
            dut.load_addr.value = a
            dut.load_op.value = a & 1
            dut.load_flow.value = a % (1 << p.flow_w)
            dut.load_step.value = a % (1 << p.step_w)
            dut.load_dep_count.value = 0
            await FallingEdge(dut.clk)
        dut.load_valid.value = 0
        dut.start.value = 1
        await FallingEdge(dut.clk)
        dut.start.value = 0
        dut.send_ready.value = 1
        dut.ni_done.value = (1 << p.nis) - 1
        n = 4 * p.depth + 8
        t0 = time.perf_counter()
        await Timer(10 * n, unit="ns")  # no Python callback per edge
        t_sim += time.perf_counter() - t0
        total += n
        rounds += 1
        assert int(dut.done.value) == 1
        dut.send_ready.value = 0
        dut.ni_done.value = 0
        dut.clear.value = 1
        await FallingEdge(dut.clk)
        dut.clear.value = 0
    Path(job["result"]).write_text(json.dumps({"cycles": total, "seconds": t_sim, "rounds": rounds,
                                               "cycles_per_s": total / t_sim}))
