"""The sweep kinds run what the commands they stand for run: a sweep of kind ``allreduce``
gives the cycles ``hw-models allreduce`` gives (the command runs its points into a sweep
store under the same keys), a ``noc_load`` point what ``hw-models noc sweep-load`` measured
at that load (the commands run their points into their sweep store under the keys a sweep
file gives them); the records of the older JSONL stores, imported, are the finished points
the commands then reuse where their old keys can be checked (``noc_load``, ``training``)."""

from __future__ import annotations

import csv

import pytest

from cli_run import run
from hw_models.sweep.kinds import get_kind, kind_names
from hw_models.sweep.store import SweepStore
from noc.base.errors import ConfigError


def _rows(store_path, **where):
    with SweepStore(store_path, create=False) as st:
        return list(st.rows(**where))


def test_allreduce_points_give_the_allreduce_commands_cycles_and_share_its_store(tmp_path, capsys):
    out = tmp_path / "ar"
    code, _, err = run(["allreduce", "-t", "torus:2x2", "-a", "ring,multitree", "-s", "4KiB,16KiB", "--nic", "both",
                        "--out", str(out)], capsys)
    assert code == 0, err
    cmd = {(r["algorithm"], int(r["size_bytes"]), r["nic"]): float(r["total_cycles"])
           for r in csv.DictReader((out / "torus_2x2_message.csv").open())}
    assert len(cmd) == 8
    sweep = tmp_path / "ar.toml"
    sweep.write_text('kind = "allreduce"\n[base]\nnetwork.topology = "torus:2x2"\n[axes]\n'
                     '"allreduce.algorithm" = ["ring", "multitree"]\n"allreduce.size" = ["4KiB", 16384]\n'
                     '"nic.design" = ["codesigned", "baseline"]\n')
    fresh = tmp_path / "fresh.sqlite"
    code, text, err = run(["sweep", str(sweep), "--store", str(fresh), "--workers", "0"], capsys)
    assert code == 0, err
    with SweepStore(fresh, create=False) as st:
        got = {(r["config"]["algorithm"], r["config"]["size_bytes"], r["config"]["nic"]["design"]):
               r["metrics"]["total_cycles"] for r in st.rows()}
    assert got == cmd
    # the command ran these points into its own sweep store: a sweep there finds every one finished
    code, text, err = run(["sweep", str(sweep), "--store", str(out / "runs.sqlite"), "--workers", "0"], capsys)
    assert code == 0 and "8 finished before" in text and "nothing left to run" in text, text + err
    with SweepStore(out / "runs.sqlite", create=False) as st:
        stored = {r["key"]: r["metrics"] for r in st.rows()}
    with SweepStore(fresh, create=False) as st:
        ran = {r["key"]: r["metrics"] for r in st.rows()}
    assert stored == ran  # the same keys and metrics: one key function for both ways of asking


def test_import_jsonl_brings_in_the_allreduce_store_and_the_command_reuses_it(tmp_path, capsys, monkeypatch):
    """A JSONL store written by ``hw-models allreduce`` before it ran into the sweep store
    (tests/hw_models/golden/allreduce, recorded by golden/make_golden.sh) imports whole, its
    old keys checked, its records' metrics those of its CSV: the command then simulates none
    of its runs and writes its CSV byte for byte; importing it again adds nothing."""
    from pathlib import Path

    import nic.allreduce

    golden = Path(__file__).parent / "golden" / "allreduce"
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "out" / "allreduce" / "runs.sqlite"
    code, text, err = run(["sweep", "import-jsonl", str(golden / "torus_2x2_message.jsonl"), "--store", str(store)],
                          capsys)
    assert code == 0 and "imported 8 allreduce record(s) (8 as finished points)" in text, text + err
    rows = _rows(store)
    assert {r["origin"] for r in rows} == {f"jsonl {golden / 'torus_2x2_message.jsonl'}"}
    want = list(csv.DictReader((golden / "torus_2x2_message.csv").open()))
    got = {(r["metrics"]["algorithm"], r["metrics"]["size_bytes"], r["metrics"]["nic"]): r["metrics"] for r in rows}
    for w in want:
        m = got[(w["algorithm"], int(w["size_bytes"]), w["nic"])]
        assert all(str(m[c]) == w[c] for c in w if c not in ("speedup_vs_ring", "bound_percent", "optimum_cycles",
                                                               "optimum_percent")), w  # derived by the command

    def no_run(*args, **kw):
        raise AssertionError("an all-reduce was simulated")

    monkeypatch.setattr(nic.allreduce, "simulate_allreduce", no_run)
    code, text, err = run(_golden_command("allreduce"), capsys)
    assert code == 0 and "8 runs (8 reused from runs.sqlite)" in " ".join(text.split()), text + err
    assert (tmp_path / "out" / "allreduce" / "torus_2x2_message.csv").read_bytes() == \
        (golden / "torus_2x2_message.csv").read_bytes()
    code, text, _ = run(["sweep", "import-jsonl", str(golden / "torus_2x2_message.jsonl"), "--store", str(store)],
                        capsys)
    assert "imported 0 record(s); 8 already in" in text


