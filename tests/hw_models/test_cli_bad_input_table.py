"""Every command of ``hw-models`` answers bad input with exit status 2 and exactly one line of
error on stderr (``error: ...``), no traceback, nothing written. The table below has rows for
every command; a command added later without rows fails :func:`test_the_table_covers_every_command`."""

from __future__ import annotations

import pytest

from cli_run import run

# CONFIG: a valid noc/experiment TOML written by the test; BOOKSIM: a valid BookSim2 file; OUT:
# an output directory that must stay absent; JSON: a damaged reproducer file; EMPTY: a 0-byte .toml; LOOP: a
# symbolic link loop; UNDER_FILE: a path whose directory is a file
BAD = {
    ("schedule",): [
        ["--bogus"], ["--nis", "x"], ["--nis", "65"], ["-t", "ring:²"], ["-t", "torus:4x"], ["--size", "1e300"],
        ["--size", "-1"], ["-a", "warp"], ["--format", "yaml"], ["--node", "3"],
    ],
    ("allreduce",): [
        ["--bogus"], ["--seed", "x"], ["--seed", "4294967296"], ["--nis", "65"], ["-t", "full:①"],
        ["--sizes", "1TiB..2TiB"], ["--model", "spice"], ["--packet-bytes", "99999999999"], ["--config", "CONFIG_BAD"],
        ["--model", "flit", "-s", "1TiB"], ["--variant", "omega"], ["--flow-control", "default"],
        ["--config", "EMPTY"], ["--config", "CONFIG_SIZES_LIST"], ["--config", "LOOP"], ["-o", "UNDER_FILE"], ["-o", "LOOP"],
    ],
    ("demo",): [["--bogus"], ["--out", "/proc/hw-models-demo"]],
    ("topology", "describe"): [[], ["ring:²"], ["torus:４x4"], ["ring:4", "--vcs", "0"], ["ring:4", "--routing", "x"],
                               ["full:99999999999999999999"]],
    ("config", "show"): [["CONFIG_BAD"], ["CONFIG_NAN"], ["--preset", "nope"], ["/nonexistent.toml"], ["EMPTY"],
                         ["LOOP"]],
    ("rtl", "lint"): [["--depth", "0"], ["--nis", "x"], ["--nis", "99"]],
    ("rtl", "regress"): [["--first-seed", "4294967296"], ["--first-seed", "-1"], ["--sim", "spice"],
                         ["--seeds", "0", "-t", "none"], ["-t", "ring:²"], ["--seeds", "4294967296"]],
    ("rtl", "replay"): [["/nonexistent.json"], ["JSON"], ["LOOP"]],
    ("rtl", "synth"): [["--depths", "x"], ["--depths", "１6"], ["--nis", ""]],
    ("maddpg", "train"): [[], ["--episodes", "1", "--seed", "-1"], ["--episodes", "1", "--agents", "65"],
                          ["--episodes", "1", "--fixed-point", "16.x"], ["--episodes", "0"], ["--episodes", "1000000000"],
                          ["--episodes", "1", "--batch-size", "0"]],
    ("maddpg", "accel"): [["--part", "u999"], ["--agents", "1"], ["--agents", "3", "--fixed-point", "16.x"],
                          ["--pcie", "gen9x99"], ["--level", "cycle"], ["--seed", "-1"], ["--interconnect", "bus"],
                          ["--cpu", "/nonexistent.json"]],
    ("maddpg", "eval"): [[], ["/nonexistent.npz"], ["JSON"], ["LOOP"], ["/nonexistent.npz", "--seed", "-1"],
                         ["/nonexistent.npz", "--episodes", "0"], ["/nonexistent.npz", "--env-backend", "gpu"]],
    ("noc", "run"): [[], ["CONFIG", "--rate", "nan"], ["CONFIG", "--rate", "2"], ["CONFIG", "--seed", "-1"],
                     ["CONFIG_NAN"], ["CONFIG", "--pattern", "spiral"], ["--booksim", "BOOKSIM", "k=٤"],
                     ["--booksim", "BOOKSIM", "injection_rate=1e999"], ["CONFIG_LONG"], ["EMPTY"]],
    ("noc", "sweep-load"): [["CONFIG", "--seed", "99999999999999999999"], ["CONFIG_INF_LIMIT"],
                            ["--booksim", "BOOKSIM", "packet_size=9223372036854775808"], ["CONFIG_LONG"]],
    ("sweep", "run"): [[], ["/nonexistent.toml"], ["CONFIG"], ["CONFIG", "--workers", "-1"], ["EMPTY"], ["LOOP"],
                       ["CONFIG", "--dask", "tcp://127.0.0.1:9", "--workers", "2"]],
    ("sweep", "export"): [["CONFIG"], ["/nonexistent.sqlite", "--csv", "o.csv"], ["CONFIG", "--csv", "o.csv"],
                          ["CONFIG", "--csv", "o.csv", "--status", "maybe"]],
    ("sweep", "import-jsonl"): [["/nonexistent.jsonl", "--store", "s.sqlite"], ["CONFIG", "--store", "s.sqlite"],
                                ["JSON", "--store", "s.sqlite"]],
    ("sweep", "status"): [["/nonexistent.sqlite"], ["CONFIG"], ["EMPTY"], ["LOOP"]],
    ("sweep", "kinds"): [["--bogus"]],
    ("plot",): [[], ["/nonexistent.csv", "--preset", "bandwidth"], ["LOOP", "--preset", "bandwidth"], ["CONFIG", "--preset", "bandwidth"],
                ["/nonexistent.csv"], ["/nonexistent.csv", "--preset", "pie", "--format", "gif"]],
    ("report",): [[], ["/nonexistent.sqlite"], ["CONFIG"], ["JSON", "--out", "r.html"]],
    ("train",): [["--bogus"], ["--workloads", "resnet"], ["--workloads", "/nonexistent.toml"], ["--batch", "0"],
                 ["--batch", "1000000000000"],
                 ["--iterations", "1"], ["--device", "tpu"], ["--engine", "magic"], ["--policy", "fifo"],
                 ["--policy", "wfbp", "--slice-bytes", "1MiB"], ["--policy", "fusion", "--fusion-threshold", "lots"],
                 ["--model", "spice"], ["--nis", "65"], ["-t", "ring:²"], ["-a", "warp"], ["--variant", "omega"],
                 ["--seed", "4294967296"], ["--config", "CONFIG_BAD"], ["--trace-run", "ncf/ring/wfbp"],
                 ["--workloads", "ncf", "--trace", "JSON"]],
    ("train-system",): [[], ["ring"]],  # the group: no system, an unknown one
    ("train-system", "ssd"): [["--servers", "2"], ["--delays", "0"], ["--delays", "1000000000"], ["--delays", ""], ["--task", "cnn"], ["--seed", "-1"],
                              ["--batch", "0"], ["--batch", "1000000000000"], ["-w", "resnet"], ["-t", "ring:²"],
                              ["--max-iterations", "0"], ["--max-iterations", "100001"], ["--stragglers", "slow:99:2"],
                              ["--links", ""]],
    ("train-system", "ps"): [["--modes", "bsp"], ["--modes", " "], ["--placement", ""], ["--stragglers", "slow:99:2"], ["--placement", "0,0"],
                             ["--max-iterations", "100000"]],
    ("train-system", "compression"): [["--compressors", "topk:x"], ["--compressors", ""], ["--fix", ""],
                                      ["--fix", "sideways"], ["--stragglers", "lognormal:9"], ["--links", "at:x"]],
    ("train-system", "easgd"): [["--alpha", "1"], ["--variants", ""]],
    ("train-system", "dlion"): [["--techniques", "warp"], ["--techniques", ""], ["--links", "slow:99:2"], ["--links", ""],
                                ["--transfer-every", "0"], ["--max-iterations", "20000"]],
    ("train-system", "kfac"): [["--inverse-efficiency", "2"], ["--config", "CONFIG_BAD"], ["--stragglers", "const:0"],
                               ["--links", "walk:4"]],
}


