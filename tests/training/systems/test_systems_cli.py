"""``hw-models train-system`` on a tiny case (a 2x2 torus, a three-layer network): its CSV
figures against the pieces called by another path, outputs that never replace another
run's, and bad input refused on one line (exit 2) with nothing written."""

from __future__ import annotations

import csv

import pytest

from hw_models.cli import main
from hw_models.training.comm import NicComm
from hw_models.training.compute import get_device, layer_costs
from hw_models.training.policies import WaitFreeBackprop
from hw_models.training.systems.ps import PushPull, ps_schedule
from hw_models.training.systems.ssd import ssd_timeline
from hw_models.training.timeline import simulate
from hw_models.training.workloads import load_workload_file

from tiny_workload import NET


def run(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    d = tmp_path_factory.mktemp("net")
    (d / "tiny.toml").write_text(NET)
    (d / "torus22.toml").write_text('[network]\ntopology = "torus:2x2"\n')
    return d


@pytest.fixture(scope="module")
def pieces(net):
    comm = NicComm.from_config(net / "torus22.toml", algorithm="ring")
    layers = layer_costs(load_workload_file(net / "tiny.toml"), 4, get_device("multitree-node"))
    return comm, layers


def argv(net, out, system, *extra):
    return ["train-system", system, "-w", str(net / "tiny.toml"), "-t", "torus:2x2", "-b", "4", "-o", str(out),
            *extra]


def test_ssd_rows_against_the_pieces(net, pieces, tmp_path, capsys):
    code, out, err = run(argv(net, tmp_path, "ssd", "--task", "logreg", "--max-iterations", "200",
                              "--delays", "1,4"), capsys)
    assert code in (0, None), err
    assert "seed 0" in out
    files = sorted(tmp_path.glob("*.csv"))
    assert len(files) == 2
    timing = read_csv([f for f in files if not f.name.endswith("_convergence.csv")][0])
    comm, layers = pieces
    base = simulate(layers, comm, WaitFreeBackprop()).iteration_s
    assert float(timing[0]["iteration_s"]) == pytest.approx(base, rel=1e-12)
    model = sum(x.grad_bytes for x in layers)
    compute = sum(x.fwd_s + x.bwd_s for x in layers)
    for row, k in zip(timing[1:], (1, 4)):
        expect = max(compute + 3 * model / 320e9, comm.allreduce_s(model) / k)
        assert float(row["closed_form_s"]) == pytest.approx(expect, rel=1e-12)
        assert float(row["iteration_s"]) == pytest.approx(ssd_timeline(layers, comm, k, 320e9)[0], rel=1e-12)
    conv = read_csv([f for f in files if f.name.endswith("_convergence.csv")][0])
    assert conv[0]["run"].startswith("sync SGD") and int(conv[0]["iterations_to_target"]) > 0
    assert [r["run"] for r in conv[1:]] == ["SSD-SGD k=1", "SSD-SGD k=4"]


def test_ps_layer_rows_against_the_pieces(net, pieces, tmp_path, capsys):
    code, out, err = run(argv(net, tmp_path, "ps", "--task", "none", "--servers", "2", "--placement", "first",
                              "--modes", "sync,async"), capsys)
    assert code in (0, None), err
    comm, layers = pieces
    pc = NicComm(comm.topology, ps_schedule(comm.topology, (0, 1)), comm.nic, comm.network)
    timing = read_csv(next(tmp_path.glob("*.csv")))
    assert float(timing[1]["iteration_s"]) == pytest.approx(simulate(layers, pc, PushPull(False)).iteration_s)
    assert float(timing[2]["iteration_s"]) == pytest.approx(simulate(layers, pc, PushPull(True)).iteration_s)
    assert [r["run"].split(",")[0] for r in timing[3:]] == ["PS sync", "PS async", "PS async"]


@pytest.mark.parametrize("system", ["compression", "easgd", "kfac"])
def test_other_systems_run_and_repeat_byte_for_byte(net, tmp_path, capsys, system):
    a = argv(net, tmp_path, system, "--task", "none")
    code, _, err = run(a, capsys)
    assert code in (0, None), err
    first = {p.name: p.read_bytes() for p in tmp_path.glob("*.csv")}
    code, again, err = run(a, capsys)
    assert code in (0, None), err
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.csv")} == first
    assert "(reused from runs.sqlite)" in again  # the run is the stored point's
    code, _, err = run(a + ["-b", "8"], capsys)  # another setting: another file, the first kept
    assert code in (0, None), err
    now = {p.name: p.read_bytes() for p in tmp_path.glob("*.csv")}
    assert len(now) == 2 * len(first) and all(now[k] == v for k, v in first.items())


def test_easgd_stragglers_rows_against_the_pieces(net, pieces, tmp_path, capsys):
    from hw_models.training.systems.hogwild import simulate_easgd
    from hw_models.training.systems.ps import Stragglers

    code, out, err = run(argv(net, tmp_path, "easgd", "--task", "logreg", "--max-iterations", "60",
                              "--variants", "sync,hogwild", "--stragglers", "slow:1:3", "--seed", "5"), capsys)
    assert code in (0, None), err
    assert "seed 5" in out
    comm, layers = pieces
    pc = NicComm(comm.topology, ps_schedule(comm.topology, (0,)), comm.nic, comm.network)
    m = sum(x.grad_bytes for x in layers)
    compute = sum(x.fwd_s + x.bwd_s for x in layers)
    files = sorted(tmp_path.glob("*.csv"))
    timing = read_csv([f for f in files if not f.name.endswith("_convergence.csv")][0])
    assert [r["run"] for r in timing] == ["sync EASGD tau=1", "hogwild EASGD tau=1",
                                          "sync EASGD tau=1, stragglers slow:1:3 (event simulation)",
                                          "hogwild EASGD tau=1, stragglers slow:1:3 (event simulation)"]
    hog = simulate_easgd("hogwild", 1, 4, compute, exchange_s=(pc.reduce_scatter_s(m) + pc.all_gather_s(m)) / 4,
                         update_s=3 * m / 320e9, allreduce_s=comm.allreduce_s(m),
                         stragglers=Stragglers.parse("slow:1:3", 4), iterations=60, seed=5)
    assert float(timing[3]["iteration_s"]) == pytest.approx(hog.time_per_iteration_s(), rel=1e-12)
    assert float(timing[3]["mean_staleness"]) == pytest.approx(hog.mean_staleness(), abs=1e-3)
    conv = read_csv([f for f in files if f.name.endswith("_convergence.csv")][0])
    assert [r["run"].split(" (")[0] for r in conv[3:]] == ["sync EASGD tau=1, stragglers slow:1:3",
                                                          "hogwild EASGD tau=1, stragglers slow:1:3"]


@pytest.mark.parametrize("extra, says", [
    (["ring"], "SYSTEM 'ring': unknown (allowed: compression, ps, ssd, easgd, kfac, dlion)"),
    (["ssd", "--servers", "2"], "--servers applies to the ps system, not ssd"),
    (["compression", "--compressors", "gzip"], "--compressors 'gzip': unknown compressor"),
    (["compression", "--compressors", "topk:2"], "ratio = 2.0: must be a share in (0, 1]"),
    (["compression", "--fix", "sideways"], "--fix 'sideways': choose one of none, step_ahead"),
    (["ps", "--modes", "bsp"], "--modes: mode = 'bsp': must be sync, async or ssp:BOUND"),
    (["ps", "--stragglers", "slow:9:2"], "COUNT must be in [0, 4]"),
    (["ps", "--servers", "5"], "--servers: servers = 5: must be an integer in [1, 4]"),
    (["ssd", "--delays", "0,2"], "--delays '0,2': must be comma-separated integers in 1..1000"),
    (["easgd", "--variants", "downpour"], "--variants 'downpour': allowed sync, async, measgd, hogwild"),
    (["easgd", "--alpha", "1.5"], "--alpha 1.5: the elastic moving rate must be in (0, 1)"),
    (["easgd", "--stragglers", "fast:2"], "--stragglers: stragglers = 'fast:2': 'fast:2' is not one of none, "
                                          "slow:COUNT:FACTOR"),
    (["ssd", "--stragglers", "slow:5:2"], "--stragglers: stragglers = 'slow:5:2': COUNT must be in [0, 4]"),
    (["compression", "--stragglers", "walk:9"], "--stragglers: stragglers = 'walk:9': walk SIGMA must be in [0, 3]"),
    (["kfac", "--stragglers", ""], "--stragglers '': empty; give a value or leave the flag out for the default"),
    (["ssd", "--links", "const:1/2"], "--links: links = 'const:1/2': const needs 1 or 4 factors"),
    (["compression", "--links", "fast"], "--links: links = 'fast': 'fast' is not one of none, slow:COUNT:FACTOR"),
    (["kfac", "--links", "at:0:4:2"], "--links: links = 'at:0:4:2': at:STEP:NODE:FACTOR needs"),
    (["dlion", "--techniques", "gossip"], "--techniques: techniques = 'gossip': 'gossip' unknown"),
    (["dlion", "--links", "at:1:7:2"], "--links: links = 'at:1:7:2': at:STEP:NODE:FACTOR needs"),
    (["dlion", "--transfer-every", "0"], "--transfer-every 0: must be an integer >= 1"),
    (["ps", "--links", "slow:1"], "--links: links = 'slow:1': 'slow:1' is not one of none"),
    (["easgd", "--links", "lognormal:4"], "--links: links = 'lognormal:4': SIGMA must be in [0, 3]"),
    (["compression", "--mp-keep", "2"], "--mp-keep 2.0: must be a share in (0, 1]"),
    (["compression", "--mp-keep", "0.1"], "--mp-keep: workload 'tiny' has no embedding/MLP model-parallel boundary"),
    (["kfac", "--inverse-efficiency", "0"], "--inverse-efficiency 0.0: must be in (0, 1]"),
    (["ssd", "--task", "cnn"], "--task 'cnn': choose one of logreg, mlp, none"),
    (["ssd", "--device", "tpu"], "--device"),
])
def test_bad_input_one_line_exit_2_nothing_written(net, tmp_path, capsys, extra, says):
    out = tmp_path / "out"
    a = ["train-system", *extra[:1], "-w", str(net / "tiny.toml"), "-t", "torus:2x2", "-o", str(out), *extra[1:]]
    code, _, err = run(a, capsys)
    assert code == 2
    assert says in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())


