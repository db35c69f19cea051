"""The flit level against BookSim2 itself, point by point.

    .venv/bin/python bench/booksim_validate.py reference --booksim PATH/TO/booksim [--out CSV] [--quick]
    .venv/bin/python bench/booksim_validate.py compare [--csv CSV] [--quick] [--out CSV]
    .venv/bin/python bench/booksim_validate.py examples --booksim PATH/TO/booksim
    .venv/bin/python bench/booksim_validate.py reference --matrix trees --booksim PATH/TO/booksim
    .venv/bin/python bench/booksim_validate.py compare --matrix trees

``reference`` runs BookSim2 (a binary built from its public source, outside this
repository) on every point of the matrix below and writes its final statistics (the
"Overall Traffic Statistics" block, not a per-sample line) to the reference CSV that the
tests read, with BookSim2's commit and the settings in the file's header. A point whose
run BookSim2 ends as unstable has ``verdict = unstable`` and no figures.

``compare`` runs this package's flit level on the same points, from the same BookSim2 keys
(noc.booksim_config), and prints per point and in summary how far it is from BookSim2:
packet latency, accepted flit rate and the stability verdict.

``examples`` runs BookSim2's own example files (runfiles/meshconfig, src/examples/mesh88_lat,
src/examples/torus88, from the source tree the binary was built in) unchanged in both
simulators, and writes BookSim2's final blocks to bench/data/booksim_examples.txt with
ours (or the key that blocks the file here) beside each.

Matrix (each row lists every key it sets; all others are BookSim2's defaults: islip
allocators, routing delay 1, VC and switch allocation 1, crossbar 1, credit delay 0,
2-cycle torus channels, 3 warm-up periods of 1000 cycles, latency_thres 500):
4x4 and 8x8 mesh and torus; five patterns (uniform, transpose, bitcomp, tornado,
neighbor); packets of 1, 4 and 20 flits; 2 VCs x 8 flits; loads from 0.02 flits/node/cycle
to past saturation; seed 0. On the 8x8 networks also 4 VCs x 4 flits and 16 VCs x 32 flits
(uniform), and seed 1 for the uniform points.

``--matrix trees`` is the second matrix (its own CSV, booksim_reference_trees.csv): the
concentrated mesh and the fat trees, hotspot traffic and on/off injection. BookSim2's
cmesh 4x4 with 4 nodes per router (c = 4, x = y = 4, xr = yr = 2; its 2-cycle channels)
and routing dor_no_express; fattree k = 4 with n = 2 and n = 3 levels (16 and 64 nodes),
routing nca; 4 VCs x 8 flits; 1-flit packets; traffic uniform and
hotspot({{0,5,10,15},{2,1,1,1}}) (BookSim2 splits parameters at braces: node 0 takes 2/5
of the packets); injection bernoulli and on_off (burst_alpha = burst_beta = 0.5); four
loads per network and traffic, from near zero load to 40-64 % of the bound of the busiest
link (the hotspot's ejection link, the cmesh's bisection, the fat tree's NI links) and one
at 70-90 % of it; seeds 0, 1 and 2.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFAULT_CSV = Path(__file__).resolve().parent / "data" / "booksim_reference.csv"
KEYS = ["topology", "k", "n", "routing_function", "num_vcs", "vc_buf_size", "traffic", "packet_size",
        "injection_rate", "injection_rate_uses_flits", "seed"]
FIGURES = ["verdict", "packet_latency_avg", "packet_latency_min", "packet_latency_max", "network_latency_avg",
           "flit_latency_avg", "injected_flit_rate", "accepted_flit_rate", "accepted_packet_rate", "hops_avg",
           "time_taken_cycles", "wall_s"]
LOADS = (0.02, 0.1, 0.2, 0.3, 0.4, 0.55, 0.7)
PATTERNS = ("uniform", "transpose", "bitcomp", "tornado", "neighbor")
TREES_CSV = DEFAULT_CSV.with_name("booksim_reference_trees.csv")
TREES_KEYS = ["topology", "k", "n", "c", "routing_function", "num_vcs", "vc_buf_size", "traffic", "injection_process",
              "packet_size", "injection_rate", "injection_rate_uses_flits", "seed"]
HOTSPOT = "hotspot({{0,5,10,15},{2,1,1,1}})"
# (topology, k, n, routing) -> {traffic: loads in flits/node/cycle}; the hotspots take 2/5 of
# the traffic at most, so a 16-node network saturates NI 0's ejection link at 1/(16 * 0.4)
TREES_NETS = {
    ("cmesh", 4, 2, "dor_no_express"): {"uniform": (0.01, 0.08, 0.15, 0.2), HOTSPOT: (0.002, 0.012, 0.024, 0.034)},
    ("fattree", 4, 2, "nca"): {"uniform": (0.01, 0.2, 0.4, 0.7), HOTSPOT: (0.005, 0.05, 0.1, 0.14)},
    ("fattree", 4, 3, "nca"): {"uniform": (0.01, 0.2, 0.4, 0.7), HOTSPOT: (0.002, 0.012, 0.024, 0.034)},
}


def trees_matrix(quick: bool = False) -> list[dict]:
    """The second matrix's points, as BookSim2 keys."""
    rows = []
    for (topo, k, n, rf), loads in TREES_NETS.items():
        for traffic, process, seed in itertools.product(("uniform", HOTSPOT), ("bernoulli", "on_off"), (0, 1, 2)):
            for load in loads[traffic]:
                rows.append({"topology": topo, "k": k, "n": n, "c": 4 if topo == "cmesh" else 1, "routing_function": rf,
                             "num_vcs": 4, "vc_buf_size": 8, "traffic": traffic, "injection_process": process,
                             "packet_size": 1, "injection_rate": load, "injection_rate_uses_flits": 1, "seed": seed})
    if quick:
        rows = [r for r in rows if r["seed"] == 0]
    return rows


