"""Mutation check of the NIC scheduler's verification: inject a fixed list of bugs into the
RTL (rtl/) and into the cycle model (nic/scheduler.py), one at a time, and see whether
the regression plus the benches kill each one; print the kill rate. A data path mutant
(rtl/nic_fp32_add.v, nic_depacketiser.v, ...) is checked by the data path's benches and
a 16-node all-reduce instead (:func:`run_datapath`).

    .venv/bin/python bench/rtl_mutation.py [--sim icarus] [--seeds 20] [--only NAME,...]

A mutant is a text substitution that must apply exactly once (the script stops if the
source moved on). Each runs in its own process (the model mutants need a mutated copy of
the ``nic`` package first on the path) on the `d6n3narrow` parameter set (3 NIs, narrow
fields: top bits are reached) and, when that does not kill it, `d64n4`: the cocotb
benches (lockstep model comparison, the schedule-derived scoreboard, the AXI-Stream rule,
each bench's own assertions), then the regression's random schedules. A mutant of the
AXI-Lite register map (rtl/nic_regs.v) runs the register map's benches instead
(tests/rtl/axil_bench.py, on `d16n2` then `d6n3narrow`). Killed = any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATAPATH_FILES = ("nic_fp32_add.v", "nic_reduce_add.v", "nic_packetiser.v", "nic_depacketiser.v", "nic_datapath.v",
                  "nic_top.v")

#: (name, file, old text, new text): RTL files under rtl/, the model under nic/
MUTANTS = [
    ("rtl: step field's top bit stuck at 0", "rtl/nic_sched_entry.v",
     "e_step <= load_step;", "e_step <= load_step & ({STEP_W{1'b1}} >> 1);"),
    ("rtl: count does not saturate", "rtl/nic_sched_entry.v",
     "if (sum > {{(SUM_W-CNT_W){1'b0}}, e_dep_count}) begin", "if (1'b0) begin"),
    ("rtl: needs ignores earlier ports (a surplus second message is not flagged)", "rtl/nic_sched_entry.v",
     "+ {{(SUM_W-PRIOR_W){1'b0}}, recv_prior[p*PRIOR_W +: PRIOR_W]})", "+ {SUM_W{1'b0}})"),
    ("rtl: request register refilled while stalled (AXI-Stream hold broken)", "rtl/nic_scheduler.v",
     "assign send_take_any = (!out_valid_reg || send_ready) && send_any && free_any;",
     "assign send_take_any = send_any && free_any;"),
    ("rtl: step advances with a request still held", "rtl/nic_scheduler.v",
     "&& (ni_busy_reg == {NIS{1'b0}}) && !out_valid_reg;", "&& (ni_busy_reg == {NIS{1'b0}});"),
    ("rtl: tie-break tree prefers the upper half", "rtl/nic_sched_lowest.v",
     "if (t_any[2*j]) begin", "if (!t_any[2*j+1]) begin"),
    ("rtl: spurious ni_done not counted", "rtl/nic_scheduler.v",
     "wire [NIS-1:0] spurious = ni_done & ~ni_busy_reg;", "wire [NIS-1:0] spurious = {NIS{1'b0}};"),
    ("rtl: send payload RAM read at the held entry", "rtl/nic_scheduler.v",
     ".re(send_take_any), .raddr(send_idx), .q(out_mem_q)", ".re(send_take_any), .raddr(out_entry_reg), .q(out_mem_q)"),
    ("rtl: err_src/err_flow keep the last unexpected message", "rtl/nic_scheduler.v",
     "if (unexp_any && !err_seen_reg) begin", "if (unexp_any) begin"),
    ("rtl: a load with op 3 is accepted", "rtl/nic_scheduler.v",
     "&& (load_op != OP_BAD);", ";"),
    ("rtl data path: fp32 rounding ties away from zero", "rtl/nic_fp32_add.v",
     "rnd_up = m3[2] && (m3[1] || m3[0] || m3[3]);", "rnd_up = m3[2];"),
    ("rtl data path: the pipelined fp32 adder normalises the sum of the inputs, not of its register",
     "rtl/nic_fp32_add.v", "wire [27:0] sum = s1_q[27:0];", "wire [27:0] sum = sum1;"),
    ("rtl data path: a beat to a word still in the adder's pipeline does not wait", "rtl/nic_depacketiser.v",
     "if (q[s][Q_W-1] && q[s][Q_W-2 -: BA_W] == p_addr) hz = 1'b1;",
     # the comparison stays in the block: a block that reads nothing never runs in Icarus (hz stays X)
     "if (q[s][Q_W-1] && q[s][Q_W-2 -: BA_W] == p_addr && 1'b0) hz = 1'b1;"),
    ("rtl data path: a waiting beat is overwritten by the next one", "rtl/nic_depacketiser.v",
     "assign rx_tready = !rst && !(p_valid && hazard);", "assign rx_tready = !rst;"),
    ("rtl data path: every beat of a packet written to the packet's first word", "rtl/nic_depacketiser.v",
     "p_addr <= hdr_addr + beat_reg;", "p_addr <= hdr_addr;"),
    ("rtl data path: a receive event at every packet's end, not the message's", "rtl/nic_depacketiser.v",
     "p_ev <= rx_tlast && hdr_last;", "p_ev <= rx_tlast;"),
    ("rtl data path: packetiser reloads its output while tready is low", "rtl/nic_packetiser.v",
     "&& (!tx_tvalid || tx_tready);", ";"),
    ("rtl data path: nic_top reports every receive event to the scheduler as a REDUCE", "rtl/nic_top.v",
     "wire [NIS-1:0]        ro_port = {NIS{r_op}};", "wire [NIS-1:0]        ro_port = {NIS{1'b0}};"),
    ("rtl data path: the receive arbiter releases its grant at every beat, not at the packet's end",
     "rtl/nic_datapath.v", "&& m_tready && rx_tlast[rx_sel];", "&& m_tready;"),
    ("rtl data path: every send request goes to NI 0's packetiser", "rtl/nic_datapath.v",
     ".send_valid(send_valid && ni_sel == q)", ".send_valid(send_valid && q == 0)"),
    ("rtl: the wrong-source check ignores the entry's check bit", "rtl/nic_sched_entry.v",
     "wrong_src[p] = match[p] && e_src_chk &&", "wrong_src[p] = match[p] &&"),
    ("rtl: a receive does not restart the timeout", "rtl/nic_scheduler.v",
     "wire progress = send_fire || (|recv_valid) || (|ni_done);", "wire progress = send_fire || (|ni_done);"),
    ("rtl regs: a W1C of any flag clears every flag", "rtl/nic_regs.v",
     "? wbits[NFLAGS-1:0] : {NFLAGS{1'b0}};", "? {NFLAGS{|wbits[NFLAGS-1:0]}} : {NFLAGS{1'b0}};"),
    ("rtl regs: irq ignores the enable mask", "rtl/nic_regs.v",
     "assign irq = |(flags_reg & irq_en_reg);", "assign irq = |flags_reg;"),
    ("rtl regs: B response withdrawn without bready", "rtl/nic_regs.v",
     "end else if (s_axil_bready) begin\n            bvalid_reg <= 1'b0;",
     "end else begin\n            bvalid_reg <= 1'b0;"),
    ("model: count does not saturate", "nic/scheduler.py",
     "tab[i, C_COUNT] = c if c < tab[i, C_DEP_COUNT] else tab[i, C_DEP_COUNT]", "tab[i, C_COUNT] = c"),
    ("model: the held NI is not reserved", "nic/scheduler.py",
     "if ((busy | held) >> i) & 1 == 0:", "if (busy >> i) & 1 == 0:"),
    ("model: a surplus message on a later port is needed", "nic/scheduler.py",
     "if tab[i, C_COUNT] + prior < tab[i, C_DEP_COUNT]:", "if tab[i, C_COUNT] < tab[i, C_DEP_COUNT]:"),
    ("rtl data path: the fp32 adder at ADD_LAT >= 4 aligns by its inputs' exponent difference, not its stage's",
     "rtl/nic_fp32_add.v", "wire [7:0]  d = sa_q[53:46];", "wire [7:0]  d = d_1a;"),
]


def _mutated_tree(dest: Path, mutant) -> tuple[list[Path], Path | None]:
    """rtl/ (and nic/ for a model mutant) copied to ``dest`` with the mutant applied."""
    _name, rel, old, new = mutant
    shutil.copytree(ROOT / "rtl", dest / "rtl")
    pydir = None
    if rel.startswith("nic/"):
        pydir = dest / "py"
        shutil.copytree(ROOT / "nic", pydir / "nic", ignore=shutil.ignore_patterns("__pycache__"))
    target = (pydir if pydir is not None else dest) / rel
    text = target.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"mutant {mutant[0]!r}: the text to replace occurs {text.count(old)} times in {rel}")
    target.write_text(text.replace(old, new))
    srcs = sorted((dest / "rtl").glob("nic_sched_*.v")) + [dest / "rtl" / "nic_scheduler.v"]
    return srcs, pydir


def run_datapath(sim: str, rtl_dir: Path) -> dict:
    """In the child, for a data path mutant: the adder bench (combinational and with
    ADD_LAT 2 and 5), the round trip, the receive hazard bench at ADD_LAT 2, the two-NI pause
    bench (crossed pauses, ADD_LAT 2), then 16-node MultiTree all-reduces: fp32 with 2-beat
    packets, and int32 with 4 NIs per node in lockstep with the model
    (tests/rtl/test_datapath.py, test_allreduce_rtl.py); what failed first."""
    from dp_runner import DP_SOURCES, run_bench  # noqa: PLC0415
    from test_datapath import BACKPRESSURE, IDLE  # noqa: PLC0415
    from test_allreduce_rtl import NET_SOURCES, allreduce_job  # noqa: PLC0415

    work = Path(tempfile.mkdtemp(prefix="hwm-mut-dp-"))
    s, ar_params, ar_job = allreduce_job("multitree", 1, 2, 2, 3, False)
    _, ar4_params, ar4_job = allreduce_job("multitree", 0, 2, 1, 9, False, 0, 4)
    checks = [
        ("adder bench fp32 x2", dict(toplevel="nic_reduce_add", bench="adder_bench", params={"LANES": 2, "FMT": 1},
                                     job={"random": 6000}, sources=["nic_fp32_add.v", "nic_reduce_add.v"])),
        ("round-trip bench", dict(toplevel="nic_datapath", bench="roundtrip_bench",
                                  params={"LANES": 2, "FMT": 1, "BUF_WORDS": 64, "FLOW_W": 4, "NODE_W": 4,
                                          "STEP_W": 3, "LEN_W": 12}, job={"trials": 24, "seed": 2})),
        ("adder bench fp32 x2 ADD_LAT 2", dict(toplevel="nic_reduce_add", bench="adder_bench",
                                               params={"LANES": 2, "FMT": 1, "ADD_LAT": 2}, job={"random": 6000},
                                               sources=["nic_fp32_add.v", "nic_reduce_add.v"])),
        ("adder bench fp32 x2 ADD_LAT 5", dict(toplevel="nic_reduce_add", bench="adder_bench",
                                               params={"LANES": 2, "FMT": 1, "ADD_LAT": 5}, job={"random": 6000},
                                               sources=["nic_fp32_add.v", "nic_reduce_add.v"])),
        ("hazard bench ADD_LAT 2", dict(toplevel="nic_datapath", bench="hazard_bench",
                                        params={"LANES": 2, "FMT": 1, "BUF_WORDS": 8, "FLOW_W": 4, "NODE_W": 4,
                                                "STEP_W": 3, "LEN_W": 12, "ADD_LAT": 2},
                                        job={"messages": 60, "seed": 9})),
        ("two-NI pause bench", dict(toplevel="nic_dp_axis2", bench="pause_bench",
                                    params={"LANES": 2, "FMT": 0, "BUF_WORDS": 32, "FLOW_W": 4, "NODE_W": 4,
                                            "STEP_W": 3, "LEN_W": 12, "ADD_LAT": 2},
                                    job={"messages": 10, "sends": 12, "seed": 22, "idle": IDLE,
                                         "backpressure": BACKPRESSURE},
                                    sources=[*DP_SOURCES, ROOT / "tests" / "rtl" / "hdl" / "nic_dp_axis2.v"])),
        ("16-node all-reduce", dict(toplevel="nic_net", bench="allreduce_bench", params=ar_params, job=ar_job,
                                    sources=NET_SOURCES, test_module="allreduce_bench")),
        ("16-node all-reduce, 4 NIs", dict(toplevel="nic_net", bench="allreduce_bench", params=ar4_params,
                                           job=ar4_job, sources=NET_SOURCES, test_module="allreduce_bench")),
    ]
    for k, (name, kw) in enumerate(checks):
        tmp = work / f"run{k}"
        tmp.mkdir()
        try:
            run_bench(sim, tmp_path=tmp, rtl_dir=rtl_dir, build_root=work / "build", **kw)
        except Exception as exc:  # noqa: BLE001 - a failing bench (AssertionError) or a broken build kills it
            text = [x.strip() for x in str(exc).splitlines()]
            lines = [x for x in text if x.startswith("assert ")] or [x for x in text if "Error:" in x and "*" not in x]
            return {"killed": True, "by": f"{name} ({(lines[0] if lines else type(exc).__name__)[:120]})"}
    return {"killed": False, "by": ""}


def _run_axil(sim: str, srcs: list[Path]) -> dict:
    from hw_models.rtl.axil import run_benches  # noqa: PLC0415
    from test_axil import AXIL_PARAMS  # noqa: PLC0415

    for tag in ("d16n2", "d6n3narrow"):
        work = Path(tempfile.mkdtemp(prefix=f"hwm-mut-axil-{tag}-"))
        try:
            out = run_benches(sim, AXIL_PARAMS[tag], work / "bench", sources=srcs, build_dir=work / "build")
        except Exception as exc:  # noqa: BLE001 - a mutant that does not build is killed by the build
            return {"killed": True, "by": f"{tag}: build failed ({str(exc)[:100]})"}
        benches = [k for k in out if not k.startswith("_")]
        if not benches:
            return {"killed": True, "by": f"{tag}: no bench finished (log {out['_log']})"}
        for name in benches:
            if out[name] is not None:
                return {"killed": True, "by": f"{tag}: axil bench {name}"}
    return {"killed": False, "by": ""}


def run_one(sim: str, seeds: int, rtl_dir: Path, regs: bool = False) -> dict:
    """In the child: benches then regression on the mutated sources; what failed first."""
    sys.path.insert(0, str(ROOT / "tests" / "rtl"))
    if any((rtl_dir / n).read_bytes() != (ROOT / "rtl" / n).read_bytes() for n in DATAPATH_FILES):
        return run_datapath(sim, rtl_dir)
    from hw_models.rtl.regress import bench_outcomes, build, random_episodes, regress, run_job  # noqa: PLC0415
    from rtl_matrix import HDL_PARAMS  # noqa: PLC0415

    srcs = sorted(rtl_dir.glob("nic_sched_*.v")) + [rtl_dir / "nic_scheduler.v"]
    if regs:
        return _run_axil(sim, srcs + [rtl_dir / "nic_regs.v", rtl_dir / "nic_axil_scheduler.v"])
    for tag in ("d6n3narrow", "d64n4"):
        params = HDL_PARAMS[tag]
        work = Path(tempfile.mkdtemp(prefix=f"hwm-mut-{tag}-"))
        try:
            b = build(sim, params, sources=srcs, build_root=work / "build")
        except Exception as exc:  # noqa: BLE001 - a mutant that does not build is killed by the build
            return {"killed": True, "by": f"{tag}: build failed ({str(exc)[:100]})"}
        run_job(b, {"sim": sim, "params": params.__dict__.copy()}, work_dir=work / "bench",
                test_module="nic_scheduler_bench", log_name="bench.log", expect_result=False)
        for name, failure in bench_outcomes(work / "bench" / "results.xml").items():
            if name == "multitree_tables" and (params.depth < 38 or params.flow_w < 4):
                continue  # does not apply: the 4x4 tables do not fit (tests/rtl/test_benches.py skips it too)
            if failure is not None:
                return {"killed": True, "by": f"{tag}: bench {name}"}
        r = regress(sim, params, random_episodes(params, range(seeds)), out_dir=work / "regress")
        if not r.ok:
            why = r.mismatch_text or r.error or str(r.violations[:1])
            return {"killed": True, "by": f"{tag}: regression ({why[:120]})"}
    return {"killed": False, "by": ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", default="icarus", choices=("icarus", "verilator"))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--only", default="", help="comma-separated mutant numbers (1-based) to run")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--regs", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print("RESULT " + json.dumps(run_one(args.sim, args.seeds, Path(args.child), args.regs)), flush=True)
        return
    picks = [int(x) for x in args.only.split(",") if x.strip()] or list(range(1, len(MUTANTS) + 1))
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"mutation check at {commit}: {len(picks)} mutants, {args.sim}, {args.seeds} seeds", flush=True)
    killed = 0
    for k in picks:
        mutant = MUTANTS[k - 1]
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="hwm-mutant-") as tmp:
            _srcs, pydir = _mutated_tree(Path(tmp), mutant)
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(([str(pydir)] if pydir else []) + [str(ROOT)]
                                                + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
            regs = ["--regs"] if mutant[1] in ("rtl/nic_regs.v", "rtl/nic_axil_scheduler.v") else []
            p = subprocess.run([sys.executable, __file__, "--sim", args.sim, "--seeds", str(args.seeds),
                                "--child", str(Path(tmp) / "rtl"), *regs], capture_output=True, text=True, env=env,
                               cwd=ROOT)
        line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
        res = json.loads(line[7:]) if line else {"killed": True, "by": f"crashed: {p.stderr.strip()[-200:]}"}
        killed += res["killed"]
        print(f"{k:2d}. {'KILLED  ' if res['killed'] else 'SURVIVED'} {mutant[0]}  [{res['by']}] "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"kill rate: {killed}/{len(picks)} = {100 * killed / len(picks):.0f} %")


if __name__ == "__main__":
    main()
