"""What ``hw-models train-system``'s convergence runs cost per iteration, next to each
system's ``seconds_per_iteration`` in the registry ``hw_models.training.systems.SYSTEMS`` (the
long-run estimate's figure).

    .venv/bin/python bench/train_system_cost.py [--systems ps,dlion] [--iterations 60,180]

Every system with its default options on the ``isca2021`` preset (16 workers, ResNet-50, 16
samples per worker), task logreg with target 1.0 (never reached, so every convergence run
goes to ``--max-iterations``), run at two iteration counts; a run-iteration's CPU seconds is
the difference of the two runs' process times over the difference of iterations times the
system's convergence runs (``setup.convergence_runs``), so the set-up (network, layer costs)
cancels; the same for wall-clock seconds (what the estimate is of: on a loaded machine they
exceed the CPU seconds). Prints a markdown table: system, runs, the two runs' CPU seconds,
CPU and wall seconds per run-iteration, the estimate's figure, the CPU.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hw_models.sweep.kinds.train_system import OPTIONS  # noqa: E402
from hw_models.training.systems import SYSTEMS  # noqa: E402
from hw_models.training.systems.setup import convergence_runs, resolve_setting, run_system, system_params  # noqa: E402


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def seconds(system: str, iterations: int) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, convergence runs) of ``system``'s run."""
    st, _, _ = resolve_setting(system, "resnet50", 16, "multitree-node", None, None, "ring", None, "isca2021",
                               "logreg", None, 1.0, iterations, 0)
    params = system_params(system, st.comm.num_workers, *(None for _ in OPTIONS), st=st)
    t0, w0 = time.process_time(), time.perf_counter()
    run_system(system, st, params["objects"], 0)
    return time.process_time() - t0, time.perf_counter() - w0, convergence_runs(system, params, "logreg")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--iterations", default="60,180")
    args = ap.parse_args()
    lo, hi = (int(x) for x in args.iterations.split(","))
    print(f"| system | runs | CPU s at {lo} its | CPU s at {hi} its | CPU s per run-iteration | wall s per "
          "run-iteration | estimate's figure | CPU |")
    print("|---|---|---|---|---|---|---|---|")
    for system in args.systems.split(","):
        a, wa, runs = seconds(system, lo)
        b, wb, _ = seconds(system, hi)
        per, wall = ((b - a) / ((hi - lo) * runs), (wb - wa) / ((hi - lo) * runs))
        print(f"| {system} | {runs} | {a:.2f} | {b:.2f} | {per:.4f} | {wall:.4f} | "
              f"{SYSTEMS[system].seconds_per_iteration:g} | {cpu_name()} |", flush=True)


if __name__ == "__main__":
    main()
