"""``hw-models train`` end to end on a tiny case (a 2x2 torus, a three-layer network, message
level): its CSV against the pieces called by another path (the config read by
NicComm.from_config, the compute model, the timeline, the NIC model itself), outputs written
and never silently replaced, and bad input refused on one line with nothing written."""

from __future__ import annotations

import csv
import json

import pytest

from hw_models.cli import main
from hw_models.training.comm import NicComm
from hw_models.training.compute import get_device, layer_costs
from hw_models.training.policies import POLICIES, WaitFreeBackprop
from hw_models.training.timeline import simulate
from hw_models.training.workloads import load_workload_file
from nic.allreduce import simulate_allreduce

from tiny_workload import NET

BATCH = 4


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


def stored(out):
    """The training points in the output directory's sweep store, oldest first."""
    from hw_models.sweep.store import SweepStore

    with SweepStore(out / "runs.sqlite", create=False) as st:
        return list(st.rows(kind="training", status="done"))


def argv(net, out, *extra):
    return ["train", "--workloads", str(net / "tiny.toml"), "--topology", "torus:2x2", "--batch", str(BATCH),
            "--algorithms", "multitree", "--out", str(out), *extra]


def test_train_end_to_end_against_the_pieces(net, tmp_path, capsys):
    out, trace, gantt = tmp_path / "out", tmp_path / "t.json", tmp_path / "g.png"
    code, stdout, err = run(argv(net, out, "--trace", str(trace), "--gantt", str(gantt)), capsys)
    assert code == 0, err
    assert "verifier seed 1" in stdout and "tiny / multitree / wfbp" in stdout
    rows = read_csv(out / "train_torus_2x2_message_wfbp.csv")
    assert [(r["workload"], r["algorithm"], r["policy"]) for r in rows] == [("tiny", "ring", "wfbp"),
                                                                           ("tiny", "multitree", "wfbp")]
    # the same runs by another path: the config file read by NicComm.from_config, the layer costs, the timeline
    costs = layer_costs(load_workload_file(net / "tiny.toml"), BATCH, get_device("multitree-node"))
    direct = {a: simulate(costs, NicComm.from_config(net / "torus22.toml", algorithm=a), WaitFreeBackprop())
              for a in ("ring", "multitree")}
    for r in rows:
        d = direct[r["algorithm"]]
        assert float(r["iteration_s"]) == d.iteration_s
        assert float(r["exposed_comm_s"]) == d.exposed_comm_s
        assert int(r["grad_bytes"]) == sum(x.grad_bytes for x in costs) == (3 * 9 * 8 + 8 + 512 * 10 + 10) * 4
        assert (r["topology"], r["nic"], r["model"], r["batch"], r["num_workers"]) == (
            "torus:2x2", "codesigned", "message", str(BATCH), "4")
    t_ring, t_mt = direct["ring"].iteration_s, direct["multitree"].iteration_s
    assert float(rows[1]["reduction_vs_ring_percent"]) == pytest.approx(100 * (1 - t_mt / t_ring), rel=1e-12)
    # the trace and the Gantt chart: the default run is the first workload, the last algorithm, the first policy
    doc = json.loads(trace.read_text())
    assert doc["otherData"]["policy"] == "wfbp" and doc["otherData"]["steady_iteration_s"] == t_mt
    assert "multitree" in doc["otherData"]["comm"]
    assert gantt.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "train_torus_2x2_message_wfbp.png").read_bytes()[:4] == b"\x89PNG"
    assert [s["config"]["algorithm"] for s in stored(out)] == ["ring", "multitree"]

    # the same command again: the trace exists, so nothing runs and nothing changes
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    trace_before = trace.read_bytes()
    code, stdout, err = run(argv(net, out, "--trace", str(trace), "--gantt", str(tmp_path / "g2.png")), capsys)
    assert code == 2 and err.count("\n") == 1 and "--trace" in err and "exists" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before and trace.read_bytes() == trace_before
    assert not (tmp_path / "g2.png").exists()

    # another configuration into the same folder: a note, and every run stays in the store
    code, stdout, err = run(argv(net, out, "--batch", "2"), capsys)
    assert code == 0, err
    assert "note: replacing" in stdout and "runs.sqlite" in stdout
    assert [r["batch"] for r in read_csv(out / "train_torus_2x2_message_wfbp.csv")] == ["2", "2"]
    store = stored(out)
    assert [s["config"]["batch"] for s in store] == [BATCH, BATCH, 2, 2] and len({s["key"] for s in store}) == 4
    # and the identical command again reuses its runs and rewrites the same bytes, without a note
    same = (out / "train_torus_2x2_message_wfbp.csv").read_bytes()
    code, stdout, err = run(argv(net, out, "--batch", "2"), capsys)
    assert code == 0 and "note: replacing" not in stdout and "2 runs (2 reused from runs.sqlite)" in stdout
    assert (out / "train_torus_2x2_message_wfbp.csv").read_bytes() == same