def matrix(quick: bool = False) -> list[dict]:
    """The points, as BookSim2 keys."""
    rows = []
    nets = [("mesh", 4), ("mesh", 8), ("torus", 4), ("torus", 8)]
    for (topo, k), pattern, size in itertools.product(nets, PATTERNS, (1, 4, 20)):
        rows += [_row(topo, k, 2, 8, pattern, size, load, 0) for load in LOADS]
    for (topo, k), (vcs, buf), size in itertools.product([("mesh", 8), ("torus", 8)], [(4, 4), (16, 32)], (1, 4, 20)):
        rows += [_row(topo, k, vcs, buf, "uniform", size, load, 0) for load in LOADS]
    for (topo, k), size in itertools.product(nets, (1, 4, 20)):
        rows += [_row(topo, k, 2, 8, "uniform", size, load, 1) for load in LOADS]
    if quick:
        rows = [r for r in rows if r["k"] == 4 and r["packet_size"] in (1, 4)]
    return rows


def _row(topo: str, k: int, vcs: int, buf: int, pattern: str, size: int, load: float, seed: int) -> dict:
    return {"topology": topo, "k": k, "n": 2, "routing_function": "dor" if topo == "mesh" else "dim_order",
            "num_vcs": vcs, "vc_buf_size": buf, "traffic": pattern, "packet_size": size, "injection_rate": load,
            "injection_rate_uses_flits": 1, "seed": seed}


def _keys(row: dict) -> list[str]:
    return TREES_KEYS if "injection_process" in row else KEYS


def config_text(row: dict) -> str:
    text = "".join(f"{k} = {row[k]};\n" for k in _keys(row))
    if row["topology"] == "cmesh":  # BookSim2's cmesh asserts x == y and c == xr * yr
        text += f"x = {row['k']};\ny = {row['k']};\nxr = 2;\nyr = 2;\n"
    return text


def booksim_values(row: dict) -> dict:
    """A CSV row's keys as BookSim2 values (for noc.booksim_config.from_booksim)."""
    out = {}
    for k in _keys(row):
        v = row[k]
        if isinstance(v, str):
            v = float(v) if k == "injection_rate" else (int(v) if re.fullmatch(r"-?\d+", v) else v)
        out[k] = v
    if out["topology"] == "cmesh":
        out.update(x=out["k"], y=out["k"], xr=2, yr=2)
    return out


_FINAL = {
    "Packet latency average": "packet_latency_avg", "Network latency average": "network_latency_avg",
    "Flit latency average": "flit_latency_avg", "Injected flit rate average": "injected_flit_rate",
    "Accepted flit rate average": "accepted_flit_rate", "Accepted packet rate average": "accepted_packet_rate",
    "Hops average": "hops_avg",
}


def parse_final_block(text: str) -> dict:
    """BookSim2's final statistics, or ``verdict = unstable`` when it printed none."""
    start = text.find("====== Overall Traffic Statistics ======")
    if start < 0:
        return {"verdict": "unstable"}
    block = text[start:]
    out: dict = {"verdict": "stable"}
    current = None
    for line in block.splitlines():
        m = re.match(r"\s*(.+?)\s*=\s*([-+0-9.eE]+|nan|inf)\s*\(", line)
        if not m:
            continue
        name, value = m.group(1), float(m.group(2))
        if not line.startswith("\t"):
            current = _FINAL.get(name)
            if current:
                out[current] = value
        elif current == "packet_latency_avg" and name in ("minimum", "maximum"):
            out[f"packet_latency_{'min' if name == 'minimum' else 'max'}"] = value
    taken = re.findall(r"Time taken is (\d+) cycles", text)
    if taken:
        out["time_taken_cycles"] = int(taken[-1])
    return out


