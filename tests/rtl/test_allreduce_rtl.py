"""A 16-node all-reduce on 16 RTL NICs (scheduler + data path) through a Python network
model with random backpressure on every stream (tests/rtl/allreduce_bench.py): ring,
MultiTree and forest (the optimum's four trees per root: 64 flows, 136 table rows a node)
schedules of a 4x4 torus, int32 (the functional verifier's exact sums) and fp32
(bit for bit the numpy float32 reference in the recorded summation order), per-packet and
whole-chunk transfers. Icarus by default; Verilator with ``-m slow``.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from dp_runner import run_bench, sim_cases
from hw_models.toolchain import REPO_ROOT
from nic.collectives import build
from nic.nic_table import node_tables
from noc.topology import parse_spec

NET_SOURCES = ["nic_sched_lowest.v", "nic_sched_mux.v", "nic_sched_ram.v", "nic_sched_entry.v", "nic_scheduler.v",
               "nic_fp32_add.v", "nic_reduce_add.v", "nic_packetiser.v", "nic_depacketiser.v", "nic_datapath.v",
               "nic_top.v", REPO_ROOT / "tests" / "rtl" / "hdl" / "nic_net.v"]

BEATS_PER_CHUNK = 3  # 16 flows x 3 words x LANES elements (forest: 64 flows x 1 word)

# (algorithm, format, lanes, packet beats (0: whole chunk), seed, messages delivered in the schedule's order,
#  the adder's pipeline registers ADD_LAT[, NIs per node (default 1)])
CASES = [("ring", 0, 2, 1, 1, False, 0), ("ring", 1, 2, 0, 2, False, 0), ("multitree", 1, 2, 2, 3, False, 0),
         ("multitree", 0, 2, 0, 4, False, 0), ("multitree", 1, 1, 1, 5, False, 0), ("multitree", 1, 2, 2, 6, True, 0)]
# slow: the pipelined adder (a 16-NIC build of its own and a longer run); forest (DEPTH 256, 1,920
# transfers: about 5 min with Icarus)
SLOW_CASES = [("multitree", 0, 2, 1, 7, False, 2), ("multitree", 1, 2, 2, 8, False, 2), ("forest", 0, 2, 0, 9, False, 0)]
# four NIs per node, every node's scheduler in lockstep with the cycle model (one 16-NIC build of its own)
NIS4_CASES = [("multitree", 0, 2, 1, 9, False, 0, 4), ("multitree", 1, 2, 2, 10, False, 0, 4),
              ("ring", 0, 2, 0, 11, False, 0, 4)]
# 64 NICs on an 8x8 torus (Verilator, -m slow): MultiTree's 64 flows, one word each
TORUS8_CASES = [("multitree", 0, 1, 1, 12, False, 0), ("multitree", 1, 1, 1, 13, False, 0)]
# the scheduler's pipeline registers (SCHED_PIPE 1), four NIs, in lockstep with the model at PIPE 1
PIPE_CASES = [("multitree", 0, 2, 1, 12, False, 0, 4, 1)]
SLOW_PIPE_CASES = [("multitree", 1, 2, 2, 13, False, 0, 4, 1)]
VERILATOR_DEFAULT: set = set()


def beats_per_chunk(s) -> int:
    return BEATS_PER_CHUNK if s.num_flows <= 16 else 1


def _params(fmt, lanes, add_lat=0, s=None, nis=1, pipe=0):
    """HDL parameters; for schedule ``s``: a buffer word per beat of every flow, and table
    rows (a power of two, 64 at least) for its nodes' tables."""
    flows, rows = (16, 64) if s is None else (s.num_flows, max(len(t) for t in node_tables(s)))
    depth = max(64, 1 << (rows - 1).bit_length())
    words = flows * (BEATS_PER_CHUNK if s is None else beats_per_chunk(s))
    return {"N": 16 if s is None else s.num_nodes, "DEPTH": depth, "LANES": lanes, "FMT": fmt, "BUF_WORDS": words, "FLOW_W": 8,
            "NODE_W": 8, "STEP_W": 8, "LEN_W": 16, "CNT_W": 4, "ERR_W": 16, **({"ADD_LAT": add_lat} if add_lat else {}),
            **({"NIS": nis} if nis > 1 else {}), **({"SCHED_PIPE": pipe} if pipe else {})}


def allreduce_job(algo, fmt, lanes, pkt, seed, in_order, add_lat=0, nis=1, pipe=0, torus="4x4"):
    """(schedule, HDL parameters, job) of one all-reduce case on a ``torus`` (its size); with several NIs,
    the lockstep with the model too."""
    s = build(parse_spec(f"torus:{torus}" if nis == 1 else f"torus:{torus}:c{nis}"), algo)  # the schedule for nis NIs
    job = {"schedule": s.to_json(), "M": s.num_flows * beats_per_chunk(s) * lanes, "seed": seed, "pkt_beats": pkt,
           "max_cycles": 20000 + 20 * s.num_transfers * beats_per_chunk(s) // s.num_nodes,
           "p_ready": 0.6, "p_gap": 0.3, "max_latency": 6, "in_order": in_order, "lockstep": nis > 1}
    return s, _params(fmt, lanes, add_lat, s, nis, pipe), job


