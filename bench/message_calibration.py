"""The message model against the flit level over the calibration matrix, with any router.

    .venv/bin/python bench/message_calibration.py [--router KEY=VALUE ...] [--size 256KiB]
        [--only SUBSTRING,...] [--csv out.csv] [--flit-cache flit.json] [--arbiter-seeds N] [--vct]

Runs every case of ``nic.calibration`` (4 topologies x 6 algorithms x 2 NICs, 46 cases) at
both levels and prints, per case, both cycle counts and the message model's deviation
(negative: faster), then how many are within 5 %. ``--router`` sets keys of the flit-level
router config (``FlitNetworkConfig``, the experiment config's ``[router]`` section);
without it the test's router (4 VCs x 32 flits) is used. Examples
(docs/message_model_validation.md):

    --router num_vcs=4 --router vc_depth_flits=318 --router allocator=islip \\
        --router routing_delay_cycles=0 --router flit_bytes=16      # the paper's routers
    --router num_vcs=2 --router vc_depth_flits=8                   # the CLI's default

The flit level takes about a minute for the matrix at 256 KiB on one core. When changing
the message model, ``--flit-cache FILE`` keeps each flit-level total in a JSON file (keyed
by the flit level's ``MODEL_VERSION``, the router, the size and the case; written whole
after every case, keeping the totals another run stored in it meanwhile) and reuses it, so
a rerun takes only the message model's seconds. Start a new file after changing the flit
level or the NIC co-simulation without bumping that version.

``--arbiter-seeds N`` also runs the flit level with the routers' round-robin pointers
started at random positions (``arbiter_seed`` 1 .. N; the table's own flit column is the
reset state, all pointers at 0) and prints, per case, the range of the flit totals and
of the message model's deviation from them: how much of a deviation is tie-breaking.

``--vct`` also runs the per-packet cases (the baseline NIC's) on the same router with
virtual cut-through flow control (a packet moves on only when the next VC has room for all
of it) and prints that flit total, how far it is from the wormhole one, and the message
model's deviation from it: which residuals belong to wormhole flow control. The bulk
cases are one packet per transfer, which cannot cut through a VC, and are left out of it.
With either option it also counts the cases within 5 % of the range of every flit total
run for them. With both, it also counts the cases that meet the criterion of
``tests/nic/test_flit_cosim.py`` (``nic.calibration.within`` over
``nic.calibration.reference_routers``; the tests use N = 4): a co-designed case within 5 %
of the reset state's flit total, a per-packet case within 5 % of the range of its flit
totals with the reset state, ``arbiter_seed`` 1 .. N and cut-through.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from noc.base.units import parse_size_bytes  # noqa: E402
from nic import calibration  # noqa: E402
from nic.allreduce import NicConfig  # noqa: E402
from nic.nic_config import check_cut_through  # noqa: E402
from noc.base.config import validate  # noqa: E402
from noc.base.errors import ConfigError  # noqa: E402
from noc.base.files import replace_atomically  # noqa: E402
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

    def __init__(self, path: Path | None, size: int):
        self.path = path
        self.size = size
        self.table: dict[str, float] = {}
        if path is not None and path.exists():
            try:
                self.table = json.loads(path.read_text())
            except json.JSONDecodeError as err:
                raise SystemExit(f"--flit-cache {path}: not a JSON file written by this script ({err})") from None
            if not isinstance(self.table, dict) or not all(isinstance(v, (int, float)) for v in self.table.values()):
                raise SystemExit(f"--flit-cache {path}: not a table of flit-level totals written by this script")

    def key(self, net: FlitNetworkConfig, case: str) -> str:
        return f"flit v{flit.MODEL_VERSION} {json.dumps(net.key_fields(), sort_keys=True)} {self.size} B {case}"

    def get(self, net: FlitNetworkConfig, case: str) -> float | None:
        return self.table.get(self.key(net, case))

    def total(self, net: FlitNetworkConfig, case: tuple[str, str, str]) -> float:
        """The flit level's total for ``case`` with router ``net``, run unless stored."""
        key = "/".join(case)
        cycles = self.get(net, key)
        if cycles is None:
            cycles = calibration.flit_total(*case, net, self.size)
            self.put(net, key, cycles)
        return cycles

    def put(self, net: FlitNetworkConfig, case: str, cycles: float) -> None:
        self.table[self.key(net, case)] = cycles  # kept for this run without a file too
        if self.path is None:
            return
        # another run may share the file: keep the totals it stored since this one read it
        try:
            stored = json.loads(self.path.read_text())
        except (OSError, ValueError):
            stored = None
        if isinstance(stored, dict):
            self.table = {**{k: v for k, v in stored.items() if isinstance(v, (int, float))}, **self.table}
        text = json.dumps(self.table, indent=0, sort_keys=True)
        replace_atomically(self.path, lambda tmp: tmp.write_text(text))