def _golden_command(name: str) -> list[str]:
    import shlex
    from pathlib import Path

    return shlex.split((Path(__file__).parent / "golden" / name / "command.txt").read_text())[1:]


def test_import_jsonl_brings_in_the_noc_store_and_the_command_reuses_it(tmp_path, capsys, monkeypatch):
    """The JSONL store ``hw-models noc sweep-load`` wrote before it ran into the sweep store
    (tests/hw_models/golden/noc_sweep_load, recorded by golden/make_golden.sh), imported with
    its config, gives the command every point: it simulates none and writes its CSV byte for
    byte."""
    from pathlib import Path

    import noc.flit_traffic

    golden = Path(__file__).parent / "golden"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "noc.toml").write_text((golden / "noc.toml").read_text())
    store = tmp_path / "out" / "noc" / "runs.sqlite"
    code, text, err = run(["sweep", "import-jsonl", str(golden / "noc_sweep_load" / "sweep_mesh_3x3_uniform.jsonl"),
                           "--store", str(store), "--config", "noc.toml"], capsys)
    assert code == 0 and "imported 3 noc_load record(s) (3 as finished points)" in text, text + err

    def no_run(*args, **kw):
        raise AssertionError("a load point was simulated")

    monkeypatch.setattr(noc.flit_traffic, "run_traffic", no_run)
    code, text, err = run(_golden_command("noc_sweep_load"), capsys)
    assert code == 0 and "(3 point(s) reused from runs.sqlite)" in " ".join(text.split()), text + err
    want = golden / "noc_sweep_load" / "sweep_mesh_3x3_uniform.csv"
    assert (tmp_path / "out" / "noc" / want.name).read_bytes() == want.read_bytes()
    # without its config the records are kept as imported rows, not points
    code, text, _ = run(["sweep", "import-jsonl", str(golden / "noc_sweep_load" / "sweep_mesh_3x3_uniform.jsonl"),
                         "--store", str(tmp_path / "rows.sqlite")], capsys)
    assert "imported 3 noc_load record(s);" in text or text.rstrip().endswith("imported 3 noc_load record(s)")
    assert {r["key"] for r in _rows(tmp_path / "rows.sqlite")}.isdisjoint({r["key"] for r in _rows(store)})


def test_import_jsonl_brings_in_the_train_store_and_the_command_reuses_it(tmp_path, capsys, monkeypatch):
    """The JSONL store ``hw-models train`` wrote before it ran into the sweep store
    (tests/hw_models/golden/train) imports as training points, their old keys checked: the
    command then simulates nothing and writes its CSV byte for byte."""
    from pathlib import Path

    from hw_models.training.comm import NicComm

    golden = Path(__file__).parent / "golden" / "train"
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "out" / "train" / "runs.sqlite"
    code, text, err = run(["sweep", "import-jsonl", str(golden / "train_torus_2x2_message.jsonl"), "--store",
                           str(store)], capsys)
    assert code == 0 and "imported 4 training record(s) (4 as finished points)" in text, text + err

    def no_run(*args, **kw):
        raise AssertionError("a collective was simulated")

    monkeypatch.setattr(NicComm, "_seconds", no_run)
    code, text, err = run(_golden_command("train"), capsys)
    text = " ".join(text.split())
    assert code == 0 and "4 runs (4 reused from runs.sqlite)" in text and "ring: none; multitree: none" in text, \
        text + err
    want = golden / "train_torus_2x2_message_wfbp-p3.csv"
    assert (tmp_path / "out" / "train" / want.name).read_bytes() == want.read_bytes()


