"""TACOS's all-gather beside ours, under TACOS's α–β link model; stored for tests/nic/test_tacos_reference.py.

Peer: github.com/astra-sim/tacos (MIT, C++17), built outside the repo with g++ (its CMake
file asks for CMake 3.26; the library is seven plain C++17 files, compiled here directly)
together with bench/tacos_driver.cpp, our command-line driver over its public API
(``Mesh2D``/``Torus2D``/``Torus3D``/``Hypercube3D``, ``AllGather``, ``Synthesizer::solve``):

    git clone https://github.com/astra-sim/tacos PEER
    .venv/bin/python bench/tacos_reference.py --peer PEER [--out CSV] [--only CASE ...]
    .venv/bin/python bench/tacos_reference.py --table     # the docs' table, from the CSV

For every case of :data:`CASES` (a TACOS topology and the ``noc`` spec of the same network,
as many NIs per node as its most links, so that, as in TACOS, a node may drive all its
links at once) and every buffer size of :data:`SIZES`, the driver prints TACOS's links
(the bench checks they are our router links, node ``x + X y + X Y z`` both sides) and runs
the synthesiser :data:`TRIALS` times: TACOS seeds its random tie-breaks from
``std::random_device``, so its time varies between runs and the CSV keeps the least, the
median and the largest. TACOS runs with one chunk per NPU (its example's setting is three)
and with as many as our ``forest`` schedule has flows per node, so that its chunks are the
size of ours. Our side (:func:`ours`) is the ``forest`` schedule's all-gather timed by
:func:`nic.collectives.alphabeta.all_gather_time` under the same model; the bandwidth
bound is ForestColl's cut optimum (:func:`nic.collectives.optimal_bound`), which neither
side can beat (the links' α comes on top of it).
"""

from __future__ import annotations

import argparse
import csv
import functools
import hashlib
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from nic.scheduler import OP_GATHER  # noqa: E402
from noc.topology import Topology, parse_spec  # noqa: E402

DEFAULT_CSV = REPO / "bench" / "data" / "tacos_reference.csv"
DRIVER = REPO / "bench" / "tacos_driver.cpp"
# case -> (TACOS topology class argument, (X, Y, Z), our spec)
CASES = {
    "mesh2d_4x4": ("mesh2d", (4, 4, 1), "mesh:4x4:c4"),
    "mesh2d_8x8": ("mesh2d", (8, 8, 1), "mesh:8x8:c4"),
    "torus2d_4x4": ("torus2d", (4, 4, 1), "torus:4x4:c4"),
    "torus2d_8x8": ("torus2d", (8, 8, 1), "torus:8x8:c4"),
    "torus3d_4x4x4": ("torus3d", (4, 4, 4), "torus:4x4x4:c6"),
    "hypercube3d_2x2x2": ("hypercube3d", (2, 2, 2), "hypercube:d3:c3"),
    "hypercube3d_4x4x4": ("hypercube3d", (4, 4, 4), "mesh:4x4x4:c6"),
}
SIZES = (1 << 20, 64 << 20)
BANDWIDTH_GIBPS = 50.0  # TACOS's example link: 50 GiB/s, 0.5 us
LATENCY_US = 0.5
TRIALS = 5
FIELDS = ["case", "our_topology", "nodes", "buffer_bytes", "chunks_per_npu", "chunk_bytes", "bandwidth_gibps",
          "latency_us", "tacos_time_us_min", "tacos_time_us_median", "tacos_time_us_max", "tacos_solve_ms_median",
          "trials", "tacos_links_sha256", "ours_chunks_per_npu", "ours_time_us", "peer_commit", "settings"]
SETTINGS = "AllGather(npus, chunks_per_npu); Synthesizer().solve(topology, collective, buffer // (npus * chunks))"


def bytes_per_us(gibps: float) -> float:
    """TACOS's conversion of a link's GiB/s to bytes/µs."""
    return gibps * (1 << 30) / 1e6


