"""``hw-models allreduce``: the headline comparison of all-reduce algorithms and NIC designs."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from hw_models.cli.options import ConfigFile, ConfigOutDir, Dask, Fresh, Nis, Preset, Seed, Topology, Workers
from nic.collectives import DEFAULT_ALGORITHMS, algorithm_choices
from nic.variants import DESIGNS, variant_help


def allreduce(
    topology: Topology = None,
    nis: Nis = None,
    algorithms: Optional[str] = typer.Option(
        None, "--algorithms", "-a", help=f"Comma-separated: {algorithm_choices()} "
        f"(default: the config's, {','.join(DEFAULT_ALGORITHMS)}, leaving out those the topology does not fit). "
        "Ring is always run: the speedups are over it."),
    sizes: Optional[str] = typer.Option(None, "--sizes", "-s", help="e.g. 32KiB..64MiB (doubling) or 1MiB,16MiB "
                                        "(default: the config's, 32KiB..4MiB)."),
    nic: Optional[str] = typer.Option(None, "--nic", help="NIC design: "
                                      + ", ".join(f"{name} ({what})" for name, what in DESIGNS.items())
                                      + ", or both (default: the config's [nic] design, codesigned)."),
    variant: Optional[str] = typer.Option(None, "--variant", help=f"The MultiTree paper's NIC variants: {variant_help()}; "
                                          "co-designed NIC with lockstep and step priority. Sets --nis; the switches "
                                          "below override its parts."),
    lockstep: Optional[bool] = typer.Option(None, "--lockstep/--no-lockstep", help="Strict lockstep from schedule "
                                            "tables (the co-designed NIC) or send-when-ready (the baseline NIC)."),
    step_priority: Optional[bool] = typer.Option(None, "--step-priority/--no-step-priority", help="Packets carry "
                                                 "their schedule step as switch priority (default: the design's)."),
    flow_control: Optional[str] = typer.Option(None, "--flow-control", help="bulk (one head flit per transfer) or "
                                               "packet (one per --packet-bytes); default: the design's."),
    packet_bytes: Optional[int] = typer.Option(None, "--packet-bytes", help="Payload bytes per packet in packet mode "
                                               "(default: the config's, 256)."),
    tree_order: str = typer.Option("ours", "--tree-order", help="MultiTree's trees: ours, or paper (as the paper's "
                                   "public implementation builds them; 2D torus and mesh)."),
    reduction: Optional[str] = typer.Option(None, "--reduction", help="free, chunk (the node sums a REDUCE once it is "
                                            "all in) or stream (as it arrives); rate and latency from [nic]."),
    model: str = typer.Option("message", "--model", help="message (fast, any size), flit (cycle-level reference), "
                              "or both (and the message model's deviation from the flit level)."),
    config: ConfigFile = None,
    preset: Preset = None,
    out: ConfigOutDir("allreduce") = None,
    fresh: Fresh = False,
    seed: Seed = None,
    yes: bool = typer.Option(False, "--yes", help="Run flit-level runs estimated to take longer than 10 minutes "
                             "(without it they are refused, with the estimate)."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="Also write a Chrome/Perfetto trace JSON of every run "
                                         "to this new file: a track per NI and per busy link, a slice per transfer "
                                         "(docs/reports.md)."),
    workers: Workers = None,
    dask: Dask = None,
) -> None:
    """Simulate all-reduces and print cycles and time, bus bandwidth, speedup over ring and % of the bound; write CSV and PNG."""
    request = locals()  # the flags, by name: the request's fields
    from hw_models.allreduce_job import AllreduceRequest, run_allreduce

    run_allreduce(AllreduceRequest(**request))
