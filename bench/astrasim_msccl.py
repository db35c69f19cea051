"""Our schedules inside ASTRA-sim 2: exported as MSCCL XML, converted by ASTRA-sim's own
converter, run by ASTRA-sim as custom collectives, beside our run of the same program.

    .venv/bin/python bench/astrasim_msccl.py reference --astrasim PATH/TO/AstraSim_Analytical_Congestion_Unaware \\
        --collectiveapi PATH/TO/collectiveapi --chakra PATH/TO/chakra-python-dir
    .venv/bin/python bench/astrasim_msccl.py compare [--markdown]

``reference`` builds each schedule of :data:`ALGORITHMS` on our topology of each network of
:data:`NETWORKS` (``nic.collectives.build``), writes it as MSCCL XML
(``nic.collectives.msccl.to_msccl_xml``) to ``bench/data/astrasim_msccl/<algorithm>_<network>.xml``,
converts it per size with ``astra-sim/collectiveapi``'s
``chakra_converter/et_converter.py --coll_size SIZE --collective allreduce`` (run with the
interpreter given, ``--chakra`` on its path: a directory holding the ``chakra`` package,
i.e. chakra's ``schema/protobuf`` with ``et_def_pb2.py`` made by ``protoc`` and its
``src/third_party``), runs ASTRA-sim with the ETs as ``all-reduce-implementation-custom``
(one all-reduce of SIZE, ``preferred-dataset-splits`` 1, the rest of
bench/astrasim_reference.py's system) and stores ``bench/data/astrasim_msccl.csv``.

``compare`` runs each stored XML with :func:`hw_models.training.astrasim_msccl.msccl_ns`
(our message-level simulator with ASTRA-sim's custom-collective semantics), the same with
the reductions at the system's ``local-mem-bw`` instead of the converter's hard-coded
50 GB/s, and, for reference, ASTRA-sim's native ring all-reduce in
:class:`hw_models.training.astrasim.AstraAnalytical` (one chunk; exact on the stored
native runs) on the same network, and prints them beside ASTRA-sim's time.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.astrasim_reference import (BANDWIDTH_GBPS, LATENCY_NS, _repo_commits, read_reference as read_rows,  # noqa: E402
                                      run_astrasim, write_inputs)
from hw_models.training.astrasim import ASTRA_SYSTEM, AstraAnalytical  # noqa: E402
from hw_models.training.astrasim_msccl import msccl_ns  # noqa: E402
from hw_models.training.chakra import EtNode, export_workload  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
XML_DIR = DATA / "astrasim_msccl"
DEFAULT_CSV = DATA / "astrasim_msccl.csv"
NETWORKS = {"Ring8": ("Ring", "ring:8"), "FullyConnected8": ("FullyConnected", "full:8"),
            "Switch8": ("Switch", "switch:8")}  # ASTRA-sim's dimension -> our topology
ALGORITHMS = ("multitree", "ring", "dbtree")
SIZES = (1 << 16, 1 << 20, 1 << 24)
SYSTEM = dict(ASTRA_SYSTEM, **{"preferred-dataset-splits": 1})
FIELDS = ["network", "topology", "algorithm", "size_bytes", "xml", "transfers", "astrasim_cycles", "astrasim_s"]


def xml_path(alg: str, net: str) -> Path:
    return XML_DIR / f"{alg}_{net}.xml"


def make_xml(alg: str, net: str) -> tuple[str, int]:
    from nic.collectives import build
    from nic.collectives.msccl import to_msccl_xml
    from noc.topology import parse_spec

    s = build(parse_spec(NETWORKS[net][1]), alg)
    return to_msccl_xml(s), s.num_transfers


def _git_head(p: Path) -> str:
    r = subprocess.run(["git", "-C", str(p), "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def reference(args) -> None:
    binary = Path(args.astrasim).resolve()
    capi = Path(args.collectiveapi).resolve()
    XML_DIR.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(Path(args.chakra).resolve()))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for net, (dim, topo) in NETWORKS.items():
            for alg in ALGORITHMS:
                text, transfers = make_xml(alg, net)
                xml = xml_path(alg, net)
                xml.write_text(text)
                for size in SIZES:
                    prefix = work / f"{alg}_{net}_{size}"
                    subprocess.run([args.python, str(capi / "chakra_converter" / "et_converter.py"),
                                    "--input_filename", str(xml), "--output_filename", str(prefix),
                                    "--coll_size", str(size), "--collective", "allreduce",
                                    "--log_filename", str(work / "converter.log")],
                                   check=True, env=env, capture_output=True, cwd=capi / "chakra_converter")
                    write_inputs(work, [dim], [8], "ring", SYSTEM, BANDWIDTH_GBPS, LATENCY_NS)
                    sysj = json.loads((work / "sys.json").read_text())
                    del sysj["all-reduce-implementation"]
                    sysj["all-reduce-implementation-custom"] = [str(prefix)]
                    (work / "sys.json").write_text(json.dumps(sysj, indent=1))
                    wl = export_workload(work / "wl", "coll", [EtNode(0, "allreduce", "allreduce", comm_bytes=size)], 8)
                    cycles = run_astrasim(binary, work, wl, 8, f"{alg} {net} {size}", 600)
                    rows.append({"network": net, "topology": topo, "algorithm": alg, "size_bytes": size,
                                 "xml": str(xml.relative_to(DATA.parent.parent)), "transfers": transfers,
                                 "astrasim_cycles": cycles, "astrasim_s": f"{cycles * 1e-9:.9g}"})
                    print(f"{net:16s} {alg:10s} {size:>10d} B {cycles:>12d} cycles", flush=True)
    with Path(args.out).open("w", newline="") as f:
        f.write(f"# ASTRA-sim 2 analytical congestion-unaware backend; {_repo_commits(binary.parents[4])}; "
                f"collectiveapi {_git_head(capi)}\n")
        f.write("# made by bench/astrasim_msccl.py reference: our schedule -> to_msccl_xml -> collectiveapi "
                "chakra_converter/et_converter.py --coll_size SIZE --collective allreduce -> ASTRA-sim "
                f"all-reduce-implementation-custom; {BANDWIDTH_GBPS} GB/s, {LATENCY_NS} ns; system "
                f"{json.dumps(SYSTEM, sort_keys=True)}; one cycle = 1 ns\n")
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} runs -> {args.out}")


def read_reference(path: Path = DEFAULT_CSV) -> list[dict]:
    return read_rows(path)


def model(net: str, alg: str = "ring") -> AstraAnalytical:
    return AstraAnalytical((NETWORKS[net][0],), (8,), BANDWIDTH_GBPS, LATENCY_NS, alg, splits=1)


def ours(row: dict) -> float:
    """Our message-level run of the stored XML with ASTRA-sim's custom-collective semantics (ns)."""
    text = (DATA.parent.parent / row["xml"]).read_text()
    return msccl_ns(text, model(row["network"]), int(row["size_bytes"]))


