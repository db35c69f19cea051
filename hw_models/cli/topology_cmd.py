"""``hw-models topology``: describe a topology, write it as JSON or as a picture."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(help="Build and describe network topologies.", no_args_is_help=True)

_SPEC_HELP = "Topology spec, e.g. torus:4x4, mesh:8x8:c4, fattree:k8:l2, bigraph:4x16, switch:16, full:8, hypercube:d4, ring:8."


@app.command()
def describe(
    spec: str = typer.Argument(..., help=_SPEC_HELP),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the topology as JSON to this file."),
    png_out: Optional[Path] = typer.Option(None, "--png", help="Write a picture of the topology (PNG) to this file."),
    routing: str = typer.Option("auto", help="Routing to check for deadlock freedom: auto, dor, nca, shortest."),
    vcs: int = typer.Option(2, min=1, help="Virtual channels per port for the deadlock check."),
) -> None:
    """Print a topology's properties (size, degree, diameter, hops, bisection) and its routing's deadlock check."""
    from rich.console import Console
    from rich.table import Table

    from noc.routing import check_deadlock_free, route
    from noc.topology import parse_spec

    t = parse_spec(spec)
    summary = t.summary()
    routes = route(t, routing)
    report = check_deadlock_free(t, routes, vcs)

    table = Table(title=f"topology {t.name}", show_header=False)
    table.add_column("property")
    table.add_column("value", justify="right")
    labels = {
        "family": "family",
        "endpoints": "endpoints (NIs)",
        "routers": "routers / switches",
        "nodes": "nodes (collective participants)",
        "nis_per_node": "NIs per node (MultiTree kary - 1)",
        "links": "directed links (incl. NI links)",
        "router_links": "directed router-to-router links",
        "degree_min": "router degree (min)",
        "degree_max": "router degree (max)",
        "diameter": "diameter (router hops)",
        "average_hops": "average hops (distinct NI pairs)",
        "bisection_links": "bisection links (one direction)",
        "bisection_bytes_per_cycle": "bisection bandwidth (B/cycle, one direction)",
    }
    for key, label in labels.items():
        table.add_row(label, str(summary[key]))
    table.add_row("link bandwidth (B/cycle)", f"{float(t.link_bytes_per_cycle.min()):g}")
    table.add_row("link latency (cycles)", str(int(t.link_latency_cycles.min())))
    table.add_row(f"routing ({routes.algorithm}, {routes.num_vc_classes} VC class(es))", "deadlock-free" if report.deadlock_free else "CAN DEADLOCK")
    if t.is_direct:
        # MultiTree grows one tree per node over one-hop neighbours; report what it will see.
        table.add_row("MultiTree: trees / edges per tree", f"{t.num_nodes} / {t.num_nodes - 1}")
        table.add_row("MultiTree: messages per node per step", str(t.nis_per_node))
    else:
        table.add_row("MultiTree: trees / edges per tree", f"{t.num_nodes} / {t.num_nodes - 1} (paths through switches)")
    Console().print(table)
    if not report.deadlock_free:
        typer.echo(report.describe(t))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(t.to_json())
        typer.echo(f"wrote {json_out}")
    if png_out is not None:
        from hw_models.plots import draw_topology

        draw_topology(t, png_out)
        typer.echo(f"wrote {png_out}")