def test_the_table_covers_every_command():
    from typer.main import get_command

    from hw_models.cli import app

    def walk(cmd, path=()):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield from walk(sub, (*path, name))
        else:
            yield path

    groups = {("train-system",)}  # rows of a group's own errors (no subcommand, an unknown one)
    assert sorted(walk(get_command(app))) == sorted(set(BAD) - groups)


ROWS = [(command, argv) for command, rows in BAD.items() for argv in rows]


@pytest.mark.parametrize("command,argv", ROWS, ids=[" ".join((*c, *a)) or "-" for c, a in ROWS])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, command, argv):
    monkeypatch.chdir(tmp_path)  # a default output directory would land here
    files = {
        "CONFIG": '[network]\ntopology = "mesh:2x2"\n[traffic]\nmeasure_cycles = 100\n',
        "CONFIG_BAD": "[network]\nnis_per_node = 65\n",
        "CONFIG_NAN": "[network]\nlink_bytes_per_cycle = nan\n",
        "CONFIG_INF_LIMIT": '[network]\ntopology = "mesh:2x2"\n[sweep]\nlatency_limit_factor = inf\n',
        "CONFIG_LONG": '[network]\ntopology = "mesh:4x4"\n[traffic]\nmeasure_cycles = 1000000000\n',
        "BOOKSIM": "topology = mesh;\nk = 2;\nn = 2;\nrouting_function = dor;\nnum_vcs = 4;\n",
        "JSON": '{"params": {"depth": 0}, "trace": [1, 2',
        "EMPTY": "",
        "CONFIG_SIZES_LIST": '[allreduce]\nsizes = ["4KiB", 8192]\n',
    }
    (tmp_path / "under").write_text("a file")
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    files_at = {"LOOP": str(tmp_path / "loop_a"), "UNDER_FILE": str(tmp_path / "under" / "x")}
    args = []
    for a in argv:
        if a in files_at:
            a = files_at[a]
        elif a in files:
            path = tmp_path / (a.lower() + (".json" if a == "JSON" else ".toml" if a.startswith("CONFIG") else ""))
            path.write_text(files[a])
            a = str(path)
        args.append(a)
    out_dir = tmp_path / "out"
    takes_out = "-o" not in argv and command in (("allreduce",), ("noc", "run"), ("noc", "sweep-load"), ("maddpg", "train"),
                            ("rtl", "regress"), ("rtl", "replay"))
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run([*command, *args, *(["--out", str(out_dir)] if takes_out else [])], capsys)
    assert code == 2, (code, out[-500:], err)
    assert err.endswith("\n") and err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err + out
    assert not out_dir.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written anywhere