def compare(args) -> None:
    rows = read_reference(Path(args.csv))
    table = []
    for r in rows:
        m, size = model(r["network"]), int(r["size_bytes"])
        text = (DATA.parent.parent / r["xml"]).read_text()
        table.append((r, float(r["astrasim_cycles"]), ours(r), msccl_ns(text, m, size, m.reduce_ns),
                      m.collective_ns("allreduce", size)))
    print(f"{'network':16s} {'schedule':10s} {'bytes':>10s} {'ASTRA-sim us':>13s} {'ours us':>10s} {'dev %':>7s} "
          f"{'local-mem us':>13s} {'native ring us':>15s}   (1 cycle = 1 ns)")
    for r, peer, mine, local, native in table:
        print(f"{r['network']:16s} {r['algorithm']:10s} {int(r['size_bytes']):>10d} {peer / 1e3:>13.3f} "
              f"{mine / 1e3:>10.3f} {100 * (mine - peer) / peer:>7.3f} {local / 1e3:>13.3f} {native / 1e3:>15.3f}")
    if args.markdown:
        print("\n| network | schedule | size | ASTRA-sim µs | ours µs | deviation | ours, reductions at local-mem-bw µs "
              "| native ring (closed form) µs |")
        print("|---|---|---|---|---|---|---|---|")
        for r, peer, mine, local, native in table:
            size = int(r["size_bytes"])
            label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
            print(f"| {r['network']} | {r['algorithm']} | {label} | {peer / 1e3:,.3f} | {mine / 1e3:,.3f} | "
                  f"{100 * (mine - peer) / peer:+.3f} % | {local / 1e3:,.3f} | {native / 1e3:,.3f} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reference")
    r.add_argument("--astrasim", required=True, help="the AstraSim_Analytical_Congestion_Unaware binary")
    r.add_argument("--collectiveapi", required=True, help="a checkout of astra-sim/collectiveapi")
    r.add_argument("--chakra", required=True, help="a directory holding the chakra Python package")
    r.add_argument("--python", default=sys.executable, help="the interpreter that runs the converter")
    r.add_argument("--out", default=str(DEFAULT_CSV))
    c = sub.add_parser("compare")
    c.add_argument("--csv", default=str(DEFAULT_CSV))
    c.add_argument("--markdown", action="store_true", help="also print docs/validation.md's table")
    args = ap.parse_args(argv)
    reference(args) if args.cmd == "reference" else compare(args)


if __name__ == "__main__":
    main()
