"""``hw-models demo``: the main job of the README's first command.

The headline comparison of the MultiTree paper on its 4x4 torus with four NIs per node:
ring, 2D ring, double binary tree and MultiTree all-reduces from 32 KiB to 64 MiB, with the
co-designed and the baseline NIC, at message level (the model calibrated against the
flit-level co-simulation). Writes CSV and PNG under ``--out``; an interrupted run resumes.
"""

from __future__ import annotations

from pathlib import Path

import typer


def demo(
    out: Path = typer.Option(Path("results/demo"), help="Directory for the CSV, PNG and result store."),
    fresh: bool = typer.Option(False, "--fresh", help="Recompute instead of reusing finished runs."),
) -> None:
    """Compare all-reduce algorithms and NIC designs on a 4x4 torus with 4 NIs per node."""
    from hw_models.cli.allreduce_cmd import allreduce

    allreduce(topology="torus:4x4", nis=4, algorithms="ring,ring2d,dbtree,multitree", sizes="32KiB..64MiB",
              nic="both", model="message", config=None, preset=None, out=out, fresh=fresh, seed=None,
              variant=None, lockstep=None, step_priority=None, flow_control=None, packet_bytes=None, reduction=None,
              tree_order="ours", yes=False, trace=None)