def cut_through(net: FlitNetworkConfig) -> FlitNetworkConfig:
    """``net`` with virtual cut-through, for ``--vct``: a SystemExit naming the problem when
    the router already is one (the message model represents wormhole only) or its VCs are
    shorter than the NIC's packets."""
    if net.flow_control == "vct":
        raise SystemExit("--vct with --router flow_control=vct: the table's own runs must be wormhole (the message "
                         "model represents wormhole routers only); leave flow_control out")
    vct = net.model_copy(update={"flow_control": "vct"})
    try:
        check_cut_through(NicConfig(design="baseline"), vct)
    except ConfigError as err:
        raise SystemExit(f"--vct: {err}") from None
    return vct


def _vct_summary(rows: list, vct_totals: list) -> str:
    """How the per-packet cases compare with the wormhole and the cut-through flit level."""
    pairs = [(c, cut) for c, cut in zip(rows, vct_totals) if cut is not None]
    near_wh = [abs(c.error_percent) <= 5 for c, _ in pairs]
    near_vct = [abs(_percent(c.message_cycles, cut)) <= 5 for c, cut in pairs]
    moved = [abs(_percent(cut, c.flit_cycles)) > 5 for c, cut in pairs]
    widest = max((abs(_percent(cut, c.flit_cycles)) for c, cut in pairs), default=0.0)
    return (f"per-packet cases: {sum(near_wh)} of {len(pairs)} within 5 % of the wormhole flit level, "
            f"{sum(near_vct)} of the cut-through one, {sum(a and b for a, b in zip(near_wh, near_vct))} of both; "
            f"the flit level moved by more than 5 % between the two on {sum(moved)} (widest {widest:.1f} %)")


def _range_summary(rows: list, totals: list[list[float]], names: list[str]) -> str:
    """How many cases are within 5 % of the range of every flit total run for them
    (``nic.calibration.within``), and which are not."""
    near = [calibration.within(c.message_cycles, fs) for c, fs in zip(rows, totals)]
    return (f"{sum(near)} of {len(rows)} within 5 % of the range of the flit totals ({', '.join(names)}); "
            f"outside it: {', '.join('/'.join((c.spec, c.algorithm, c.design)) for c, n in zip(rows, near) if not n) or 'none'}")


def _criterion_summary(rows: list, totals: list[list[float]], seeds: int) -> str:
    """How many cases meet the tests' criterion (``totals``: per row, the flit totals of
    ``nic.calibration.reference_routers``), and by how much the others miss the range."""
    near = [calibration.within(c.message_cycles, fs) for c, fs in zip(rows, totals)]
    out = [f"{'/'.join((c.spec, c.algorithm, c.design))} "
           f"({calibration.range_error_percent(c.message_cycles, fs):+.1f} %)"
           for c, fs, n in zip(rows, totals, near) if not n]
    return (f"criterion (co-designed: the reset state; per-packet: the range over the reset state, arbiter_seed "
            f"1..{seeds} and cut-through): {sum(near)} of {len(rows)}; outside it: {', '.join(out) or 'none'}")


