"""``hw-models topology``: describe a topology, write it as JSON or as a picture."""

from __future__ import annotations

from typing import Optional

import typer

from hw_models.topology_report import MAX_PNG_LINKS
from noc.base.errors import HwModelsError

app = typer.Typer(help="Build and describe network topologies.", no_args_is_help=True)

_SPEC_HELP = "Topology spec, e.g. torus:4x4, mesh:8x8:c4, fattree:k8:l2, bigraph:4x16, switch:16, full:8, hypercube:d4, ring:8."


@app.command()
def describe(
    spec: str = typer.Argument(..., help=_SPEC_HELP),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the topology as JSON to this file."),
    png_out: Optional[str] = typer.Option(
        None, "--png",
        help=f"Write a picture of the topology to this file; the name must end in .png (up to {MAX_PNG_LINKS:,} links)."),
    routing: str = typer.Option("auto", help="Routing to check for deadlock freedom: auto, dor, nca, shortest."),
    vcs: int = typer.Option(2, min=1, help="Virtual channels per port for the deadlock check."),
) -> None:
    """Print a topology's properties (size, degree, diameter, hops, bisection) and its routing's deadlock check."""
    from rich.console import Console

    from hw_models.console import table
    from hw_models.topology_report import check_png_size, describe_rows, writable_file, write_json, write_png
    from noc.routing import check_deadlock_free, check_deadlock_size, plan_route, route
    from noc.topology import parse_spec

    json_path = writable_file("--json", json_out)
    png_path = writable_file("--png", png_out, ".png")
    if json_path is not None and png_path is not None and json_path.resolve() == png_path.resolve():
        raise HwModelsError(f"--json and --png name the same file {json_out}")
    t = parse_spec(spec)  # refuses topologies too large to build, from their sizes
    if png_path is not None:
        check_png_size(t, png_out)
    # refuse a route table or deadlock check too large from their estimates, before building either
    _, width, classes = plan_route(t, routing)
    check_deadlock_size(t, classes, width)
    routes = route(t, routing)
    report = check_deadlock_free(t, routes, vcs)
    Console().print(table(f"topology {t.name}", ("property", "value"), describe_rows(t, routes, report), ("property",),
                          show_header=False))
    if not report.deadlock_free:
        typer.echo(report.describe(t))
    if json_path is not None:
        typer.echo(f"wrote {write_json(t, json_path, json_out)}")
    if png_path is not None:
        typer.echo(f"wrote {write_png(t, png_path, png_out)}")
