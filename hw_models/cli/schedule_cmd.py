"""``hw-models schedule``: build all-reduce schedules, verify them, show steps, contention and bounds."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from nic.collectives import algorithm_choices
from hw_models.cli.options import Nis
from noc.base.errors import HwModelsError


def schedule(
    topology: str = typer.Option("torus:4x4", "--topology", "-t", help="Topology spec, e.g. torus:4x4, mesh:8x8:c4, fattree:k8:l2, bigraph:4x16."),
    algorithm: str = typer.Option("multitree", "--algorithm", "-a",
                                  help=f"Algorithm(s), comma-separated: {algorithm_choices()}."),
    nis: Nis = None,
    size: str = typer.Option("1MiB", "--size", help="All-reduce size for bytes per link and the ideal time, e.g. 64KiB, 16MiB."),
    tables: bool = typer.Option(False, "--tables", help="Print each node's schedule table."),
    node: Optional[int] = typer.Option(None, "--node", help="With --tables: only this node's table."),
    fmt: str = typer.Option("text", "--format", help="text, or json (the schedule as JSON, to --out or stdout)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="File for --format json."),
    verify_: bool = typer.Option(True, "--verify/--no-verify", help="Execute the schedule on exact integers first."),
) -> None:
    """Build all-reduce schedules and print steps, transfers, link load and the ideal time next to the bounds
    and the exact optimum."""
    from rich.console import Console

    from hw_models.config import NetworkConfig, resolve_topology
    from hw_models.schedule_report import build_rows, print_node_tables, print_summary
    from hw_models.store import check_output_file, replace_atomically
    from noc.base.units import parse_size_bytes
    from nic.collectives import algorithm_name

    if fmt not in ("text", "json"):
        raise HwModelsError(f"--format {fmt!r}: choose text or json")
    if node is not None and not tables:
        raise HwModelsError("--node selects the table --tables prints: add --tables")
    if out is not None and fmt != "json":
        raise HwModelsError("--out is where --format json writes the schedule: add --format json")
    t = resolve_topology(topology, nis)
    if node is not None and not 0 <= node < t.num_nodes:
        raise HwModelsError(f"--node {node}: {t.name} has nodes 0..{t.num_nodes - 1}")
    size_bytes = parse_size_bytes(size)
    if out is not None:
        check_output_file(out, "--out")
    names = [algorithm_name(a) for a in algorithm.split(",") if a.strip()]
    if not names:
        raise HwModelsError("--algorithm: give at least one algorithm")
    if fmt == "json" and len(names) != 1:
        raise HwModelsError("--format json writes one schedule: give one --algorithm")
    console = Console(stderr=fmt == "json", width=None if sys.stdout.isatty() else 120)
    rows = build_rows(t, names, size_bytes, verify_)
    print_summary(console, t, size_bytes, rows, verify_, NetworkConfig().clock_ghz)
    if tables:
        print_node_tables(console, rows, size_bytes, node)
    if fmt == "json":
        text = rows[0].schedule.to_json()
        if out is None:
            typer.echo(text)
        else:
            replace_atomically(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
            console.print(f"wrote {out}")
