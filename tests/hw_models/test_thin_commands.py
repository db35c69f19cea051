"""The commands are thin and nothing leans on them (read from the source's syntax trees):

* every function in ``hw_models/cli/*.py`` has a body (after its docstring) of at most
  60 lines: a command parses flags into a plan and calls library code;
* no module outside ``hw_models/cli`` — library, ``tests/`` and ``bench/`` included —
  imports from it, except the CLI's entry points, ``from hw_models.cli import app`` (for
  typer's ``CliRunner``) and ``main``.

Each check is first shown to catch a violation written for the purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "hw_models" / "cli"
MAX_BODY_LINES = 60
ENTRY_POINTS = {"app", "main"}

# Commands allowed a longer body (none: every command is a thin plan)
OVER_LENGTH_ALLOWED: set[tuple[str, str]] = set()


def body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's end."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return fn.end_lineno - body[0].lineno + 1 if body else 0


def long_functions(source: str, limit: int = MAX_BODY_LINES) -> list[tuple[str, int]]:
    """(name, body lines) of every module-level function and method over ``limit``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef)):
            for fn in node.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and body_lines(fn) > limit:
                    out.append((fn.name, body_lines(fn)))
    return out


def cli_imports(source: str) -> list[str]:
    """The imports of ``hw_models.cli`` in ``source`` other than its entry points."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name == "hw_models.cli" or a.name.startswith("hw_models.cli.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("hw_models.cli."):
                bad.append(node.module)
            elif node.module == "hw_models.cli":
                bad += [f"hw_models.cli.{a.name}" for a in node.names if a.name not in ENTRY_POINTS]
            elif node.module == "hw_models":
                bad += ["hw_models.cli" for a in node.names if a.name == "cli"]
    return bad


def test_the_checks_catch_what_they_are_for():
    long = "def f():\n    '''doc'''\n" + "    x = 1\n" * 61
    assert long_functions(long) == [("f", 61)]
    assert long_functions("class C:\n    def m(self):\n" + "        y = 2\n" * 61) == [("m", 61)]
    assert long_functions("def f():\n    '''doc\n    more'''\n" + "    x = 1\n" * 60) == []
    assert cli_imports("from hw_models.cli import maddpg_cmd") == ["hw_models.cli.maddpg_cmd"]
    assert cli_imports("from hw_models.cli.noc_cmd import load_experiment") == ["hw_models.cli.noc_cmd"]
    assert cli_imports("import hw_models.cli.rtl_cmd as r") == ["hw_models.cli.rtl_cmd"]
    assert cli_imports("from hw_models import cli") == ["hw_models.cli"]
    assert cli_imports("def t():\n    from hw_models.cli import app, main\n") == []


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda p: p.name)
def test_every_command_function_is_at_most_60_lines(path):
    over = [(name, n) for name, n in long_functions(path.read_text(encoding="utf-8"))
            if (path.name, name) not in OVER_LENGTH_ALLOWED]
    assert not over, f"{path.name}: {over} (a command parses flags into a plan and calls library code)"


def test_the_allowed_over_length_commands_exist():
    # an entry of the exception list that names nothing would hide nothing: empty it instead
    for file, name in OVER_LENGTH_ALLOWED:
        tree = ast.parse((CLI / file).read_text(encoding="utf-8"))
        assert any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body), (file, name)


def _outside_the_cli() -> list[Path]:
    files = []
    for top in ("hw_models", "nic", "noc", "maddpg", "tests", "bench"):
        files += [p for p in (ROOT / top).rglob("*.py") if CLI not in p.parents and "__pycache__" not in p.parts]
    return sorted(files)


def test_nothing_outside_the_cli_imports_from_it_but_its_entry_points():
    files = _outside_the_cli()
    assert ROOT / "hw_models" / "__main__.py" in files and ROOT / "tests" / "test_docs_commands.py" in files
    bad = {str(p.relative_to(ROOT)): found for p in files if (found := cli_imports(p.read_text(encoding="utf-8")))}
    assert not bad, bad