def test_a_config_file_runs_as_the_points_experiment_table(net, tmp_path, capsys):
    """--config: the command's point holds the file's keys (kind train_system's ``experiment``
    table), so a sweep point stating them is the command's point, and the network is the
    file's (its 4-ary ring of 4 workers, not the default torus)."""
    from hw_models.sweep.kinds import get_kind
    from hw_models.sweep.store import SweepStore, point_key

    cfg = tmp_path / "ring.toml"
    cfg.write_text('[network]\ntopology = "ring:4"\n')
    out = tmp_path / "o"
    code, text, err = run(["train-system", "kfac", "-w", str(net / "tiny.toml"), "-b", "4", "--task", "none",
                           "--config", str(cfg), "-o", str(out)], capsys)
    assert code in (0, None), err
    assert "over ring:4 (4 workers" in text
    kind = get_kind("train_system")
    resolved = kind.validate({"system": "kfac", "workload": str(net / "tiny.toml"), "batch": 4, "task": "none",
                              "experiment": {"network": {"topology": "ring:4"}}})
    with SweepStore(out / "runs.sqlite", create=False) as st:
        (row,) = list(st.rows())
    assert row["key"] == point_key("train_system", resolved, kind.model_versions())
    with pytest.raises(Exception, match="key 'experiment' = 3: must be a table"):
        kind.validate({"system": "kfac", "experiment": 3})


