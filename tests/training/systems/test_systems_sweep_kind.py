"""The ``train_system`` sweep kind: points resolve canonically, bad points name the key, and a
point's metrics are the command's rows."""

from __future__ import annotations

import pytest

from hw_models.sweep.kinds import get_kind, kind_names
from hw_models.sweep.kinds.train_system import tables
from hw_models.training.systems.runner import run_ssd
from hw_models.training.systems.setup import resolve_setting
from noc.base.errors import ConfigError

TINY = {"workload": "ncf", "topology": "torus:2x2", "batch": 4}


def test_listed_and_canonical():
    assert "train_system" in kind_names()
    k = get_kind("train_system")
    a = k.validate({"system": "ps", **TINY, "task": "none", "servers": 2, "placement": "first"})
    b = k.validate({"system": "ps", **TINY, "task": "none", "placement": "0,1", "servers": 2,
                    "modes": "sync,async,ssp:2", "stragglers": "slow:2:3", "seed": 0})
    assert a == b and a["placement"] == "0,1" and a["servers"] == 2


@pytest.mark.parametrize("point, says", [
    ({"system": "gossip"}, "key 'system' = 'gossip': choose one of"),
    ({"system": "ssd", "servers": 2}, "key 'servers' applies to the ps system, not ssd"),
    ({"system": "ssd", "batch": "4"}, "key 'batch' = '4': must be int"),
    ({"system": "ssd", "delays": "0"}, "key 'delays' = '0': must be comma-separated integers in 1..1000"),
    ({"system": "kfac", "inverse_efficiency": 3.0}, "key 'inverse_efficiency' = 3.0: must be in (0, 1]"),
    ({"system": "ssd", "colour": 1}, "unknown key 'colour'"),
    ({"system": "ssd", "batch": 0}, "key 'batch' = 0: must be an integer in 1..1,048,576"),
    ({"system": "ssd", "techniques": "all"}, "key 'techniques' applies to the dlion system, not ssd"),
    ({"system": "ssd", "stragglers": "slow:9:2"}, "key 'stragglers': stragglers = 'slow:9:2': COUNT must be in"),
    ({"system": "kfac", "links": "walk:-1"}, "key 'links': links = 'walk:-1': walk SIGMA must be in [0, 3]"),
    ({"system": "easgd", "stragglers": "slow:1"}, "key 'stragglers': stragglers = 'slow:1': 'slow:1' is not "
                                                  "one of none, slow:COUNT:FACTOR"),
])
def test_bad_points_name_the_key(point, says):
    with pytest.raises(ConfigError) as info:
        get_kind("train_system").validate({**TINY, **point}, "p")
    assert str(info.value).startswith("p: ") and says in str(info.value)


def test_run_gives_the_command_rows():
    k = get_kind("train_system")
    m = k.run(k.validate({"system": "ssd", **TINY, "delays": "1,2", "max_iterations": 100}))
    st, _, _ = resolve_setting("ssd", "ncf", 4, "multitree-node", "torus:2x2", None, "ring", None, None, "logreg",
                               None, None, 100, 0)
    timing, conv = run_ssd(st, [1, 2])
    assert [m[f"t{i}_iteration_s"] for i in range(3)] == [r["iteration_s"] for r in timing]
    assert [m[f"c{i}_run"] for i in range(3)] == [r["run"] for r in conv]
    assert all(m[f"c{i}_iterations_to_target"] == (r["iterations_to_target"] or -1) for i, r in enumerate(conv))


@pytest.mark.parametrize("system, extra", [("compression", {"compressors": "onebit"}), ("ssd", {"delays": "1,2"}),
                                           ("kfac", {})])
def test_a_profile_of_ones_is_the_point_without_one(system, extra):
    """Points stored before the synchronous systems took profiles keep their keys: without a
    profile (or with one of ones) the resolved point has no profile key; with one it has."""
    k = get_kind("train_system")
    plain = k.validate({"system": system, **TINY, **extra, "task": "none"})
    assert "stragglers" not in plain and "links" not in plain
    assert k.validate({"system": system, **TINY, **extra, "task": "none", "stragglers": "const:1",
                       "links": "none"}) == plain
    slow = k.validate({"system": system, **TINY, **extra, "task": "none", "stragglers": "slow:1:2"})
    assert slow == {**plain, "stragglers": "slow:1:2"}


