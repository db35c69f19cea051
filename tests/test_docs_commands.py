"""Every command the README, CONTRIBUTING.md and docs/*.md quote exists and parses.

A quoted ``hw-models A B ...`` (in a code block or inline code) must name a command of the
CLI: its subcommand path answers ``--help`` with exit status 0, and every option it quotes
(``--sizes``, ``-a``) is one of that command's options. A quoted ``bench/x.py`` must be a
file whose ``--help`` exits 0, and every option quoted with it one its help lists.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from hw_models.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]

_INLINE = re.compile(r"`([^`\n]+)`")
_BLOCK = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
# `hw-models` (or `.venv/bin/hw-models`) and the words after it, up to a shell separator
_HW = re.compile(r"(?:^|[\s(;&|])(?:\S*/)?hw-models((?:[ \t]+[^\s#|;&`]+)*)")
_BENCH = re.compile(r"(?:^|[\s(`])(bench/[\w/]+\.py)((?:[ \t]+[^\s#|;&`]+)*)")


def _quoted_lines(text: str) -> list[str]:
    """Inline code spans and the lines of fenced code blocks (shell comments cut off). A block
    line followed by an ``error:`` line is an example of refused input, quoted on purpose,
    and is left out."""
    blocks = _BLOCK.findall(text)
    outside = _BLOCK.sub("", text)
    lines = []
    for block in blocks:
        rows = block.splitlines()
        lines += [line.split(" #")[0] for line, after in zip(rows, rows[1:] + [""]) if not after.startswith("error:")]
    return lines + _INLINE.findall(outside)


def _quotes(pattern: re.Pattern) -> dict[tuple[str, ...], list[str]]:
    """Each distinct quoted command (its words) -> the docs quoting it."""
    found: dict[tuple[str, ...], list[str]] = {}
    for doc in DOCS:
        for line in _quoted_lines(doc.read_text()):
            for m in pattern.finditer(line):
                words = tuple(shlex.split(" ".join(g for g in m.groups() if g), posix=True, comments=False))
                found.setdefault(words, []).append(doc.relative_to(ROOT).as_posix())
    return found


def _option_names(words) -> list[str]:
    """The options among a quoted command's words: ``--sizes``, ``-a`` (placeholder brackets,
    ``=VALUE`` and trailing punctuation dropped; a negative number is not an option)."""
    names = []
    for w in words:
        w = w.strip("[]().,")
        if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", w):
            names.append(w.split("=")[0])
    return names


CLICK_APP = typer.main.get_command(app)


def _resolve(words: tuple[str, ...]):
    """The command path a quoted ``hw-models`` command names and the click command it is:
    words are taken as subcommands while the current command is a group and has them. A
    group that runs a default subcommand (``hw-models sweep FILE`` is ``sweep run FILE``)
    resolves to it."""
    cmd, path, used = CLICK_APP, [], 0
    for w in words:
        commands = getattr(cmd, "commands", None)
        if commands is None:
            break
        if w in commands:
            cmd, used = commands[w], used + 1
            path.append(w)
        elif not w.startswith("-") and "run" in commands and type(cmd).__name__ == "_RunByDefault":
            cmd = commands["run"]
            path.append("run")
        else:
            break
    return path, cmd, words[used:]


HW_QUOTES = _quotes(_HW)
BENCH_QUOTES = _quotes(_BENCH)


def test_the_docs_quote_commands():
    # the scan itself works: the README's quick start and its bench list are found
    assert ("demo",) in HW_QUOTES
    assert any(w[:1] == ("allreduce",) for w in HW_QUOTES)
    assert any(w[:1] == ("bench/booksim_validate.py",) for w in BENCH_QUOTES)


@lru_cache(maxsize=None)
def _help(path: tuple[str, ...]):
    return CliRunner().invoke(app, [*path, "--help"])


@pytest.mark.parametrize("words", sorted(HW_QUOTES), ids=lambda w: " ".join(w) or "(bare)")
def test_quoted_hw_models_command_exists(words):
    path, cmd, rest = _resolve(words)
    where = ", ".join(sorted(set(HW_QUOTES[words])))
    if rest and getattr(cmd, "commands", None) is not None:  # a group, then a word that is none of its commands
        assert rest[0].startswith("-"), f"{where}: 'hw-models {' '.join(words)}': {rest[0]!r} is not a command " \
                                        f"of 'hw-models {' '.join(path)}' ({', '.join(sorted(cmd.commands))})"
    result = _help(tuple(path))
    assert result.exit_code == 0, f"{where}: 'hw-models {' '.join(path)} --help' exited {result.exit_code}"
    known = {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts)} | {"--help"}
    unknown = [o for o in _option_names(words) if o not in known]
    assert not unknown, f"{where}: 'hw-models {' '.join(words)}': no option {unknown} in 'hw-models " \
                        f"{' '.join(path)}'"


@lru_cache(maxsize=None)
def _bench_help(script: str, *sub: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / script), *sub, "--help"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


@pytest.mark.parametrize("script", sorted({w[0] for w in BENCH_QUOTES}))
def test_quoted_bench_script_exists(script):
    quotes = {w: d for w, d in BENCH_QUOTES.items() if w[0] == script}
    where = ", ".join(sorted({d for docs in quotes.values() for d in docs}))
    assert (ROOT / script).is_file(), f"{where}: {script} does not exist"
    result = _bench_help(script)
    assert result.returncode == 0, f"{where}: python {script} --help exited {result.returncode}: {result.stderr}"
    subcommands = {c for group in re.findall(r"\{([\w,-]+)\}", result.stdout.split("options:")[0])
                   for c in group.split(",")}
    for words in quotes:
        sub = words[1:2] if words[1:2] and words[1] in subcommands else ()
        helped = _bench_help(script, *sub) if sub else result
        assert helped.returncode == 0, f"{where}: python {script} {' '.join(sub)} --help exited {helped.returncode}"
        listed = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", helped.stdout))
        unknown = [o for o in _option_names(words[1:]) if o not in listed]
        assert not unknown, f"{', '.join(sorted(set(quotes[words])))}: '{' '.join(words)}': " \
                            f"{' '.join((script, *sub))} --help lists no {unknown}"
