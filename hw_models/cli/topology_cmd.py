"""``hw-models topology``: describe a topology, write it as JSON or as a picture."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional

import typer

from noc.base.errors import HwModelsError

app = typer.Typer(help="Build and describe network topologies.", no_args_is_help=True)

# matplotlib draws a link in ~0.25 ms: 20,000 links take ~5 s, and a picture of more is a blur
MAX_PNG_LINKS = 20_000

_SPEC_HELP = "Topology spec, e.g. torus:4x4, mesh:8x8:c4, fattree:k8:l2, bigraph:4x16, switch:16, full:8, hypercube:d4, ring:8."


def _out_file(flag: str, raw: Optional[str], suffix: Optional[str] = None) -> Optional[Path]:
    """The file ``flag`` names, checked before any work: a non-empty name (ending in ``suffix``
    when given) that is not a directory, in a directory we can write to (missing parent
    directories are created when the file is written)."""
    if raw is None:
        return None
    if not raw.strip():
        raise HwModelsError(f"{flag}: empty file name")
    if raw.endswith(("/", os.sep)):
        raise HwModelsError(f"{flag} {raw}: names a directory; give a file name")
    path = Path(raw)
    if path.is_dir():
        raise HwModelsError(f"{flag} {raw}: is a directory; give a file name")
    if suffix is not None and path.suffix.lower() != suffix:
        raise HwModelsError(f"{flag} {raw}: the file name must end in {suffix}")
    anc = path.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise HwModelsError(f"{flag} {raw}: {anc} is not a directory")
    if path.exists() and not os.access(path, os.W_OK):
        raise HwModelsError(f"{flag} {raw}: not writable")
    try:  # creating a file is the one sure test (root passes os.access even on /proc)
        with tempfile.NamedTemporaryFile(dir=anc, prefix=".hw-models-", suffix=".probe"):
            pass
    except OSError as exc:
        raise HwModelsError(f"{flag} {raw}: cannot create a file in {anc} ({exc.strerror or exc})") from None
    return path


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
    from rich.table import Table

    from noc.routing import check_deadlock_free, check_deadlock_size, plan_route, route
    from noc.topology import parse_spec

    json_path = _out_file("--json", json_out)
    png_path = _out_file("--png", png_out, ".png")
    if json_path is not None and png_path is not None and json_path.resolve() == png_path.resolve():
        raise HwModelsError(f"--json and --png name the same file {json_out}")
    t = parse_spec(spec)  # refuses topologies too large to build, from their sizes
    if png_path is not None and t.num_links > MAX_PNG_LINKS:
        raise HwModelsError(f"--png {png_out}: {t.name} has {t.num_links:,} directed links, too many to draw "
                            f"(limit {MAX_PNG_LINKS:,}, about 5 s)")
    # refuse a route table or deadlock check too large from their estimates, before building either
    _, width, classes = plan_route(t, routing)
    check_deadlock_size(t, classes, width)
    routes = route(t, routing)
    report = check_deadlock_free(t, routes, vcs)
    summary = t.summary()

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
    if json_path is not None:
        from hw_models.store import replace_atomically

        text = t.to_json()
        try:
            replace_atomically(json_path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        except OSError as exc:
            raise HwModelsError(f"--json {json_out}: {exc.strerror or exc}") from None
        typer.echo(f"wrote {json_path}")
    if png_path is not None:
        from hw_models.plots import draw_topology

        try:
            written = draw_topology(t, png_path)  # the .png suffix makes matplotlib write exactly this file
        except OSError as exc:
            raise HwModelsError(f"--png {png_out}: {exc.strerror or exc}") from None
        typer.echo(f"wrote {written}")