NOC = """
[network]
topology = "mesh:3x3"
[router]
num_vcs = 2
[traffic]
warmup_cycles = 100
measure_cycles = 400
drain_limit_cycles = 2000
"""


def test_noc_load_points_give_what_noc_sweep_load_measured_and_share_its_store(tmp_path, capsys):
    cfg = tmp_path / "noc.toml"
    cfg.write_text(NOC + "[sweep]\nmax_points = 3\nrefine_steps = 0\n")
    out = tmp_path / "noc"
    code, _, err = run(["noc", "sweep-load", str(cfg), "--out", str(out)], capsys)
    assert code == 0, err
    stored = {r["config"]["traffic"]["rate_packets"]: r for r in _rows(out / "runs.sqlite")}
    rates = sorted(stored)
    assert len(rates) == 3
    rows = list(csv.DictReader((out / "sweep_mesh_3x3_uniform.csv").open()))
    assert [int(r["packets"]) for r in rows] == [stored[x]["metrics"]["packets"] for x in rates]
    sweep = tmp_path / "load.toml"
    sweep.write_text('kind = "noc_load"\n' + NOC.replace("[", "[base.") + f'[axes]\n"traffic.rate_packets" = {rates!r}\n')
    # the command's points are the sweep's: a sweep into its store finds them finished
    code, text, err = run(["sweep", str(sweep), "--store", str(out / "runs.sqlite"), "--workers", "0"], capsys)
    assert code == 0 and "3 finished before" in text and "nothing left to run" in text, text + err
    # run afresh, the kind measures what the command measured at each load, under the same keys
    code, text, err = run(["sweep", str(sweep), "--store", str(tmp_path / "fresh.sqlite"), "--workers", "0"], capsys)
    assert code == 0, err
    fresh = {r["key"]: r["metrics"] for r in _rows(tmp_path / "fresh.sqlite")}
    assert fresh == {r["key"]: r["metrics"] for r in stored.values()}


def test_noc_load_key_matches_the_noc_command_whatever_way_the_latencies_are_spelled():
    kind = get_kind("noc_load")
    a = kind.validate({"network": {"topology": "mesh:3x3"}, "traffic": {"rate_packets": 0.05}})
    b = kind.validate({"network": {"topology": "mesh:3x3", "link_latency_cycles": 1},
                       "channels": {"router_latency_cycles": 1, "inject_latency_cycles": 1},
                       "traffic": {"rate_packets": 0.05}})
    assert a == b


def test_kinds_refuse_bad_points_naming_the_key_and_value():
    ar = get_kind("allreduce")
    cases = [
        (ar, {"allreduce": {"algorithm": "ring"}}, "missing key 'allreduce.size'"),
        (ar, {"allreduce": {"algorithm": "ring", "size": "1KiB", "modle": "flit"}},
         "unknown key 'allreduce.modle' (allowed: algorithm, size, model, tree_order, element_bytes)"),
        (ar, {"allreduce": {"algorithm": "ring", "size": 4096, "model": "cycle"}},
         "key 'allreduce.model' = 'cycle': choose one of message, flit"),
        (ar, {"allreduce": {"algorithm": "ring", "size": 4096}, "network": {"topology": "torus:2x2", "nis_per_node": 99}},
         "network.nis_per_node"),
        (get_kind("noc_load"), {"traffic": {"rate_packets": 2.0}}, "traffic.rate_packets"),
        (get_kind("noc_load"), {"sweep": {}}, "unknown key 'sweep'"),
        (get_kind("rtl_synth"), {"depth": 0}, "key 'depth' = 0: must be an integer in 1..4096"),
        (get_kind("rtl_synth"), {"DEPTH": 16}, "unknown key 'DEPTH' (allowed: depth, nis,"),
    ]
    for kind, point, message in cases:
        with pytest.raises(ConfigError) as info:
            kind.validate(point, "p")
        assert message in str(info.value) and str(info.value).startswith("p"), (point, str(info.value))


