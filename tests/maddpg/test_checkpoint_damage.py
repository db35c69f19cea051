"""Damaged checkpoints are refused by name: non-finite weights, meta data of the wrong type,
arrays changed after the file was written (the stored SHA-256 no longer matches); files
written before the digest existed still load."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hw_models.cli import main
from maddpg.checkpoint import CheckpointError, arrays_sha256, load_npz, save_npz_atomic
from maddpg.trainer import MADDPG, make_config

from maddpg_standin_env import make_standin

SMALL = dict(env="simple", n_agents=2, seed=5, batch_size=32, hidden_units=16, learning_starts=64,
             update_every_steps=10, buffer_size=300, max_cycles=10)


@pytest.fixture(scope="module")
def ck(tmp_path_factory):
    p = tmp_path_factory.mktemp("ck") / "ck.npz"
    t = MADDPG(make_config(**SMALL), make_standin)
    t.train(8, checkpoint_path=p, checkpoint_every=8)
    return p


def _eval(path, capsys):
    """``hw-models maddpg eval PATH --episodes 2`` in-process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as info:
        main(["maddpg", "eval", str(path), "--episodes", "2"])
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def _rewrite(src, dst, arrays_fn=None, meta_fn=None, keep_digest=False):
    """A copy of ``src`` with its arrays or meta changed; ``keep_digest`` keeps the old SHA-256
    (as a hand edit of the file would), otherwise the copy is written by the saver."""
    arrays, meta = load_npz(src)
    old = dict(meta)
    arrays = {k: v.copy() for k, v in arrays.items()}
    if arrays_fn:
        arrays_fn(arrays)
    if meta_fn:
        meta_fn(meta)
    if keep_digest:
        payload = dict(arrays)
        payload["__meta__"] = np.frombuffer(json.dumps(old, sort_keys=True).encode(), np.uint8)
        with dst.open("wb") as f:
            np.savez(f, **payload)
    else:
        fmt = meta.pop("format")
        meta.pop("sha256", None)
        save_npz_atomic(dst, arrays, meta, fmt=fmt)
    (dst.with_name(dst.stem + ".replay")).symlink_to(src.with_name(src.stem + ".replay"))
    return dst


def test_the_digest_is_over_names_dtypes_shapes_and_bytes():
    a = {"x": np.arange(4, dtype=np.float64)}
    assert arrays_sha256(a) == arrays_sha256({"x": np.arange(4, dtype=np.float64)})
    assert arrays_sha256(a) != arrays_sha256({"y": np.arange(4, dtype=np.float64)})
    assert arrays_sha256(a) != arrays_sha256({"x": np.arange(4, dtype=np.float32)})
    assert arrays_sha256(a) != arrays_sha256({"x": np.arange(4, dtype=np.float64).reshape(2, 2)})
    b = {"x": np.arange(4, dtype=np.float64)}
    b["x"][3] = np.nextafter(3.0, 4.0)
    assert arrays_sha256(a) != arrays_sha256(b)


def test_nan_actor_weights_are_refused_by_resume_and_eval(ck, tmp_path, capsys):
    def poison(arrays):
        arrays["agent1/actor"][0] = np.nan

    bad = _rewrite(ck, tmp_path / "nan.npz", arrays_fn=poison)
    with pytest.raises(CheckpointError, match=r"nan.npz: corrupt checkpoint, array 'agent1/actor' holds 1 NaN"):
        MADDPG(make_config(**SMALL), make_standin).load(bad)
    code, out, err = _eval(bad, capsys)
    assert code == 2 and err.count("\n") == 1 and "agent1/actor" in err, (code, out, err)
    assert "Traceback" not in out + err and "mean" not in out


def test_an_array_changed_after_writing_fails_the_digest(ck, tmp_path):
    def nudge(arrays):
        arrays["agent0/critic"][0] += 1.0

    bad = _rewrite(ck, tmp_path / "edit.npz", arrays_fn=nudge, keep_digest=True)
    with pytest.raises(CheckpointError, match="edit.npz: corrupt checkpoint, its arrays do not match the SHA-256"):
        MADDPG(make_config(**SMALL), make_standin).load(bad)


@pytest.mark.parametrize("field,value", [("episode", "8"), ("episode", -1), ("env_steps", 1.5),
                                         ("adam_steps", "x"), ("config", [1, 2]), ("obs_dims", None)])
