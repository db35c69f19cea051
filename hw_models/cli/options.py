"""The options several commands share, declared once: typer ``Annotated`` aliases that a
command's signature names with its default, e.g. ``topology: Topology = None``.

Below the commands (every ``*_cmd.py`` may import it; it imports none of them). An option
one command alone takes stays in that command's signature.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from hw_models.presets import PRESETS
from hw_models.training.compute import device_choices

Topology = Annotated[Optional[str], typer.Option("--topology", "-t", help="Topology spec (default: the config's, "
                                                 "torus:4x4).")]
Nis = Annotated[Optional[int], typer.Option("--nis", help="NIs per node on direct networks (default: the config's).")]
PRECEDENCE = "a flag given overrides the file's key, a flag left out never does"
ConfigFile = Annotated[Optional[Path], typer.Option("--config", help="Experiment TOML (see `hw-models config "
                                                    f"show`); {PRECEDENCE}.")]
Seed = Annotated[Optional[int], typer.Option("--seed", help="Seed of the all-reduce verifier's random input vectors, an "
                                             "integer in [0, 2**32 - 1] (the timing models are deterministic; "
                                             "default: the config's).")]
Device = Annotated[str, typer.Option("--device", help=f"Compute device preset: {device_choices()}.")]
Preset = Annotated[Optional[str], typer.Option("--preset", help=f"A named config instead of a file: "
                                                f"{', '.join(PRESETS)}.")]
Workers = Annotated[Optional[int], typer.Option("--workers", "-j", help="Local worker processes for the runs "
                                                "(default 0: in this process), as `hw-models sweep` runs points.")]
Dask = Annotated[Optional[str], typer.Option("--dask", help="Run on an existing Dask distributed cluster: its "
                                             "scheduler's address, e.g. tcp://host:8786 (workers need hw-models "
                                             "installed).")]
Fresh = Annotated[bool, typer.Option("--fresh", help="Run again the runs already in the output directory's sweep "
                                     "store (runs.sqlite); their new rows replace the old (default: reuse them, "
                                     "resume).")]
FixedPoint = Annotated[Optional[str], typer.Option(
    "--fixed-point", metavar="BITS.FRAC", help="Fixed-point datapath: every kernel output rounded to a signed "
    "BITS-bit Q-format with FRAC fraction bits, saturating (e.g. 16.10). Default: float32.")]
EnvBackend = Annotated[str, typer.Option("--env-backend", help="auto: the scenario's Numba port if it has one "
                                         "(simple_spread, simple), else mpe2; port; mpe2. Same results either way.")]
Results = Annotated[Path, typer.Argument(help="A sweep store (.sqlite) or a CSV a command wrote.")]
Where = Annotated[List[str], typer.Option("--where", help="KEY=VALUE: keep only the rows where KEY is VALUE "
                                          "(repeatable).")]
Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace an existing output file.")]
Simulator = Annotated[str, typer.Option("--sim", help="Simulator: verilator or icarus.")]
Waves = Annotated[bool, typer.Option("--waves", help="Dump waveforms (FST on Icarus, VCD on Verilator); same as "
                                     "WAVES=1.")]


def ConfigOutDir(command: str):  # noqa: N802 (an alias, named as the others)
    """``--out`` of a command whose output directory is, by default, the config's
    ``run.out_dir``/``command``."""
    return Annotated[Optional[Path], typer.Option("--out", "-o", help="Output directory (default: the config's "
                                                  f"run.out_dir/{command}).")]
