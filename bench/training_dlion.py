"""DLion's techniques and its baselines on unequal, changing workers and links: prints the
markdown table of docs/training_systems.md's DLion section.

    .venv/bin/python bench/training_dlion.py [--workload resnet50] [--max-iterations 1500]

Set-up: the ``isca2021`` preset (``torus:4x4``, 4 NIs per node, co-designed NIC, message
level, 16 workers), the workload with 16 samples per worker on ``multitree-node``, ring
all-reduce as the synchronous baseline; workers ``slow:2:3+walk:0.1`` (two workers 3x slower,
every worker's speed drifting), links ``slow:4:8+walk:0.1``; convergence on the digits
logreg task (16 shards, lr 0.1, target 95 %), seed 0. The same run as
``hw-models train-system dlion --preset isca2021`` with its defaults.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models.training import endtoend as e2e  # noqa: E402
from hw_models.training.comm import NicComm  # noqa: E402
from hw_models.training.compute import MULTITREE_NODE_ROOFLINE, get_device  # noqa: E402
from hw_models.training.systems import runner  # noqa: E402
from hw_models.training.systems.dlion import parse_techniques  # noqa: E402
from hw_models.training.systems.ps import ps_schedule  # noqa: E402
from hw_models.training.systems.setup import DEFAULT_DLION_LINKS, DEFAULT_DLION_WORKERS  # noqa: E402
from hw_models.training.systems.tasks import DEFAULT_LR, DEFAULT_TARGET, Task  # noqa: E402


def fmt(v, digits=4):
    if v in ("", None):
        return "not reached"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def setting(workload: str, batch: int, max_iterations: int, model: str = "logreg"):
    ring = NicComm.from_config(preset="isca2021", algorithm="ring")
    n = ring.num_workers
    dev = get_device("multitree-node")
    w = e2e.resolve_workloads(workload)[0]
    layers = e2e.workload_costs([w], batch, dev)[w.name]
    cache = {}

    def ps_comm(servers):
        if servers not in cache:
            cache[servers] = NicComm(ring.topology, ps_schedule(ring.topology, servers), ring.nic, ring.network)
        return cache[servers]

    return runner.Setting(w, batch, layers, ring, "ring", dev.peak_flops, MULTITREE_NODE_ROOFLINE.mem_bytes_per_s,
                          Task(model, workers=n, batch=16, seed=0), DEFAULT_LR[model], DEFAULT_TARGET[model],
                          max_iterations, ps_comm, ring.topology)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="resnet50")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-iterations", type=int, default=1500)
    ap.add_argument("--policy", default="wfbp", choices=("wfbp", "fused"))
    args = ap.parse_args()
    t0 = time.time()
    st = setting(args.workload, args.batch, args.max_iterations)
    timing, conv = runner.run_dlion(st, parse_techniques("all"), DEFAULT_DLION_WORKERS, DEFAULT_DLION_LINKS,
                                    seed=0, policy=args.policy)
    print(f"{st.workload.name}, batch {args.batch} on multitree-node, {st.comm.describe()}, "
          f"{st.comm.num_workers} workers; workers {DEFAULT_DLION_WORKERS}, links {DEFAULT_DLION_LINKS}; "
          f"logreg to {st.target:g}, policy {args.policy}\n")
    common = next(t["common_rounds"] for t in timing if t["common_rounds"] != "")
    print(f"| run | mean round (ms) | mean of rounds 1-{common} (ms) | MB per round | rounds to target | "
          "time to target (s) | speedup vs all-reduce | final accuracy |")
    print("|---|---|---|---|---|---|---|---|")
    for t, c in zip(timing, conv):
        tt = c["time_to_target_s"]
        first = fmt(t["common_round_s"] * 1e3) if t["common_round_s"] != "" else "-"
        print(f"| {c['run']} | {t['iteration_s'] * 1e3:.4g} | {first} | {t['bytes_per_round'] / 1e6:.4g} | "
              f"{fmt(c['iterations_to_target'])} | {fmt(tt if tt == tt else '')} | "
              f"{fmt(c['speedup_vs_allreduce'])} | {c['final_accuracy']:.3f} |")
    print(f"\nreported (DLion paper): {runner.REPORTED_DLION}")
    print(f"\n({time.time() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
