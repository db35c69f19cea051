"""The message model against the flit level over the calibration matrix, with any router.

    .venv/bin/python bench/message_calibration.py [--router KEY=VALUE ...] [--size 256KiB]
        [--only SUBSTRING,...] [--csv out.csv] [--flit-cache flit.json]

Runs every case of ``nic.calibration`` (4 topologies x 6 algorithms x 2 NICs, 46 cases) at
both levels and prints, per case, both cycle counts and the message model's deviation
(negative: faster), then how many are within 5 %. ``--router`` sets keys of the flit-level
router config (``FlitNetworkConfig``, the experiment config's ``[router]`` section);
without it the test's router (4 VCs x 32 flits) is used. Examples (docs/allreduce.md):

    --router num_vcs=4 --router vc_depth_flits=318 --router allocator=islip \\
        --router routing_delay_cycles=0 --router flit_bytes=16      # the paper's routers
    --router num_vcs=2 --router vc_depth_flits=8                   # the CLI's default

The flit level takes about a minute for the matrix at 256 KiB on one core. When changing
the message model, ``--flit-cache FILE`` keeps each flit-level total in a JSON file (keyed
by the flit level's ``MODEL_VERSION``, the router, the size and the case, written after
every case) and reuses it, so a rerun takes only the message model's seconds. Start a new
file after changing the flit level or the NIC co-simulation without bumping that version.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models.units import parse_size_bytes  # noqa: E402
from nic import calibration  # noqa: E402
from noc.config import validate  # noqa: E402
from noc.errors import ConfigError  # noqa: E402
from noc import flit  # noqa: E402
from noc.flit import FlitNetworkConfig  # noqa: E402

TEST_ROUTER = {"num_vcs": 4, "vc_depth_flits": 32}


def router_config(pairs: list[str]) -> FlitNetworkConfig:
    """``KEY=VALUE`` pairs over the test's router; values are JSON (numbers, true) or plain strings."""
    keys = dict(TEST_ROUTER)
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--router {pair!r}: expected KEY=VALUE, e.g. num_vcs=4")
        try:
            keys[key] = json.loads(text)
        except json.JSONDecodeError:
            keys[key] = text
    try:
        return validate(keys, FlitNetworkConfig, source="--router")
    except ConfigError as err:
        raise SystemExit(str(err)) from None


class FlitCache:
    """Flit-level totals by (flit MODEL_VERSION, router, size, case), kept in a JSON file."""

    def __init__(self, path: Path | None, net: FlitNetworkConfig, size: int):
        self.path = path
        self.prefix = f"flit v{flit.MODEL_VERSION} {json.dumps(net.model_dump(), sort_keys=True)} {size} B "
        self.table: dict[str, float] = {}
        if path is not None and path.exists():
            try:
                self.table = json.loads(path.read_text())
            except json.JSONDecodeError as err:
                raise SystemExit(f"--flit-cache {path}: not a JSON file written by this script ({err})") from None
            if not isinstance(self.table, dict) or not all(isinstance(v, (int, float)) for v in self.table.values()):
                raise SystemExit(f"--flit-cache {path}: not a table of flit-level totals written by this script")

    def get(self, case: str) -> float | None:
        return self.table.get(self.prefix + case)

    def put(self, case: str, cycles: float) -> None:
        if self.path is None:
            return
        self.table[self.prefix + case] = cycles
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.table, indent=0, sort_keys=True))
        tmp.replace(self.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--router", action="append", default=[], metavar="KEY=VALUE",
                    help="a FlitNetworkConfig key (repeat for more); default router: 4 VCs x 32 flits")
    ap.add_argument("--size", default="256KiB", help="all-reduce size (default 256KiB)")
    ap.add_argument("--only", default="", help="comma-separated substrings of 'topology/algorithm/nic' to run")
    ap.add_argument("--csv", type=Path, help="also write the table to this CSV file")
    ap.add_argument("--flit-cache", type=Path, metavar="FILE",
                    help="reuse flit-level totals stored in this JSON file, and store new ones there")
    args = ap.parse_args()
    net = router_config(args.router)
    size = parse_size_bytes(args.size)
    cache = FlitCache(args.flit_cache, net, size)
    only = [o for o in args.only.split(",") if o]
    todo = [c for c in calibration.cases() if not only or any(o in "/".join(c) for o in only)]
    if not todo:
        raise SystemExit(f"--only {args.only!r} matches none of the {len(list(calibration.cases()))} cases")
    print(f"router: {net.model_dump(exclude_none=True)}; size {size} B; {len(todo)} cases", flush=True)
    print(f"{'case':<44}{'flit cycles':>13}{'message':>13}{'error':>9}")
    rows = []
    t0 = time.perf_counter()
    for spec, algorithm, design in todo:
        case = f"{spec}/{algorithm}/{design}"
        try:
            c = calibration.compare(spec, algorithm, design, net, size, flit_cycles=cache.get(case))
        except ConfigError as err:
            print(f"{case:<44}  not run: {err}", flush=True)
            continue
        cache.put(case, c.flit_cycles)
        flag = "  <<<" if abs(c.error_percent) > 5 else ""
        print(f"{case:<44}{c.flit_cycles:>13,.0f}{c.message_cycles:>13,.0f}"
              f"{c.error_percent:>+8.1f}%{flag}", flush=True)
        rows.append(c)
    within = sum(abs(c.error_percent) <= 5 for c in rows)
    print(f"{within} of {len(rows)} within 5 %; worst {max((abs(c.error_percent) for c in rows), default=0):.1f} %; "
          f"{time.perf_counter() - t0:.0f} s")
    if args.csv:
        with args.csv.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["topology", "algorithm", "nic", "size_bytes", "flit_cycles", "message_cycles", "message_vs_flit_percent"])
            for c in rows:
                w.writerow([c.spec, c.algorithm, c.design, size, c.flit_cycles, c.message_cycles, round(c.error_percent, 3)])
        print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