@pytest.mark.parametrize("system, flags, point", [
    ("ssd", ["--delays", "1,2", "--stragglers", "slow:1:3+walk:0.2", "--links", "at:5:2:4", "--max-iterations", "40"],
     {"delays": "1,2", "stragglers": "slow:1:3+walk:0.2", "links": "at:5:2:4", "max_iterations": 40}),
    ("compression", ["--compressors", "topk:0.01", "--fix", "error_averaging", "--stragglers", "lognormal:0.3",
                     "--max-iterations", "40"],
     {"compressors": "topk:0.01", "fix": "error_averaging", "stragglers": "lognormal:0.3", "max_iterations": 40}),
    ("kfac", ["--links", "walk:0.3", "--stragglers", "const:1/2/1/1", "--task", "none"],
     {"links": "walk:0.3", "stragglers": "const:1/2/1/1", "task": "none"}),
    ("dlion", ["--techniques", "none,priority", "--links", "slow:1:4+walk:0.2", "--max-iterations", "30"],
     {"techniques": "none,priority", "links": "slow:1:4+walk:0.2", "max_iterations": 30}),
    ("compression", ["--mp-keep", "0.1", "--compressors", "threshold:0.01", "--task", "mlp",
                     "--max-iterations", "30"],
     {"workload": "ncf", "mp_keep": 0.1, "compressors": "threshold:0.01", "task": "mlp", "max_iterations": 30}),
])
def test_a_sweep_point_stores_the_commands_metrics_byte_for_byte(tmp_path, capsys, system, flags, point):
    """``hw-models sweep run`` of a point and ``hw-models train-system`` with the same settings
    store the same point (the same key) with byte-identical metrics, so every row of the two
    tables is the same."""
    import json
    import sqlite3

    from hw_models.cli import main
    from tiny_workload import NET

    def run(argv, capsys):
        with pytest.raises(SystemExit) as info:
            main(argv)
        out = capsys.readouterr()
        return info.value.code, out.out, out.err

    (tmp_path / "tiny.toml").write_text(NET)
    common = {"workload": str(tmp_path / "tiny.toml"), "topology": "torus:2x2", "batch": 4}
    base = {**common, **point, "system": system}
    argv = ["train-system", system, "-w", base["workload"], "-t", "torus:2x2", "-b", "4", "-o", str(tmp_path / "cmd"),
            *flags]
    code, _, err = run(argv, capsys)
    assert code in (0, None), err
    sweep = tmp_path / "s.toml"
    sweep.write_text('kind = "train_system"\n[base]\n' + "".join(f"{k} = {json.dumps(v)}\n" for k, v in base.items()))
    code, _, err = run(["sweep", "run", str(sweep), "--store", str(tmp_path / "sweep.sqlite"), "--workers", "1"],
                       capsys)
    assert code in (0, None), err

    def stored(path):
        with sqlite3.connect(path) as db:
            return db.execute("SELECT key, metrics FROM points WHERE status = 'done'").fetchall()

    (cmd,) = stored(tmp_path / "cmd" / "runs.sqlite")
    (swp,) = stored(tmp_path / "sweep.sqlite")
    assert cmd == swp
    timing, conv = tables(json.loads(swp[1]))
    assert timing
    assert (conv != []) == (point.get("task") != "none")
    if "mp_keep" in point:
        assert [r["run"] for r in timing][-2:] == ["hybrid DP x MP (embeddings sharded), dense boundary",
                                                  "DCT model-parallel boundary keep=0.1"]
    elif system != "dlion":  # a row per configuration under the profiles, every convergence row timed on them
        prof = [r for r in timing if r["stragglers"] != ""]
        assert prof and len(prof) == len(timing) - len(prof)
        assert all(r["time_to_target_s"] != "" or r["iterations_to_target"] == "" for r in conv)
    else:
        assert [r["techniques"] for r in timing] == ["allreduce", "none", "priority", "ps", "easgd"]
