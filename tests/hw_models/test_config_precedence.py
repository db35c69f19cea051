"""One precedence rule for every command that takes a config file and flags: a flag given
overrides the file's key, a flag left out never does. Each command is run from its command
line (so the flags' own defaults are in play) up to the point where its work would start;
what it resolved is compared with the file's keys and with the flags given."""

from __future__ import annotations

import pytest

from hw_models.cli import main

EXPERIMENT = """
[network]
topology = "torus:2x2"
nis_per_node = 2
routing = "dor"
[allreduce]
algorithms = ["ring", "multitree"]
sizes = "64KiB"
[nic]
design = "baseline"
packet_bytes = 128
reduction = "chunk"
[run]
seed = 7
out_dir = "{out}"
"""

NOC = """
out_dir = "{out}"
[network]
topology = "mesh:2x2"
[traffic]
pattern = "transpose"
rate_packets = 0.03
seed = 11
"""

SWEEP = """
kind = "allreduce"
store = "{store}"
[base]
network.topology = "torus:2x2"
allreduce.model = "message"
[axes]
"allreduce.algorithm" = ["ring", "ring2d", "dbtree", "multitree"]
"allreduce.size" = ["32KiB", "64KiB", "128KiB"]
[sample]
method = "random"
points = 3
seed = 5
"""


class _Stop(Exception):
    """Raised where the command's work would start: what it resolved is captured."""


def _until(monkeypatch, module, name, capture, *, call_through=True):
    """Replace ``module.name`` by a function that records ``capture(result or args)`` and stops."""
    real = getattr(module, name)
    seen = {}

    def stop(*args, **kwargs):
        seen["got"] = capture(real(*args, **kwargs) if call_through else (args, kwargs))
        raise _Stop

    monkeypatch.setattr(module, name, stop)
    return seen


def _main(argv):
    with pytest.raises(_Stop):
        main(argv)


@pytest.fixture
def experiment(tmp_path):
    f = tmp_path / "exp.toml"
    f.write_text(EXPERIMENT.format(out=(tmp_path / "fromfile").as_posix()))
    return f


def _allreduce_view(s):
    c = s.exp.config
    return {"topology": s.exp.topology.name, "nis": c.network.nis_per_node, "routing": c.network.routing,
            "sizes": s.exp.sizes_bytes, "algorithms": list(s.exp.schedules), "designs": s.designs,
            "packet_bytes": c.nic.packet_bytes, "reduction": c.nic.reduction, "seed": c.run.seed,
            "out": s.out_dir}


def test_allreduce_keeps_the_file_keys_a_flag_does_not_name(monkeypatch, experiment, tmp_path):
    import hw_models.allreduce_job as job

    seen = _until(monkeypatch, job, "resolve", _allreduce_view)
    _main(["allreduce", "--config", str(experiment)])
    assert seen["got"] == {"topology": "torus:2x2:c2", "nis": 2, "routing": "dor", "sizes": [65536],
                           "algorithms": ["ring", "multitree"], "designs": ["baseline"], "packet_bytes": 128,
                           "reduction": "chunk", "seed": 7, "out": tmp_path / "fromfile" / "allreduce"}
    # --topology names the topology only: the file's NI count and routing stand
    _main(["allreduce", "--config", str(experiment), "--topology", "torus:4x4"])
    assert {k: seen["got"][k] for k in ("topology", "nis", "routing", "seed")} == {
        "topology": "torus:4x4:c2", "nis": 2, "routing": "dor", "seed": 7}
    # a spec that names its NI count gives that key too
    _main(["allreduce", "--config", str(experiment), "--topology", "torus:4x4:c4"])
    assert (seen["got"]["topology"], seen["got"]["routing"]) == ("torus:4x4:c4", "dor")
    _main(["allreduce", "--config", str(experiment), "--nis", "1", "--sizes", "32KiB", "-a", "ring", "--nic",
           "codesigned", "--packet-bytes", "256", "--reduction", "free", "--seed", "3", "--out", str(tmp_path / "o")])
    assert seen["got"] == {"topology": "torus:2x2", "nis": 1, "routing": "dor", "sizes": [32768],
                           "algorithms": ["ring"], "designs": ["codesigned"], "packet_bytes": 256,
                           "reduction": "free", "seed": 3, "out": tmp_path / "o"}


def test_train_keeps_the_file_keys_a_flag_does_not_name(monkeypatch, experiment, tmp_path):
    import hw_models.train_job as job
    from tiny_workload import NET

    w = tmp_path / "tiny.toml"
    w.write_text(NET)
    seen = _until(monkeypatch, job, "resolve", lambda s: {
        "topology": s.exp.topology.name, "routing": s.cfg.network.routing, "algorithms": s.algorithms,
        "design": s.design, "packet_bytes": s.cfg.nic.packet_bytes, "seed": s.cfg.run.seed, "out": s.out_dir})
    _main(["train", "-w", str(w), "--config", str(experiment)])
    assert seen["got"] == {"topology": "torus:2x2:c2", "routing": "dor", "algorithms": ["ring", "multitree"],
                           "design": "baseline", "packet_bytes": 128, "seed": 7,
                           "out": tmp_path / "fromfile" / "train"}
    _main(["train", "-w", str(w), "--config", str(experiment), "--topology", "torus:4x4", "-a", "ring", "--nic",
           "codesigned", "--seed", "3", "-o", str(tmp_path / "o")])
    assert seen["got"] == {"topology": "torus:4x4:c2", "routing": "dor", "algorithms": ["ring"],
                           "design": "codesigned", "packet_bytes": 128, "seed": 3, "out": tmp_path / "o"}


