"""Size limits of the code in ``nic``, read from its syntax tree: no function longer than
150 lines (``def`` to its last line, decorators left out) and no Numba-compiled function
with more than 12 parameters (state goes in as namedtuples of arrays, not as long
positional lists). A Numba function is one decorated with ``njit``/``jit`` (bare, called,
or as ``numba.njit``), with ``overload``, or with a module-level name bound to such a call
(the house's ``_stage = njit(..., inline="always")``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NIC = ROOT / "nic"
MAX_LINES = 150
MAX_NUMBA_PARAMS = 12
_NUMBA_DECORATORS = {"njit", "jit", "overload", "generated_jit"}


def _callee_name(node: ast.expr) -> str | None:
    """``njit`` for ``njit``, ``njit(...)``, ``numba.njit`` and ``numba.njit(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _numba_aliases(tree: ast.Module) -> set[str]:
    """Module-level names bound to a Numba decorator call (``_stage = njit(...)``)."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and _callee_name(node.value) in _NUMBA_DECORATORS:
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _functions(path: Path):
    """(qualified name, lines, parameters, is Numba) of every function in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    numba_names = _NUMBA_DECORATORS | _numba_aliases(tree)
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = child.args
                params = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) \
                    + (a.kwarg is not None)
                jitted = any(_callee_name(d) in numba_names for d in child.decorator_list)
                name = f"{prefix}{child.name}"
                out.append((name, child.end_lineno - child.lineno + 1, params, jitted))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def _all_functions():
    files = sorted(NIC.rglob("*.py"))
    assert files, f"no Python files under {NIC}"
    return [(p.relative_to(ROOT).as_posix(), *f) for p in files for f in _functions(p)]


def test_no_function_in_nic_is_longer_than_150_lines():
    long = [f"{path}:{name} is {lines} lines" for path, name, lines, _, _ in _all_functions() if lines > MAX_LINES]
    assert not long, f"functions over {MAX_LINES} lines: " + "; ".join(long)


def test_no_numba_function_in_nic_takes_more_than_12_parameters():
    wide = [f"{path}:{name} takes {params} parameters" for path, name, _, params, jitted in _all_functions()
            if jitted and params > MAX_NUMBA_PARAMS]
    assert not wide, f"Numba functions over {MAX_NUMBA_PARAMS} parameters: " + "; ".join(wide)


def test_the_reader_finds_the_kernels_and_counts_them_right(tmp_path):
    """The checks above see what they claim to: Numba functions in nic under each spelling,
    and exact line and parameter counts on a known source."""
    found = {(path, name) for path, name, _, _, jitted in _all_functions() if jitted}
    assert ("nic/scheduler.py", "sched_edge") in found  # @njit(cache=True)
    assert ("nic/collectives/multitree_growth.py", "_grow") in found
    assert len(found) > 20
    src = tmp_path / "m.py"
    src.write_text("import numba\nfrom numba import njit\n_stage = njit(inline='always')\n\n"
                   "@_stage\ndef a(x, y, *, z):\n    return x\n\n"
                   "@numba.njit\ndef b(*args, **kw):\n    pass\n\n"
                   "def c(p):\n    def inner():\n        return 1\n    return inner\n")
    assert _functions(src) == [("a", 2, 3, True), ("b", 2, 2, True), ("c", 4, 1, False), ("c.inner", 2, 0, False)]
