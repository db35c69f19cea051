"""``hw-models schedule``: build all-reduce schedules, verify them, show steps, contention and bounds."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from nic.collectives import algorithm_choices
from noc.base.errors import HwModelsError


def schedule(
    topology: str = typer.Option("torus:4x4", "--topology", "-t", help="Topology spec, e.g. torus:4x4, mesh:8x8:c4, fattree:k8:l2, bigraph:4x16."),
    algorithm: str = typer.Option("multitree", "--algorithm", "-a",
                                  help=f"Algorithm(s), comma-separated: {algorithm_choices()}."),
    nis: Optional[int] = typer.Option(None, "--nis", help="NIs per node (direct networks; default: the spec's concentration)."),
    size: str = typer.Option("1MiB", "--size", help="All-reduce size for bytes per link and the ideal time, e.g. 64KiB, 16MiB."),
    tables: bool = typer.Option(False, "--tables", help="Print each node's schedule table."),
    node: Optional[int] = typer.Option(None, "--node", help="With --tables: only this node's table."),
    fmt: str = typer.Option("text", "--format", help="text, or json (the schedule as JSON, to --out or stdout)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="File for --format json."),
    verify_: bool = typer.Option(True, "--verify/--no-verify", help="Execute the schedule on exact integers first."),
) -> None:
    """Build all-reduce schedules and print steps, transfers, link load and the ideal time next to the bounds."""
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    from hw_models.config import resolve_topology
    from hw_models.store import check_output_file, replace_atomically
    from noc.base.units import format_size_bytes, parse_size_bytes
    from nic.nic_config import NicConfig
    from nic.preparation import check_size
    from nic.collectives import algorithm_name, bounds, build, contention, ideal_cycles, verify
    from nic.collectives.analysis import message_starts, transfer_paths

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
    routes = None  # each schedule routes only its own pairs (noc.routing.route_pairs)
    b = bounds(t, size_bytes)
    summary = Table(title=f"all-reduce of {format_size_bytes(size_bytes)} on {t.name} "
                          f"({t.num_nodes} nodes, {t.nis_per_node} NI(s) per node)")
    # messages: transfers of one step with the same sender and receiver travel together;
    # link/step: the most messages sharing a directed link in one step (1 = contention-free)
    for col in ("algorithm", "steps", "transfers", "messages", "link/step", "link bytes",
                "ideal cycles", "/bound"):
        summary.add_column(col, justify="right" if col != "algorithm" else "left")
    built = []
    for name in names:
        s = build(t, name)
        check_size(s, NicConfig(), size_bytes)
        if verify_:
            verify(s)
        c = contention(s, t, routes)
        off, flat = transfer_paths(s, t, routes)
        tb = s.transfer_elements(max(1, size_bytes // 4)) * 4
        link_bytes = np.bincount(flat, weights=np.repeat(tb, np.diff(off)), minlength=t.num_links)
        ideal = ideal_cycles(s, t, size_bytes, routes=routes)
        summary.add_row(name, str(s.num_steps), str(s.num_transfers), str(int(message_starts(s).sum())),
                        str(c.max_messages_per_link_step), format_size_bytes(int(link_bytes.max())),
                        f"{ideal:,.0f}", f"{ideal / b.injection_cycles:.2f}" if b.injection_cycles else "-")
        built.append(s)
    console.print(summary)
    console.print("link/step: most messages on one directed link in a step (1 = contention-free); "
                  "link bytes: busiest link over the run; /bound: ideal time over the injection bound")
    console.print(f"bounds: injection {b.injection_cycles:,.0f} cycles ({b.node_bytes_per_cycle:g} B/cycle per node), "
                  f"bisection {b.bisection_cycles:,.0f} cycles ({b.bisection_bytes_per_cycle:g} B/cycle), "
                  f"tree construction >= {b.min_tree_steps} steps"
                  + ("" if not verify_ else "; every schedule verified on exact integers"))
    for s in built:
        if s.algorithm == "multitree":
            console.print(f"multitree: {s.params['construction_steps']} construction steps, edges per step "
                          f"{s.params['edges_per_step']}")
    if tables:
        for s in built:
            nodes = range(s.num_nodes) if node is None else [node]
            for v in nodes:
                tab = Table(title=f"{s.algorithm}: node {v}")
                for col in ("step", "op", "flow", "peer", "waits for", "offset", "length"):
                    tab.add_column(col)
                for e in s.node_table(v, max(1, size_bytes // 4)):
                    kids = ",".join(map(str, e.children)) or "-"
                    tab.add_row(str(e.step), e.op_name, str(e.flow), str(e.peer), f"{kids} ({'reduce' if e.dep_op == 0 else 'gather'})",
                                str(e.offset), str(e.length))
                console.print(tab)
    if fmt == "json":
        text = built[0].to_json()
        if out is None:
            typer.echo(text)
        else:
            replace_atomically(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
            console.print(f"wrote {out}")