@pytest.mark.slow
def test_dlion_rows_against_the_pieces(net, pieces, tmp_path, capsys):
    """The command's DLion rows are the module's runs on the same network figures: a link's
    time for b bytes is the ring all-gather of 4 b, rounds on the timeline (wfbp), the
    baseline the ring all-reduce."""
    from hw_models.training.hetero import Profile
    from hw_models.training.systems.dlion import Net, allreduce_baseline, dlion
    from hw_models.training.systems.tasks import Task

    code, _, err = run(argv(net, tmp_path, "dlion", "--max-iterations", "120", "--techniques",
                            "none,batching+priority+transfer", "--stragglers", "slow:1:3", "--links", "slow:1:4",
                            "--seed", "2"), capsys)
    assert code in (0, None), err
    comm, layers = pieces
    m = sum(x.grad_bytes for x in layers)
    nt = Net(sum(x.fwd_s + x.bwd_s for x in layers), comm.all_gather_s(4 * m), comm.allreduce_s(m), m,
             tuple(layers), lambda b: comm.all_gather_s(4 * b), comm, "wfbp")
    task = Task("logreg", workers=4, batch=16, seed=2)
    w, lk = Profile.parse("slow:1:3", 4, seed=2), Profile.parse("slow:1:4", 4, seed=3)
    want = [allreduce_baseline(task, nt, w, lk, 0.1, target=0.95, max_iterations=120, seed=2),
            dlion(task, (), nt, w, lk, 0.1, target=0.95, max_iterations=120, seed=2),
            dlion(task, ("batching", "priority", "transfer"), nt, w, lk, 0.1, target=0.95, max_iterations=120,
                  seed=2)]
    files = sorted(tmp_path.glob("*.csv"))
    timing = read_csv([f for f in files if not f.name.endswith("_convergence.csv")][0])
    conv = read_csv([f for f in files if f.name.endswith("_convergence.csv")][0])
    assert [r["techniques"] for r in timing] == ["allreduce", "none", "batching+priority+transfer", "ps", "easgd"]
    for row, c, r in zip(timing, conv, want):
        assert float(row["iteration_s"]) == pytest.approx(r.extra["mean_round_s"], rel=1e-9)
        assert float(c["final_accuracy"]) == pytest.approx(r.final_accuracy, abs=1e-6)


@pytest.mark.parametrize("system, extra", [("compression", ["--compressors", "onebit"]), ("ssd", ["--delays", "2"]),
                                           ("kfac", [])])
def test_a_profile_of_ones_writes_the_default_runs_bytes(net, tmp_path, capsys, system, extra):
    """``--stragglers const:1 --links none`` is the default run: the same files, byte for byte."""
    outs = []
    for i, prof in enumerate(([], ["--stragglers", "const:1", "--links", "none"])):
        code, _, err = run(argv(net, tmp_path / str(i), system, "--task", "none", *extra, *prof), capsys)
        assert code in (0, None), err
        outs.append({p.name: p.read_bytes() for p in (tmp_path / str(i)).glob("*.csv")})
    assert outs[0] == outs[1] and len(outs[0]) == 1
    code, _, err = run(argv(net, tmp_path / "2", system, "--task", "none", *extra, "--stragglers", "const:2"), capsys)
    assert code in (0, None), err
    (rows,) = [read_csv(p) for p in (tmp_path / "2").glob("*.csv")]
    assert [r["stragglers"] for r in rows] == [""] * (len(rows) // 2) + ["const:2/2/2/2"] * (len(rows) // 2)
