"""Speed of the NIC scheduler RTL: simulated cycles/s under Icarus and Verilator, and the
wall time of the 200-schedule model-vs-RTL regression.

    .venv/bin/python bench/rtl_speed.py [--seeds 200] [--sims icarus,verilator] [--depth 64 --nis 4]

Three figures per simulator:
* build: compile time of the parameter set (Verilator: verilate + C++; Icarus: iverilog);
* raw: cycles/s of the simulator alone (free-running C++ clock, no Python per cycle);
* regression: the lockstep loop (RTL + cycle model + environment + comparison of all 27
  outputs each cycle) in simulated cycles/s, and the wall time of the whole regression
  (random schedules, one simulator launch, start-up included).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models.rtl.regress import build, random_episodes, regress, run_job  # noqa: E402
from hw_models.toolchain import have_icarus  # noqa: E402
from nic.scheduler import SchedulerParams  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--sims", default="icarus,verilator")
    ap.add_argument("--depth", type=int, default=64)
    ap.add_argument("--nis", type=int, default=4)
    ap.add_argument("--raw-cycles", type=int, default=200_000)
    args = ap.parse_args()
    params = SchedulerParams(depth=args.depth, nis=args.nis)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1]).stdout.strip()
    print(f"nic_scheduler RTL speed, DEPTH={args.depth} NIS={args.nis}, commit {commit}")
    rows = []
    for sim in args.sims.split(","):
        if sim == "icarus" and not have_icarus():
            print("icarus: skipped (iverilog not installed)")
            continue
        root = Path(tempfile.mkdtemp(prefix=f"hwm-bench-{sim}-"))
        t0 = time.perf_counter()
        b = build(sim, params, build_root=root / "build")
        t_build = time.perf_counter() - t0
        raw = run_job(b, {"sim": sim, "params": params.__dict__.copy(), "cycles": args.raw_cycles},
                      work_dir=root / "raw", test_module="hw_models.rtl.cocotb_speed")
        r = regress(sim, params, random_episodes(params, range(args.seeds)), out_dir=root / "regress")
        assert r.mismatches == 0 and r.error is None, r.summary()
        rows.append((sim, t_build, raw["cycles_per_s"], r.cycles_per_s, r.schedules, r.cycles, r.wall_s))
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'sim':<10} {'build s':>8} {'raw cycles/s':>13} {'lockstep cycles/s':>18} {'schedules':>9} "
          f"{'cycles':>8} {'regression wall s':>18}")
    for sim, tb, raw, ls, ns, nc, wall in rows:
        print(f"{sim:<10} {tb:>8.1f} {raw:>13,.0f} {ls:>18,.0f} {ns:>9} {nc:>8} {wall:>18.1f}")


if __name__ == "__main__":
    main()