def booksim_commit(binary: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(binary.resolve().parent), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_booksim(binary: Path, row: dict, timeout_s: float = 900) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write(config_text(row))
        path = f.name
    try:
        t0 = time.perf_counter()
        proc = subprocess.run([str(binary), path], capture_output=True, text=True, timeout=timeout_s)
        wall = time.perf_counter() - t0
    finally:
        os.unlink(path)
    out = parse_final_block(proc.stdout)
    if out["verdict"] == "stable" and proc.returncode not in (0, 255):
        raise SystemExit(f"BookSim2 failed on {row}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    if out["verdict"] == "unstable" and "unstable" not in proc.stdout:
        raise SystemExit(f"BookSim2 printed no final block and no unstable verdict for {row}:\n{proc.stdout[-2000:]}"
                         f"\n{proc.stderr[-2000:]}")
    out["wall_s"] = round(wall, 3)
    return out


def read_reference(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def reference(args: argparse.Namespace) -> None:
    binary = Path(args.booksim)
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise SystemExit(f"--booksim {binary}: not an executable file (build BookSim2 from its public source first)")
    trees = args.matrix == "trees"
    rows, keys = (trees_matrix(args.quick), TREES_KEYS) if trees else (matrix(args.quick), KEYS)
    out = Path(args.out or (TREES_CSV if trees else DEFAULT_CSV))
    done = {}
    if out.exists():  # resume: keep the points already run with the same binary
        done = {tuple(r[k] for k in keys): r for r in read_reference(out)}
    commit = booksim_commit(binary)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tmp.open("w", newline="") as f:
        f.write(f"# BookSim2 reference statistics (final 'Overall Traffic Statistics' block), commit {commit}\n")
        f.write(f"# made by bench/booksim_validate.py reference{' --matrix trees' if trees else ''}; each row lists "
                "every key it sets, all other keys are BookSim2's defaults"
                f"{' (cmesh rows also set x = y = k, xr = yr = 2)' if trees else ''}\n")
        w = csv.DictWriter(f, fieldnames=keys + FIGURES)
        w.writeheader()
        t0 = time.perf_counter()
        for i, row in enumerate(rows):
            key = tuple(str(row[k]) for k in keys)
            res = done.get(key)
            if res is None:
                res = {**row, **run_booksim(binary, row)}
            w.writerow({k: res.get(k, "") for k in keys + FIGURES})
            f.flush()
            print(f"[{i + 1}/{len(rows)}] {config_text(row).replace(chr(10), ' ')} -> {res.get('verdict')} "
                  f"{res.get('packet_latency_avg', '')} ({time.perf_counter() - t0:.0f} s)", flush=True)
    os.replace(tmp, out)
    print(f"wrote {out} ({len(rows)} points, BookSim2 commit {commit})")


def compare_point(row: dict):
    """(BookSim2's row, this package's RunStats) for one reference row."""
    from noc.booksim_config import from_booksim
    from noc.flit_traffic import run_traffic

    run = from_booksim(booksim_values(row), source="reference row")
    return run_traffic(run.topology, run.network, run.traffic)


def deviations(row: dict, stats) -> dict:
    """Latency and accepted-rate deviation (%) and whether the verdicts agree."""
    ours_stable = bool(stats.stable)
    theirs_stable = row["verdict"] == "stable"
    out = {"verdict_booksim": row["verdict"], "verdict_ours": "stable" if ours_stable else "unstable",
           "verdicts_agree": ours_stable == theirs_stable, "latency_dev_pct": math.nan, "accepted_dev_pct": math.nan}
    if ours_stable and theirs_stable:
        out["latency_dev_pct"] = 100 * (stats.latency_avg / float(row["packet_latency_avg"]) - 1)
        out["accepted_dev_pct"] = 100 * (stats.accepted_flits / float(row["accepted_flit_rate"]) - 1)
    return out


def compare(args: argparse.Namespace) -> None:
    trees = args.matrix == "trees"
    rows = read_reference(Path(args.csv or (TREES_CSV if trees else DEFAULT_CSV)))
    keys = TREES_KEYS if trees else KEYS
    if args.quick:
        rows = [r for r in rows if (r["seed"] == "0" if trees else r["k"] == "4" and r["packet_size"] in ("1", "4"))]
    results = []
    t0 = time.perf_counter()
    for i, row in enumerate(rows):
        stats = compare_point(row)
        d = deviations(row, stats)
        results.append({**{k: row[k] for k in keys}, **d, "latency_booksim": row.get("packet_latency_avg", ""),
                        "latency_ours": round(stats.latency_avg, 3), "accepted_booksim": row.get("accepted_flit_rate", ""),
                        "accepted_ours": round(stats.accepted_flits, 5)})
        print(f"[{i + 1}/{len(rows)}] {row['topology']}{row['k']}n{row['n']} {row['traffic']} "
              f"{row.get('injection_process', '')} {row['packet_size']}f "
              f"{row['num_vcs']}x{row['vc_buf_size']} load {row['injection_rate']} seed {row['seed']}: "
              f"BookSim2 {row['verdict']} {row.get('packet_latency_avg', '')}, ours {d['verdict_ours']} "
              f"{stats.latency_avg:.2f} ({d['latency_dev_pct']:+.2f} %, accepted {d['accepted_dev_pct']:+.2f} %) "
              f"[{time.perf_counter() - t0:.0f} s]", flush=True)
    both = [r for r in results if r["verdict_booksim"] == "stable" and r["verdict_ours"] == "stable"]
    within = sum(abs(r["latency_dev_pct"]) <= 5 and abs(r["accepted_dev_pct"]) <= 2 for r in both)
    agree = sum(r["verdicts_agree"] for r in results)
    print(f"\n{len(results)} points: verdicts agree on {agree}; stable in both: {len(both)}, of which {within} within "
          f"5 % latency and 2 % accepted rate")
    if both:
        devs = sorted(abs(r["latency_dev_pct"]) for r in both)
        print(f"latency deviation |median| {devs[len(devs) // 2]:.2f} %, max {devs[-1]:.2f} %")
    if args.out:
        with open(args.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(results[0]))
            w.writeheader()
            w.writerows(results)
        print(f"wrote {args.out}")


EXAMPLES = ("runfiles/meshconfig", "src/examples/mesh88_lat", "src/examples/torus88")


def examples(args: argparse.Namespace) -> None:
    from noc.booksim_config import from_booksim, read_booksim
    from noc.base.errors import ConfigError
    from noc.flit_traffic import run_traffic

    binary = Path(args.booksim).resolve()
    tree = binary.parent.parent  # the binary is src/booksim in its source tree
    out = [f"# BookSim2's example files run unchanged, commit {booksim_commit(binary)}; "
           "made by bench/booksim_validate.py examples", ""]
    for rel in EXAMPLES:
        path = tree / rel
        proc = subprocess.run([str(binary), path.name], capture_output=True, text=True, cwd=path.parent, timeout=900)
        start = proc.stdout.find("====== Overall Traffic Statistics ======")
        block = proc.stdout[start:].strip() if start >= 0 else "(no final block: unstable)"
        try:
            run = from_booksim(read_booksim(path), rel)
            s = run_traffic(run.topology, run.network, run.traffic)
            ours = (f"this package: packet latency {s.latency_avg:.4f} (min {s.latency_min:.0f}, max "
                    f"{s.latency_max:.0f}), network latency {s.network_latency_avg:.4f}, accepted flit rate "
                    f"{s.accepted_flits:.6f}, hops {s.hops_avg + 1:.4f}")
        except ConfigError as exc:
            ours = f"this package refuses it: {exc}"
        out += [f"## {rel}", block, ours, ""]
        print(f"{rel}: {ours}", flush=True)
    dest = Path(args.out)
    dest.write_text("\n".join(out))
    print(f"wrote {dest}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reference", help="run BookSim2 on the matrix and write the reference CSV")
    r.add_argument("--booksim", required=True, help="path of a BookSim2 binary built from its public source")
    r.add_argument("--out", default="", help=f"default {DEFAULT_CSV.name}, or {TREES_CSV.name} with --matrix trees")
    r.add_argument("--matrix", choices=("grids", "trees"), default="grids",
                   help="grids: mesh and torus; trees: cmesh and fattree, hotspot and on_off (default grids)")
    r.add_argument("--quick", action="store_true", help="grids: the 4x4 points with 1- and 4-flit packets only; "
                                                          "trees: seed 0 only")
    c = sub.add_parser("compare", help="run the flit level on the reference points and print the deviations")
    c.add_argument("--csv", default="", help="default: the matrix's reference CSV")
    c.add_argument("--matrix", choices=("grids", "trees"), default="grids")
    c.add_argument("--quick", action="store_true", help="the 4x4 points with 1- and 4-flit packets only")
    c.add_argument("--out", default="", help="also write the per-point comparison to this CSV")
    e = sub.add_parser("examples", help="BookSim2's own example files in both simulators")
    e.add_argument("--booksim", required=True, help="src/booksim in a BookSim2 source tree")
    e.add_argument("--out", default=str(DEFAULT_CSV.with_name("booksim_examples.txt")))
    args = ap.parse_args()
    {"reference": reference, "compare": compare, "examples": examples}[args.cmd](args)


if __name__ == "__main__":
    main()
