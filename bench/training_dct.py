"""DCT's model-parallel half on NCF: the hybrid DP x MP iteration with the boundary dense and
kept, per samples per worker, and convergence on digits' MLP: prints the markdown tables of
docs/training_systems.md's DCT section.

    .venv/bin/python bench/training_dct.py [--batches 16,1024,65536] [--keeps 0.025,0.1,0.25]

Set-up: the ``isca2021`` preset (``torus:4x4``, 4 NIs per node, co-designed NIC, message
level, 16 workers), NCF on ``multitree-node``, ring all-reduce, policy wfbp; the MLP task
(lr 0.2, target 95 %, 1,500 iterations), seed 0. Each row is what
``hw-models train-system compression --preset isca2021 -w ncf -b BATCH --task mlp
--mp-keep KEEP`` puts in its tables (the sweep docs/examples/sweeps/train_system_dct.toml
runs the same points).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models.training.systems import runner  # noqa: E402
from hw_models.training.systems.setup import resolve_setting  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="16,1024,65536")
    ap.add_argument("--keeps", default="0.025,0.1,0.25")
    args = ap.parse_args()
    t0 = time.time()
    keeps = [float(x) for x in args.keeps.split(",")]
    print("| samples per worker | data parallel (ms) | hybrid, dense boundary (ms) | KEEP | kept of 384 | "
          "MP bytes per worker-iteration, dense → kept | MP reduction | hybrid, kept (ms) | vs dense boundary |")
    print("|---|---|---|---|---|---|---|---|---|")
    for batch in (int(x) for x in args.batches.split(",")):
        st, _, _ = resolve_setting("compression", "ncf", batch, "multitree-node", None, None, "ring", None,
                                   "isca2021", "none", None, None, 1500, 0)
        base = st.sgd_iteration_s()
        for keep in keeps:
            dense, kept = runner.run_dct_mp(st, keep)[0]
            k = max(1, math.ceil(keep * 384))
            print(f"| {batch:,} | {base * 1e3:.4g} | {dense['iteration_s'] * 1e3:.4g} | {keep:g} | {k} | "
                  f"{dense['mp_bytes_per_worker']:,.0f} → {kept['mp_bytes_per_worker']:,.0f} | "
                  f"{kept['mp_reduction']:.3g}x | {kept['iteration_s'] * 1e3:.4g} | "
                  f"{-kept['mp_time_reduction_percent']:+.1f} % |", flush=True)
    st, _, _ = resolve_setting("compression", "ncf", 16, "multitree-node", None, None, "ring", None, "isca2021",
                               "mlp", None, None, 1500, 0)
    ref = st.reference()
    print(f"\nMLP task, 16 workers: synchronous SGD reaches {st.target:g} in {ref.iterations_to_target} iterations\n")
    print("| KEEP | kept of 32 (task) | iterations to 95 % | final accuracy |")
    print("|---|---|---|---|")
    for keep in keeps:
        (c,) = runner.run_dct_mp(st, keep)[1]
        its = c["iterations_to_target"] or "not reached"
        print(f"| {keep:g} | {max(1, math.ceil(keep * 32))} | {its} | {float(c['final_accuracy']):.3f} |", flush=True)
    print(f"\nreported (DCT paper): {runner.REPORTED_DCT}")
    print(f"\n({time.time() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
