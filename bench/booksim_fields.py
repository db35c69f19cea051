"""Write noc/booksim_fields.py: every key BookSim2's configuration has, its types and default.

    .venv/bin/python bench/booksim_fields.py --src PATH/TO/booksim2/src [--out noc/booksim_fields.py]

BookSim2 keeps three typed tables (integer, floating-point and string keys), filled in the
constructor of ``BookSimConfig`` (src/booksim_config.cpp); its parser assigns a number
written without a dot or exponent only to an integer key, one with them only to a
floating-point key, and a word or brace list only to a string key, and refuses every other
pairing ("Unknown integer field: ..."). A few keys are in two tables (``packet_size`` is an
integer and a string, so that it can hold a list). This script reads those tables from
BookSim2's source and writes them out as data for :mod:`noc.booksim_config`.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "noc" / "booksim_fields.py"


def read_fields(source: str) -> dict[str, tuple[tuple[str, ...], object]]:
    """``{key: (types, default)}`` from the text of booksim_config.cpp's BookSimConfig constructor."""
    body = source[source.index("BookSimConfig::BookSimConfig"):]
    body = body[:body.index("\n}\n")]
    body = re.sub(r"//[^\n]*", "", body)
    fields: dict[str, dict] = {}
    for m in re.finditer(r'_int_map\["(\w+)"\]\s*=\s*(-?\d+)\s*;', body):
        fields.setdefault(m.group(1), {})["int"] = int(m.group(2))
    for m in re.finditer(r'_float_map\["(\w+)"\]\s*=\s*(-?[\d.]+(?:[eE][-+]?\d+)?)\s*;', body):
        fields.setdefault(m.group(1), {})["float"] = float(m.group(2))
    for m in re.finditer(r'AddStrField\(\s*"(\w+)"\s*,\s*"([^"]*)"\s*\)\s*;', body):
        fields.setdefault(m.group(1), {})["str"] = m.group(2)
    assigned = set(re.findall(r'(?:_int_map|_float_map)\["(\w+)"\]', body)) | set(re.findall(r'AddStrField\(\s*"(\w+)"',
                                                                                                body))
    missed = assigned - set(fields)
    if missed:
        raise SystemExit(f"could not read the default of {sorted(missed)}")
    out = {}
    for key, kinds in sorted(fields.items()):
        types = tuple(t for t in ("int", "float", "str") if t in kinds)
        numeric = [kinds[t] for t in ("int", "float") if t in kinds]
        out[key] = (types, numeric[0] if numeric else kinds["str"])
    return out


def render(fields: dict, commit: str) -> str:
    lines = ['"""Every key of BookSim2\'s configuration: its types (the tables its parser assigns to) and',
             "its default. Written by bench/booksim_fields.py from BookSim2's src/booksim_config.cpp",
             f'(commit {commit}); do not edit by hand."""', "", "FIELDS: dict[str, tuple[tuple[str, ...], object]] = {"]
    for key, (types, default) in fields.items():
        lines.append(f"    {key!r}: ({types!r}, {default!r}),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, required=True, help="BookSim2's src directory (holds booksim_config.cpp)")
    ap.add_argument("--out", type=Path, default=OUT, help=f"module to write (default {OUT.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    fields = read_fields((args.src / "booksim_config.cpp").read_text())
    try:
        commit = subprocess.run(["git", "-C", str(args.src), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    args.out.write_text(render(fields, commit))
    print(f"wrote {args.out}: {len(fields)} keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
