"""The ``hw-models`` command.

Each command group lives in its own module (``*_cmd.py``) and is registered here. Heavy
imports (numba kernels, matplotlib) happen inside the commands, so ``--help`` is instant.

Errors caused by user input (:class:`noc.base.errors.HwModelsError`) are printed on one line and
exit with status 2, never as a traceback.
"""

from __future__ import annotations

import sys
import warnings

import typer

from hw_models import __version__
from hw_models.cli import config_cmd, demo_cmd, topology_cmd
from hw_models.cli import allreduce_cmd, rtl_cmd, schedule_cmd
from hw_models.cli import maddpg_accel_cmd, maddpg_cmd, noc_cmd
from hw_models.cli import sweep_cmd
from hw_models.cli import train_cmd, train_system_cmd
from hw_models.cli import plot_cmd, report_cmd
from noc.base.errors import HwModelsError, HwModelsWarning

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
maddpg_cmd.app.command(name="accel")(maddpg_accel_cmd.accel)
app.add_typer(maddpg_cmd.app, name="maddpg")
app.add_typer(noc_cmd.app, name="noc")
app.add_typer(sweep_cmd.app, name="sweep")
app.add_typer(train_system_cmd.app, name="train-system")
app.command(name="schedule")(schedule_cmd.schedule)
app.command(name="allreduce")(allreduce_cmd.allreduce)
app.command(name="demo")(demo_cmd.demo)
app.command(name="train")(train_cmd.train)
app.command(name="plot")(plot_cmd.plot)
app.command(name="report")(report_cmd.report)


def one_line(message: str) -> str:
    """A message on one line (a wrapped or multi-line message joined with spaces)."""
    return " ".join(part.strip() for part in str(message).strip().splitlines() if part.strip())


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and of ``python -m hw_models``.

    Bad input — our own errors and the command line's (an unknown option, a value that is
    not a number) — is one line on stderr, ``error: ...``, and exit status 2."""
    try:  # typer vendors its own click
        from typer._click import exceptions as click_exceptions
    except ImportError:  # pragma: no cover (an older typer over click)
        from click import exceptions as click_exceptions

    show = warnings.showwarning

    def one_line_warning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, HwModelsWarning):  # ours: one line, like the errors
            typer.echo(f"warning: {one_line(message)}", err=True)
        else:
            show(message, category, filename, lineno, file, line)

    warnings.showwarning = one_line_warning
    try:
        rv = app(args=argv, prog_name="hw-models", standalone_mode=False)
    except HwModelsError as exc:
        typer.echo(f"error: {one_line(exc)}", err=True)
        sys.exit(2)
    except click_exceptions.NoArgsIsHelpError as exc:  # a bare command group: its help
        typer.echo(exc.ctx.get_help())
        sys.exit(exc.exit_code)
    except click_exceptions.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        typer.echo(f"error: {one_line(exc.format_message())}{hint}", err=True)
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)
