"""The fast paths of validating a big sample give what the plain paths give: a noc_load point
whose network, channels and router an earlier point had (only its traffic checked) resolves
to the config, key and error message of a point validated from scratch; the store key from
the config's JSON equals the key from the config; the base's copy equals a deep copy; the
points are streamed in the order and with the values of the list; ``--check`` reports
progress and the same counts."""

from __future__ import annotations

import copy
import textwrap

import pytest

import hw_models.sweep.kinds.noc_load as noc_load
from cli_run import run
from hw_models.sweep.execute import Tally, iter_points, resolve_points
from hw_models.sweep.kinds import get_kind
from hw_models.sweep.spec import _copy, expand, iter_values, load_sweep, point_config, point_count
from hw_models.sweep.store import canonical_json, point_key, point_key_of_json

MIXED = """
kind = "noc_load"
[base]
router.flow_control = "vct"
[axes]
"traffic.pattern" = ["uniform", "transpose"]
"traffic.packet_flits" = [[1], [4]]
"traffic.rate_packets" = {low = 0.01, high = 0.45}
"router.num_vcs" = [1, 2, 4]
"router.vc_depth_flits" = {from = 1, to = 16, times = 2}
"network.topology" = ["mesh:4x4", "torus:4x4", "ring:8"]
"traffic.perm_seed" = [1, 2]
[sample]
method = "latin_hypercube"
points = 240
seed = 3
"""


@pytest.fixture
def mixed(tmp_path):
    f = tmp_path / "mixed.toml"
    f.write_text(textwrap.dedent(MIXED))
    return load_sweep(f, None)


def test_the_memo_gives_what_validating_from_scratch_gives(mixed):
    kind = get_kind("noc_load")
    noc_load._RESTS.clear()
    points, errors, dup = resolve_points(mixed, kind)
    assert len(points) > 40 and len(errors) > 40  # both kinds of point, and the memo was used
    versions = kind.model_versions()
    by_index = {p.index: p for p in points}
    scratch_errors = []
    n = point_count(mixed)
    for i, values in enumerate(expand(mixed), 1):
        noc_load._RESTS.clear()
        noc_load._FITS.clear()
        source = f"{mixed.path}: point {i} of {n}"
        try:
            resolved = kind.validate(point_config(mixed.base, values), source)
        except Exception as exc:  # noqa: BLE001 - the message is compared
            scratch_errors.append(str(exc))
            assert i not in by_index
            continue
        p = by_index[i]
        assert p.config == resolved and p.config_json == canonical_json(resolved)
        assert p.key == point_key("noc_load", resolved, versions)
    assert [e.split(" [axes: ")[0] for e in errors] == [" ".join(e.split()) for e in scratch_errors]
    assert dup == 0


def test_key_of_json_copy_and_stream_equal_the_plain_ones(mixed):
    cfg = {"b": [1, 2.5, {"x": "é"}], "a": {"y": True, "z": None}}
    versions = {"flit_model": 3, "noc_load": 2}
    assert point_key_of_json("noc_load", canonical_json(cfg), canonical_json(versions)) == \
        point_key("noc_load", cfg, versions)
    base = {"t": {"a": [1, [2, 3]], "b": {"c": 1.5}}, "s": "x"}
    c = _copy(base)
    assert c == copy.deepcopy(base) and c["t"]["a"] is not base["t"]["a"] and c["t"]["b"] is not base["t"]["b"]
    assert list(iter_values(mixed)) == expand(mixed) and point_count(mixed) == len(expand(mixed))
    tally, errors, seen = Tally(), [], []
    streamed = list(iter_points(mixed, None, errors, tally, seen.append, every=50))
    assert [p.key for p in streamed] == [p.key for p in resolve_points(mixed)[0]]
    assert seen == [50, 100, 150, 200, 240] and tally.checked == 240


def test_check_streams_and_counts(tmp_path, capsys):
    f = tmp_path / "ok.toml"
    f.write_text(textwrap.dedent(MIXED).replace('router.flow_control = "vct"', 'router.flow_control = "wormhole"')
                 .replace('[1, 2, 4]', '[2, 4]').replace('"ring:8"', '"mesh:2x2"').replace(', "transpose"', ''))
    code, out, err = run(["sweep", str(f), "--check", "--store", str(tmp_path / "s.sqlite")], capsys)
    assert code == 0, err
    assert "240 points valid; 0 finished in" in out


# every kind: a bad value in the last point of a long sweep is named before any point runs.
# (kind, [base] lines, axis key, the valid values' maker, the bad value, what the error says is allowed)
LAST_BAD = {
    "allreduce": ('network.topology = "torus:4x4"\nallreduce.algorithm = "ring"', '"allreduce.size"',
                  lambda i: 4096 + 4 * i, '"12QiB"', "use e.g. 4096, 32KiB"),
    "noc_load": ('network.topology = "mesh:4x4"\ntraffic.pattern = "uniform"', '"traffic.rate_packets"',
                 lambda i: 0.001 * (i + 1) / 4, "-0.5", "must be a finite number in [1e-6, 1]"),
    "training": ('network.topology = "torus:4x4"\ntraining.workload = "resnet50"\ntraining.algorithm = "ring"\n'
                 'training.policy = "wfbp"', '"training.batch"', lambda i: i + 1, "0", "must be an integer >= 1"),
    "train_system": ('system = "compression"\nworkload = "resnet50"\ntopology = "torus:4x4"', "batch",
                     lambda i: i + 1, "0", "must be an integer in 1..1,048,576"),
    "train_system dlion": ('system = "dlion"\npreset = "isca2021"\nworkload = "resnet50"', "seed", lambda i: i, "-1",
                           "must be an integer in [0, 2**32 - 1]"),
    "maddpg_accel": ("agents = 3", "batch", lambda i: i + 1, "0", "must be an integer >= 1"),
    "rtl_synth": ("", "depth", lambda i: i % 4096 + 1, "5000", "must be an integer in 1..4096"),
}


def _last_point_bad(tmp_path, capsys, monkeypatch, case, n):
    import hw_models.sweep.execute as execute

    base, key, value, bad, allowed = LAST_BAD[case]
    ran = []
    monkeypatch.setattr(execute, "run_point", lambda *a, **k: ran.append(a) or pytest.fail("a point ran"))
    values = ", ".join(repr(value(i)) for i in range(n - 1))
    f = tmp_path / "last_bad.toml"
    f.write_text(f'kind = "{case.split()[0]}"\n[base]\n{base}\n[axes]\n{key} = [{values}, {bad}]\n')
    store = tmp_path / "s.sqlite"
    code, _out, err = run(["sweep", str(f), "--store", str(store)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    name = key.strip('"')
    for part in (f"{f}: point {n} of {n}: ", f"key '{name}' = {bad.strip(chr(34))!r}"
                 if bad.startswith('"') else f"key '{name}' = {bad}", allowed):
        assert part in lines[0], (part, lines[0])
    assert ran == [] and list(tmp_path.iterdir()) == [f]  # nothing ran, no store, no list of invalid points


@pytest.mark.parametrize("case", list(LAST_BAD))
def test_a_bad_last_point_is_named_before_any_point_runs(tmp_path, capsys, monkeypatch, case):
    _last_point_bad(tmp_path, capsys, monkeypatch, case, 200)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(LAST_BAD))
def test_a_bad_point_1000_is_named_before_point_1_runs(tmp_path, capsys, monkeypatch, case):
    _last_point_bad(tmp_path, capsys, monkeypatch, case, 1000)