def test_ctrl_c_keeps_the_finished_runs_and_a_rerun_resumes(net, tmp_path, capsys, monkeypatch):
    """Ctrl-C while the second run simulates: exit 130, the first run is in the store; the
    same command again runs only the second and writes what an uninterrupted command writes."""
    whole = tmp_path / "whole"
    assert run(argv(net, whole), capsys)[0] == 0
    real = NicComm._seconds

    def press(self, kind, nbytes):  # Ctrl-C at multitree's first collective: the ring run is finished
        if self.schedule.algorithm == "multitree":
            raise KeyboardInterrupt
        return real(self, kind, nbytes)

    out = tmp_path / "out"
    monkeypatch.setattr(NicComm, "_seconds", press)
    code, stdout, _ = run(argv(net, out), capsys)
    assert code == 130 and "run the same command again to resume" in " ".join(stdout.split())
    assert [s["config"]["algorithm"] for s in stored(out)] == ["ring"]
    assert not (out / "train_torus_2x2_message_wfbp.csv").exists()
    monkeypatch.setattr(NicComm, "_seconds", real)
    code, stdout, err = run(argv(net, out), capsys)
    assert code == 0 and "2 runs (1 reused from runs.sqlite)" in " ".join(stdout.split()), err
    name = "train_torus_2x2_message_wfbp.csv"
    assert (out / name).read_bytes() == (whole / name).read_bytes()


def test_train_every_policy_sequential_by_hand(net, tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, err = run(argv(net, out, "--policy", "all", "--slice-bytes", "4KiB", "--trace",
                                 str(tmp_path / "d.json"), "--trace-run", "tiny/ring/dear"), capsys)
    assert code == 0, err
    rows = read_csv(out / "train_torus_2x2_message_all_policies.csv")
    assert [r["policy"].split(" ")[0] for r in rows] == list(POLICIES) * 2
    assert "p3 (4 KiB slices)" in {r["policy"] for r in rows}
    by = {(r["algorithm"], r["policy"].split(" ")[0]): r for r in rows}
    # sequential: the whole compute, then each layer's all-reduce one after the other (the first
    # layer's last, and the next forward pass waits for it); the all-reduces from the NIC model itself
    costs = layer_costs(load_workload_file(net / "tiny.toml"), BATCH, get_device("multitree-node"))
    comm = NicComm.from_config(net / "torus22.toml", algorithm="ring")
    ar_s = sum(simulate_allreduce(comm.topology, comm.schedule, comm.nic, comm.network, comm.sim_bytes(x.grad_bytes),
                                  seed=1).total_cycles / 1e9 for x in costs if x.grad_bytes)
    compute_s = sum(x.fwd_s + x.bwd_s for x in costs)
    assert float(by[("ring", "sequential")]["iteration_s"]) == pytest.approx(compute_s + ar_s, rel=1e-12)
    for r in rows:
        base = float(by[(r["algorithm"], "wfbp")]["iteration_s"])
        assert float(r["reduction_vs_wfbp_percent"]) == pytest.approx(100 * (1 - float(r["iteration_s"]) / base))
    doc = json.loads((tmp_path / "d.json").read_text())
    assert doc["otherData"]["policy"].startswith("dear") and "ring" in doc["otherData"]["comm"]
    assert {e["cat"] for e in doc["traceEvents"] if e["ph"] == "X"} >= {"reduce_scatter", "all_gather"}


@pytest.mark.parametrize("extra, says", [
    (["--policy", "wfbp", "--slice-bytes", "1MiB"], "--slice-bytes applies to the p3 policy"),
    (["--fusion-threshold", "lots", "--policy", "fusion"], "--fusion-threshold: size 'lots'"),
    (["--workloads", "resnet"], "workload 'resnet' is unknown"),
    (["--iterations", "1"], "--iterations 1"),
    (["--batch", "0"], "--batch 0"),
    (["--device", "tpu"], "device 'tpu' is unknown"),
    (["--engine", "magic"], "--engine 'magic'"),
    (["--model", "spice"], "--model 'spice'"),
    (["--variant", "delta", "--nis", "2"], "--nis 2 contradicts --variant delta"),
    (["--nic", "both"], "--nic 'both'"),
    (["--trace", "T", "--trace-run", "tiny/ring"], "WORKLOAD/ALGORITHM/POLICY"),
    (["--trace", "T", "--trace-run", "tiny/dbtree/wfbp"], "algorithm 'dbtree' is not run"),
    (["--trace-run", "tiny/ring/wfbp"], "give one of them"),
    (["--algorithms", "warp"], "unknown algorithm 'warp'"),
    (["--nis", "65"], "--nis 65"),
])
def test_bad_input_one_line_exit_2_nothing_written(net, tmp_path, capsys, monkeypatch, extra, says):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    extra = [str(tmp_path / "t.json") if a == "T" else a for a in extra]
    code, stdout, err = run(argv(net, out, *extra), capsys)
    assert code == 2, (stdout, err)
    assert err.startswith("error: ") and err.count("\n") == 1 and says in err, err
    assert "Traceback" not in stdout + err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