def _label(c):
    return (f"{c[0]}-{('int32', 'fp32')[c[1]]}-lanes{c[2]}-pkt{c[3]}" + ("-schedule_order" if c[5] else "")
            + (f"-lat{c[6]}" if c[6] else "") + (f"-nis{c[7]}" if len(c) > 7 else "") + ("-pipe" if len(c) > 8 and c[8] else ""))


@pytest.mark.parametrize("sim,case", sim_cases(CASES, VERILATOR_DEFAULT, lambda c: c, _label)
                         + [pytest.param(*p.values, marks=(*p.marks, pytest.mark.slow), id=p.id)
                            for p in sim_cases(SLOW_CASES, set(), lambda c: c, _label)]
                         + sim_cases(NIS4_CASES, set(), lambda c: c, _label)
                         + sim_cases(PIPE_CASES, set(), lambda c: c, _label)
                         + [pytest.param(*p.values, marks=(*p.marks, pytest.mark.slow), id=p.id)
                            for p in sim_cases(SLOW_PIPE_CASES, set(), lambda c: c, _label)])
def test_sixteen_rtl_nics_all_reduce_to_the_reference_sums_under_backpressure(sim, case, tmp_path):
    algo, fmt, lanes, pkt, seed, in_order = case[:6]
    s, params, job = allreduce_job(*case)
    log = run_bench(sim, "nic_net", "allreduce_bench", params, job, tmp_path, sources=NET_SOURCES,
                    test_module="allreduce_bench")
    _check_summary(log, s, case)


def _check_summary(log, s, case):
    """The bench's summary line, checked: throttled streams, every beat moved, reordering seen; returned."""
    algo, fmt, lanes, pkt, seed, in_order = case[:6]
    summary = json.loads(re.search(r"ALLREDUCE (\{.*\})", log).group(1))
    # the streams were really throttled, and the whole vector was moved
    assert summary["tx_stall_cycles"] > 50 and summary["rx_gap_cycles"] > 50
    assert summary["beats"] == s.num_transfers * beats_per_chunk(s)
    if fmt == 1 and algo == "multitree" and not in_order:
        # arrival order differed from the schedule's somewhere: the recorded order mattered
        assert summary["words_with_several_reduces"] > 0
    nis = case[7] if len(case) > 7 else 1
    if nis > 1:
        # every node's scheduler was compared with the model on every cycle of the run
        assert summary["lockstep_node_cycles"] >= s.num_nodes * summary["cycles"]
        if algo == "multitree":  # the NIs beyond the first really carried messages
            assert sum(1 for c in summary["packets_per_ni"] if c) >= 2, summary["packets_per_ni"]
    return summary


@pytest.mark.slow
@pytest.mark.parametrize("case", TORUS8_CASES, ids=[_label(c) for c in TORUS8_CASES])
def test_sixty_four_rtl_nics_all_reduce_an_8x8_torus_on_verilator(case, tmp_path, capsys, monkeypatch):
    """64 NICs (142 table rows a node), MultiTree's 8,064 transfers; prints the simulation speed."""
    s, params, job = allreduce_job(*case, torus="8x8")
    assert params["N"] == 64 and s.num_transfers == 8064 and max(len(t) for t in node_tables(s)) == 142
    params["DEPTH"] = 144  # the table rows, rounded up to 16 (not to a power of two: a smaller build)
    # the bench reads nic_net's ports only; Verilator's DFG optimiser takes most of an hour on 64 NICs, and
    # g++ -Os on the generated C++ (255 files, the largest 4.5 MB) half an hour: -O0
    monkeypatch.setenv("MAKEFLAGS", (os.environ.get("MAKEFLAGS", "") + " OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0").strip())
    log = run_bench("verilator", "nic_net", "allreduce_bench", params, job, tmp_path, sources=NET_SOURCES,
                    test_module="allreduce_bench", top_ports_only=True, build_args=["-fno-dfg"])
    summary = _check_summary(log, s, case)
    assert summary["elements"] == 64 * job["M"]
    with capsys.disabled():
        print(f"\n8x8 torus, 64 RTL NICs, {_label(case)}: {summary['cycles']} cycles in {summary['run_seconds']} s "
              f"of simulation (Verilator + the Python network model): {summary['cycles_per_second']} cycles/s, "
              f"{summary['cycles_per_second'] * 64:.0f} NIC-cycles/s; summary {json.dumps(summary)}")
