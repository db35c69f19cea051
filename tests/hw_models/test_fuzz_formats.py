"""Fuzzing the last inputs the command-line fuzzing did not reach: Chakra traces
(``train -w trace:PREFIX``), the CPU profile of ``maddpg accel --cpu FILE``, the JSONL stores
``sweep import-jsonl`` reads, and the flags of ``rtl lint/regress/synth``, ``plot``,
``report`` and ``sweep export``. Damaged bytes, truncation, wrong field types and any flag
value either work or fail with the project's own one-line error (exit 2), never a traceback.
No synthesis, simulation or plot is run: a command stops where that work would start. Small
example budgets here; the ``slow`` twins draw many more."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hw_models.cli import main
from test_fuzz_commands import FEW, FLAG_TEXT, MANY, _Stop
from test_fuzz_inputs import VALUES, _ours_or_nothing

GOLDEN = Path(__file__).parent / "golden"


def _command(argv, capsys) -> str:
    """Run ``argv``: 'ok' (it got to its work or finished) or the one error line (exit 2)."""
    try:
        main(argv)
    except _Stop:
        pass
    except SystemExit as exc:
        out = capsys.readouterr()
        if exc.code == 0:
            return "ok"
        assert exc.code == 2, (argv, exc.code, out.err[-2000:])
        assert out.err.startswith("error: ") and out.err.count("\n") == 1, (argv, out.err[-2000:])
        return out.err
    capsys.readouterr()
    return "ok"


def _stop(monkeypatch, module: str, name: str, after: bool = False) -> None:
    """Stop where ``module.name`` is called (``after``: once it has returned)."""
    import importlib

    real = getattr(importlib.import_module(module), name)

    def stop(*args, **kwargs):
        if after:
            real(*args, **kwargs)
        raise _Stop

    monkeypatch.setattr(importlib.import_module(module), name, stop)


def _damage(data: bytes, flips, cut) -> bytes:
    b = bytearray(data)
    for at, byte in flips:
        if b:
            b[at % len(b)] ^= byte or 1
    return bytes(b[:max(0, len(b) - cut)])


DAMAGE = dict(flips=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=3),
              cut=st.one_of(st.just(0), st.integers(0, 400)))


# --- Chakra traces --------------------------------------------------------------------------

def _wire(fields) -> bytes:
    """A protobuf message from raw (field number, wire type, value) triples: any field with
    any wire type, as a foreign or broken writer may put it."""
    from hw_models.training.chakra import _varint

    out = bytearray()
    for number, wt, value in fields:
        out += _varint((number << 3) | wt)
        if wt == 0:
            out += _varint(value % (1 << 64))
        elif wt == 1:
            out += (value % (1 << 64)).to_bytes(8, "little")
        elif wt == 5:
            out += (value % (1 << 32)).to_bytes(4, "little")
        else:
            raw = value.to_bytes(max(1, (value.bit_length() + 7) // 8), "little") if isinstance(value, int) else value
            out += _varint(len(raw)) + raw
    return bytes(out)


FOREIGN = st.lists(st.tuples(st.integers(1, 31), st.sampled_from([0, 1, 2, 5]),
                             st.one_of(st.integers(0, 2**70), st.binary(max_size=12))), max_size=5)
CHAKRA = dict(rank=st.integers(0, 1), at=st.integers(0, 20), foreign=FOREIGN, **DAMAGE)


def _fuzz_chakra(monkeypatch, capsys, tmp_path, rank, at, foreign, flips, cut):
    from hw_models.training.chakra import _varint, export_workload, iteration_nodes, trace_workload

    prefix = export_workload(tmp_path, "t", iteration_nodes([3, 4], [5, 6], [4096, 0], ["a", "b"]), ranks=2)
    f = tmp_path / f"t.{rank}.et"
    data = f.read_bytes()
    if foreign:  # a whole message of any fields, wire types and values, spliced in at a message boundary
        pos, n = 0, 0
        from hw_models.training.chakra import _read_varint

        while pos < len(data) and n < at:
            size, pos = _read_varint(data, pos, f)
            pos += size
            n += 1
        fields = [(k, wt, v if wt == 2 or isinstance(v, int) else int.from_bytes(v or b"\0", "little"))
                  for k, wt, v in foreign]
        msg = _wire(fields)
        data = data[:pos] + _varint(len(msg)) + msg + data[pos:]
    f.write_bytes(_damage(data, flips, cut))
    with monkeypatch.context() as m:
        _stop(m, "hw_models.train_job", "resolve", after=True)
        err = _command(["train", "-t", "torus:2x2", "-w", f"trace:{prefix}", "-o", str(tmp_path / "out")], capsys)
    if err != "ok":
        assert str(tmp_path) in err, err  # the error names the trace
    w = _ours_or_nothing(trace_workload, f"trace:{prefix}")
    if w is not None:
        costs = _ours_or_nothing(w.layer_costs)
        if costs is not None:
            assert all(c.fwd_s >= 0 and c.bwd_s >= 0 and c.grad_bytes >= 0 for c in costs)


@FEW
@given(**CHAKRA)
def test_a_damaged_chakra_trace_loads_or_is_one_error_line(monkeypatch, capsys, tmp_path_factory, **kw):
    _fuzz_chakra(monkeypatch, capsys, tmp_path_factory.mktemp("et"), **kw)


@pytest.mark.slow
@MANY
@given(**CHAKRA)
def test_a_damaged_chakra_trace_loads_or_is_one_error_line_many(monkeypatch, capsys, tmp_path_factory, **kw):
    _fuzz_chakra(monkeypatch, capsys, tmp_path_factory.mktemp("et"), **kw)


# --- the CPU profile of maddpg accel --cpu ---------------------------------------------------

PROFILE = {"env": "simple_spread", "n_agents": 2, "batch": 64, "env_step_s": 1e-4, "sample_s": 2e-4,
           "update_s": 3e-3, "threads": 1, "machine": "fuzz", "measured": "2026-01-01", "seed": 0, "repeats": 5}
CPU = dict(key=st.one_of(st.none(), st.sampled_from(sorted(PROFILE)), st.text(max_size=8)), value=VALUES,
           drop=st.booleans(), **DAMAGE)


def _fuzz_cpu(monkeypatch, capsys, tmp_path, key, value, drop, flips, cut):
    p = dict(PROFILE)
    if key is not None:
        if drop:
            p.pop(key, None)
        else:
            p[key] = value
    f = tmp_path / "cpu.json"
    try:
        text = json.dumps(p, allow_nan=True)
    except (TypeError, ValueError):
        return
    f.write_bytes(_damage(text.encode(), flips, cut))
    with monkeypatch.context() as m:
        _stop(m, "hw_models.maddpg_accel_run", "run")
        err = _command(["maddpg", "accel", "--cpu", str(f), "--agents", "2", "--batch", "64",
                        "-o", str(tmp_path / "out")], capsys)
    if err != "ok":
        assert str(f) in err, err


@FEW
@given(**CPU)
def test_a_damaged_cpu_profile_loads_or_is_one_error_line(monkeypatch, capsys, tmp_path_factory, **kw):
    _fuzz_cpu(monkeypatch, capsys, tmp_path_factory.mktemp("cpu"), **kw)


@pytest.mark.slow
@MANY
@given(**CPU)
def test_a_damaged_cpu_profile_loads_or_is_one_error_line_many(monkeypatch, capsys, tmp_path_factory, **kw):
    _fuzz_cpu(monkeypatch, capsys, tmp_path_factory.mktemp("cpu"), **kw)


# --- the JSONL stores of sweep import-jsonl --------------------------------------------------

STORES = [GOLDEN / "allreduce" / "torus_2x2_message.jsonl", GOLDEN / "train" / "train_torus_2x2_message.jsonl",
          GOLDEN / "noc_sweep_load" / "sweep_mesh_3x3_uniform.jsonl"]


def _checksummed(record: dict) -> str:
    body = {k: v for k, v in record.items() if k not in ("sha256",)}
    record = dict(record, sha256=hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"),
                                                           ensure_ascii=True).encode("ascii")).hexdigest())
    return json.dumps(record, allow_nan=True)


JSONL = dict(which=st.integers(0, len(STORES) - 1), line=st.integers(0, 20), field=st.integers(0, 60),
             value=VALUES, resum=st.booleans(), **DAMAGE)


def _fuzz_jsonl(capsys, tmp_path, which, line, field, value, resum, flips, cut):
    lines = STORES[which].read_text().splitlines()
    i = line % len(lines)
    rec = json.loads(lines[i])
    keys = sorted(k for k in rec if k not in ("sha256",))
    k = keys[field % len(keys)]
    rec[k] = value
    try:  # a wrong value under a valid checksum reaches the record's reader, not only the checksum test
        lines[i] = _checksummed(rec) if resum else json.dumps(rec, allow_nan=True)
    except (TypeError, ValueError):
        return
    f = tmp_path / "r.jsonl"
    f.write_bytes(_damage(("\n".join(lines) + "\n").encode(), flips, cut))
    err = _command(["sweep", "import-jsonl", str(f), "--store", str(tmp_path / "s.sqlite")], capsys)
    if err != "ok":
        assert str(f) in err, err


@FEW
@given(**JSONL)
def test_a_damaged_jsonl_store_imports_or_is_one_error_line(capsys, tmp_path_factory, **kw):
    _fuzz_jsonl(capsys, tmp_path_factory.mktemp("jl"), **kw)


@pytest.mark.slow
@MANY
@given(**JSONL)
def test_a_damaged_jsonl_store_imports_or_is_one_error_line_many(capsys, tmp_path_factory, **kw):
    _fuzz_jsonl(capsys, tmp_path_factory.mktemp("jl"), **kw)


# --- the flags of rtl, plot, report and sweep export -----------------------------------------

# (command line before the flag, its flags, where its work would start); CSV / STORE: files made here
FLAG_COMMANDS = {
    "rtl lint": (["rtl", "lint"], ["--depth", "--nis"], ("hw_models.rtl.lint", "lint_warnings")),
    "rtl regress": (["rtl", "regress", "-t", "none", "--sim", "icarus"],
                    ["--sim", "--seeds", "--first-seed", "--depth", "--nis", "--topology", "--out"],
                    ("hw_models.rtl.runs", "run_regress_jobs")),
    "rtl synth": (["rtl", "synth", "-t", "none", "--depths", "16", "--nis", "1"],
                  ["--depths", "--nis", "--out", "--topology", "--ns-per-level", "--fixed-ns", "--datapath", "--pnr",
                   "--add-lat"], ("hw_models.rtl_synth_run", "synth_rows")),
    "plot": (["plot", "CSV", "--x", "size_bytes", "--y", "busbw_gbps", "--color", "algorithm"],
             ["--x", "--y", "--color", "--facet", "--where", "--format", "--out"], ("hw_models.report.figures", "render")),
    "plot preset": (["plot", "CSV"], ["--preset"], ("hw_models.report.figures", "render")),
    "report": (["report", "CSV"], ["--where", "--out"], ("hw_models.report.html", "page")),
    "sweep export": (["sweep", "export", "STORE"], ["--csv", "--parquet", "--kind", "--status"], None),
}
# junk, and values these flags take (so that the flags after the fuzzed one are reached too)
RTL_PLOT_TEXT = st.one_of(FLAG_TEXT, st.sampled_from([
    "algorithm=ring", "size_bytes=4096", "nic=x", "x.html", "x.png", "x.svg", "x.pdf", "x.txt", "svg", "pdf", "bandwidth",
    "speedup", "training", "load-latency", "allreduce", "done", "failed", "o.csv", "o.parquet", "16,32", "0,1", "8",
    "ecp5", "ice40", "icarus", "verilator", "torus:2x2", "mesh:2x2", "1,4", "0.5", "nis", "algorithm", "topology"]))
FLAG_CASES = st.sampled_from([(n, f) for n, (_, flags, _) in FLAG_COMMANDS.items() for f in flags])


@pytest.fixture(scope="module")
def flag_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("flagfiles")
    shutil.copy(GOLDEN / "allreduce" / "torus_2x2_message.csv", d / "runs.csv")
    main_argv = ["sweep", "import-jsonl", str(STORES[0]), "--store", str(d / "runs.sqlite")]
    try:
        main(main_argv)
    except SystemExit as exc:
        assert exc.code in (0, None)
    return {"CSV": str(d / "runs.csv"), "STORE": str(d / "runs.sqlite")}


def _fuzz_flag(monkeypatch, capsys, tmp_path, files, name, flag, value):
    head, _, stop = FLAG_COMMANDS[name]
    with monkeypatch.context() as m:
        m.chdir(tmp_path)  # default output paths land here
        if stop is not None:
            _stop(m, *stop)
        if name == "rtl regress":  # making the stimulus of --seeds N random schedules is work too (N up to 2**32)
            import hw_models.rtl.regress as regress

            m.setattr(regress, "random_episodes", lambda params, seeds, **kw: [])
        argv = [files.get(a, a) for a in head] + [flag, value]
        if name == "sweep export" and flag not in ("--csv", "--parquet"):
            argv += ["--csv", str(tmp_path / "o.csv")]
        _command(argv, capsys)


@FEW
@given(case=FLAG_CASES, value=RTL_PLOT_TEXT)
def test_every_rtl_plot_report_export_flag_works_or_is_one_error_line(monkeypatch, capsys, tmp_path_factory,
                                                                     flag_files, case, value):
    _fuzz_flag(monkeypatch, capsys, tmp_path_factory.mktemp("fl"), flag_files, *case, value)


@pytest.mark.slow
@MANY
@given(case=FLAG_CASES, value=RTL_PLOT_TEXT)
def test_every_rtl_plot_report_export_flag_works_or_is_one_error_line_many(monkeypatch, capsys, tmp_path_factory,
                                                                          flag_files, case, value):
    _fuzz_flag(monkeypatch, capsys, tmp_path_factory.mktemp("fl"), flag_files, *case, value)


@pytest.mark.parametrize("which,field,value", [(0, "num_nodes", 0), (1, "workload", []), (1, "config", None)])
def test_a_checksummed_record_of_wrong_values_is_skipped_and_counted(capsys, tmp_path, which, field, value):
    """What the fuzzing found: a record whose checksum holds but whose values do not read back
    (a 0-node all-reduce, a train record's workload a list, its config null) is skipped and
    counted, the other records imported."""
    lines = STORES[which].read_text().splitlines()
    rec = json.loads(lines[0])
    rec[field] = value
    lines[0] = _checksummed(rec)
    f = tmp_path / "r.jsonl"
    f.write_text("\n".join(lines) + "\n")
    assert _command(["sweep", "import-jsonl", str(f), "--store", str(tmp_path / "s.sqlite")], capsys) == "ok"
    from hw_models.sweep.store import SweepStore

    with SweepStore(tmp_path / "s.sqlite", create=False) as s:
        n = sum(c for _, _, c in s.counts())
    whole = STORES[which].read_text().splitlines()
    assert n in (len(whole) - 1, len(whole)), n  # the damaged one skipped, or kept as an imported row


# --- the reproducer JSON of rtl replay ------------------------------------------------------

def _reproducer_doc() -> dict:
    """A reproducer as `rtl regress` writes it: small parameters, the inputs of a whole run
    (loads, start, sends, receives, errors injected)."""
    from hw_models.rtl.lockstep import ModelStepper
    from hw_models.rtl.stimulus import Environment, random_episode
    from nic.scheduler import SchedulerParams

    params = SchedulerParams(depth=6, nis=3, flow_w=3, node_w=3, step_w=4, len_w=6, cnt_w=3, err_w=8, tmo_w=6)
    env, model, trace = Environment(params, [random_episode(s, params, errors=s == 1) for s in range(2)]), \
        ModelStepper(params), []
    while (inp := env.next_inputs(model.outputs())) is not None:
        trace.append(env.trace[-1])
        model.edge(inp)
    return json.loads(json.dumps({"what": "nic_scheduler model-vs-RTL mismatch reproducer (docs/rtl.md)",
                                  "params": params.__dict__, "trace_start_cycle": 0, "trace": trace}, default=int))


_REPRODUCER = _reproducer_doc()
_INPUTS = ["rst", "clear", "load_valid", "load_addr", "load_op", "load_flow", "load_peer", "load_step", "load_len",
           "load_dep_op", "load_dep_count", "rd_en", "rd_addr", "start", "send_ready", "ni_done", "load_src",
           "load_src_chk", "timeout_cycles", "recv", "recv_valid"]
HUGE = st.one_of(st.integers(-(2**70), 2**70), st.sampled_from([2**63, 2**64, -1, 1 << 4096, 10**18]),
                 st.floats(allow_nan=True, allow_infinity=True))
REPRO = dict(
    where=st.sampled_from(["doc", "params", "trace", "input", "recv", "none"]),
    key=st.one_of(st.sampled_from(sorted(_REPRODUCER["params"]) + _INPUTS + ["params", "trace", "what"]),
                  st.text(max_size=6)),
    value=st.one_of(VALUES, HUGE, st.lists(st.one_of(st.none(), st.lists(HUGE, max_size=4)), max_size=5)),
    at=st.integers(0, 10**6), drop=st.booleans(), **DAMAGE)


def _fuzz_reproducer(monkeypatch, capsys, tmp_path, where, key, value, at, drop, flips, cut):
    from hw_models.rtl import regress as R
    from hw_models.rtl.lockstep import run_model
    from hw_models.rtl.stimulus import TraceSource

    doc = json.loads(json.dumps(_REPRODUCER))
    trace = doc["trace"]
    target = {"doc": doc, "params": doc["params"], "trace": trace[at % len(trace)], "input": trace[at % len(trace)],
              "none": None}.get(where)
    if where == "recv":
        target, key = next((t for t in trace[at % len(trace):] + trace if "recv" in t), trace[0]), "recv"
    if where == "trace":
        if drop:
            del trace[at % len(trace):]  # a trace cut short, or emptied
        else:
            trace.insert(at % (len(trace) + 1), value)  # an input vector of any type
    elif target is not None:
        if drop:
            target.pop(key, None)
        else:
            target[key] = value
    try:
        text = json.dumps(doc, allow_nan=True)
    except (TypeError, ValueError):
        return
    f = tmp_path / "mismatch.json"
    f.write_bytes(_damage(text.encode(), flips, cut))
    with monkeypatch.context() as m:
        m.setattr(R, "build", lambda *a, **k: (_ for _ in ()).throw(_Stop()))
        err = _command(["rtl", "replay", str(f), "--out", str(tmp_path / "o")], capsys)
    if err != "ok":
        assert f"reproducer {f}: " in err, err
        return
    params, trace = R.load_reproducer(f)  # accepted: the replay's model side runs the trace to its end
    cycles, _outs = run_model(params, TraceSource(trace))
    assert cycles == len(trace)


@FEW
@given(**REPRO)
def test_a_damaged_rtl_reproducer_replays_or_is_one_error_line(monkeypatch, capsys, tmp_path_factory, **kw):
    _fuzz_reproducer(monkeypatch, capsys, tmp_path_factory.mktemp("rp"), **kw)


@pytest.mark.slow
@MANY
@given(**REPRO)
def test_a_damaged_rtl_reproducer_replays_or_is_one_error_line_many(monkeypatch, capsys, tmp_path_factory, **kw):
    _fuzz_reproducer(monkeypatch, capsys, tmp_path_factory.mktemp("rp"), **kw)