def test_equal_points_resolve_to_one_config():
    ar = get_kind("allreduce")
    a = ar.validate({"allreduce": {"algorithm": "2dring", "size": "16KiB"}, "network": {"topology": "torus:4x4"}})
    b = ar.validate({"allreduce": {"algorithm": "ring2d", "size": 16384, "model": "message"},
                     "network": {"topology": "torus:4x4", "nis_per_node": 1}, "nic": {"design": "codesigned"}})
    assert a == b and a["algorithm"] == "ring2d"
    rtl = get_kind("rtl_synth")
    assert rtl.validate({"depth": 64}) == rtl.validate({"depth": 64, "nis": 1})


def test_the_kinds_there_are():
    assert {"allreduce", "noc_load", "rtl_synth", "training", "train_system"} <= set(kind_names())


@pytest.mark.slow
def test_rtl_synth_point_counts_what_rtl_synth_counts():
    from hw_models.rtl.synth import synth_one
    from nic.scheduler import SchedulerParams

    kind = get_kind("rtl_synth")
    m = kind.run(kind.validate({"depth": 16, "nis": 1}))
    row = synth_one(SchedulerParams(depth=16, nis=1))
    assert (m["cells"], m["flip_flops"], m["luts"]) == (row.cells, row.flip_flops, row.luts)


def test_training_points_give_the_train_commands_iteration_times(tmp_path, capsys):
    """A training sweep and `hw-models train` on one network: the same seconds per iteration
    and the same reduction against ring, run by run."""
    out = tmp_path / "train"
    code, _, err = run(["train", "-t", "torus:2x2", "--nis", "1", "-w", "alexnet", "-a", "ring,multitree",
                        "--policy", "wfbp,p3", "--out", str(out)], capsys)
    assert code == 0, err
    (csv_path,) = out.glob("train_*.csv")
    cmd = {(r["algorithm"], r["policy"]): float(r["iteration_s"]) for r in csv.DictReader(csv_path.open())}
    assert len(cmd) == 4
    sweep = tmp_path / "tr.toml"
    sweep.write_text('kind = "training"\n[base]\nnetwork.topology = "torus:2x2"\ntraining.workload = "alexnet"\n'
                     '[axes]\n"training.algorithm" = ["ring", "multitree"]\n"training.policy" = ["wfbp", "p3"]\n')
    store = tmp_path / "tr.sqlite"
    code, _, err = run(["sweep", str(sweep), "--store", str(store), "--workers", "0"], capsys)
    assert code == 0, err
    with SweepStore(store, create=False) as st:
        rows = list(st.rows())
    got = {(r["config"]["algorithm"], r["metrics"]["policy_label"]): r["metrics"]["iteration_s"] for r in rows}
    assert got.keys() == cmd.keys()
    for key, want in cmd.items():
        assert got[key] == pytest.approx(want, rel=1e-9), key
    for r in rows:
        label = r["metrics"]["policy_label"]
        ring = got[("ring", label)]
        assert r["metrics"]["ring_iteration_s"] == pytest.approx(ring, rel=1e-12)
        assert r["metrics"]["reduction_vs_ring_pct"] == pytest.approx(
            100 * (1 - got[(r["config"]["algorithm"], label)] / ring))


