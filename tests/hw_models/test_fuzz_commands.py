"""Fuzzing the commands' flags, the sweep kinds' keys, the MADDPG checkpoint and accelerator
config formats and the workload files: any value of any type (magnitudes, NaN/inf, unicode
digits, nesting), byte flips and truncation either work or fail with the project's own one-line
error (exit 2 on the command line), never a traceback. A command is run from its command line
up to where its work would start (its resolve step), so a value it accepts costs no run.
Small example budgets here; the ``slow`` twins draw many more."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hw_models.cli import main
from noc.base.errors import HwModelsError
from test_fuzz_inputs import SPECISH, TEXT, VALUES, _ours_or_nothing

FEW = settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
MANY = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

# what a user might type for a flag: numbers of any size and spelling, unicode digits, junk
FLAG_TEXT = st.one_of(TEXT, SPECISH, st.integers(-(2**70), 2**70).map(str),
                      st.floats(allow_nan=True, allow_infinity=True).map(repr),
                      st.sampled_from(["0", "-1", "1e300", "nan", "inf", "-inf", "٣", "²", "１６", "", " ", "4,",
                                       "1,,2", "0x10", "1_000", "3.0", "1e-300", "2**63", "99999999999999999999"]))


class _Stop(Exception):
    """Raised where the command's work would start."""


def _stop_at(monkeypatch, module, name):
    real = getattr(module, name)

    def stop(*args, **kwargs):
        real(*args, **kwargs)
        raise _Stop

    monkeypatch.setattr(module, name, stop)


def _command(argv, capsys):
    """Run ``argv``: 'ok' (it got to its work) or the one error line (exit 2)."""
    try:
        main(argv)
    except _Stop:
        capsys.readouterr()
        return "ok"
    except SystemExit as exc:
        out = capsys.readouterr()
        assert exc.code == 2, (argv, exc.code, out.err[-2000:])
        assert out.err.startswith("error: ") and out.err.count("\n") == 1, (argv, out.err[-2000:])
        return out.err
    raise AssertionError(f"{argv}: neither ran nor failed")


# (command line before the flag, the flag, the module and function whose return starts the work)
COMMANDS = {
    "allreduce": (["allreduce", "-t", "torus:2x2", "--sizes", "32KiB"], ["--nis", "--sizes", "--algorithms", "--nic",
                  "--packet-bytes", "--reduction", "--seed", "--flow-control", "--topology", "--variant", "--workers"],
                  "hw_models.allreduce_job", "resolve"),
    "train": (["train", "-t", "torus:2x2", "-w", "TINY"], ["--batch", "--iterations", "--policy", "--fusion-threshold",
              "--slice-bytes", "--dear-threshold", "--device", "--seed", "--nis", "--topology", "--algorithms"],
              "hw_models.train_job", "resolve"),
    "train-system": (["train-system", "ssd", "-t", "torus:2x2", "-w", "TINY", "--task", "none"],
                     ["--batch", "--delays", "--lr", "--target", "--seed", "--device", "--algorithm", "--topology"],
                     "hw_models.job", "run_points"),
    "noc": (["noc", "run", "NOC"], ["--rate", "--pattern", "--seed"], "hw_models.noc_run", "run_stored"),
    "accel": (["maddpg", "accel", "--cpu", "none", "--agents", "2"], ["--agents", "--part", "--batch", "--engine",
              "--pcie", "--interconnect", "--fixed-point", "--seed", "--level", "--semantics"],
              "hw_models.maddpg_accel_run", "run"),
}


@pytest.fixture
def command_files(tmp_path):
    from tiny_workload import NET

    (tmp_path / "tiny.toml").write_text(NET)
    (tmp_path / "noc.toml").write_text('[network]\ntopology = "mesh:2x2"\n[traffic]\nmeasure_cycles = 100\n')
    return {"TINY": str(tmp_path / "tiny.toml"), "NOC": str(tmp_path / "noc.toml")}


def _fuzz_command(monkeypatch, capsys, tmp_path, files, name, flag, value):
    import importlib

    head, _, module, fn = COMMANDS[name]
    if fn == "run_points":
        monkeypatch.setattr(importlib.import_module(module), fn, lambda *a, **k: (_ for _ in ()).throw(_Stop()))
    elif fn in ("run", "run_stored"):
        monkeypatch.setattr(importlib.import_module(module), fn, lambda *a, **k: (_ for _ in ()).throw(_Stop()))
    else:
        _stop_at(monkeypatch, importlib.import_module(module), fn)
    argv = [files.get(a, a) for a in head] + [flag, value, "-o", str(tmp_path / "out")]
    _command(argv, capsys)


