"""``hw-models rtl``: bad input is refused on one line (exit 2) before anything is built,
simulated or synthesised; the simulators and Yosys are replaced by recorders here, so
these tests are fast."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rtl_matrix import HDL_PARAMS
from hw_models.cli import main
from hw_models.rtl import regress as R
from hw_models.rtl import synth as Y
from hw_models.rtl.lockstep import ModelStepper
from hw_models.rtl.stimulus import Environment, StimulusError, random_episode


def run(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def one_line_error(code, err, *parts):
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for p in parts:
        assert p in lines[0], (p, lines[0])
    return lines[0]


@pytest.fixture
def no_work(monkeypatch):
    """Every long step records its call instead of running; tests assert none happened."""
    calls = []
    monkeypatch.setattr(R, "build", lambda *a, **k: calls.append("build") or pytest.fail("built"))
    monkeypatch.setattr(R, "regress", lambda *a, **k: calls.append("regress") or pytest.fail("simulated"))
    monkeypatch.setattr(Y, "synth_one", lambda *a, **k: calls.append("synth") or pytest.fail("synthesised"))
    return calls


def _result(sim, p, eps):
    return R.RegressionResult(sim=sim, params=p.verilog_parameters(), schedules=len(eps), cycles=10 * len(eps),
                              mismatches=0, mismatch_text=None, mismatch=None, wall_s=0.1, sim_wall_s=0.1,
                              cycles_per_s=100.0)


# ---- replay: a file that is not a reproducer -------------------------------------------

_GOOD_PARAMS = {"depth": 4, "nis": 1, "flow_w": 8, "node_w": 8, "step_w": 8, "len_w": 24, "cnt_w": 4, "err_w": 16}


@pytest.mark.parametrize("content, says", [
    (b"{}", "no 'params'"),
    (b"not json", "is not JSON (Expecting value at line 1 column 1)"),
    (b"[1]", "expected a JSON object with 'params' and 'trace', got an array"),
    (b"\xff\xfe\x00\x01", "is not a text file"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (json.dumps({"params": _GOOD_PARAMS}).encode(), "no 'trace'"),
    (json.dumps({"params": [4], "trace": []}).encode(), "'params' is an array, expected an object"),
    (json.dumps({"params": _GOOD_PARAMS, "trace": 3}).encode(), "'trace' is a number, expected an array"),
    (json.dumps({"params": {"depth": 4, "bogus": 1}, "trace": []}).encode(), "unknown scheduler parameter(s) 'bogus'"),
    (json.dumps({"params": {"depth": 0}, "trace": []}).encode(), "DEPTH = 0 is out of range"),
    (json.dumps({"params": _GOOD_PARAMS, "trace": [{}, 5]}).encode(), "trace[1] is a number"),
    (json.dumps({"params": _GOOD_PARAMS, "trace": [{"go": 1}]}).encode(), "trace[0]: unknown input 'go'"),
    (json.dumps({"params": _GOOD_PARAMS, "trace": [{"rst": "1"}]}).encode(), "trace[0]: input rst = '1' is not an integer"),
    (json.dumps({"params": _GOOD_PARAMS, "trace": [{"load_addr": 4}]}).encode(),
     "trace[0]: scheduler input load_addr = 4 does not fit its 2-bit port"),
    (json.dumps({"params": _GOOD_PARAMS, "trace": [{"recv": [[1, 0]]}]}).encode(), "recv = [[1, 0]] is not a list"),
    (json.dumps({"params": _GOOD_PARAMS, "trace": [{"recv": [None, [1, 0, 2]]}]}).encode(),
     "2 receives in one cycle but NIS = 1"),
])
def test_replay_of_a_bad_reproducer_is_one_line_naming_the_file(content, says, tmp_path, capsys, no_work):
    f = tmp_path / "mismatch.json"
    f.write_bytes(content)
    code, _out, err = run(["rtl", "replay", str(f), "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, f"reproducer {f}: ", says)
    assert no_work == []


def test_replay_of_a_directory_or_a_missing_file_says_which(tmp_path, capsys, no_work):
    code, _out, err = run(["rtl", "replay", str(tmp_path)], capsys)
    one_line_error(code, err, f"reproducer {tmp_path}: is a directory")
    code, _out, err = run(["rtl", "replay", str(tmp_path / "nope.json")], capsys)
    one_line_error(code, err, "nope.json: does not exist")
    assert no_work == []


@pytest.mark.parametrize("tag", list(HDL_PARAMS))
def test_every_trace_the_environment_makes_passes_the_reproducer_check(tag, tmp_path):
    """The check refuses only what the regression never writes: the inputs of whole runs
    (errors injected, bad loads, reads beyond DEPTH), through JSON, are accepted as they are."""
    params = HDL_PARAMS[tag]
    eps = [random_episode(s, params, errors=s % 2 == 0) for s in range(16)]
    env, model, trace = Environment(params, eps), ModelStepper(params), []
    while (inp := env.next_inputs(model.outputs())) is not None:
        trace.append(env.trace[-1])
        model.edge(inp)
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"params": params.__dict__, "trace": trace}, default=int))
    p, t = R.load_reproducer(f)
    assert p == params and t == json.loads(json.dumps(trace, default=int)) and len(t) > 300


# ---- regress: seeds, something to compare, the output directory ------------------------


def test_a_negative_first_seed_is_refused_before_anything_runs(capsys, no_work, tmp_path):
    code, out, err = run(["rtl", "regress", "--seeds", "1", "--first-seed", "-5", "-t", "none",
                          "--out", str(tmp_path / "rr")], capsys)
    assert code == 2 and "--first-seed -5: a seed must be an integer in [0, 4294967295]" in out + err
    assert "Traceback" not in out + err and no_work == []


def test_episode_seeds_are_any_integer_from_zero_up():
    p = HDL_PARAMS["d6n3narrow"]
    with pytest.raises(StimulusError, match="seed -1 is not an integer >= 0"):
        random_episode(-1, p)
    big = 2**64 + 3  # numpy's SeedSequence has no upper bound
    assert np.array_equal(random_episode(big, p).rows, random_episode(big, p).rows)
    assert random_episode(big, p).seed == big


def test_a_regression_that_would_compare_nothing_is_an_error(capsys, no_work, tmp_path):
    code, _out, err = run(["rtl", "regress", "--seeds", "0", "-t", "none", "--out", str(tmp_path / "rr")], capsys)
    one_line_error(code, err, "nothing to compare", "--seeds")
    assert no_work == [] and not (tmp_path / "rr").exists()


def test_seeds_0_with_a_topology_runs_its_tables_once(capsys, monkeypatch, tmp_path):
    jobs = []
    monkeypatch.setattr(R, "regress", lambda sim, p, eps, **kw: jobs.append(eps) or _result(sim, p, eps))
    code, out, err = run(["rtl", "regress", "--seeds", "0", "-t", "torus:4x4", "-t", "torus:4x4",
                          "--out", str(tmp_path / "rr")], capsys)
    assert code == 0, err
    assert [len(e) for e in jobs] == [16]  # the duplicate -t runs once
    assert "16 schedules, 160 cycles compared, 0 mismatches" in out
    assert json.loads((tmp_path / "rr" / "summary-verilator.json").read_text())["schedules"] == 16


def test_a_bad_topology_fails_before_the_random_schedules_run(capsys, no_work, tmp_path):
    code, _out, err = run(["rtl", "regress", "--seeds", "1", "-t", "bogus", "--out", str(tmp_path / "rr")], capsys)
    one_line_error(code, err, "bad topology spec 'bogus'")
    assert no_work == []


def test_an_unusable_regress_out_is_refused_before_anything_runs(capsys, no_work, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _out, err = run(["rtl", "regress", "--seeds", "1", "-t", "none", "--out", str(blocker / "rr")], capsys)
    one_line_error(code, err, f"--out {blocker / 'rr'}: cannot make the output directory ({blocker} is a file, not a directory)")
    code, _out, err = run(["rtl", "regress", "--seeds", "1", "-t", "none", "--out", str(blocker)], capsys)
    one_line_error(code, err, f"--out {blocker}: cannot make the output directory")
    assert no_work == []


def test_replay_out_is_checked_too(capsys, no_work, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"params": _GOOD_PARAMS, "trace": [{"rst": 1}]}))
    code, _out, err = run(["rtl", "replay", str(f), "--out", str(blocker / "o")], capsys)
    one_line_error(code, err, "--out", "cannot make the output directory")
    assert no_work == []


# ---- synth: topologies, --out and duplicates before Yosys ------------------------------


def test_a_bad_synth_topology_fails_before_yosys(capsys, no_work):
    code, _out, err = run(["rtl", "synth", "--depths", "16", "--nis", "1", "-t", "bogus"], capsys)
    one_line_error(code, err, "bad topology spec 'bogus'")
    assert no_work == []


def test_an_unusable_synth_out_fails_before_yosys(capsys, no_work, tmp_path):
    code, _out, err = run(["rtl", "synth", "--depths", "16", "--nis", "1", "-t", "none", "--out", str(tmp_path)], capsys)
    one_line_error(code, err, f"--out {tmp_path}: is a directory")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _out, err = run(["rtl", "synth", "--depths", "16", "--nis", "1", "-t", "none",
                           "--out", str(blocker / "s.csv")], capsys)
    one_line_error(code, err, f"--out {blocker / 's.csv'}: its directory", "cannot make the output directory (a file of that name exists)")
    assert no_work == []


def test_synth_drops_duplicate_depths_and_nis_keeping_order(capsys, monkeypatch, tmp_path):
    seen = []

    def synth_one(params, sources=None, delay=None, xilinx=False, top="nic_scheduler"):  # each point of the sweep
        seen.append((params.depth, params.nis, top))
        return Y.SynthRow(depth=params.depth, nis=params.nis, cells=1, flip_flops=1, luts=1, ff_bits_per_entry=1.0,
                          lut_levels=3, fmax_mhz_est=Y.DelayModel().fmax_mhz(3), seconds=0.0)

    monkeypatch.setattr(Y, "synth_one", synth_one)
    out = tmp_path / "new" / "s.csv"
    code, _o, err = run(["rtl", "synth", "--depths", "32,16,32,16", "--nis", "4,1,4", "-t", "none",
                         "--out", str(out)], capsys)
    assert code is None or code == 0, err
    assert seen == [(32, 4, "nic_scheduler"), (16, 4, "nic_scheduler"), (32, 1, "nic_scheduler"),
                    (16, 1, "nic_scheduler")]
    # Fmax estimate at the default delay model: 1000 / (0.6 + 3 x 0.6) MHz
    assert out.read_text().splitlines()[1:] == ["32,4,1,1,1,1.0,3,416.7,0.0", "16,4,1,1,1,1.0,3,416.7,0.0",
                                                 "32,1,1,1,1,1.0,3,416.7,0.0", "16,1,1,1,1,1.0,3,416.7,0.0"]


@pytest.mark.parametrize("flag,value", [("--ns-per-level", "0"), ("--ns-per-level", "-1"), ("--fixed-ns", "-0.5"),
                                        ("--fixed-ns", "nan")])
def test_synth_refuses_a_delay_model_that_is_not_positive(capsys, no_work, flag, value):
    code, _out, err = run(["rtl", "synth", "--depths", "16", "--nis", "1", "-t", "none", flag, value], capsys)
    one_line_error(code, err, f"{flag} = ", "must be a positive number of ns")
    assert no_work == []


def test_synth_refuses_a_revision_that_does_not_exist_before_yosys(capsys, no_work):
    code, _out, err = run(["rtl", "synth", "--depths", "16", "--nis", "1", "-t", "none", "--rev", "no-such-rev"], capsys)
    one_line_error(code, err, "--rev no-such-rev", "Not a valid object name")
    assert no_work == []


def test_synth_refuses_a_data_path_lane_count_the_rtl_does_not_take(capsys, no_work):
    code, _out, err = run(["rtl", "synth", "--depths", "16", "--nis", "1", "-t", "none", "--datapath", "2,3"], capsys)
    one_line_error(code, err, "--datapath = 3", "1, 2, 4, 8, 16")
    assert no_work == []


def test_synth_refuses_an_unknown_pnr_family_before_synthesising(capsys, no_work):
    code, _, err = run(["rtl", "synth", "--depths", "16", "--nis", "1", "-t", "none", "--pnr", "ice40"], capsys)
    one_line_error(code, err, "--pnr = 'ice40'", "ecp5")
    assert no_work == []


def test_synth_refuses_an_adder_latency_the_rtl_does_not_take(capsys, no_work):
    code, _, err = run(["rtl", "synth", "--depths", "16", "--nis", "1", "-t", "none", "--datapath", "4",
                        "--add-lat", "0,8", "--pnr", "ecp5"], capsys)
    one_line_error(code, err, "--add-lat = 8", "0, 1, 2, 3, 4, 5, 6, 7")
    assert no_work == []


def test_synth_pnr_routes_every_depth_and_ni_count_and_prints_the_table(capsys, monkeypatch, tmp_path):
    from hw_models.rtl import pnr as P

    monkeypatch.chdir(tmp_path)  # the sweep store: results/rtl_synth/runs.sqlite
    monkeypatch.setattr(Y, "synth_one", lambda params, **k: Y.SynthRow(
        depth=params.depth, nis=params.nis, cells=1, flip_flops=1, luts=1, ff_bits_per_entry=1.0, lut_levels=3,
        fmax_mhz_est=1.0, seconds=0.0))
    monkeypatch.setattr(Y, "synth_datapath_module", lambda module, lanes, fmt, delay=None: Y.DatapathSynthRow(
        module=module, lanes=lanes, fmt="fp32", buf_words=0, cells=1, flip_flops=0, luts=1, lut_levels=1,
        fmax_mhz_est=1.0, seconds=0.0))
    seen = []

    def pnr_sweep(jobs, on_row=None, **k):
        seen.extend(j.label for j in jobs)
        return [P.PnrRow(top=j.top, label=j.label, lut4=10, ccu2c=1, flip_flops=5, ebr=0, dsp=0, comb_used=12,
                         comb_available=83640, fmax_mhz=50.0, target_mhz=125.0, crit_from="a.Q", crit_to="b.M",
                         crit_logic_levels=3, crit_ns=20.0, crit_routing_ns=15.0, part="LFE5U-85F-6CABGA381", seed=1,
                         yosys="0.70", nextpnr="0.11.1", seconds=1.0) for j in jobs]

    monkeypatch.setattr(P, "pnr_sweep", pnr_sweep)
    code, out, err = run(["rtl", "synth", "--depths", "16,64", "--nis", "4", "-t", "none", "--datapath", "4",
                          "--pnr", "ecp5"], capsys)
    assert code in (None, 0), err
    assert seen == ["DEPTH=16 NIS=4", "DEPTH=64 NIS=4", "LANES=4 fp32 BUF_WORDS=64 NIS=4"]
    assert "LFE5U-85F-6CABGA381, Yosys 0.70 synth_ecp5, nextpnr-ecp5 0.11.1" in out
    assert out.count("| 50.0 |") == 3
    seen.clear()
    code, out, err = run(["rtl", "synth", "--depths", "16", "--nis", "1", "-t", "none", "--datapath", "4",
                          "--add-lat", "0,5", "--pnr", "ecp5"], capsys)
    assert code in (None, 0), err
    assert seen == ["DEPTH=16 NIS=1", "LANES=4 fp32 BUF_WORDS=64", "LANES=4 fp32 BUF_WORDS=64 ADD_LAT=5"]