def test_training_points_refuse_bad_keys_naming_them():
    kind = get_kind("training")
    cases = [
        ({"training": {"workload": "resnet50", "algorithm": "ring"}}, "missing key 'training.policy'"),
        ({"training": {"workload": "resnet50", "algorithm": "ring", "policy": "all"}},
         "key 'training.policy' = 'all': one policy per point"),
        ({"training": {"workload": "resnet50", "algorithm": "ring", "policy": "wfbp", "batch": 0}},
         "key 'training.batch' = 0: must be an integer >= 1"),
        ({"training": {"workload": "resnet50", "algorithm": "ring", "policy": "wfbp", "slice_bytes": "4MiB"}},
         "training.slice_bytes"),
        ({"training": {"workload": "resnet50", "algorithm": "ring", "policy": "wfbp", "modle": "flit"}},
         "unknown key 'training.modle'"),
        ({"training": {"workload": "resnet50,vgg16", "algorithm": "ring", "policy": "wfbp"}},
         "one workload per point"),
        # the network the all-reduce model cannot run is refused at validation, as `train` refuses it
        ({"training": {"workload": "resnet50", "algorithm": "ring", "policy": "wfbp", "model": "flit"},
          "network": {"topology": "torus:4x4", "nis_per_node": 17}}, "serves at most 16"),
        ({"training": {"workload": "resnet50", "algorithm": "ring", "policy": "wfbp"},
          "router": {"flow_control": "vct"}}, "the message model represents wormhole routers only"),
    ]
    for point, message in cases:
        with pytest.raises(ConfigError) as info:
            kind.validate(point, "p")
        assert message in str(info.value) and str(info.value).startswith("p"), (point, str(info.value))
    a = kind.validate({"training": {"workload": "resnet50", "algorithm": "2dring", "policy": "wfbp"}})
    b = kind.validate({"training": {"workload": "resnet50", "algorithm": "ring2d", "policy": "WFBP", "batch": 16},
                       "network": {"nis_per_node": 1}})
    assert a == b


def test_maddpg_accel_points_give_what_the_accelerator_model_gives(tmp_path, capsys):
    """Points of kind maddpg_accel run maddpg.accel.model.simulate_update on the design they
    name; one too large for the part is kept with fits = false and the resource named."""
    from maddpg.accel.config import AccelConfig, spread_workload
    from maddpg.accel.model import simulate_update
    from maddpg.accel.parts import get_part

    sweep = tmp_path / "acc.toml"
    sweep.write_text('kind = "maddpg_accel"\n[base]\nagents = 3\npart = "u250"\n[axes]\n'
                     '"accel.pe" = [2, 4096]\n"accel.interconnect" = ["ring", "crossbar"]\n')
    store = tmp_path / "acc.sqlite"
    code, _, err = run(["sweep", str(sweep), "--store", str(store), "--workers", "0"], capsys)
    assert code == 0, err
    rows = _rows(store)
    assert len(rows) == 4
    for r in rows:
        cfg = AccelConfig.model_validate(r["config"]["accel"])
        want = simulate_update(spread_workload(3), cfg, get_part("u250"))
        m = r["metrics"]
        assert (m["update_cycles"], m["dsp"], m["fits"], m["over"]) == (
            want.update_cycles, want.resources.dsp, want.fits, want.over)
        assert m["fits"] == (cfg.pe == 2) and (m["fits"] or m["over"])
    kind = get_kind("maddpg_accel")
    for point, message in [({"accel": {"pe": 2}}, "missing key 'agents'"),
                           ({"agents": 1}, "key 'agents' = 1: must be an integer >= 2"),
                           ({"agents": 3, "part": "u9"}, "key 'part'"),
                           ({"agents": 3, "accel": {"pes": 2}}, "unknown key 'accel.pes'"),
                           ({"agents": 3, "env": "simple_nothing"}, "key 'env' = 'simple_nothing'")]:
        with pytest.raises(ConfigError) as info:
            kind.validate(point, "p")
        assert message in str(info.value) and str(info.value).startswith("p"), (point, str(info.value))


@pytest.mark.parametrize("value", [[], {}, ["ring"], None, 3])
def test_a_choice_that_is_not_a_name_is_a_config_error(value):
    from hw_models.sweep.kinds import choice_of
    from noc.base.errors import ConfigError

    with pytest.raises(ConfigError, match=r"point: key 'system' = .*: choose one of a, b"):
        choice_of(value, {"a": 1, "b": 2}, "point", "system")
    assert choice_of("b", {"a": 1, "b": 2}, "point", "system") == "b"