CASES = st.sampled_from([(n, f) for n, (_, flags, _, _) in COMMANDS.items() for f in flags])


@FEW
@given(case=CASES, value=FLAG_TEXT)
def test_every_flag_works_or_is_one_error_line(monkeypatch, capsys, tmp_path, command_files, case, value):
    with monkeypatch.context() as m:
        _fuzz_command(m, capsys, tmp_path, command_files, *case, value)


@pytest.mark.slow
@MANY
@given(case=CASES, value=FLAG_TEXT)
def test_every_flag_works_or_is_one_error_line_many(monkeypatch, capsys, tmp_path, command_files, case, value):
    with monkeypatch.context() as m:
        _fuzz_command(m, capsys, tmp_path, command_files, *case, value)


# --- the sweep kinds' keys --------------------------------------------------------------------

KIND_POINTS = {
    "allreduce": {"network": {"topology": "torus:2x2"}, "allreduce": {"algorithm": "ring", "size": 4096,
                                                                      "model": "message"}},
    "noc_load": {"network": {"topology": "mesh:2x2"}, "traffic": {"rate_packets": 0.05}, "router": {"num_vcs": 2}},
    "maddpg_accel": {"agents": 3, "accel": {"interconnect": "ring"}},
    "train_system": {"system": "ssd", "workload": "TINY", "topology": "torus:2x2", "task": "none", "delays": "1,2"},
}


def _with(point: dict, path: tuple, value):
    out = json.loads(json.dumps(point))
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


def _leaves(point, prefix=()):
    for k, v in point.items():
        if isinstance(v, dict):
            yield from _leaves(v, prefix + (k,))
        else:
            yield prefix + (k,)


KEY_CASES = st.sampled_from([(kind, path) for kind, p in KIND_POINTS.items() for path in _leaves(p)])


def _fuzz_kind_key(tmp_path, kind_name, path, value):
    from hw_models.sweep.kinds import get_kind
    from tiny_workload import NET

    w = tmp_path / "tiny.toml"
    w.write_text(NET)
    point = json.loads(json.dumps(KIND_POINTS[kind_name]).replace('"TINY"', json.dumps(str(w))))
    try:
        json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        return
    _ours_or_nothing(get_kind(kind_name).validate, _with(point, path, value), "point")


@FEW
@given(case=KEY_CASES, value=VALUES)
def test_every_sweep_kind_key_validates_or_is_our_error(tmp_path, case, value):
    _fuzz_kind_key(tmp_path, *case, value)


@pytest.mark.slow
@MANY
@given(case=KEY_CASES, value=VALUES)
def test_every_sweep_kind_key_validates_or_is_our_error_many(tmp_path, case, value):
    _fuzz_kind_key(tmp_path, *case, value)


# --- the MADDPG checkpoint format --------------------------------------------------------------

def _checkpoint(path):
    from maddpg.checkpoint import save_npz_atomic

    arrays = {"agent0/actor": np.linspace(-1, 1, 12, dtype=np.float32), "agent0/critic": np.ones(6, np.float32),
              "rng": np.arange(4, dtype=np.uint64)}
    meta = {"config": {"lr": 0.01}, "episode": 4, "env_steps": 100, "updates": 1, "obs_dims": [4], "act_dims": [5],
            "adam_steps": [[1, 1]], "replay": {"pos": 3, "size": 3, "chunks": [[0, 3]]}, "log_rows": [],
            "log_episode0": 0}
    save_npz_atomic(path, arrays, meta)
    return arrays, meta


META_KEYS = st.sampled_from(["episode", "env_steps", "updates", "obs_dims", "act_dims", "adam_steps", "replay",
                             "log_rows", "log_episode0", "config", "format", "sha256", "start", "stop"])


