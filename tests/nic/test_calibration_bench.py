"""bench/message_calibration.py: runs the calibration cases it is asked for, writes what the
API computes, and names bad router keys."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from nic import calibration
from noc.flit import FlitNetworkConfig

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "message_calibration.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)


def test_the_bench_writes_the_apis_comparison_for_the_selected_cases(tmp_path):
    out = tmp_path / "cal.csv"
    p = run("--router", "num_vcs=2", "--router", "vc_depth_flits=8", "--size", "64KiB", "--only", "torus:4x4/ring/",
            "--csv", str(out))
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(out.open()))
    assert [(r["topology"], r["algorithm"], r["nic"]) for r in rows] == [
        ("torus:4x4", "ring", "codesigned"), ("torus:4x4", "ring", "baseline")]
    net = FlitNetworkConfig(num_vcs=2, vc_depth_flits=8)
    for r in rows:
        c = calibration.compare(r["topology"], r["algorithm"], r["nic"], net, 64 * 1024)
        assert (float(r["flit_cycles"]), float(r["message_cycles"])) == (c.flit_cycles, c.message_cycles)
    assert "of 2 within 5 %" in p.stdout


def test_the_flit_cache_stores_each_flit_total_and_reuses_it(tmp_path):
    out, cache = tmp_path / "cal.csv", tmp_path / "flit.json"
    args = ("--router", "num_vcs=2", "--router", "vc_depth_flits=8", "--size", "32KiB", "--only",
            "torus:4x4/ring/codesigned", "--csv", str(out), "--flit-cache", str(cache))
    p = run(*args)
    assert p.returncode == 0, p.stderr
    first = next(csv.DictReader(out.open()))
    stored = json.loads(cache.read_text())
    (key, cycles), = stored.items()
    assert key.endswith(" 32768 B torus:4x4/ring/codesigned") and cycles == float(first["flit_cycles"])
    cache.write_text(json.dumps({key: 1000.0}))  # a stored total is used as it is, the flit level not rerun
    p = run(*args)
    assert p.returncode == 0, p.stderr
    again = next(csv.DictReader(out.open()))
    assert float(again["flit_cycles"]) == 1000.0 and again["message_cycles"] == first["message_cycles"]
    for bad in ("not json", "[1, 2]", json.dumps({key: "fast"})):
        cache.write_text(bad)
        p = run(*args)
        assert p.returncode != 0 and "--flit-cache" in p.stderr


def test_arbiter_seeds_give_the_flit_levels_spread(tmp_path):
    out, cache = tmp_path / "cal.csv", tmp_path / "flit.json"
    p = run("--router", "num_vcs=2", "--router", "vc_depth_flits=8", "--size", "32KiB", "--only",
            "mesh:4x4/dbtree/codesigned", "--arbiter-seeds", "2", "--csv", str(out), "--flit-cache", str(cache))
    assert p.returncode == 0, p.stderr
    row = next(csv.DictReader(out.open()))
    net = FlitNetworkConfig(num_vcs=2, vc_depth_flits=8)
    totals = [calibration.flit_total("mesh:4x4", "dbtree", "codesigned", net.model_copy(update={"arbiter_seed": k}),
                                     32 * 1024) for k in (1, 2)]
    assert (float(row["flit_cycles_min_over_seeds"]), float(row["flit_cycles_max_over_seeds"])) == (min(totals),
                                                                                                    max(totals))
    assert float(row["flit_cycles_mean_with_seeds"]) == round((float(row["flit_cycles"]) + sum(totals)) / 3, 1)
    keys = list(json.loads(cache.read_text()))
    assert len(keys) == 3 and sum('"arbiter_seed"' in k for k in keys) == 2  # the reset state's key has none
    assert "over the reset state and the 2 seeds" in p.stdout


def test_bad_arbiter_seed_options_are_named():
    p = run("--arbiter-seeds", "-1")
    assert p.returncode != 0 and "--arbiter-seeds -1" in p.stderr
    p = run("--arbiter-seeds", "2", "--router", "arbiter_seed=3")
    assert p.returncode != 0 and "one or the other" in p.stderr
    p = run("--router", "arbiter_seed=-3")
    assert p.returncode != 0 and "arbiter_seed" in p.stderr


def test_vct_runs_the_per_packet_cases_with_virtual_cut_through_too(tmp_path):
    out = tmp_path / "cal.csv"
    p = run("--size", "32KiB", "--only", "torus:4x4/halving_doubling/", "--vct", "--csv", str(out))
    assert p.returncode == 0, p.stderr
    rows = {r["nic"]: r for r in csv.DictReader(out.open())}
    assert rows["codesigned"]["flit_cycles_vct"] == "" == rows["codesigned"]["message_vs_flit_vct_percent"]
    base = rows["baseline"]
    vct = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32, flow_control="vct")
    cut = calibration.flit_total("torus:4x4", "halving_doubling", "baseline", vct, 32 * 1024)
    assert float(base["flit_cycles_vct"]) == cut != float(base["flit_cycles"])  # cut-through moves this case
    assert float(base["message_vs_flit_vct_percent"]) == round(100 * (float(base["message_cycles"]) / cut - 1), 3)
    assert "per-packet cases: " in p.stdout and " of 1 within 5 % of the wormhole flit level" in p.stdout


def test_the_range_summary_counts_cases_within_5_percent_of_every_flit_total_run(tmp_path):
    # and, with both options, the tests' criterion: the co-designed case against the reset
    # state's total alone, the per-packet one against the range with the seeds and cut-through
    out = tmp_path / "cal.csv"
    p = run("--size", "32KiB", "--only", "torus:4x4/halving_doubling/", "--vct", "--arbiter-seeds", "1", "--csv",
            str(out))
    assert p.returncode == 0, p.stderr
    near = meets = 0
    for r in csv.DictReader(out.open()):
        totals = [float(r[k]) for k in ("flit_cycles", "flit_cycles_min_over_seeds", "flit_cycles_max_over_seeds",
                                         "flit_cycles_vct") if r[k] != ""]
        assert len(totals) == (4 if r["nic"] == "baseline" else 3)
        near += calibration.within(float(r["message_cycles"]), totals)
        meets += calibration.within(float(r["message_cycles"]),
                                    totals if r["nic"] == "baseline" else [float(r["flit_cycles"])])
    assert f"{near} of 2 within 5 % of the range of the flit totals (the reset state, arbiter_seed 1..1, " \
           "cut-through)" in p.stdout
    assert ("criterion (co-designed: the reset state; per-packet: the range over the reset state, arbiter_seed "
            f"1..1 and cut-through): {meets} of 2") in p.stdout


def test_the_bench_and_the_tests_share_one_criterion():
    # the per-packet range is over the routers nic.calibration.reference_routers names: the
    # reset state, virtual cut-through and arbiter_seed 1..N, the bench's --arbiter-seeds N --vct
    net = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32)
    per_packet = calibration.reference_routers(net, "baseline", 2)
    assert [(r.arbiter_seed, r.flow_control) for r in per_packet] == [
        (None, "wormhole"), (None, "vct"), (1, "wormhole"), (2, "wormhole")]
    assert calibration.reference_routers(net, "codesigned") == [net]
    assert len(calibration.reference_routers(net, "baseline")) == 2 + calibration.ARBITER_SEEDS


def test_bad_vct_options_are_named():
    p = run("--vct", "--router", "vc_depth_flits=8")
    assert p.returncode != 0 and "vc_depth_flits = 8" in p.stderr and "17 flits" in p.stderr
    p = run("--vct", "--router", "flow_control=vct")
    assert p.returncode != 0 and "leave flow_control out" in p.stderr


def test_a_bad_router_key_is_named():
    p = run("--router", "vcs=2")
    assert p.returncode != 0 and "unknown key 'vcs'" in p.stderr
    p = run("--router", "num_vcs")
    assert p.returncode != 0 and "expected KEY=VALUE" in p.stderr


HOL_SCRIPT = SCRIPT.with_name("ring_head_of_line.py")


def test_the_head_of_line_bench_runs_the_mirrored_ring_as_the_mirror_image():
    """The -x exchange uses links the +x one does not, and is its reflection (router x to
    3 - x, dateline included), so each of its flows gets exactly its image's rate: the
    bench's hand-built routes and VC classes are the ones noc.routing would give the reflection."""
    p = subprocess.run([sys.executable, str(HOL_SCRIPT), "--mirror", "--packets", "80"], capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    rate = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 6 and parts[1] == "->":
            rate[(int(parts[0]), int(parts[2]))] = float(parts[4])
    assert len(rate) == 8
    for x in range(4):  # +x flow of router x, -x flow of router 3 - x
        plus = rate[(2 * x, 2 * ((x + 2) % 4))]
        minus = rate[(2 * (3 - x) + 1, 2 * ((1 - x) % 4) + 1)]
        assert plus == minus
    assert all(r > 0 for r in rate.values())
