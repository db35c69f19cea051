"""``hw-models train-system``: the training-communication systems that co-designed all-reduce is
compared against -- gradient compression with error feedback, the parameter server, SSD-SGD,
the EASGD family, SPD-KFAC, DLion -- timed on a workload over the configured network and checked
for convergence on a small task. The work is :mod:`hw_models.training.systems.runner`'s;
this module checks input, resolves the network as ``hw-models train`` does, prints and writes.

Outputs: ``<out>/train_system_<system>_<topology>_<workload>_<hash>.csv`` (timing) and
``..._convergence.csv``, the hash covering every setting, so a run never replaces another
run's files (the same command writes the same bytes again).
"""

from __future__ import annotations

import functools
import inspect
from typing import Optional, get_args

import typer
from typer.core import TyperCommand, TyperGroup

from hw_models.cli.options import ConfigFile, ConfigOutDir, Device, Nis, Preset, Topology
from noc.base.errors import HwModelsError
from hw_models.training.compute import DEFAULT_DEVICE
from hw_models.training.systems import SYSTEMS
from hw_models.training.systems.compression import FIXES, SPECS
from hw_models.training.systems.dlion import TECHNIQUES
from hw_models.training.systems.easgd import VARIANTS
from hw_models.training.systems.ps import MODES
from hw_models.training.systems.setup import DEFAULT_COMPRESSORS, OWN, not_for
from hw_models.training.systems.ssd import MAX_DELAY
from hw_models.training.systems.tasks import MODELS
from nic.collectives import algorithm_choices


def train_system(
    system: str,
    workload: str = typer.Option("resnet50", "--workload", "-w", help="One built-in workload or a .json/.toml "
                                 "layer file (docs/training_workloads.md)."),
    batch: int = typer.Option(16, "--batch", "-b", help="Samples per worker per iteration (the workload)."),
    device: Device = DEFAULT_DEVICE,
    topology: Topology = None,
    nis: Nis = None,
    algorithm: Optional[str] = typer.Option(None, "--algorithm", "-a", help="The all-reduce of the synchronous "
                                            f"baseline: {algorithm_choices()} (default: the first of the config's "
                                            "allreduce.algorithms, ring)."),
    config: ConfigFile = None,
    preset: Preset = None,
    task: str = typer.Option("logreg", "--task", help=f"Convergence task on digits: {', '.join(MODELS)}, or none "
                             "(timing only)."),
    lr: Optional[float] = typer.Option(None, "--lr", help="Learning rate of the task (default: 0.1 logreg, 0.2 "
                                       "mlp)."),
    target: Optional[float] = typer.Option(None, "--target", help="Test accuracy to reach (default 0.95)."),
    max_iterations: int = typer.Option(1500, "--max-iterations", help="Iterations before a run counts as not "
                                       "reaching the target (1..100,000)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the task's split, shards and batches, and of the "
                             "stragglers."),
    out: ConfigOutDir("train_system") = None,
    yes: bool = typer.Option(False, "--yes", help="Run what is estimated to take longer than 10 minutes (the "
                             "convergence runs x --max-iterations)."),
    compressors: Optional[str] = typer.Option(None, "--compressors", help="compression: comma-separated "
                                              f"{SPECS} (default {DEFAULT_COMPRESSORS})."),
    fix: Optional[str] = typer.Option(None, "--fix", help=f"compression: {', '.join(FIXES)} (also run with this "
                                      "fix)."),
    average_every: Optional[int] = typer.Option(None, "--average-every", help="compression: error averaging "
                                                "period in iterations (default 10)."),
    servers: Optional[int] = typer.Option(None, "--servers", help="ps: number of servers (default 4)."),
    placement: Optional[str] = typer.Option(None, "--placement", help="ps: spread, first, or node indices "
                                            "'0,5,10' (default spread)."),
    modes: Optional[str] = typer.Option(None, "--modes", help=f"ps: comma-separated {', '.join(MODES)} "
                                        "(default sync,async,ssp:2)."),
    stragglers: Optional[str] = typer.Option(None, "--stragglers", help="Every system: per-worker "
                                             "slowdowns: none, slow:COUNT:FACTOR (the last COUNT workers FACTOR times "
                                             "slower), const:F0/F1/..., at:STEP:WORKER:FACTOR (a schedule), walk:SIGMA "
                                             "(a seeded random walk), lognormal:SIGMA (a mean-one lognormal per step), "
                                             "combined with + (default: ps slow:2:3; easgd none, which skips the event "
                                             "simulation; dlion slow:2:3+walk:0.1; compression, ssd, kfac none: "
                                             "with a profile, rows timed iteration by iteration on it)."),
    delays: Optional[str] = typer.Option(None, "--delays", help=f"ssd: comma-separated delays k, each 1..{MAX_DELAY} "
                                         "(default 1,2,4,8)."),
    variants: Optional[str] = typer.Option(None, "--variants", help=f"easgd: comma-separated {', '.join(VARIANTS)} "
                                           "(default all)."),
    alpha: Optional[float] = typer.Option(None, "--alpha", help="easgd: elastic moving rate (default 0.9 / "
                                          "workers)."),
    tau: Optional[int] = typer.Option(None, "--tau", help="easgd: local steps between exchanges (default 1)."),
    inverse_efficiency: Optional[float] = typer.Option(None, "--inverse-efficiency", help="kfac: share of the "
                                                       "device's peak FLOP rate a factor inversion reaches "
                                                       "(default 0.05)."),
    links: Optional[str] = typer.Option(None, "--links", help="Every system: per-node link slowdowns, the "
                                        "--stragglers profiles (a link as slow as its slower end; default: dlion "
                                        "slow:4:8+walk:0.1, the others none)."),
    techniques: Optional[str] = typer.Option(None, "--techniques", help="dlion: all (none, each alone, all "
                                             f"together), or comma-separated sets of {', '.join(TECHNIQUES)} "
                                             "joined with + (default all)."),
    transfer_every: Optional[int] = typer.Option(None, "--transfer-every", help="dlion: rounds between knowledge "
                                                 "transfers (default 20)."),
    mp_keep: Optional[float] = typer.Option(None, "--mp-keep", help="compression with -w ncf: DCT's "
                                            "model-parallel compression, the share of the embedding/MLP "
                                            "boundary's values kept per sample (default: not run)."),
) -> None:
    """Time a training system on a workload over the network and check its convergence on a small task
    (the body of every ``hw-models train-system SYSTEM`` command)."""
    # SYSTEM and the options another system's are checked as the arguments are parsed (_SystemGroup, _SystemCommand)
    flags = locals()  # every option, by name
    from hw_models.train_system_run import run_train_system

    run_train_system(flags.pop("system"), **flags)


