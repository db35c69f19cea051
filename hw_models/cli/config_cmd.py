"""``hw-models config``: show a fully resolved experiment config."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from hw_models.cli.options import Preset

app = typer.Typer(help="Read and check experiment configs (TOML).", no_args_is_help=True)


@app.command()
def show(
    file: Optional[Path] = typer.Argument(None, help="TOML config file (omit to see the defaults)."),
    preset: Preset = None,
) -> None:
    """Print the config with every default filled in, as TOML, after the checks `hw-models allreduce` makes of it."""
    import tomli_w

    from hw_models.config import ExperimentConfig, experiment_data, validate
    from hw_models.experiment import resolve_experiment

    data, source = experiment_data(file, preset)
    cfg = validate(data, ExperimentConfig, source=source)
    # what no single key can check (an NI count against the spec's ':cN', two routings, a NIC
    # that is not one, algorithms and sizes that do not fit): the allreduce command's own checks
    exp = resolve_experiment(cfg, source)
    # TOML has no null: unset optional keys (router.flit_bytes) are left out, meaning their default
    data = cfg.model_dump(mode="json", exclude_none=True)
    if cfg.network.nis_given is None:  # the spec's own count (its ':cN'), which the printed key must not contradict
        data["network"]["nis_per_node"] = exp.topology.nis_per_node
    typer.echo(tomli_w.dumps(data), nl=False)
