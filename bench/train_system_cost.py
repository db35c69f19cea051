"""What ``hw-models train-system``'s convergence runs cost per iteration, next to each
system's ``seconds_per_iteration`` in the registry ``hw_models.training.systems.SYSTEMS`` (the
long-run estimate's figure).

    .venv/bin/python bench/train_system_cost.py [--systems ps,dlion] [--iterations 60,180]
    .venv/bin/python bench/train_system_cost.py --profiled [--iterations 20,60]

Every system with its default options on the ``isca2021`` preset (16 workers, ResNet-50, 16
samples per worker), task logreg with target 1.0 (never reached, so every convergence run
goes to ``--max-iterations``), run at two iteration counts; a run-iteration's CPU seconds is
the difference of the two runs' process times over the difference of iterations times the
system's convergence runs (``setup.convergence_runs``), so the set-up (network, layer costs)
cancels; the same for wall-clock seconds (what the estimate is of: on a loaded machine they
exceed the CPU seconds). Prints a markdown table: system, runs, the two runs' CPU seconds,
CPU and wall seconds per run-iteration, the estimate's figure, the CPU.

``--profiled``: what timing a configuration iteration by iteration on a drifting profile
(``walk:0.1`` workers and links, a timeline per iteration) costs per iteration and layer --
synchronous SGD (compression's first configuration) and SSD-SGD ``k = 4`` (timing only; the
difference of the two iteration counts over the difference times the layers), next to
``hw_models.estimate.SECONDS_PER_PROFILED_LAYER_ITERATION``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hw_models.estimate import SECONDS_PER_PROFILED_LAYER_ITERATION  # noqa: E402
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


def profiled(lo: int, hi: int) -> None:
    from hw_models.training.systems import runner  # noqa: PLC0415
    from hw_models.training.systems.profiled import Profiles  # noqa: PLC0415

    print(f"| timeline | layers | CPU s at {lo} its | CPU s at {hi} its | CPU s per iteration-layer | estimate's "
          "figure | CPU |")
    print("|---|---|---|---|---|---|---|")
    for kind, name, call in (("bsp", "synchronous SGD", lambda st, p: runner.run_compression(st, [], profiles=p)),
                             ("period", "SSD-SGD k=4 (less SGD)", lambda st, p: runner.run_ssd(st, [4], profiles=p))):
        cpu = []
        for its in (lo, hi):
            st, _, _ = resolve_setting("ssd", "resnet50", 16, "multitree-node", None, None, "ring", None, "isca2021",
                                       "none", None, None, its, 0)
            call(st, None)  # the network's costs, cached
            t0 = time.process_time()
            call(st, Profiles("walk:0.1", "walk:0.1", st.comm.num_workers, 0))
            cpu.append(time.process_time() - t0)
        per = (cpu[1] - cpu[0]) / ((hi - lo) * len(st.layers))
        if kind == "period":
            per -= bsp_per  # its row also times synchronous SGD
        else:
            bsp_per = per
        print(f"| {name} | {len(st.layers)} | {cpu[0]:.2f} | {cpu[1]:.2f} | {per:.2e} | "
              f"{SECONDS_PER_PROFILED_LAYER_ITERATION[kind]:g} | {cpu_name()} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--iterations", default=None, help="two iteration counts (default 60,180; --profiled 20,60)")
    ap.add_argument("--profiled", action="store_true", help="the cost of timing on a drifting profile")
    args = ap.parse_args()
    lo, hi = (int(x) for x in (args.iterations or ("20,60" if args.profiled else "60,180")).split(","))
    if args.profiled:
        profiled(lo, hi)
        return
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
