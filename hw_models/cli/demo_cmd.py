"""``hw-models demo``: the main job of the README's first command."""

from __future__ import annotations

from pathlib import Path

import typer


def demo(
    out: Path = typer.Option(Path("results/demo"), help="Directory for the JSON and PNG it writes."),
) -> None:
    """Describe a 4x4 torus with 1 and 4 NIs per node: the network MultiTree runs on."""
    from hw_models.cli.topology_cmd import describe

    for spec in ("torus:4x4", "torus:4x4:c4"):
        stem = spec.replace(":", "_")
        describe(spec, json_out=out / f"{stem}.json", png_out=out / f"{stem}.png", routing="auto", vcs=2)
