"""The ``hw-models`` command.

Each command group lives in its own module (``*_cmd.py``) and is registered here. Heavy
imports (numba kernels, matplotlib) happen inside the commands, so ``--help`` is instant.

Errors caused by user input (:class:`noc.errors.HwModelsError`) are printed on one line and
exit with status 2, never as a traceback.
"""

from __future__ import annotations

import sys

import typer

from hw_models import __version__
from hw_models.cli import config_cmd, demo_cmd, topology_cmd
from hw_models.cli import allreduce_cmd, rtl_cmd, schedule_cmd
from hw_models.cli import noc_cmd
from noc.errors import HwModelsError

app = typer.Typer(
    name="hw-models",
    help="Algorithm-architecture co-design of communication in distributed and multi-agent training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"hw-models {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version_callback, is_eager=True
    ),
) -> None:
    """hw-models: MultiTree all-reduce, NoC models, NIC RTL and MADDPG on CPU-FPGA."""


app.add_typer(topology_cmd.app, name="topology")
app.add_typer(config_cmd.app, name="config")
app.add_typer(rtl_cmd.app, name="rtl")
app.add_typer(__import__("hw_models.cli.maddpg_cmd", fromlist=["app"]).app, name="maddpg")
app.add_typer(noc_cmd.app, name="noc")
app.command(name="schedule")(schedule_cmd.schedule)
app.command(name="allreduce")(allreduce_cmd.allreduce)
app.command(name="demo")(demo_cmd.demo)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and of ``python -m hw_models``."""
    try:
        app(args=argv, prog_name="hw-models")
    except HwModelsError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
