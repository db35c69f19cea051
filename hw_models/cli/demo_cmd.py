"""``hw-models demo``: the main job of the README's first command.

The headline comparison of the MultiTree paper on its 4x4 torus with four NIs per node:
ring, 2D ring, double binary tree and MultiTree all-reduces from 32 KiB to 64 MiB, with the
co-designed and the baseline NIC, at message level (the model calibrated against the
flit-level co-simulation): the plan :data:`hw_models.allreduce_job.DEMO`. Writes CSV and PNG
under ``--out``, every run in its sweep store (``runs.sqlite``); an interrupted run resumes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer


def demo(
    out: Path = typer.Option(Path("results/demo"), help="Directory for the CSV, PNG and result store."),
    fresh: bool = typer.Option(False, "--fresh", help="Recompute instead of reusing finished runs."),
) -> None:
    """Compare all-reduce algorithms and NIC designs on a 4x4 torus with 4 NIs per node."""
    from hw_models.allreduce_job import DEMO, run_allreduce

    run_allreduce(dataclasses.replace(DEMO, out=out, fresh=fresh))
