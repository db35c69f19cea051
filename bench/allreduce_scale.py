"""How an all-reduce run scales with the network: nodes against wall time and peak memory.

Each network size runs in a fresh process (so its peak memory is its own): the process
compiles the kernels on a 4x4 torus first (not timed), then builds the schedule and
simulates one all-reduce, timing each part. The parent prints one row per size and the
fitted exponents of time and memory against nodes (least squares on log-log).

    python bench/allreduce_scale.py                       # MultiTree, 64 MiB, 4 NIs, message level
    python bench/allreduce_scale.py --grids 8 16 24 32 48 64
    python bench/allreduce_scale.py --model flit --nis 1 --size 1MiB --grids 8 16
    python bench/allreduce_scale.py --grids --command 64    # only the command below, on 64x64

``--command K`` also times the whole command ``hw-models allreduce -t torus:KxK --nis N -a
ALGORITHM --sizes SIZE`` (imports, schedule builds, the reference ring it always runs,
verification and outputs, into a fresh output directory) and prints its wall time, CPU time and peak
memory (the largest resident set of the process, from ``wait4``).

Prints figures only; nothing is asserted. Wall times depend on the machine and its load:
run it on an idle machine, and compare rows of one run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time


def child(spec: str, algorithm: str, size_bytes: int, model: str) -> None:
    import resource

    from nic.allreduce import NicConfig, simulate_allreduce
    from nic.collectives import build
    from noc.flit import FlitNetworkConfig
    from noc.topology import parse_spec

    warm = parse_spec("torus:4x4:c4" if ":c" in spec else "torus:4x4")
    simulate_allreduce(warm, build(warm, algorithm), NicConfig(), FlitNetworkConfig(), 1 << 16, model=model)
    base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t = parse_spec(spec)
    c0 = time.process_time()
    t0 = time.perf_counter()
    s = build(t, algorithm)
    t1 = time.perf_counter()
    r = simulate_allreduce(t, s, NicConfig(), FlitNetworkConfig(), size_bytes, model=model)
    t2 = time.perf_counter()
    print(json.dumps({"transfers": s.num_transfers, "steps": s.num_steps, "build_s": t1 - t0, "simulate_s": t2 - t1,
                      "cpu_s": time.process_time() - c0, "cycles": r.total_cycles, "base_mb": base_mb}))


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / den if den else float("nan")


def main() -> int:
    from noc.base.units import parse_size_bytes

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grids", type=int, nargs="*", default=[8, 16, 24, 32], help="k of the k x k tori")
    ap.add_argument("--nis", type=int, default=4, help="NIs per node (default 4)")
    ap.add_argument("--algorithm", default="multitree")
    ap.add_argument("--size", default="64MiB", help="all-reduce size (default 64MiB)")
    ap.add_argument("--model", default="message", choices=("message", "flit"))
    ap.add_argument("--command", type=int, nargs="*", default=[], metavar="K",
                    help="also time the hw-models allreduce command on these k x k tori")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    size = parse_size_bytes(a.size)
    if a.child:
        child(a.child, a.algorithm, size, a.model)
        return 0
    print(f"{a.algorithm}, {a.size}, {a.nis} NI(s) per node, {a.model} level; one process per size "
          f"(kernels compiled on a 4x4 torus first, not timed); {os.cpu_count()} CPUs")
    print(f"{'network':>16} {'nodes':>6} {'transfers':>10} {'steps':>6} {'build s':>8} {'simulate s':>10} "
          f"{'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'base MB':>8} {'cycles':>12}")
    rows = []
    for k in a.grids:
        spec = f"torus:{k}x{k}" + (f":c{a.nis}" if a.nis > 1 else "")
        proc = subprocess.Popen([sys.executable, __file__, "--child", spec, "--algorithm", a.algorithm, "--size", a.size,
                                 "--model", a.model], stdout=subprocess.PIPE, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            print(f"{spec:>16}  failed (exit {proc.returncode})")
            continue
        r = json.loads(out.strip().splitlines()[-1])
        peak = usage.ru_maxrss / 1024
        wall = r["build_s"] + r["simulate_s"]
        rows.append((k * k, wall, peak - r["base_mb"]))
        print(f"{spec:>16} {k * k:>6} {r['transfers']:>10,} {r['steps']:>6} {r['build_s']:>8.2f} {r['simulate_s']:>10.2f} "
              f"{wall:>8.2f} {r['cpu_s']:>8.2f} {peak:>8.0f} {r['base_mb']:>8.0f} {r['cycles']:>12,.0f}", flush=True)
    rows = [x for x in rows if x[1] >= 0.2] or rows  # sizes that take a measurable time
    if len(rows) >= 2:
        nodes = [x[0] for x in rows]
        print(f"fitted: wall time ~ nodes^{fit_exponent(nodes, [x[1] for x in rows]):.2f}, "
              f"peak memory above the base ~ nodes^{fit_exponent(nodes, [max(x[2], 1.0) for x in rows]):.2f} "
              "(MultiTree moves 2N(N-1) messages: nodes^2 is linear in transfers)")
    for k in a.command:
        wall, cpu, peak, code = time_command(k, a.nis, a.algorithm, a.size)
        cmd = f"hw-models allreduce -t torus:{k}x{k} --nis {a.nis} -a {a.algorithm} --sizes {a.size}"
        print(f"command: {cmd}: " + (f"wall {wall:.1f} s, cpu {cpu:.1f} s, peak {peak:,.0f} MB" if code == 0 else f"failed (exit {code})"),
              flush=True)
    return 0


def time_command(k: int, nis: int, algorithm: str, size: str) -> tuple[float, float, float, int]:
    """(wall s, CPU s (user + system), peak resident MB, exit code) of the ``hw-models allreduce`` command on a k x k
    torus, run as its own process into a fresh output directory."""
    import shutil
    import tempfile

    exe = shutil.which("hw-models", path=os.path.dirname(sys.executable)) or "hw-models"
    with tempfile.TemporaryDirectory(prefix="allreduce_scale_") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen([exe, "allreduce", "-t", f"torus:{k}x{k}", "--nis", str(nis), "-a", algorithm,
                                 "--sizes", size, "--out", out], stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
