"""``hw-models noc run|sweep-load --booksim FILE [key=value ...]``: BookSim2 files on the
command line, BookSim2's statistics by name, one-line errors."""

from __future__ import annotations

import csv

import pytest

from cli_run import run

MESH = "topology = mesh;\nk = 4;\nn = 2;\nrouting_function = dor; // BookSim2 syntax\nnum_vcs = 4;\n"


def test_run_prints_booksims_statistics_and_writes_csv(tmp_path, capsys):
    cfg = tmp_path / "mesh44"
    cfg.write_text(MESH)
    code, out, err = run(["noc", "run", "--booksim", str(cfg), "injection_rate=0.1", "seed=3", "--out",
                          str(tmp_path / "o")], capsys)
    assert code in (0, None), err
    for name in ("Packet latency average", "Network latency average", "Accepted flit rate average", "Hops average"):
        assert name in out
    files = list((tmp_path / "o").glob("booksim_mesh_4x4_uniform_*.csv"))
    assert len(files) == 1
    row = next(csv.DictReader(files[0].open()))
    assert row["verdict"] == "stable" and row["seed"] == "3" and row["injection_rate"] == "0.1"
    assert abs(float(row["accepted_flit_rate_average"]) - 0.1) < 0.01
    # another configuration never writes over this one's file
    code, _, err = run(["noc", "run", "--booksim", str(cfg), "injection_rate=0.1", "seed=4", "--out",
                        str(tmp_path / "o")], capsys)
    assert code in (0, None), err
    assert len(list((tmp_path / "o").glob("booksim_*.csv"))) == 2


@pytest.mark.parametrize("extra,says", [
    (["input_speedup=2"], "input_speedup = 2"),
    (["traffic=hotspot"], "traffic = 'hotspot'"),
    (["bogus=1"], "'bogus' is not a BookSim2 key"),
    (["injection_rate"], "key=value"),
    (["--rate", "0.1"], "--rate does not go with --booksim"),
])
def test_bad_booksim_input_is_a_one_line_error(tmp_path, capsys, extra, says):
    cfg = tmp_path / "mesh44"
    cfg.write_text(MESH)
    code, _, err = run(["noc", "run", "--booksim", str(cfg), *extra, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1


def test_missing_booksim_file_and_a_toml_config_with_overrides(tmp_path, capsys):
    code, _, err = run(["noc", "run", "--booksim", str(tmp_path / "nope")], capsys)
    assert code == 2 and "no such BookSim2 config file" in err
    code, _, err = run(["noc", "run", "a.toml", "b.toml"], capsys)
    assert code == 2 and "expected one CONFIG" in err


def test_channel_latencies_by_kind(tmp_path, capsys):
    from hw_models.noc_experiment import load_noc_experiment as load_experiment

    f = tmp_path / "c.toml"
    f.write_text('[network]\ntopology = "torus:4x4"\nlink_latency_cycles = 3\n[channels]\nrouter_latency_cycles = 2\n'
                 'inject_latency_cycles = 5\n')
    _, t = load_experiment(f)
    lat = t.link_latency_cycles
    assert set(lat[t.is_router_link]) == {2}
    assert set(lat[t.link_src < t.num_endpoints]) == {5}
    assert set(lat[t.link_dst < t.num_endpoints]) == {3}  # unset: network.link_latency_cycles
    f.write_text('[channels]\nrouter_latency = 2\n')
    code, _, err = run(["noc", "run", str(f)], capsys)
    assert code == 2 and "router_latency" in err and len(err.strip().splitlines()) == 1


CMESH = ("topology = cmesh; k = 4; n = 2; c = 4; x = 4; y = 4; xr = 2; yr = 2;\n"
         "routing_function = dor_no_express; num_vcs = 4;\n")


def test_cmesh_hotspot_on_off_run_from_a_booksim_file(tmp_path, capsys):
    """BookSim2's concentrated mesh with its hotspot pattern (parameters in braces, as
    BookSim2 splits them) and on/off injection, through the command."""
    cfg = tmp_path / "cmesh44"
    cfg.write_text(CMESH)
    args = ["noc", "run", "--booksim", str(cfg), "traffic=hotspot({{0,5},{3,1}})", "injection_process=on_off",
            "injection_rate=0.005", "--out", str(tmp_path / "o")]
    code, out, err = run(args, capsys)
    assert code in (0, None), err
    assert "Packet latency average" in out
    files = list((tmp_path / "o").glob("booksim_mesh_4x4_c4_hotspot_*.csv"))
    assert len(files) == 1
    row = next(csv.DictReader(files[0].open()))
    assert row["verdict"] == "stable" and row["topology"] == "cmesh" and row["injection_process"] == "on_off"
    assert abs(float(row["accepted_flit_rate_average"]) - 0.005) < 0.0015


@pytest.mark.parametrize("text,says", [
    (CMESH.replace("dor_no_express", "dor"), "express channels"),
    ("topology = fattree; k = 4; n = 2; routing_function = anca;\n", "adaptive"),
    (MESH + "injection_process = on_off(0.1,0.2);\n", "parameters are written in braces"),
])
def test_unmodelled_cmesh_fattree_on_off_settings_are_one_line_errors(tmp_path, capsys, text, says):
    cfg = tmp_path / "cfg"
    cfg.write_text(text)
    code, _, err = run(["noc", "run", "--booksim", str(cfg), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1


def test_booksim_sweep_load_keeps_its_points_in_the_store_and_reuses_them(tmp_path, capsys):
    """A BookSim2 file's load sweep runs its points as noc_load points of the output
    directory's sweep store (its network named as a noc config would name it); the same
    command again simulates none and writes the same CSV."""
    cfg = tmp_path / "mesh22"
    cfg.write_text("topology = mesh;\nk = 2;\nn = 2;\nrouting_function = dor;\nnum_vcs = 2;\n")
    argv = ["noc", "sweep-load", "--booksim", str(cfg), "sample_period=100", "max_samples=2", "warmup_periods=1",
            "--out", str(tmp_path / "o")]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    (csv_path,) = (tmp_path / "o").glob("sweep_booksim_mesh_2x2_uniform_*.csv")
    first = csv_path.read_bytes()
    n = len(list(csv.DictReader(csv_path.open())))
    code, out, err = run(argv, capsys)
    assert code == 0 and f"({n} point(s) reused from runs.sqlite)" in " ".join(out.split()), err
    assert csv_path.read_bytes() == first


def test_a_run_that_measures_no_packet_says_so_and_what_to_change(tmp_path, capsys):
    cfg = tmp_path / "quiet"
    cfg.write_text(MESH + "sample_period = 20;\nwarmup_periods = 1;\nmax_samples = 2;\n")
    code, out, err = run(["noc", "run", "--booksim", str(cfg), "injection_rate=0.00001", "--out",
                          str(tmp_path / "o")], capsys)
    assert code in (0, None), err
    assert "no packet was measured" in out and "raise injection_rate, sample_period or max_samples" in out
    (row,) = csv.DictReader(next((tmp_path / "o").glob("booksim_*.csv")).open())
    assert row["hops_average"] == "-" and row["packet_latency_average"] == "-"  # not BookSim2's "1.0000" for none
