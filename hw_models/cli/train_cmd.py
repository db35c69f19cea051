"""``hw-models train``: training iterations end to end, workloads x all-reduce algorithms x policies.

The network, NIC and algorithms are checked as ``hw-models allreduce`` checks them
(:func:`hw_models.experiment.resolve_experiment`); the runs and tables are
:mod:`hw_models.training.endtoend`'s. Every run is a point of sweep kind ``training`` in the output directory's sweep store
(``<out>/runs.sqlite``; a re-run reuses it); the work is :mod:`hw_models.train_job`'s.
Outputs: ``<out>/train_<topology>_<model>_<policy>.csv`` and ``.png`` (replaced by the next
command of the same name, with a note when they held other runs), and on request a
Perfetto/Chrome trace and a Gantt PNG of one run (never replacing an existing file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from hw_models.cli.options import ConfigFile, ConfigOutDir, Dask, Device, Fresh, Nis, Preset, Seed, Topology, Workers
from hw_models.training.compute import DEFAULT_DEVICE, ENGINES
from hw_models.training.policies import POLICIES
from hw_models.training.workloads import WORKLOADS
from nic.collectives import algorithm_choices
from nic.variants import DESIGNS, VARIANTS

DEFAULT_BATCH = 16


def train(
    workloads: str = typer.Option("all", "--workloads", "-w", help=f"Comma-separated: all, {', '.join(WORKLOADS)}, "
                                  "a .json/.toml layer file (docs/training_workloads.md) or trace:PATH_PREFIX (Chakra ETs "
                                  "PATH_PREFIX.RANK.et)."),
    batch: int = typer.Option(DEFAULT_BATCH, "--batch", "-b", help="Samples per worker per iteration."),
    device: Device = DEFAULT_DEVICE,
    engine: str = typer.Option("closed-form", "--engine", help=f"Systolic-array timing: {' or '.join(ENGINES)} "
                               "(SCALE-Sim itself; slow)."),
    topology: Topology = None,
    nis: Nis = None,
    algorithms: Optional[str] = typer.Option(None, "--algorithms", "-a", help="Comma-separated all-reduce algorithms: "
                                             f"{algorithm_choices()} (default: the config's). Ring is always run: the "
                                             "reductions are against it."),
    nic: Optional[str] = typer.Option(None, "--nic", help=f"NIC design: {' or '.join(DESIGNS)} (default: the "
                                      "config's)."),
    variant: Optional[str] = typer.Option(None, "--variant", help="The MultiTree paper's NIC variants "
                                          f"{', '.join(VARIANTS)} (sets --nis and the NIC's flow control; as `hw-models "
                                          "allreduce`)."),
    model: str = typer.Option("message", "--model", help="All-reduce model: message (fast) or flit (cycle level, "
                              "slow)."),
    policy: str = typer.Option("wfbp", "--policy", "-p", help="Communication scheduling: "
                               f"{', '.join(POLICIES)}, a comma-separated list, or all."),
    fusion_threshold: Optional[str] = typer.Option(None, "--fusion-threshold", help="fusion: bucket size, e.g. 8MiB "
                                                   "or 0 (one bucket per layer; default 64MiB)."),
    slice_bytes: Optional[str] = typer.Option(None, "--slice-bytes", help="p3: slice size (default 1MiB)."),
    partition_bytes: Optional[str] = typer.Option(None, "--partition-bytes", help="prophet: cut gradients into "
                                                  "partitions of this size (default: whole gradients)."),
    strict: Optional[bool] = typer.Option(None, "--strict/--no-strict", help="prophet: idle the network when no "
                                          "gradient fits the time to the next one (default: --no-strict)."),
    dear_threshold: Optional[str] = typer.Option(None, "--dear-threshold", help="dear: bucket size, or 0 (default "
                                                 "25MiB)."),
    fused: Optional[bool] = typer.Option(None, "--fused/--per-layer", help="sequential: one all-reduce of all "
                                         "gradients, or one per layer (default)."),
    iterations: int = typer.Option(3, "--iterations", help="Iterations simulated (>= 2; figures are the mean of "
                                   "all but the first)."),
    config: ConfigFile = None,
    preset: Preset = None,
    out: ConfigOutDir("train") = None,
    seed: Seed = None,
    trace: Optional[Path] = typer.Option(None, "--trace", help="Write the Perfetto/Chrome trace JSON of one run "
                                         "(--trace-run) to this new file."),
    gantt: Optional[Path] = typer.Option(None, "--gantt", help="Write a Gantt PNG of one run (--trace-run) to this "
                                         "new file."),
    trace_run: Optional[str] = typer.Option(None, "--trace-run", help="WORKLOAD/ALGORITHM/POLICY of --trace and "
                                            "--gantt (default: the first workload, the last algorithm, the first "
                                            "policy)."),
    yes: bool = typer.Option(False, "--yes", help="Run what is estimated to take longer than 10 minutes: the "
                             "flit-level all-reduces, or the runs' iterations (runs x --iterations)."),
    fresh: Fresh = False,
    export_chakra: Optional[Path] = typer.Option(None, "--export-chakra", help="Write each workload's iteration as "
                                                 "Chakra ETs, one per node of the topology (DIR/NAME.RANK.et, as "
                                                 "ASTRA-sim reads them), and run nothing."),
    workers: Workers = None,
    dask: Dask = None,
) -> None:
    """Simulate training iterations: per workload, iteration time and reduction against ring; write CSV and PNG."""
    request = locals()  # the flags, by name: the request's fields
    from hw_models.train_job import TrainRequest, run_train

    run_train(TrainRequest(**request))
