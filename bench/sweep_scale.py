"""Sweep throughput: a 1,000-point all-reduce sweep (message level, small points on a 4x4
torus) on 1 and 2 local worker processes and on a 2-worker Dask LocalCluster.

Every point is validated once (timed apart); then each configuration runs all of them into
a fresh store, in rounds whose order rotates (local-1, local-2, dask-2; then local-2,
dask-2, local-1; ...), so a change of the machine's load hits every configuration alike.
Per run it prints points/s over the whole run (a local pool's start — fork and each
worker's Numba load — included; the Dask workers are started once, warmed on a few points
and kept, as a cluster is) and in steady state (from the 50th finished point to the last),
the CPU time spent per point (this process, the pool's workers, the cluster's processes:
overhead a second worker adds shows here even when the machine's load hides it in the wall
time), and the load average before the run. The speed-up is the median over rounds of
the per-round ratio to local-1.

    nice -n 5 python bench/sweep_scale.py                  # 1,000 points, 3 rounds
    python bench/sweep_scale.py --rounds 5 --no-dask

Prints figures only; nothing is asserted. On a shared machine the figures move with the
other work: read the load column.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

SWEEP = """
kind = "allreduce"
[base]
network.topology = "torus:4x4"
allreduce.model = "message"
[axes]
"allreduce.algorithm" = ["ring", "ring2d", "dbtree", "multitree", "halving_doubling"]
"nic.design" = ["codesigned", "baseline"]
"allreduce.size" = {{from = 4096, to = {top}, step = 4096}}
"""


def cpu_seconds() -> float:
    """CPU seconds of this process, its reaped children (a finished local pool) and its live
    descendants (the Dask cluster's processes)."""
    import resource

    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    try:
        import psutil
    except ImportError:  # pragma: no cover - distributed brings it
        return total
    for p in psutil.Process().children(recursive=True):
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def _own_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_once(name, points, kind, backend_factory, workdir: Path, steady_from: int = 50) -> dict:
    from hw_models.sweep.execute import execute
    from hw_models.sweep.store import SweepStore

    load = os.getloadavg()[0]
    store_path = workdir / f"{name}-{time.monotonic_ns()}.sqlite"
    stamps: list[float] = []
    cpu0, own0 = cpu_seconds(), _own_cpu()
    t0 = time.perf_counter()
    backend = backend_factory()
    with SweepStore(store_path) as st:
        s = execute(points, kind, st, backend, origin="bench",
                    on_event=lambda ev, p, o: stamps.append(time.perf_counter()))
        assert st.integrity_ok()
    total = time.perf_counter() - t0
    cpu, own = cpu_seconds() - cpu0, _own_cpu() - own0
    assert s.done == len(points) and s.failed == 0, (s.done, s.failed, s.failures[:3])
    n0 = min(steady_from, len(stamps) - 1)
    steady = (len(stamps) - 1 - n0) / (stamps[-1] - stamps[n0]) if stamps[-1] > stamps[n0] else float("nan")
    return {"name": name, "whole_pps": len(points) / total, "steady_pps": steady, "seconds": total, "load": load,
            "cpu_ms_per_point": 1e3 * cpu / len(points), "parent_ms_per_point": 1e3 * own / len(points)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=1000, help="points (a multiple of 10; default 1000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-dask", action="store_true", help="leave the Dask LocalCluster out")
    args = ap.parse_args()
    if args.points % 10 or args.points < 100:
        sys.exit("--points: a multiple of 10, at least 100")

    from hw_models.sweep.execute import DaskCluster, LocalPool, resolve_points
    from hw_models.sweep.kinds import get_kind
    from hw_models.sweep.spec import load_sweep

    kind = get_kind("allreduce")
    work = Path(tempfile.mkdtemp(prefix="sweep-scale-"))
    f = work / "sweep.toml"
    f.write_text(SWEEP.format(top=4096 * args.points // 10))
    t0 = time.perf_counter()
    points, errors, _ = resolve_points(load_sweep(f), kind)
    validate_s = time.perf_counter() - t0
    assert not errors and len(points) == args.points, errors[:3]
    print(f"{len(points)} points (5 algorithms x 2 NIC designs x {args.points // 10} sizes, 4 KiB steps, torus:4x4, "
          f"message level); validated in {validate_s:.2f} s ({len(points) / validate_s:.0f} points/s)")
    print(f"machine: {os.cpu_count()} cores; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    configs = {"local-1": lambda: LocalPool(kind.name, 1), "local-2": lambda: LocalPool(kind.name, 2)}
    cluster = None
    if not args.no_dask:
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        configs["dask-2"] = lambda: DaskCluster(kind.name, cluster.scheduler_address)
        warm = run_once("warm", points[:20], kind, configs["dask-2"], work)  # the workers load Numba once
        print(f"Dask LocalCluster of 2 worker processes started and warmed ({warm['seconds']:.1f} s for 20 points)")
    names = list(configs)
    results: dict[str, list[dict]] = {n: [] for n in names}
    print(f"{'round':>5} {'config':>8} {'load':>5} {'seconds':>8} {'points/s':>9} {'steady/s':>9} {'CPU ms/point':>12} {'of it parent':>12}")
    try:
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                res = run_once(name, points, kind, configs[name], work)
                results[name].append(res)
                print(f"{r + 1:>5} {name:>8} {res['load']:>5.2f} {res['seconds']:>8.2f} {res['whole_pps']:>9.1f} "
                      f"{res['steady_pps']:>9.1f} {res['cpu_ms_per_point']:>12.2f} "
                      f"{res['parent_ms_per_point']:>12.2f}", flush=True)
    finally:
        if cluster is not None:
            cluster.close()
    print()
    print(f"{'config':>8} {'median points/s':>16} {'median steady/s':>16} {'speed-up':>9} {'steady speed-up':>16}")
    for name in names:
        whole = statistics.median(x["whole_pps"] for x in results[name])
        steady = statistics.median(x["steady_pps"] for x in results[name])
        up = statistics.median(a["whole_pps"] / b["whole_pps"] for a, b in zip(results[name], results["local-1"]))
        up_s = statistics.median(a["steady_pps"] / b["steady_pps"] for a, b in zip(results[name], results["local-1"]))
        print(f"{name:>8} {whole:>16.1f} {steady:>16.1f} {up:>8.2f}x {up_s:>15.2f}x")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