def links_sha256(pairs) -> str:
    """Digest of a set of directed (src, dst) links."""
    text = "\n".join(f"{s} {d}" for s, d in sorted(set(pairs)))
    return hashlib.sha256(text.encode()).hexdigest()


def our_links(t: Topology) -> list[tuple[int, int]]:
    from nic.collectives.alphabeta import router_link_bandwidth  # noqa: PLC0415

    return list(router_link_bandwidth(t))


@functools.lru_cache(maxsize=None)
def forest_schedule(spec: str):
    """Our ``forest`` schedule on ``spec`` and its build's CPU seconds."""
    from nic.collectives import build  # noqa: PLC0415

    t0 = time.process_time()
    s = build(parse_spec(spec), "forest")
    return s, time.process_time() - t0


def ours(spec: str, buffer_bytes: int, gibps: float = BANDWIDTH_GIBPS, latency_us: float = LATENCY_US) -> dict:
    """Our ``forest`` all-gather on ``spec`` under the α–β model, and the bandwidth bound (µs)."""
    from nic.collectives import optimal_bound  # noqa: PLC0415
    from nic.collectives.alphabeta import all_gather_time, router_link_bandwidth  # noqa: PLC0415

    t = parse_spec(spec)
    s, build_s = forest_schedule(spec)
    rate = bytes_per_us(gibps)
    slowest = min(router_link_bandwidth(t).values())
    bound = float(optimal_bound(t).all_gather_cycles(buffer_bytes)) * slowest / rate
    g = s.op == OP_GATHER
    _, per_link = np.unique(s.src[g].astype(np.int64) * s.num_nodes + s.dst[g], return_counts=True)
    chunk_us = buffer_bytes / s.num_flows / rate  # one chunk's β on a slowest link
    return {"chunks_per_npu": s.num_flows // s.num_nodes,
            "time_us": all_gather_time(s, t, buffer_bytes, alpha=latency_us, bytes_per_time=rate),
            "bound_us": bound, "build_cpu_s": build_s, "busiest_link_chunks": int(per_link.max()),
            "bound_link_chunks": bound / chunk_us}


def build_driver(peer: Path, out: Path) -> Path:
    """Compile the peer's library with our driver into ``out`` (g++, C++17, -O2 -DNDEBUG)."""
    sources = sorted(str(p) for p in (peer / "src").glob("*/*.cpp"))
    cmd = ["g++", "-std=c++17", "-O2", "-DNDEBUG", f"-I{peer / 'include'}", f"-I{peer / 'include' / 'tacos'}",
           str(DRIVER), *sources, "-o", str(out)]
    subprocess.run(cmd, check=True)
    return out