def test_train_system_keeps_the_file_keys_a_flag_does_not_name(monkeypatch, experiment, tmp_path):
    import hw_models.job as job
    import hw_models.training.systems.setup as setup
    from tiny_workload import NET

    w = tmp_path / "tiny.toml"
    w.write_text(NET)
    setting = _record(monkeypatch, setup, "resolve_setting")
    stored = _until(monkeypatch, job, "run_points", lambda a: a[0][2], call_through=False)
    _main(["train-system", "ssd", "-w", str(w), "--task", "none", "--config", str(experiment)])
    st, _, settings = setting["got"]
    assert (st.algorithm, settings["topology"], settings["nic"]["design"]) == ("ring", "torus:2x2:c2", "baseline")
    assert stored["got"] == tmp_path / "fromfile" / "train_system" / "runs.sqlite"
    _main(["train-system", "ssd", "-w", str(w), "--task", "none", "--config", str(experiment), "-a", "multitree",
           "-t", "torus:4x4", "-o", str(tmp_path / "o")])
    st, _, settings = setting["got"]
    assert (st.algorithm, settings["topology"]) == ("multitree", "torus:4x4:c2")
    assert stored["got"] == tmp_path / "o" / "runs.sqlite"


def _record(monkeypatch, module, name):
    """Replace ``module.name`` by a function that records its result and goes on."""
    real = getattr(module, name)
    seen = {}

    def record(*args, **kwargs):
        seen["got"] = real(*args, **kwargs)
        return seen["got"]

    monkeypatch.setattr(module, name, record)
    return seen


def test_train_system_baseline_is_the_files_first_algorithm(experiment, tmp_path):
    from hw_models.training.systems.setup import resolve_setting
    from tiny_workload import NET

    w = tmp_path / "tiny.toml"
    w.write_text(NET)
    experiment.write_text(experiment.read_text().replace('["ring", "multitree"]', '["multitree", "ring"]'))
    st, _, _ = resolve_setting("ssd", str(w), 4, "multitree-node", None, None, None, experiment, None, "none", None,
                               None, 10, 0)
    assert st.algorithm == "multitree"
    st, _, _ = resolve_setting("ssd", str(w), 4, "multitree-node", None, None, None, None, None, "none", None, None,
                               10, 0)
    assert st.algorithm == "ring"  # no file: the default config's first, ring


def test_noc_run_and_sweep_load_keep_the_file_keys(monkeypatch, tmp_path):
    import hw_models.noc_run as noc_run
    import hw_models.noc_sweep as noc_sweep

    f = tmp_path / "noc.toml"
    f.write_text(NOC.format(out=(tmp_path / "fromfile").as_posix()))
    seen = _until(monkeypatch, noc_run, "run_stored", lambda a: (a[0][2], a[0][4]), call_through=False)
    _main(["noc", "run", str(f)])
    tr, out = seen["got"]
    assert (tr.rate_packets, tr.pattern, tr.seed, out) == (0.03, "transpose", 11, tmp_path / "fromfile")
    _main(["noc", "run", str(f), "--rate", "0.05", "--pattern", "uniform", "--seed", "2", "-o", str(tmp_path / "o")])
    tr, out = seen["got"]
    assert (tr.rate_packets, tr.pattern, tr.seed, out) == (0.05, "uniform", 2, tmp_path / "o")
    sw = _until(monkeypatch, noc_sweep, "resolve", lambda s: (s.traffic.pattern, s.traffic.seed, s.out_dir))
    _main(["noc", "sweep-load", str(f)])
    assert sw["got"] == ("transpose", 11, tmp_path / "fromfile")
    _main(["noc", "sweep-load", str(f), "--pattern", "uniform", "--seed", "2"])
    assert sw["got"] == ("uniform", 2, tmp_path / "fromfile")


def test_maddpg_accel_keeps_the_file_keys_from_its_command_line(monkeypatch, tmp_path):
    import hw_models.maddpg_accel_run as accel

    f = tmp_path / "a.toml"
    f.write_text('interconnect = "torus:2x2"\nlevel = "flit"\nsemantics = "sequential"\npcie_gen = 4\n'
                 'pcie_lanes = 8\npe = 2\nlanes = 4\n')
    seen = _until(monkeypatch, accel, "run", lambda a: a[0][0], call_through=False)
    _main(["maddpg", "accel", "--config", str(f), "--agents", "4", "--cpu", "none", "-o", str(tmp_path / "o")])
    s = seen["got"]
    assert s.interconnects == ["torus:2x2"]
    assert (s.base.level, s.base.semantics, s.base.pcie_gen, s.base.pcie_lanes, s.base.pe, s.base.lanes) == (
        "flit", "sequential", 4, 8, 2, 4)
    _main(["maddpg", "accel", "--config", str(f), "--agents", "4", "--cpu", "none", "-o", str(tmp_path / "o2"),
           "--level", "message", "--engine", "8x16"])
    s = seen["got"]
    assert (s.base.level, s.base.semantics, s.base.pe, s.base.lanes) == ("message", "sequential", 8, 16)


def test_sweep_keeps_the_files_store_and_sample_seed(tmp_path, capsys):
    from cli_run import run

    f = tmp_path / "s.toml"
    store = tmp_path / "fromfile.sqlite"
    f.write_text(SWEEP.format(store=store.as_posix()))
    code, out, err = run(["sweep", str(f), "--check"], capsys)
    assert code == 0, err
    assert "sample of 3 points, seed 5" in out and f"finished in {store}" in out.replace("\n", "")
    code, out, err = run(["sweep", str(f), "--check", "--seed", "6", "--store", str(tmp_path / "o.sqlite")], capsys)
    assert code == 0 and "seed 6" in out and f"finished in {tmp_path / 'o.sqlite'}" in out.replace("\n", ""), err
