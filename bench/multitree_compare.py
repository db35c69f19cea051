"""Our all-reduce models against the MultiTree paper's public simulator, run for run.

Reads bench/data/multitree_reference.csv (the peer's cycles, made by
bench/multitree_reference.py), simulates each finished run here as
:mod:`hw_models.paper` sets it up (the isca2021 presets, the peer's trees and NIC
variants), and prints and writes both tools' cycles, the deviation, both tools' reduction
cycles and the MultiTree-over-ring ratios.

    python bench/multitree_compare.py                       # every run, flit level
    python bench/multitree_compare.py --max-kib 1024 --topologies torus4x4
    python bench/multitree_compare.py --out /tmp/compare.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "bench" / "data" / "multitree_reference.csv"


def read_reference(path: Path = REFERENCE) -> list[dict]:
    """The peer's finished runs (status ok), with integer sizes and cycles."""
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "ok"]
    for r in rows:
        r["size_bytes"] = int(r["size_bytes"])
        r["total_cycles"] = int(r["total_cycles"])
        r["computation_cycles"] = int(r["computation_cycles"]) if r["computation_cycles"] else None
    return rows


def our_run_name(variant: str) -> str:
    """The peer's variants without its idle-step timer (``*_nolock``) are ours: our lockstep
    has no such timer."""
    return variant.removesuffix("_nolock")


def compare(rows: list[dict], model: str = "flit", progress=None) -> list[dict]:
    from hw_models.paper import paper_run

    out = []
    for r in rows:
        t0 = time.perf_counter()
        res = paper_run(r["topology"], our_run_name(r["variant"]), r["size_bytes"], model)
        ours = res.total_cycles
        out.append({"topology": r["topology"], "variant": r["variant"], "size_bytes": r["size_bytes"],
                    "peer_cycles": r["total_cycles"], "our_cycles": int(ours),
                    "deviation_percent": round((ours / r["total_cycles"] - 1) * 100, 2),
                    "peer_reduce_cycles": r["computation_cycles"],
                    "our_reduce_cycles": res.extra.get("reduce_busy_cycles_max"), "model": model,
                    "seconds": round(time.perf_counter() - t0, 2)})
        if progress:
            progress(out[-1])
    return out


def speedups(results: list[dict]) -> list[dict]:
    """MultiTree (each variant) over ring, per tool, where both runs exist."""
    by = {(r["topology"], r["variant"], r["size_bytes"]): r for r in results}
    out = []
    for (topo, var, size), r in sorted(by.items()):
        ring = by.get((topo, "ring", size))
        if var in ("ring",) or ring is None:
            continue
        out.append({"topology": topo, "variant": var, "size_bytes": size,
                    "peer_speedup": round(ring["peer_cycles"] / r["peer_cycles"], 3),
                    "our_speedup": round(ring["our_cycles"] / r["our_cycles"], 3)})
    return out


def markdown(results: list[dict]) -> str:
    """One table per topology: a row per run, a column per size, ours against the peer in %."""
    out = []
    for topo in dict.fromkeys(r["topology"] for r in results):
        rows = [r for r in results if r["topology"] == topo]
        sizes = sorted({r["size_bytes"] for r in rows})
        head = [f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB" for s in sizes]
        out += [f"{topo}, ours against the peer (%):", "", "| run | " + " | ".join(head) + " |",
                "|---|" + "---|" * len(sizes)]
        for var in dict.fromkeys(r["variant"] for r in rows):
            cell = {r["size_bytes"]: f"{r['deviation_percent']:+.1f}" for r in rows if r["variant"] == var}
            out.append(f"| {var} | " + " | ".join(cell.get(s, "") for s in sizes) + " |")
        out.append("")
    sp = [x for x in speedups(results) if x["variant"] in ("alpha", "alpha_nolock", "beta", "delta")]
    sizes = sorted({x["size_bytes"] for x in sp})
    head = [f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB" for s in sizes]
    out += ["MultiTree over ring, the peer / ours:", "", "| run | " + " | ".join(head) + " |",
            "|---|" + "---|" * len(sizes)]
    for key in dict.fromkeys((x["topology"], x["variant"]) for x in sp):
        cell = {x["size_bytes"]: f"{x['peer_speedup']:.2f} / {x['our_speedup']:.2f}" for x in sp
                if (x["topology"], x["variant"]) == key}
        out.append(f"| {key[0]} {key[1]} | " + " | ".join(cell.get(s, "") for s in sizes) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, default=REFERENCE)
    ap.add_argument("--topologies", nargs="+", default=None, help="torus4x4 mesh4x4 torus8x8 (default: all)")
    ap.add_argument("--variants", nargs="+", default=None)
    ap.add_argument("--max-kib", type=int, default=None, help="only sizes up to this many KiB")
    ap.add_argument("--model", default="flit", choices=("flit", "message"))
    ap.add_argument("--out", type=Path, default=None, help="CSV of the comparison (refuses to overwrite)")
    ap.add_argument("--markdown", action="store_true", help="also print the deviations as Markdown tables")
    a = ap.parse_args(argv)
    if not a.reference.is_file():
        print(f"error: --reference {a.reference}: no such file", file=sys.stderr)
        return 2
    if a.out is not None and a.out.exists():
        print(f"error: --out {a.out} exists; give a new file", file=sys.stderr)
        return 2
    rows = [r for r in read_reference(a.reference)
            if (a.topologies is None or r["topology"] in a.topologies)
            and (a.variants is None or r["variant"] in a.variants)
            and (a.max_kib is None or r["size_bytes"] <= a.max_kib * 1024)]
    print(f"{len(rows)} runs of the peer; ours at {a.model} level", flush=True)

    def show(r):
        print(f"{r['topology']:9} {r['variant']:12} {r['size_bytes'] >> 10:6d} KiB  peer {r['peer_cycles']:9d}  "
              f"ours {r['our_cycles']:9d}  {r['deviation_percent']:+7.1f} %  reduce {r['peer_reduce_cycles']}/"
              f"{r['our_reduce_cycles']}  ({r['seconds']} s)", flush=True)

    results = compare(rows, a.model, show)
    within = sum(abs(r["deviation_percent"]) <= 10 for r in results)
    print(f"within 10 %: {within} of {len(results)}")
    print("MultiTree and baselines over ring (peer / ours):")
    for s in speedups(results):
        print(f"  {s['topology']:9} {s['variant']:12} {s['size_bytes'] >> 10:6d} KiB  {s['peer_speedup']:.2f}x / "
              f"{s['our_speedup']:.2f}x")
    if a.markdown:
        print(markdown(results))
    if a.out is not None:
        with open(a.out, "x", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(results[0]))
            w.writeheader()
            w.writerows(results)
        print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
