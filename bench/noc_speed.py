"""Speed of the flit level (noc.flit) against BookSim2, measured side by side.

    .venv/bin/python bench/noc_speed.py [--booksim PATH/TO/booksim] [--rounds 5] [--baseline DIR] [--process]

Both simulators run the same BookSim2 configurations (the 8x8 mesh and torus points of
bench/booksim_validate.py's matrix that BookSim2 runs to the end, and BookSim2's own
examples/torus88), BookSim2 from its binary, this package through noc.booksim_config with
BookSim2's semantics and methodology. The rounds interleave the two (one BookSim2 run,
then ours, per case and round), both single-threaded; each prints the median and the
spread (min..max) of simulated cycles per second over the rounds, and the ratio of the
medians.

What each figure times:

* BookSim2: its simulated cycles ("Time taken") over its own "Total run time". Its
  src/main.cpp takes the wall time (gettimeofday) around ``trafficManager->Run()`` alone:
  the warm-up, the sample periods (their statistics printed), the drain and the final
  statistics. Reading the configuration, building the network (routers, channels, their
  buffers and allocators) and the traffic manager (sources, queues, statistics), and
  process start-up are not in it.
* ours, "sim": the same scope, ``PreparedTraffic.run()`` (noc.flit_traffic): the warm-up,
  sample periods, drain and final statistics. Reading the configuration, building the
  topology, the network's arrays (route tables included) and the state
  (``PreparedTraffic(...)``) are not in it. The ratio "sim" compares these two.
* ours, "with set-up": from reading the configuration file to the statistics (the
  set-up above and the run), so nothing is left out. The route tables are built once per
  process per network (noc.topology_cache): the first run on a network builds them, later
  rounds reuse them, as a sweep does. The line before the table gives one point's set-up
  cold (nothing cached) and cached.

Ours are timed after a first untimed run that loads or compiles the kernels.

``--baseline DIR`` also runs the flit level of another source tree (a checkout of an
earlier commit, its ``noc`` and ``nic`` imported from DIR) in a second process, kept
warm, in the same interleaved rounds: BookSim2, this tree, DIR, per case and round. Its
column is timed with set-up (an earlier tree may have no PreparedTraffic to split it by),
and ``ours/base`` is the ratio of the two trees' with-set-up medians.

``--process`` also times whole processes on one 20,000-cycle point (torus88 with
sample_period 3334): ``booksim FILE`` against ``hw-models noc run --booksim FILE``, start-up,
imports and kernel loading included, interleaved over the rounds.

Without ``--booksim`` it says so and prints ours only.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]
TORUS88 = "topology = torus;\nk = 8;\nn = 2;\nrouting_function = dim_order;\nnum_vcs = 2;\ntraffic = uniform;\n" \
          "injection_rate = 0.15;\n"


def cases() -> list[tuple[str, str]]:
    """(name, BookSim2 config text): torus88, and the 8x8 uniform points of the validation
    matrix (2 VCs x 8 flits, 1- and 4-flit packets) below saturation."""
    out = [("torus88 (BookSim2's example)", TORUS88)]
    for topo, rf in (("mesh", "dor"), ("torus", "dim_order")):
        for size, loads in ((1, (0.02, 0.1, 0.2)), (4, (0.02, 0.1, 0.2, 0.3))):
            for load in loads:
                out.append((f"{topo}8x8 uniform {size}f {load}",
                            f"topology = {topo};\nk = 8;\nn = 2;\nrouting_function = {rf};\nnum_vcs = 2;\n"
                            f"vc_buf_size = 8;\ntraffic = uniform;\npacket_size = {size};\ninjection_rate = {load};\n"
                            "injection_rate_uses_flits = 1;\n"))
    return out


def _write(text: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write(text)
        return f.name


def run_booksim(binary: str, path: str) -> tuple[int, float]:
    """(simulated cycles, BookSim2's own run time in seconds)."""
    proc = subprocess.run([binary, path], capture_output=True, text=True, timeout=900)
    cycles = sum(int(x) for x in re.findall(r"Time taken is (\d+) cycles", proc.stdout))
    took = re.findall(r"Total run time ([0-9.]+)", proc.stdout)
    if not cycles or not took:
        raise SystemExit(f"BookSim2 printed no run time for {path}:\n{proc.stdout[-1500:]}")
    return cycles, float(took[-1])


def run_ours(path: str) -> tuple[int, float, float]:
    """(simulated cycles, seconds simulating, seconds from reading ``path`` to the statistics)."""
    from noc.booksim_config import from_booksim, read_booksim
    from noc.flit_traffic import PreparedTraffic

    t0 = time.perf_counter()
    run = from_booksim(read_booksim(path), path)
    point = PreparedTraffic(run.topology, run.network, run.traffic)
    t1 = time.perf_counter()
    stats = point.run()
    t2 = time.perf_counter()
    return stats.cycles, t2 - t1, t2 - t0


def setup_seconds(path: str) -> tuple[float, float]:
    """One point's set-up (config read, topology, network arrays, state), in seconds: with
    nothing cached, then with its route tables cached."""
    from noc import topology_cache
    from noc.booksim_config import from_booksim, read_booksim
    from noc.flit_traffic import PreparedTraffic

    out = []
    topology_cache.clear()
    for _ in range(2):
        t0 = time.perf_counter()
        run = from_booksim(read_booksim(path), path)
        PreparedTraffic(run.topology, run.network, run.traffic)
        out.append(time.perf_counter() - t0)
    return out[0], out[1]


# The --baseline worker: the flit level of another tree, one BookSim2 config path per input
# line, answering "cycles seconds" timed from reading the config to the statistics (after an
# untimed first run on the first path)
_WORKER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from noc.booksim_config import from_booksim, read_booksim
from noc.flit_traffic import run_traffic
for line in sys.stdin:
    path = line.strip()
    t0 = time.perf_counter()
    run = from_booksim(read_booksim(path), path)
    stats = run_traffic(run.topology, run.network, run.traffic)
    print(stats.cycles, time.perf_counter() - t0, flush=True)
"""


class Baseline:
    """The flit level of another source tree, in a worker process kept warm."""

    def __init__(self, tree: str) -> None:
        if not (Path(tree) / "noc" / "flit.py").is_file():
            raise SystemExit(f"--baseline {tree}: not a source tree of this package (no noc/flit.py)")
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # its own cache, by its path
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER, str(Path(tree).resolve())], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)

    def run(self, path: str) -> tuple[int, float]:
        self.proc.stdin.write(path + "\n")
        self.proc.stdin.flush()
        cycles, seconds = self.proc.stdout.readline().split()
        return int(cycles), float(seconds)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _summary(rates: list[float]) -> str:
    return f"{statistics.median(rates):>10,.0f} ({min(rates):,.0f}..{max(rates):,.0f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--booksim", default="", help="a BookSim2 binary built from its public source")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per case (median and spread)")
    ap.add_argument("--baseline", default="", help="another source tree whose flit level runs beside this one")
    ap.add_argument("--process", action="store_true", help="also time whole processes on a 20,000-cycle point")
    args = ap.parse_args()
    binary = args.booksim
    if binary and not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise SystemExit(f"--booksim {binary}: not an executable file")
    if not binary:
        print("no --booksim binary given: BookSim2 is not measured, only this package's flit level")
    threads = os.environ.get("NUMBA_NUM_THREADS", "default")
    print(f"single-threaded kernels on both sides (NUMBA_NUM_THREADS={threads}; BookSim2 is single-threaded); "
          f"{args.rounds} interleaved rounds; median (min..max) simulated cycles/s")
    t0 = time.perf_counter()
    warm = _write(TORUS88)
    run_ours(warm)  # load or compile the kernels, untimed
    base = Baseline(args.baseline) if args.baseline else None
    if base:
        base.run(warm)
    print(f"kernel load/compile: {time.perf_counter() - t0:.1f} s")
    name, text = cases()[-4]  # torus8x8 uniform 4f 0.02
    path = _write(text)
    cold, cached = zip(*(setup_seconds(path) for _ in range(max(args.rounds, 3))))
    os.unlink(path)
    print(f"set-up of one point ({name}: config read, topology, network arrays, state), median: "
          f"{1e3 * statistics.median(cold):.1f} ms with nothing cached, {1e3 * statistics.median(cached):.1f} ms "
          "with its route tables cached")
    head = f"{'case':<30}{'ours sim, cycles/s':>28}{'ours with set-up':>28}"
    if binary:
        head += f"{'BookSim2 cycles/s':>26}{'ratio sim':>11}{'with set-up':>13}"
    if base:
        head += f"{'baseline with set-up':>28}{'ours/base':>10}"
    print(head)
    ratios, ratios_setup, speedups = [], [], []
    for name, text in cases():
        path = _write(text)
        ours, ours_setup, theirs, before = [], [], [], []
        cycles = set()
        try:
            for _ in range(args.rounds):
                if binary:
                    c, s = run_booksim(binary, path)
                    theirs.append(c / s)
                c, s, s_setup = run_ours(path)
                ours.append(c / s)
                ours_setup.append(c / s_setup)
                cycles.add(c)
                if base:
                    c, s = base.run(path)
                    before.append(c / s)
                    cycles.add(c)
        finally:
            os.unlink(path)
        if len(cycles) > 1:
            raise SystemExit(f"{name}: the two trees simulated different cycle counts {sorted(cycles)}")
        line = f"{name:<30}{_summary(ours):>28}{_summary(ours_setup):>28}"
        if binary:
            ratio = statistics.median(ours) / statistics.median(theirs)
            ratio_setup = statistics.median(ours_setup) / statistics.median(theirs)
            ratios.append(ratio)
            ratios_setup.append(ratio_setup)
            line += f"{_summary(theirs):>26}{ratio:>10.1f}x{ratio_setup:>12.1f}x"
        if base:
            speedup = statistics.median(ours_setup) / statistics.median(before)
            speedups.append(speedup)
            line += f"{_summary(before):>28}{speedup:>9.2f}x"
        print(line, flush=True)
    os.unlink(warm)
    if base:
        base.close()
    if ratios:
        print(f"ratio of medians over the cases, sim: {min(ratios):.1f}x .. {max(ratios):.1f}x; with set-up: "
              f"{min(ratios_setup):.1f}x .. {max(ratios_setup):.1f}x")
    if speedups:
        print(f"ours / baseline with set-up, ratio of medians over the cases: {min(speedups):.2f}x .. "
              f"{max(speedups):.2f}x")
    if args.process:
        _processes(binary, args.rounds)


def _processes(binary: str, rounds: int) -> None:
    path = _write(TORUS88 + "sample_period = 3334;\n")
    script = ROOT / ".venv" / "bin" / "hw-models"  # a checkout's own environment, else this interpreter's
    cli = [*([str(script)] if script.is_file() else [sys.executable, "-m", "hw_models"]), "noc", "run", "--booksim",
           path, "--out", tempfile.mkdtemp(prefix="noc_speed_")]
    ours, theirs = [], []
    try:
        for _ in range(rounds):
            if binary:
                t0 = time.perf_counter()
                subprocess.run([binary, path], capture_output=True, check=False, timeout=900)
                theirs.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run(cli, capture_output=True, check=True, timeout=900)
            ours.append(time.perf_counter() - t0)
    finally:
        os.unlink(path)
    print(f"\nwhole process, torus88 for about 20,000 cycles: hw-models noc run {statistics.median(ours):.2f} s "
          f"({min(ours):.2f}..{max(ours):.2f})" + (f", booksim {statistics.median(theirs):.2f} s "
                                                     f"({min(theirs):.2f}..{max(theirs):.2f})" if theirs else ""))


if __name__ == "__main__":
    main()
