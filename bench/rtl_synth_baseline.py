"""Record the synthesis baseline of the installed Yosys (and nextpnr-ecp5) versions.

    .venv/bin/python bench/rtl_synth_baseline.py            # generic flow, every GENERIC_CONFIGS entry
    .venv/bin/python bench/rtl_synth_baseline.py --ecp5     # + place and route of every ECP5_CONFIGS entry (minutes each)
    .venv/bin/python bench/rtl_synth_baseline.py --only "nic_scheduler DEPTH=64 NIS=4"

Writes tests/rtl/data/synth_baseline.json (entries of other tool versions are kept; the
file is replaced whole, after each configuration, so an interrupted run keeps what it
finished). tests/rtl/test_synth_baseline.py fails when a measurement is worse than it
(area +10 %, Fmax -5 %): run this in the commit that changes the RTL on purpose.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models.rtl import baseline as B  # noqa: E402
from hw_models.rtl.pnr import place_and_route, sources_for, tool_versions  # noqa: E402

PATH = Path(__file__).resolve().parents[1] / "tests" / "rtl" / "data" / "synth_baseline.json"


def _write(data: dict) -> None:
    fd, tmp = tempfile.mkstemp(dir=PATH.parent, prefix=".synth_baseline-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, PATH)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ecp5", action="store_true", help="also place and route on ECP5")
    ap.add_argument("--only", action="append", help="only this configuration (repeatable)")
    a = ap.parse_args()
    yosys, nextpnr = tool_versions()
    data = B.load(PATH)
    plan = [("generic", n) for n in B.GENERIC_CONFIGS] + ([("ecp5", n) for n in B.ECP5_CONFIGS] if a.ecp5 else [])
    for flow, name in plan:
        if a.only and name not in a.only:
            continue
        if flow == "generic":
            key, figs = B.generic_key(yosys), B.measure_generic(name)
        else:
            key = B.ecp5_key(yosys, nextpnr)
            figs = B.figures(place_and_route(B.ecp5_job(name), sources_for(B.ecp5_job(name).top)), B.ECP5_KEYS)
        data.setdefault(key, {})[name] = figs
        _write(data)
        print(f"{key}: {name}: {figs}", flush=True)


if __name__ == "__main__":
    main()