def _fuzz_checkpoint(tmp_path, key, value, flips, cut, poison):
    from maddpg.checkpoint import load_npz, save_npz_atomic

    p = tmp_path / "ck.npz"
    arrays, meta = _checkpoint(p)
    if key is not None:
        meta[key] = value
        fmt = meta.pop("format", "hw-models/maddpg-checkpoint/2")
        try:
            save_npz_atomic(p, arrays, {k: v for k, v in meta.items() if k != "sha256"}, fmt=fmt if isinstance(fmt, str)
                            else str(fmt))
        except (TypeError, ValueError):  # not JSON: a checkpoint cannot hold it
            return
    if poison is not None:
        arrays = dict(arrays)
        a = arrays["agent0/actor"].copy()
        a[poison % a.size] = np.float32(np.nan if poison % 2 else np.inf)
        arrays["agent0/actor"] = a
        save_npz_atomic(p, arrays, meta)
    data = bytearray(p.read_bytes())
    for at, byte in flips:
        data[at % len(data)] ^= byte or 1
    p.write_bytes(bytes(data[:max(0, len(data) - cut)]))
    got = _ours_or_nothing(load_npz, p, ["agent0/actor"])
    if got is not None:
        loaded, m = got
        assert all(np.isfinite(v).all() for k, v in loaded.items() if k.startswith("agent") and v.dtype.kind == "f")


CK = dict(key=st.one_of(st.none(), META_KEYS), value=VALUES,
          flips=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=3),
          cut=st.one_of(st.just(0), st.integers(0, 3000)), poison=st.one_of(st.none(), st.integers(0, 100)))


@FEW
@given(**CK)
def test_a_damaged_checkpoint_loads_whole_or_is_our_error(tmp_path_factory, key, value, flips, cut, poison):
    _fuzz_checkpoint(tmp_path_factory.mktemp("ck"), key, value, flips, cut, poison)


@pytest.mark.slow
@MANY
@given(**CK)
def test_a_damaged_checkpoint_loads_whole_or_is_our_error_many(tmp_path_factory, key, value, flips, cut, poison):
    _fuzz_checkpoint(tmp_path_factory.mktemp("ck"), key, value, flips, cut, poison)


# --- the accelerator config and the workload files ------------------------------------------------

ACCEL_KEYS = st.one_of(st.sampled_from(["interconnect", "level", "semantics", "pcie_gen", "pcie_lanes", "pe", "lanes",
                                        "clock_mhz", "tile_b", "fixed_point_bits", "fixed_point_frac_bits",
                                        "vector_lanes", "actor_pe", "layer_balance", "minibatch_buffer"]), TEXT)
LAYER_KEYS = st.sampled_from(["input", "name", "kind", "out_channels", "kernel", "padding", "out_features", "stride"])


def _toml(v) -> str:
    """``v`` as a TOML value (None has none: ValueError)."""
    if v is None:
        raise ValueError("TOML has no null")
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (int, float, str)):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(x)}" for k, x in v.items()) + "}"


def _fuzz_files(tmp_path, akey, avalue, lkey, lvalue):
    from hw_models.maddpg_accel_run import AccelRequest, resolve
    from hw_models.training.workloads import load_workload_file

    f = tmp_path / "a.toml"
    try:
        f.write_text(f"{json.dumps(akey)} = {_toml(avalue)}\n")
    except ValueError:
        return
    req = AccelRequest("2", None, "u250", "simple_spread", 64, None, "auto", None, None, None, f, "none",
                       tmp_path / "cpu", 0, False, tmp_path / "out")
    _ours_or_nothing(resolve, req)
    w = tmp_path / "w.json"
    net = {"name": "tiny", "input": [3, 8, 8], "layers": [{"kind": "conv", "out_channels": 8, "kernel": 3},
                                                        {"kind": "flatten"}, {"kind": "linear", "out_features": 10}]}
    if lkey in ("input", "name"):
        net[lkey] = lvalue
    else:
        net["layers"][0][lkey] = lvalue
    try:
        w.write_text(json.dumps(net, allow_nan=True))
    except (TypeError, ValueError):
        return
    _ours_or_nothing(load_workload_file, w)


@FEW
@given(akey=ACCEL_KEYS, avalue=VALUES, lkey=LAYER_KEYS, lvalue=VALUES)
def test_accel_config_and_workload_files_work_or_are_our_error(tmp_path_factory, akey, avalue, lkey, lvalue):
    _fuzz_files(tmp_path_factory.mktemp("f"), akey, avalue, lkey, lvalue)


@pytest.mark.slow
@MANY
@given(akey=ACCEL_KEYS, avalue=VALUES, lkey=LAYER_KEYS, lvalue=VALUES)
def test_accel_config_and_workload_files_work_or_are_our_error_many(tmp_path_factory, akey, avalue, lkey, lvalue):
    _fuzz_files(tmp_path_factory.mktemp("f"), akey, avalue, lkey, lvalue)
