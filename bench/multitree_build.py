"""Speed of the MultiTree construction (nic.collectives.multitree).

    .venv/bin/python bench/multitree_build.py [--sizes 4,8,16,32] [--nis 1,4]
    .venv/bin/python bench/multitree_build.py --sizes 32,64 --nis 4 --against 0b7c9e8 --rounds 3

Prints, per torus and NI count: construction steps, tree edges, the time of the tree
construction alone (Numba kernel, compiled beforehand) and of the whole Schedule
(construction + transfer arrays), best of --repeat runs.

``--against REV`` instead times the whole Schedule of this code and of
``nic/collectives/multitree.py`` at git revision REV side by side: both compiled first, then
--rounds rounds, each running the two one after the other (alternating which goes first),
printing per torus the median and the spread (min-max) of the wall times, the median CPU
times (on a shared machine the steadier figure) and whether the two schedules are identical,
array by array.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nic.collectives.multitree import multitree, multitree_trees  # noqa: E402
from noc.topology import torus  # noqa: E402


def best_of(repeat: int, fn):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _module_at(rev: str, cache_dir: Path):
    """nic/collectives/multitree.py as it was at ``rev``, imported from a file (so Numba can
    cache its kernels); it imports the rest of the package from this tree."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:nic/collectives/multitree.py"], check=True,
                          capture_output=True, text=True).stdout
    path = cache_dir / f"multitree_at_{rev}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _same(a, b) -> bool:
    return a == b and a.params == b.params


def against(rev: str, sizes, nis_list, rounds: int) -> int:
    with tempfile.TemporaryDirectory() as d:
        old = _module_at(rev, Path(d))
        old.multitree(torus((4, 4)))  # compile both outside the timings
        multitree(torus((4, 4)))
        print("wall s, median (min-max) of the rounds; CPU s of this process, median")
        print(f"{'topology':<16}{'nodes':>7}{'transfers':>11}  {'at ' + rev + ' wall':<20}{'cpu':>7}  "
              f"{'this code wall':<20}{'cpu':>7}{'cpu ratio':>11}  identical")
        bad = 0
        for k in sizes:
            for nis in nis_list:
                t = torus((k, k), c=nis)
                times = {"old": [], "new": []}
                cpu = {"old": [], "new": []}
                same = True
                for r in range(rounds):
                    order = (("old", old.multitree), ("new", multitree))
                    out = {}
                    for name, fn in (order if r % 2 == 0 else order[::-1]):
                        t0, c0 = time.perf_counter(), time.process_time()
                        out[name] = fn(t)
                        times[name].append(time.perf_counter() - t0)
                        cpu[name].append(time.process_time() - c0)
                    same = same and _same(out["old"], out["new"])
                    n_tr = out["new"].num_transfers
                    del out
                bad += not same

                def cell(xs):
                    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"

                c_old, c_new = statistics.median(cpu["old"]), statistics.median(cpu["new"])
                print(f"{t.name:<16}{t.num_nodes:>7}{n_tr:>11}  {cell(times['old']):<20}{c_old:>7.2f}  "
                      f"{cell(times['new']):<20}{c_new:>7.2f}{c_old / c_new:>10.2f}x  {'yes' if same else 'NO'}",
                      flush=True)
        return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4,8,16,32", help="torus sides k (k x k), comma-separated")
    ap.add_argument("--nis", default="1,4", help="NIs per node, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", metavar="REV", help="time this code against multitree.py at git revision REV")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds with --against (default 3)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    nis_list = [int(x) for x in args.nis.split(",")]
    if args.against:
        return against(args.against, sizes, nis_list, args.rounds)
    multitree_trees(torus((4, 4)))  # compile (or load the cache) outside the timings
    print(f"{'topology':<16}{'nodes':>7}{'steps':>7}{'edges':>10}{'trees s':>10}{'schedule s':>12}")
    for k in sizes:
        for nis in nis_list:
            t = torus((k, k), c=nis)
            rep = 1 if k >= 32 else args.repeat
            t_trees, (_, child, _, _, steps) = best_of(rep, lambda: multitree_trees(t))
            t_sched, _ = best_of(rep, lambda: multitree(t))
            print(f"{t.name:<16}{t.num_nodes:>7}{steps:>7}{len(child):>10}{t_trees:>10.3f}{t_sched:>12.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