def test_meta_of_the_wrong_type_is_named(ck, tmp_path, capsys, field, value):
    def edit(meta):
        meta[field] = value

    bad = _rewrite(ck, tmp_path / "meta.npz", meta_fn=edit)
    if value is None:  # a null the loader does not accept either: named by the shape check
        with pytest.raises(CheckpointError, match="meta.npz"):
            MADDPG(make_config(**SMALL), make_standin).load(bad)
        return
    with pytest.raises(CheckpointError, match=rf"meta.npz: corrupt checkpoint, meta field '{field}"):
        MADDPG(make_config(**SMALL), make_standin).load(bad)
    code, out, err = _eval(bad, capsys)
    assert code == 2 and err.count("\n") == 1 and field in err and "Traceback" not in out + err, (code, out, err)


def test_a_config_value_of_the_wrong_type_is_named_by_eval(ck, tmp_path, capsys):
    def edit(meta):
        meta["config"]["hidden_units"] = "many"

    bad = _rewrite(ck, tmp_path / "cfg.npz", meta_fn=edit)
    code, out, err = _eval(bad, capsys)
    assert code == 2 and "hidden_units" in err and "Traceback" not in out + err, (code, out, err)


def test_a_file_without_a_digest_still_resumes_exactly(ck, tmp_path):
    arrays, meta = load_npz(ck)
    meta.pop("sha256")
    payload = dict(arrays)
    payload["__meta__"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8)
    old = tmp_path / "old.npz"
    with old.open("wb") as f:
        np.savez(f, **payload)
    (tmp_path / "old.replay").symlink_to(ck.with_name("ck.replay"))
    a, b = MADDPG(make_config(**SMALL), make_standin), MADDPG(make_config(**SMALL), make_standin)
    a.load(ck)
    b.load(old)
    a.train(12)
    b.train(12)
    assert a.rewards == b.rewards


# ---- the same checks on small files written directly (no training, no kernels compiled) -------

META = {"episode": 3, "env_steps": 30, "updates": 1, "config": {}, "adam_steps": [[1, 1]],
        "replay": {"pos": 1, "size": 2, "chunks": [[0, 30]]}}
ARRAYS = {"agent0/actor": np.ones(5), "rewards": np.array([np.nan])}  # a NaN return is allowed, weights are not


@pytest.mark.parametrize("field,value,says", [("episode", "3", "'episode' is '3'"), ("episode", -1, "integer >= 0"),
                                              ("config", [1], "'config' is [1]"), ("adam_steps", "x", "'adam_steps'"),
                                              ("replay", {"pos": "a"}, "'replay.pos' is 'a'")])
def test_small_file_meta_types(tmp_path, field, value, says):
    assert load_npz(save_npz_atomic(tmp_path / "ok.npz", ARRAYS, META))[1]["episode"] == 3
    with pytest.raises(CheckpointError, match=rf"b.npz: corrupt checkpoint, meta field .*{said(says)}"):
        load_npz(save_npz_atomic(tmp_path / "b.npz", ARRAYS, {**META, field: value}))


def said(text: str) -> str:
    import re

    return re.escape(text)


def test_small_file_inf_weight_digest_and_old_file(tmp_path, capsys):
    bad = {**ARRAYS, "agent0/actor": np.array([1, np.inf, 2, 3, 4.0])}
    p = save_npz_atomic(tmp_path / "inf.npz", bad, META)
    with pytest.raises(CheckpointError, match="array 'agent0/actor' holds 1 NaN or infinite"):
        load_npz(p)
    code, out, err = _eval(p, capsys)
    assert code == 2 and err.count("\n") == 1 and "agent0/actor" in err and "Traceback" not in out + err
    arrays, meta = load_npz(save_npz_atomic(tmp_path / "a.npz", ARRAYS, META))
    arrays["agent0/actor"] = arrays["agent0/actor"] + 1  # a hand edit that keeps the old digest
    payload = {**arrays, "__meta__": np.frombuffer(json.dumps(meta).encode(), np.uint8)}
    with (tmp_path / "e.npz").open("wb") as f:
        np.savez(f, **payload)
    with pytest.raises(CheckpointError, match="e.npz: corrupt checkpoint, its arrays do not match the SHA-256"):
        load_npz(tmp_path / "e.npz")
    meta.pop("sha256")  # a file from before the digest: read as it is
    payload["__meta__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with (tmp_path / "f.npz").open("wb") as f:
        np.savez(f, **payload)
    assert load_npz(tmp_path / "f.npz")[0]["agent0/actor"].tolist() == [2.0] * 5
