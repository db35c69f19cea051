"""Which configuration texts BookSim2's own parser accepts, for the grammar test.

    .venv/bin/python bench/booksim_grammar_reference.py --booksim PATH/TO/booksim [--out JSON]

Runs BookSim2 (a binary built from its public source, outside this repository) on each
probe below: a small valid base file with one change (a missing ``;``, a space inside a
brace list, a quoted string, a block comment, an integer for a floating-point key, ...),
and, for the command-line probes, the base file with one ``key=value`` override. A probe
counts as refused when BookSim2 prints ``Parse error`` (its lexer, its yacc grammar or its
typed key tables); otherwise BookSim2 ran the base network to its end. The JSON holds
BookSim2's commit, each probe's text and BookSim2's verdict and message;
tests/noc/test_booksim_grammar.py checks that :func:`noc.booksim_config.read_booksim`
accepts and refuses the same texts.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "data" / "booksim_grammar_reference.json"

BASE = """topology = mesh;
k = 2;
n = 1;
routing_function = dim_order;
num_vcs = 2;
vc_buf_size = 4;
sample_period = 50;
warmup_periods = 1;
max_samples = 2;
"""

# name -> text appended to BASE (later keys win in BookSim2, so a probe may reset a key)
FILE_PROBES = {
    "base": "",
    "missing_semicolon_last": "injection_rate = 0.05",
    "missing_semicolon_between": "injection_rate = 0.05\nseed = 1;",
    "double_semicolon": "seed = 1;;",
    "no_value": "seed = ;",
    "no_key": "= 1;",
    "two_values": "seed = 1 2;",
    "no_spaces": "seed=1;",
    "spaces_before_semicolon": "seed = 1 ;",
    "tabs_and_crlf": "seed\t=\t1;\r\ninjection_rate = 0.05;\r\n",
    "line_comment": "// a comment\nseed = 1; // trailing",
    "block_comment": "/* a comment */\nseed = 1;",
    "hash_comment": "# a comment\nseed = 1;",
    "quoted_string": 'routing_function = "dim_order";',
    "single_quoted_string": "routing_function = 'dim_order';",
    "brace_list": "packet_size = {1,2};",
    "brace_list_with_space": "packet_size = {1, 2};",
    "nested_brace_list": "packet_size = {{1,2}};\npacket_size_rate = {{1,1}};",
    "brace_list_spaced_nested": "packet_size = {{1, 2}};",
    "int_for_float_key": "injection_rate = 1;",
    "float_for_int_key": "seed = 1.0;",
    "exponent_for_int_key": "seed = 1e1;",
    "float_exponent": "injection_rate = 5e-2;",
    "float_leading_dot": "injection_rate = .05;",
    "float_trailing_dot": "injection_rate = 1.;",
    "float_plus_sign": "injection_rate = +0.05;",
    "negative_int": "credit_delay = -0;",
    "word_for_int_key": "seed = time;",
    "word_for_float_key": "injection_rate = fast;",
    "number_for_word_key": "routing_function = 1;",
    "int_then_word": "seed = 4x;",
    "hex_int": "seed = 0x10;",
    "unknown_key": "no_such_key = 1;",
    "unknown_word_key": "no_such_key = mesh;",
    "dotted_key": "a.b = 1;",
    "flow_out_key": "flow_out = 1;",
    "repeated_key": "seed = 1;\nseed = 2;",
    "word_with_parameters": "vc_allocator = islip(1);",
    "parameters_with_space": "injection_process = on_off(0.1, 0.2);",
    "parameters_with_braces": "traffic = hotspot({{0},{1}});",
    "non_ascii_digit": "seed = \uff14;",
    "form_feed": "seed = 1;\f",
    "huge_int": "seed = 99999999999;",
    "huge_float": "injection_rate = 1e999;",
    "only_a_key": "seed",
    "dash_word": "seed = -;",
    "slash_word": "topology = /mesh;",
    "string_key_value_plus": "routing_function = dim_order+;",
}
WHOLE_FILE_PROBES = {"empty_file": "", "comment_only_file": "// nothing here\n"}
# name -> one command-line override on top of BASE
OVERRIDE_PROBES = {
    "override_int": "seed=1",
    "override_with_semicolon": "seed=1;",
    "override_int_for_float": "injection_rate=1",
    "override_float": "injection_rate=0.05",
    "override_brace_list": "packet_size={1,2}",
    "override_brace_with_space": "packet_size={1, 2}",
    "override_spaces": "seed = 1",
    "override_unknown": "no_such_key=1",
}


def run_booksim(binary: str, text: str, override: str | None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "probe.cfg"
        cfg.write_bytes(text.encode("utf-8"))
        argv = [binary, str(cfg)] + ([override] if override is not None else [])
        try:
            done = subprocess.run(argv, capture_output=True, timeout=60, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {"accepted": None, "message": "timed out after 60 s"}
    out = (done.stdout + done.stderr).decode("utf-8", "replace")
    errors = [line.strip() for line in out.splitlines() if "Parse error" in line]
    return {"accepted": not errors, "message": errors[0] if errors else "", "exit": done.returncode}


def commit_of(binary: str) -> str:
    src = Path(binary).resolve().parent
    try:
        return subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--booksim", required=True, help="path to a BookSim2 binary built from its source tree")
    ap.add_argument("--out", type=Path, default=OUT, help=f"JSON to write (default {OUT.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    probes = []
    for name, extra in FILE_PROBES.items():
        probes.append({"name": name, "text": BASE + extra + ("\n" if extra else ""), "override": None})
    for name, text in WHOLE_FILE_PROBES.items():
        probes.append({"name": name, "text": text, "override": None})
    for name, item in OVERRIDE_PROBES.items():
        probes.append({"name": name, "text": BASE, "override": item})
    for p in probes:
        p["booksim"] = run_booksim(args.booksim, p["text"], p["override"])
        verdict = {True: "accepted", False: "refused", None: "timeout"}[p["booksim"]["accepted"]]
        print(f"{p['name']:28s} {verdict:9s} {p['booksim']['message']}")
    doc = {"booksim_commit": commit_of(args.booksim), "command": "python bench/booksim_grammar_reference.py "
           "--booksim PATH/TO/booksim", "base": BASE, "probes": probes}
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out} ({len(probes)} probes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
