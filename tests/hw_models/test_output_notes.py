"""A result file whose name another run shares is never replaced silently: ``noc run``
records its configuration in its CSV and says when it replaces another configuration's
run; ``allreduce`` says when its CSV held other runs (they stay in its sweep store, runs.sqlite)."""

from __future__ import annotations

import csv

from cli_run import run

NOC = ('[network]\ntopology = "mesh:3x3"\n[router]\nnum_vcs = {vcs}\n'
       '[traffic]\nwarmup_cycles = 100\nmeasure_cycles = 300\ndrain_limit_cycles = 2000\n')
RUN_CSV = "run_mesh_3x3_uniform_0.05.csv"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _noc_run(tmp_path, capsys, vcs: int, *flags: str) -> str:
    cfg = tmp_path / f"vcs{vcs}.toml"
    cfg.write_text(NOC.format(vcs=vcs))
    code, out, err = run(["noc", "run", str(cfg), "--rate", "0.05", "--out", str(tmp_path / "o"), *flags], capsys)
    assert code in (0, None), err
    return out


def test_noc_run_records_its_configuration_and_notes_replacing_another(tmp_path, capsys):
    out = _noc_run(tmp_path, capsys, 2)
    assert "note:" not in out
    row = next(csv.DictReader((tmp_path / "o" / RUN_CSV).open()))
    assert row["router.num_vcs"] == "2" and row["traffic.warmup_cycles"] == "100" and len(row["config_hash"]) == 12
    # the same configuration again: its own file, replaced without a note
    assert "note:" not in _noc_run(tmp_path, capsys, 2)
    # another router and seed: the one-line note names what differs, and the new run is in the file
    out = _noc_run(tmp_path, capsys, 4, "--seed", "7")
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    assert len(notes) == 1, out
    assert f"note: replacing {tmp_path / 'o' / RUN_CSV} and its _links.csv and _links.png, which held a run of " \
           "another configuration: seed 1 -> 7, router.num_vcs 2 -> 4; give --out another directory to keep both" == notes[0]
    row = next(csv.DictReader((tmp_path / "o" / RUN_CSV).open()))
    assert (row["router.num_vcs"], row["seed"]) == ("4", "7")


def test_noc_run_notes_replacing_a_file_without_a_recorded_configuration(tmp_path, capsys):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / RUN_CSV).write_text("topology,pattern,rate_packets,seed\nmesh:3x3,uniform,0.05,1\n")
    out = _flat(_noc_run(tmp_path, capsys, 2))
    assert f"note: replacing {tmp_path / 'o' / RUN_CSV}" in out and "which held a run whose configuration is not recorded" in out


def _allreduce(tmp_path, capsys, sizes: str) -> str:
    code, out, err = run(["allreduce", "-t", "ring:4", "-a", "ring", "--sizes", sizes, "--model", "message",
                          "--out", str(tmp_path)], capsys)
    assert code in (0, None), err
    return out


def test_allreduce_notes_replacing_a_csv_of_other_runs_which_stay_in_the_store(tmp_path, capsys):
    assert "note: replacing" not in _allreduce(tmp_path, capsys, "32KiB")
    assert "note: replacing" not in _allreduce(tmp_path, capsys, "32KiB")  # the same runs: nothing lost
    out = _allreduce(tmp_path, capsys, "64KiB")
    notes = [line for line in out.splitlines() if line.startswith("note: replacing")]
    assert notes == [f"note: replacing {tmp_path / 'ring_4_message.csv'} and its PNG, which held other runs than "
                     f"this command's; every run stays in {tmp_path / 'runs.sqlite'}"], out
    rows = list(csv.DictReader((tmp_path / "ring_4_message.csv").open()))
    assert [r["size_bytes"] for r in rows] == ["65536"]
    # the 32 KiB run is still stored: asking for both sizes reuses it
    out = _flat(_allreduce(tmp_path, capsys, "32KiB,64KiB"))
    assert "2 runs (2 reused from runs.sqlite)" in out