def _percent(cycles: float, reference: float) -> float:
    """How far ``cycles`` is from ``reference``, in % (negative: fewer cycles)."""
    return 100.0 * (cycles / reference - 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--router", action="append", default=[], metavar="KEY=VALUE",
                    help="a FlitNetworkConfig key (repeat for more); default router: 4 VCs x 32 flits")
    ap.add_argument("--size", default="256KiB", help="all-reduce size (default 256KiB)")
    ap.add_argument("--only", default="", help="comma-separated substrings of 'topology/algorithm/nic' to run")
    ap.add_argument("--csv", type=Path, help="also write the table to this CSV file")
    ap.add_argument("--flit-cache", type=Path, metavar="FILE",
                    help="reuse flit-level totals stored in this JSON file, and store new ones there")
    ap.add_argument("--arbiter-seeds", type=int, default=0, metavar="N",
                    help="also run the flit level with arbiter_seed 1..N and print the spread (default 0: no)")
    ap.add_argument("--vct", action="store_true",
                    help="also run the per-packet (baseline NIC) cases with virtual cut-through and print the "
                         "message model's deviation from that flit level too")
    args = ap.parse_args()
    if args.arbiter_seeds < 0:
        raise SystemExit(f"--arbiter-seeds {args.arbiter_seeds}: give a number of seeds >= 0")
    net = router_config(args.router)
    if args.arbiter_seeds and net.arbiter_seed is not None:
        raise SystemExit("--arbiter-seeds with --router arbiter_seed=...: give one or the other")
    seeded = [net.model_copy(update={"arbiter_seed": k}) for k in range(1, args.arbiter_seeds + 1)]
    vct = cut_through(net) if args.vct else None
    size = parse_size_bytes(args.size)
    cache = FlitCache(args.flit_cache, size)
    only = [o for o in args.only.split(",") if o]
    todo = [c for c in calibration.cases() if not only or any(o in "/".join(c) for o in only)]
    if not todo:
        raise SystemExit(f"--only {args.only!r} matches none of the {len(list(calibration.cases()))} cases")
    print(f"router: {net.model_dump(exclude_none=True)}; size {size} B; {len(todo)} cases", flush=True)
    if seeded:
        print(f"flit level also with arbiter_seed 1..{len(seeded)}: the range of its totals and of the message "
              "model's deviation from them")
    if vct is not None:
        print("per-packet cases also on the same router with virtual cut-through: that flit total, its distance "
              "from wormhole's, and the message model's deviation from it")
    print(f"{'case':<44}{'flit cycles':>13}{'message':>13}{'error':>9}"
          + (f"{'flit over seeds':>24}{'error over seeds':>20}" if seeded else "")
          + (f"{'flit vct':>12}{'vct/wh':>9}{'error vct':>11}" if vct is not None else ""))
    rows = []
    flits: list[list[float]] = []  # per row: the flit totals, reset state first, then the seeds
    vct_totals: list[float | None] = []  # per row: the flit total with virtual cut-through (per-packet cases)
    criterion: list[list[float]] = []  # per row: the flit totals of the tests' reference routers (seeds and --vct)
    t0 = time.perf_counter()
    for case in todo:
        name = "/".join(case)
        try:
            c = calibration.compare(*case, net, size, flit_cycles=cache.total(net, case))
            totals = [cache.total(n, case) for n in seeded]
            cut = cache.total(vct, case) if vct is not None and not NicConfig(design=case[2]).bulk else None
            refs = ([cache.total(r, case) for r in calibration.reference_routers(net, case[2], len(seeded))]
                    if seeded and vct is not None else [])  # all run above: taken from the cache
        except ConfigError as err:
            print(f"{name:<44}  not run: {err}", flush=True)
            continue
        flag = "  <<<" if abs(c.error_percent) > 5 else ""
        line = f"{name:<44}{c.flit_cycles:>13,.0f}{c.message_cycles:>13,.0f}{c.error_percent:>+8.1f}%"
        if seeded:
            errs = [_percent(c.message_cycles, f) for f in totals]
            line += (f"{min(totals):>12,.0f} .. {max(totals):>8,.0f}"
                     f"{min(errs):>+10.1f} .. {max(errs):+.1f}%")
        if cut is not None:
            line += f"{cut:>12,.0f}{_percent(cut, c.flit_cycles):>+8.1f}%{_percent(c.message_cycles, cut):>+10.1f}%"
        elif vct is not None:
            line += f"{'(bulk)':>12}"
        print(line + flag, flush=True)
        rows.append(c)
        flits.append([c.flit_cycles, *totals])
        vct_totals.append(cut)
        criterion.append(refs)
    within = sum(abs(c.error_percent) <= 5 for c in rows)
    print(f"{within} of {len(rows)} within 5 %; worst {max((abs(c.error_percent) for c in rows), default=0):.1f} %; "
          f"{time.perf_counter() - t0:.0f} s")
    if seeded:
        within_each = [[abs(_percent(c.message_cycles, f)) <= 5 for f in fs] for c, fs in zip(rows, flits)]
        every, some = sum(map(all, within_each)), sum(map(any, within_each))
        mean = sum(abs(_percent(c.message_cycles, sum(fs) / len(fs))) <= 5 for c, fs in zip(rows, flits))
        spread = max((_percent(max(fs), min(fs)) for fs in flits), default=0.0)
        print(f"over the reset state and the {len(seeded)} seeds: {every} of {len(rows)} within 5 % of every flit "
              f"total, {some} of at least one, {mean} of their mean; the flit level's widest spread (max / min - 1) "
              f"{spread:.1f} %")
    if vct is not None:
        print(_vct_summary(rows, vct_totals))
    if seeded or vct is not None:
        print(_range_summary(rows, [fs + ([cut] if cut is not None else []) for fs, cut in zip(flits, vct_totals)],
                             ["the reset state"] + [f"arbiter_seed 1..{len(seeded)}"] * bool(seeded)
                             + ["cut-through"] * (vct is not None)))
    if seeded and vct is not None:
        print(_criterion_summary(rows, criterion, len(seeded)))
    if args.csv:
        def write_csv(tmp: Path) -> None:
            with tmp.open("w", newline="") as fh:
                _write_table(csv.writer(fh), rows, flits, vct_totals, size, seeded, vct)

        replace_atomically(args.csv, write_csv)
        print(f"wrote {args.csv}")


def _write_table(w, rows, flits, vct_totals, size, seeded, vct) -> None:
    """The --csv table to csv writer ``w``, one row per case."""
    w.writerow(["topology", "algorithm", "nic", "size_bytes", "flit_cycles", "message_cycles", "message_vs_flit_percent"]
               + ["flit_cycles_min_over_seeds", "flit_cycles_max_over_seeds", "flit_cycles_mean_with_seeds"] * bool(seeded)
               + ["flit_cycles_vct", "message_vs_flit_vct_percent"] * (vct is not None))
    for c, fs, cut in zip(rows, flits, vct_totals):
        w.writerow([c.spec, c.algorithm, c.design, size, c.flit_cycles, c.message_cycles, round(c.error_percent, 3)]
                   + ([min(fs[1:]), max(fs[1:]), round(sum(fs) / len(fs), 1)] if seeded else [])
                   + ([cut, round(_percent(c.message_cycles, cut), 3)] if cut is not None
                      else ["", ""] if vct is not None else []))


if __name__ == "__main__":
    main()