def run_driver(exe: Path, kind: str, dims, buffer_bytes: int, chunks: int, trials: int) -> dict:
    out = subprocess.run([str(exe), kind, *map(str, dims), str(BANDWIDTH_GIBPS), str(LATENCY_US), str(buffer_bytes),
                          str(chunks), str(trials)], check=True, capture_output=True, text=True).stdout
    links, times, solve, chunk = [], [], [], None
    for line in out.splitlines():
        f = line.split()
        if f[0] == "link":
            links.append((int(f[1]), int(f[2])))
        elif f[0] == "chunk_bytes":
            chunk = int(f[1])
        elif f[0] == "trial":
            times.append(float(f[3]))
            solve.append(float(f[5]) / 1000)
    return {"links": links, "times": times, "solve_ms": solve, "chunk_bytes": chunk}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", type=Path, help="TACOS source tree (include/, src/)")
    ap.add_argument("--table", action="store_true", help="print the docs' table from the stored CSV")
    ap.add_argument("--out", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--only", nargs="*", default=None, help=f"cases to run (default all: {', '.join(CASES)})")
    args = ap.parse_args(argv)
    if args.table:
        print(table(read_reference(args.out)))
        return 0
    if args.peer is None:
        print("tacos_reference: --peer PATH is required (or --table)", file=sys.stderr)
        return 2
    unknown = sorted(set(args.only or ()) - set(CASES))
    if unknown:
        print(f"tacos_reference: unknown case {unknown[0]!r}; choose from {', '.join(CASES)}", file=sys.stderr)
        return 2
    commit = subprocess.run(["git", "-C", str(args.peer), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    exe = build_driver(args.peer, args.peer.parent / "tacos_driver")
    rows = []
    for case in args.only or CASES:
        kind, dims, spec = CASES[case]
        t = parse_spec(spec)
        for size in SIZES:
            mine = ours(spec, size)
            for chunks in sorted({1, mine["chunks_per_npu"]}):
                r = run_driver(exe, kind, dims, size, chunks, TRIALS)
                if links_sha256(r["links"]) != links_sha256(our_links(t)):
                    raise SystemExit(f"tacos_reference: {case}: TACOS's links are not {spec}'s router links")
                rows.append({
                    "case": case, "our_topology": spec, "nodes": t.num_nodes, "buffer_bytes": size,
                    "chunks_per_npu": chunks, "chunk_bytes": r["chunk_bytes"], "bandwidth_gibps": BANDWIDTH_GIBPS,
                    "latency_us": LATENCY_US, "tacos_time_us_min": repr(min(r["times"])),
                    "tacos_time_us_median": repr(statistics.median(r["times"])),
                    "tacos_time_us_max": repr(max(r["times"])),
                    "tacos_solve_ms_median": f"{statistics.median(r['solve_ms']):.3f}", "trials": TRIALS,
                    "tacos_links_sha256": links_sha256(r["links"]), "ours_chunks_per_npu": mine["chunks_per_npu"],
                    "ours_time_us": repr(mine["time_us"]), "peer_commit": commit, "settings": SETTINGS})
                print(f"{case} {size >> 20} MiB chunks {chunks}: TACOS {min(r['times']):.2f}.."
                      f"{max(r['times']):.2f} us, ours {mine['time_us']:.2f} us (K={mine['chunks_per_npu']}), "
                      f"bound {mine['bound_us']:.2f} us", flush=True)
    done = {(r["case"], r["buffer_bytes"], r["chunks_per_npu"]) for r in rows}
    old = [r for r in (read_reference(args.out) if args.out.exists() else [])
           if (r["case"], int(r["buffer_bytes"]), int(r["chunks_per_npu"])) not in done]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(old + rows)
    return 0


def read_reference(path: Path = DEFAULT_CSV) -> list[dict]:
    with Path(path).open(newline="") as fh:
        return list(csv.DictReader(fh))


def table(rows: list[dict]) -> str:
    """Markdown: per case and size, TACOS (least of its trials, its chunk count and ours),
    ours and the bandwidth bound, all computed under the α–β model (ours and the bound live)."""
    out = ["| network | M | bound (µs) | ours `forest` (µs) | TACOS, 1 chunk/NPU (µs) | TACOS, our chunks (µs) "
           "| ours / TACOS best | ours' busiest link (chunks; the cut's) |", "|---|---|---|---|---|---|---|---|"]
    by = {}
    for r in rows:
        by.setdefault((r["case"], int(r["buffer_bytes"])), []).append(r)
    for (case, size), rs in by.items():
        mine = ours(rs[0]["our_topology"], size, float(rs[0]["bandwidth_gibps"]), float(rs[0]["latency_us"]))
        t1 = [float(r["tacos_time_us_min"]) for r in rs if int(r["chunks_per_npu"]) == 1]
        tk = [float(r["tacos_time_us_min"]) for r in rs if int(r["chunks_per_npu"]) == mine["chunks_per_npu"]]
        best = min(t1 + tk)
        out.append(f"| `{rs[0]['our_topology']}` | {size >> 20} MiB | {mine['bound_us']:.1f} | {mine['time_us']:.1f} "
                   f"(K={mine['chunks_per_npu']}) | {t1[0]:.1f} | {tk[0]:.1f} | {mine['time_us'] / best:.3f} "
                   f"| {mine['busiest_link_chunks']} ({mine['bound_link_chunks']:.4g}) |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