# --- one subcommand per system, each with the common options and its own ------------------


class _SystemGroup(TyperGroup):
    """``train-system SYSTEM ...``: an unknown SYSTEM is one line naming the systems there are."""

    def parse_args(self, ctx, args):
        if not args:
            raise HwModelsError(f"missing argument SYSTEM: one of {', '.join(SYSTEMS)}")
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx, args):
        if args and not args[0].startswith("-"):
            name = args[0].strip().lower()
            if name not in SYSTEMS:
                raise HwModelsError(f"SYSTEM {args[0]!r}: unknown (allowed: {', '.join(SYSTEMS)})")
            args = [name, *args[1:]]
        return super().resolve_command(ctx, args)


class _SystemCommand(TyperCommand):
    """A system's command: another system's option is refused naming the systems it is for."""

    def parse_args(self, ctx, args):
        for arg in args:
            flag = arg.split("=", 1)[0]
            why = not_for(flag, self.name) if flag in OWN else None
            if why:
                raise HwModelsError(f"{flag} {why}; leave it out")
        return super().parse_args(ctx, args)


def _flag(p: inspect.Parameter) -> str:
    """A parameter's first flag, from its default (typer.Option) or its Annotated alias."""
    if isinstance(p.default, typer.models.OptionInfo):
        return p.default.param_decls[0]
    info = get_args(p.annotation)[1]  # in an Annotated alias typer.Option's first argument is the flag
    return info.default


def _system_command(system: str):
    """The command of ``system``: :func:`train_system`'s options less the other systems'."""
    full = inspect.signature(train_system, eval_str=True)
    keep = [p for name, p in full.parameters.items() if name != "system"
            and (_flag(p) not in OWN or not not_for(_flag(p), system))]

    others = {name: None for name in full.parameters if name != "system" and name not in {p.name for p in keep}}

    @functools.wraps(train_system)
    def command(**options) -> None:
        train_system(system, **others, **options)  # the other systems' options: not given

    command.__signature__ = full.replace(parameters=keep)
    command.__annotations__ = {p.name: p.annotation for p in keep}
    command.__doc__ = SYSTEMS[system].summary
    return command


app = typer.Typer(cls=_SystemGroup,
                  help="Time a training system on a workload over the network and check its convergence on a "
                       "small task: one subcommand per system, each with its own options.")
for _name in SYSTEMS:
    app.command(name=_name, cls=_SystemCommand, help=SYSTEMS[_name].summary)(_system_command(_name))
