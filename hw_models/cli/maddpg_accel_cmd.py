"""``hw-models maddpg accel``: the CPU-FPGA MADDPG accelerator model (maddpg.accel) over agent
counts, interconnects and engine sizes: a table, accel.csv and accel.png; ``--search``
adds every design point (search.csv) and the Pareto front (pareto.png). The work is
:mod:`hw_models.maddpg_accel_run`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from hw_models.cli.options import PRECEDENCE, Dask, FixedPoint, Workers
from hw_models.maddpg_accel_run import DEFAULT_INTERCONNECTS
from maddpg.accel import INTERCONNECTS
from maddpg.accel.parts import PARTS


def accel(
    agents: str = typer.Option("3,6,12", "--agents", help="Agent counts, comma-separated (2..64)."),
    interconnect: str = typer.Option(None, "--interconnect",
                                     help=f"Agent interconnects, comma-separated: {', '.join(INTERCONNECTS)} or any noc "
                                          "topology spec with enough endpoints (torus:2x2, fattree:k4:l2, ...) [default: the --config file's interconnect, else "
                                          f"{DEFAULT_INTERCONNECTS}]."),
    part: str = typer.Option("u250", "--part", help=f"FPGA part: {', '.join(PARTS)}."),
    env: str = typer.Option("simple_spread", "--env", help="MPE scenario whose shapes are trained."),
    batch: int = typer.Option(1024, "--batch", help="Minibatch size (1..65536)."),
    fixed_point: FixedPoint = None,
    engine: str = typer.Option("auto", "--engine", help="auto: per agent count and interconnect, the fastest engine "
                               "size that fits; or PExLANES for every layer array."),
    level: Optional[str] = typer.Option(None, "--level", help="Interconnect model: message (default) or flit."),
    semantics: Optional[str] = typer.Option(None, "--semantics", help="parallel (the engines update at once, "
                                            "default) or sequential (the trainer's agent order)."),
    pcie: Optional[str] = typer.Option(None, "--pcie", help="Host link, genGxL (e.g. gen4x8; default gen3x16)."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file of accelerator keys (docs/maddpg_accel.md); "
                                          f"{PRECEDENCE}."),
    cpu: str = typer.Option("measure", "--cpu", help="CPU baseline: measure (the float32 trainer timed on this machine, "
                            "cached in --cpu-cache), none (no throughput columns), or a profile JSON file."),
    cpu_cache: Path = typer.Option(Path("results/maddpg_accel/cpu"), "--cpu-cache",
                                   help="Where measured CPU profiles are kept and looked up."),
    seed: int = typer.Option(0, "--seed", help="Seed of the CPU measurement's training run."),
    search: bool = typer.Option(False, "--search", help="Also write every design of the search (search.csv) and its "
                                "Pareto front, update time against DSPs (pareto.png)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default results/maddpg_accel/"
                                       "<part>_<datapath>); existing outputs are never replaced."),
    workers: Workers = None,
    dask: Dask = None,
) -> None:
    """Time one MADDPG update on per-agent FPGA engines with an on-chip agent interconnect; print a table by phase,
    write accel.csv and accel.png (and with --search, search.csv and pareto.png)."""
    request = locals()  # the flags, by name: the request's fields
    from hw_models.maddpg_accel_run import AccelRequest, resolve, run

    run(resolve(AccelRequest(**request)))
