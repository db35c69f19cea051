"""Compression, SSD-SGD and K-FAC on DLion's heterogeneous set-up (two workers 3x slower,
four nodes' links 8x slower, every factor drifting): prints the markdown tables of
docs/training_systems.md's profiles section (bench/data/training_profiles.md).

    .venv/bin/python bench/training_profiles.py [--stragglers SPEC] [--links SPEC] [--systems compression,ssd,...]

and the parameter server's and EASGD's event simulations (timing only, ``--task none``) on
the same profiles and on the workers' profile alone, so the links' share shows:

    hw-models train-system ps --preset isca2021 --task none --stragglers slow:2:3+walk:0.1 \
        --links slow:4:8+walk:0.1
    hw-models train-system easgd --preset isca2021 --task none --variants sync,async,hogwild \
        --stragglers slow:2:3+walk:0.1 --links slow:4:8+walk:0.1

Each system's rows are what these commands put in their tables (``--preset isca2021``:
``torus:4x4``, 4 NIs per node, co-designed NIC, message level, 16 workers; device
``multitree-node``; ring all-reduce; seed 0):

    hw-models train-system compression --preset isca2021 --compressors topk:0.01,onebit \\
        --stragglers slow:2:3+walk:0.1 --links slow:4:8+walk:0.1
    hw-models train-system ssd --preset isca2021 --delays 1,2,4,8 --task mlp \\
        --stragglers slow:2:3+walk:0.1 --links slow:4:8+walk:0.1
    hw-models train-system kfac --preset isca2021 -w googlenet --task mlp \\
        --stragglers slow:2:3+walk:0.1 --links slow:4:8+walk:0.1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models.sweep.kinds.train_system import OPTIONS  # noqa: E402
from hw_models.training.systems.setup import resolve_setting, run_system, system_params  # noqa: E402

RUNS = (("compression", "resnet50", "logreg", {"compressors": "topk:0.01,onebit"}),
        ("ssd", "resnet50", "mlp", {"delays": "1,2,4,8"}),
        ("kfac", "googlenet", "mlp", {}))
EVENT_RUNS = (("ps", {}), ("easgd", {"variants": "sync,async,hogwild"}))


def _run(system, workload, task, flags):
    st, desc, _ = resolve_setting(system, workload, 16, "multitree-node", None, None, "ring", None, "isca2021",
                                  task, None, None, 1500, 0)
    params = system_params(system, st.comm.num_workers, *(flags.get(k) for k in OPTIONS), st=st)
    return st, desc, run_system(system, st, params["objects"], 0)


def event_tables(args):
    for system, own in EVENT_RUNS:
        if system not in args.systems:
            continue
        rows = {}
        for links in ("none", args.links):
            _, desc, (timing, _) = _run(system, "resnet50", "none", {**own, "stragglers": args.stragglers,
                                                                   "links": links})
            rows[links] = [r for r in timing if "stragglers" in r["run"]]
        print(f"\n{system}: {desc}; task none; stragglers {args.stragglers}\n")
        print(f"| run | links none ms | links {args.links} ms | slowdown |")
        print("|---|---|---|---|")
        for a, b in zip(rows["none"], rows[args.links]):
            print(f"| {a['run'].split(', stragglers')[0]} | {a['iteration_s'] * 1e3:.4g} | "
                  f"{b['iteration_s'] * 1e3:.4g} | {b['iteration_s'] / a['iteration_s']:.2f}x |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stragglers", default="slow:2:3+walk:0.1")
    ap.add_argument("--links", default="slow:4:8+walk:0.1")
    ap.add_argument("--systems", default="compression,ssd,kfac,ps,easgd")
    args = ap.parse_args()
    args.systems = args.systems.split(",")
    t0 = time.time()
    for system, workload, task, own in RUNS:
        if system not in args.systems:
            continue
        st, desc, (timing, conv) = _run(system, workload, task, {**own, "stragglers": args.stragglers,
                                                                 "links": args.links})
        prof = [r for r in timing if "stragglers" in r]
        cmp = "speedup" if system == "ssd" else "reduction_percent"
        print(f"\n{system}: {desc}; task {task}; stragglers {args.stragglers}, links {args.links}\n")
        print(f"| run | nominal ms | on the profiles ms (mean of {prof[0]['profile_iterations']}) | slowdown | "
              f"{'speed-up' if system == 'ssd' else 'vs first row'} |")
        print("|---|---|---|---|---|")
        for r in prof:
            v = f"{r[cmp]:.2f}x" if system == "ssd" else f"{0.0 - r[cmp]:+.1f} %"
            print(f"| {r['run'].split(', stragglers')[0]} | {r['nominal_iteration_s'] * 1e3:.4g} | "
                  f"{r['iteration_s'] * 1e3:.4g} | {r['slowdown']:.2f}x | {v} |")
        print(f"\n| run | iterations to {st.target:g} | time to target s (on the profiles) | vs reference |")
        print("|---|---|---|---|")
        for r in conv:
            tt = f"{r['time_to_target_s']:.4g}" if r["time_to_target_s"] != "" else "-"
            print(f"| {r['run']} | {r['iterations_to_target'] or 'not reached'} | {tt} | "
                  f"{r['time_to_target_vs_reference'] or '-'} |", flush=True)
    event_tables(args)
    print(f"\n({time.time() - t0:.0f} s wall)", file=sys.stderr)


if __name__ == "__main__":
    main()
