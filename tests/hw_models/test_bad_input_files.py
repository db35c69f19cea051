"""Files a user may hand the commands by mistake, each one line naming it, exit 2, nothing
written: a config saved with a UTF-8 byte-order mark, a checkpoint path that is a directory,
a sweep store with nothing to export."""

from __future__ import annotations

from cli_run import run
from hw_models.sweep.store import SweepStore


def test_a_config_with_a_byte_order_mark_is_named(tmp_path, capsys):
    f = tmp_path / "bom.toml"
    f.write_bytes(b'\xef\xbb\xbf[network]\ntopology = "torus:2x2"\n')
    code, _, err = run(["config", "show", str(f)], capsys)
    assert code == 2 and err == (f"error: {f}: not valid TOML: it starts with a UTF-8 byte-order mark (BOM); save it "
                                 "as UTF-8 without one\n")
    f.write_bytes(f.read_bytes()[3:])  # the same file without it is fine
    assert run(["config", "show", str(f)], capsys)[0] == 0


def test_a_checkpoint_path_that_is_a_directory_is_named(tmp_path, capsys):
    code, out, err = run(["maddpg", "eval", str(tmp_path), "--episodes", "1"], capsys)
    assert code == 2 and err == f"error: {tmp_path}: is a directory; give the checkpoint file in it " \
                                f"({tmp_path / 'checkpoint.npz'})\n", err


def test_exporting_a_store_with_no_points_writes_nothing(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    SweepStore(store).close()
    out = tmp_path / "new" / "x.csv"
    code, _, err = run(["sweep", "export", str(store), "--csv", str(out)], capsys)
    assert code == 2 and err == f"error: {store}: holds no points to export; nothing written\n"
    assert not out.exists() and not out.parent.exists()
    code, _, err = run(["sweep", "export", str(store), "--csv", str(out), "--status", "done"], capsys)
    assert code == 2 and "holds no done points to export" in err


def test_a_hand_damaged_cpu_profile_is_named_by_field(tmp_path):
    import json

    import pytest

    from maddpg.accel.host import CpuProfile, load_profile
    from noc.base.errors import ConfigError

    good = CpuProfile("simple_spread", 3, 1024, 1e-4, 2e-3, 5e-3, 1, "m", "2026-01-01", 0, 5)
    f = tmp_path / "p.json"
    f.write_text(good.to_json())
    assert load_profile(f) == good
    for key, value, says in [("update_s", float("nan"), "a finite number of seconds > 0"),
                             ("sample_s", -1.0, "a finite number of seconds > 0"),
                             ("update_s", "fast", "a finite number of seconds > 0"),
                             ("n_agents", True, "an integer >= 0"), ("machine", 3, "a string")]:
        d = json.loads(good.to_json())
        d[key] = value
        f.write_text(json.dumps(d))
        with pytest.raises(ConfigError, match=rf"^CPU profile {f}: field '{key}' = .*; allowed: {says}$"):
            load_profile(f)
    f.write_text('{"update_s": 1}')
    with pytest.raises(ConfigError, match="not a profile written by this tool"):
        load_profile(f)
