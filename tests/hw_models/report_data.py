"""Small result files for the report tests: all-reduce results of chosen cycle counts (the
tables and bandwidths are then the project's own functions of them), as the allreduce
command's CSV and as a sweep store."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from hw_models.allreduce_sweep import table_rows
from hw_models.store import write_csv_atomic
from hw_models.sweep.store import PointRecord, SweepStore, point_key
from nic.result import AllreduceResult

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SIZES = (32768, 65536, 131072)
# total cycles per (topology, algorithm, nic): cycles grow with size, algorithms differ
BASE = {"ring": 4000.0, "multitree": 3500.0, "dbtree": 7000.0}


def results() -> list[AllreduceResult]:
    out = []
    for topo, n in (("torus:4x4", 16), ("mesh:4x4", 16)):
        for nic, slow in (("codesigned", 1.0), ("baseline", 1.1)):
            for size in SIZES:
                for alg, base in BASE.items():
                    cycles = base * slow * size / SIZES[0] * (1.3 if topo.startswith("mesh") else 1.0) + len(alg)
                    out.append(AllreduceResult(topology=topo, algorithm=alg, nic=nic, model="message", size_bytes=size,
                                               num_nodes=n, nis_per_node=1, total_cycles=cycles, clock_ghz=1.0,
                                               bound_cycles=3000.0 * size / SIZES[0], verified=True, seed=1))
    return out


def write_csv(path: Path, res=None) -> Path:
    """The allreduce command's CSV rows (its table, speedup over ring included), of each
    topology in turn (the command writes one CSV per topology)."""
    res = results() if res is None else res
    topos = dict.fromkeys(r.topology for r in res)
    return write_csv_atomic(path, [row for t in topos for row in table_rows([r for r in res if r.topology == t])])


def write_store(path: Path, res=None) -> Path:
    with SweepStore(path) as store:
        for r in results() if res is None else res:
            config = {"algorithm": r.algorithm, "size_bytes": r.size_bytes, "model": r.model, "topology": r.topology,
                      "nic": {"design": r.nic}, "seed": r.seed, "schedule_options": {}}
            versions = {"message_model": 1}
            store.put(PointRecord(point_key("allreduce", config, versions), "allreduce", "done", config, versions,
                                  r.row(), None, 0.01, "test", "test"))
    return path


def write_load_store(path: Path) -> tuple[Path, dict]:
    """noc_load points: latency = 10 / (1 - load / capacity) per topology (capacity 0.5, 0.4)."""
    expected: dict[str, dict[float, float]] = {}
    with SweepStore(path) as store:
        for topo, cap in (("mesh:4x4", 0.5), ("torus:4x4", 0.4)):
            for rate in (0.05, 0.1, 0.2, 0.3):
                lat = round(10.0 / (1 - rate / cap), 3)
                expected.setdefault(topo, {})[rate] = lat
                config = {"network": {"topology": topo}, "traffic": {"rate_packets": rate, "seed": 1}}
                metrics = {"offered_flits": rate, "accepted_flits": rate, "latency_avg": lat, "stable": True}
                store.put(PointRecord(point_key("noc_load", config, {}), "noc_load", "done", config, {}, metrics, None,
                                      0.01, "test", "test"))
    return path, expected


def figures_decoded(page: Path, profile: Path) -> tuple[int, int]:
    """(figures decoded, figures on the page) of HTML report ``page`` as headless Chromium
    loads it (``--dump-dom``: the counts the page's script writes into its body)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--dump-dom", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    body = re.search(r"<body[^>]*>", proc.stdout)
    assert body, proc.stderr[-2000:]
    loaded = re.search(r'data-figures-loaded="(\d+)"', body.group(0))
    total = re.search(r'data-figures-total="(\d+)"', body.group(0))
    assert loaded and total, body.group(0)
    return int(loaded.group(1)), int(total.group(1))
