"""The training systems of docs/training_systems.md on the MultiTree paper's network: prints
the markdown tables of that page.

    .venv/bin/python bench/training_systems.py [--workload resnet50] [--quick]

Set-up: the ``isca2021`` preset (``torus:4x4``, 4 NIs per node, co-designed NIC, message
level, 16 workers), ResNet-50 with 16 samples per worker on ``multitree-node``, ring
all-reduce as the synchronous baseline; convergence on digits with 16 workers (one shard
each), seed 0. ``--quick`` runs fewer variants (a smoke test of the script).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models.training import endtoend as e2e  # noqa: E402
from hw_models.training.comm import AlphaBeta, NicComm  # noqa: E402
from hw_models.training.compute import MULTITREE_NODE_ROOFLINE, get_device  # noqa: E402
from hw_models.training.systems import runner  # noqa: E402
from hw_models.training.systems.ps import ps_schedule, server_nodes  # noqa: E402
from hw_models.training.systems.tasks import DEFAULT_LR, DEFAULT_TARGET, Task  # noqa: E402


def fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def table(rows, cols):
    out = ["| " + " | ".join(c.replace("_", " ") for c in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="resnet50")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    ring = NicComm.from_config(preset="isca2021", algorithm="ring")
    n = ring.num_workers
    dev = get_device("multitree-node")
    w = e2e.resolve_workloads(args.workload)[0]
    layers = e2e.workload_costs([w], args.batch, dev)[w.name]
    cache = {}

    def ps_comm(servers):
        if servers not in cache:
            cache[servers] = NicComm(ring.topology, ps_schedule(ring.topology, servers), ring.nic, ring.network)
        return cache[servers]

    def setting(model="logreg"):
        return runner.Setting(w, args.batch, layers, ring, "ring", dev.peak_flops, MULTITREE_NODE_ROOFLINE.mem_bytes_per_s,
                              Task(model, workers=n, batch=16, seed=0), DEFAULT_LR[model], DEFAULT_TARGET[model], 1500,
                              ps_comm, ring.topology)

    st = setting()
    print(f"{w.name}, batch {args.batch} on multitree-node, {ring.describe()}, {n} workers; "
          f"model {st.model_bytes / 2**20:.1f} MiB, compute {st.compute_s * 1e3:.3f} ms per iteration\n")
    conv_cols = ["run", "iterations_to_target", "final_accuracy", "iterations_vs_reference",
                 "iteration_time_vs_reference", "time_to_target_vs_reference"]

    comps = runner.parse_compressors("topk:0.01,onebit" if args.quick else
                                     "topk:0.01,topk:0.1,randk:0.01,threshold:0.01:50,onebit,eightbit")
    for model in (("logreg",) if args.quick else ("logreg", "mlp")):
        tm, cv = runner.run_compression(setting(model), comps, "both", 10)
        if model == "logreg":
            print("### Compression: time per iteration\n")
            print(table(tm, ["run", "iteration_s", "reduction_percent", "wire_bytes_per_worker", "compression_s"]))
        print(f"\n### Compression: convergence ({model})\n")
        print(table(cv, conv_cols + ["bytes_per_worker_iteration"]))
        print(f"\n({time.time() - t0:.0f} s)\n", file=sys.stderr)

    # a communication-bound what-if: the same workers on 10 Gbit/s Ethernet (alpha-beta ring)
    eth = AlphaBeta(latency_s=10e-6, bytes_per_s=1.25e9, num_workers=n)
    st_eth = runner.Setting(w, args.batch, layers, eth, "ring", dev.peak_flops, MULTITREE_NODE_ROOFLINE.mem_bytes_per_s,
                            None, ps_comm=ps_comm, topology=ring.topology)
    tm, _ = runner.run_compression(st_eth, comps, "both", 10)
    print(f"\n### Compression: time per iteration on {eth.describe()}\n")
    print(table(tm, ["run", "iteration_s", "reduction_percent", "wire_bytes_per_worker", "compression_s"]))
    ssd_eth, _ = runner.run_ssd(st_eth, [1, 2, 4, 8])

    for strag in ("none", "slow:2:3", "lognormal:0.5"):
        tm, cv = runner.run_ps(st, server_nodes("spread", n, n), ["sync", "async", "ssp:2"], strag)
        print(f"\n### Parameter server ({n} servers), stragglers {strag}: event simulation and convergence (logreg)\n")
        print(table(tm[3:], ["run", "iteration_s", "reduction_percent", "mean_staleness", "max_staleness"]))
        print()
        print(table(cv, conv_cols + ["time_to_target_s"]))
    rows = []
    for s in (1, 4, 16):
        tm, _ = runner.run_ps(runner.Setting(w, args.batch, layers, ring, "ring", dev.peak_flops, 320e9, None,
                                             ps_comm=ps_comm, topology=ring.topology),
                              server_nodes("spread", n, s), ["sync"], "none")
        rows += tm[:3] if s == 1 else tm[1:3]
    print("\n### Parameter server: layer-by-layer synchronous iteration (servers spread over the nodes)\n")
    print(table(rows, ["run", "iteration_s", "reduction_percent"]))
    print(f"\n({time.time() - t0:.0f} s)\n", file=sys.stderr)

    for model in ("logreg", "mlp"):
        tm, cv = runner.run_ssd(setting(model), [1, 2, 4, 8])
        if model == "logreg":
            print("\n### SSD-SGD: time per iteration\n")
            print(table(tm, ["run", "iteration_s", "speedup", "closed_form_s", "allreduce_s", "local_update_s"]))
            print(f"\n### SSD-SGD: time per iteration on {eth.describe()}\n")
            print(table(ssd_eth, ["run", "iteration_s", "speedup", "closed_form_s", "allreduce_s",
                                  "local_update_s"]))
        print(f"\n### SSD-SGD: convergence ({model})\n")
        print(table(cv, conv_cols))

    for tau in (1, 4):
        tm, cv = runner.run_easgd(st, ["sync", "async", "measgd", "hogwild"], None, tau)
        print(f"\n### EASGD, tau = {tau}\n")
        print(table(tm, ["run", "iteration_s", "speedup_vs_async", "closed_form_s"]))
        print()
        print(table(cv, conv_cols))
    for strag in ("slow:2:3", "lognormal:0.5"):
        tm, cv = runner.run_easgd(st, ["sync", "async", "measgd", "hogwild"], None, 1, strag)
        print(f"\n### EASGD, tau = 1, stragglers {strag}: event simulation and its replay (logreg)\n")
        print(table(tm[4:], ["run", "iteration_s", "speedup_vs_async", "mean_staleness", "max_staleness"]))
        print()
        print(table(cv[5:], conv_cols + ["mean_staleness"]))
    print(f"\n({time.time() - t0:.0f} s)\n", file=sys.stderr)

    for wname in ((w.name,) if args.quick else (w.name, "googlenet")):
        ww = e2e.resolve_workloads(wname)[0]
        lk = e2e.workload_costs([ww], args.batch, dev)[ww.name]
        s2 = runner.Setting(ww, args.batch, lk, ring, "ring", dev.peak_flops, 320e9,
                            Task("mlp", workers=n, batch=16, seed=0) if wname == w.name else None,
                            DEFAULT_LR["mlp"], DEFAULT_TARGET["mlp"], 1500, ps_comm, ring.topology)
        tm, cv = runner.run_kfac(s2, 0.05)
        print(f"\n### K-FAC on {wname}\n")
        print(table(tm, ["run", "iteration_s", "reduction_percent", "inverse_s", "inverse_gather_s", "precondition_s",
                         "exposed_comm_s", "factor_bytes", "factors"]))
        if cv:
            print()
            print(table(cv, conv_cols))
    print(f"\n({time.time() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
