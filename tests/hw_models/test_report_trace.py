"""All-reduce traces: Chrome trace-event JSON whose slices are the run's transfers one for
one, at the times that give the run's own result (total cycles, step ends), on the NI and
link tracks the routes say; and the per-transfer times change no result."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_run import run
from hw_models.report.trace import TracedRun, trace_document
from nic.allreduce import NicConfig, simulate_allreduce
from nic.collectives import build
from noc.routing import route_pairs
from noc.topology import torus


@pytest.fixture(scope="module")
def traced():
    t = torus((4, 4))
    runs = [TracedRun(f"{a} 64KiB", build(t, a), NicConfig(), None, 65536, "message", 3) for a in ("ring", "multitree")]
    doc, results = trace_document(t, runs)
    return t, runs, json.loads(json.dumps(doc)), results


def test_times_out_changes_no_result():
    t = torus((4, 4))
    s = build(t, "dbtree")
    times: dict = {}
    with_times = simulate_allreduce(t, s, NicConfig(), None, 32768, seed=5, times_out=times)
    assert with_times.to_json() == simulate_allreduce(t, s, NicConfig(), None, 32768, seed=5).to_json()
    assert len(times["start_cycles"]) == s.num_transfers


def test_trace_is_chrome_trace_event_json(traced):
    _, runs, doc, _ = traced
    events = doc["traceEvents"]
    assert events and all(e["ph"] in ("X", "M") for e in events)
    for e in events:
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and isinstance(e["name"], str)
        if e["ph"] == "X":
            assert isinstance(e["ts"], float) and e["ts"] >= 0 and isinstance(e["dur"], float) and e["dur"] > 0
    names = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "process_name"}
    assert names == {(i + 1, r.label) for i, r in enumerate(runs)}
    # one thread's slices never overlap (the viewers want them nested)
    by_thread: dict = {}
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))
    named = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    assert set(by_thread) <= named


def test_slices_are_the_transfers_one_for_one_at_the_results_times(traced):
    t, runs, doc, results = traced
    for pid, (r, res) in enumerate(zip(runs, results), start=1):
        s = r.schedule
        xs = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == pid]
        ni = [e for e in xs if e["cat"].startswith("ni")]
        assert sorted(e["args"]["transfer"] for e in ni) == list(range(s.num_transfers))
        for e in ni:
            i = e["args"]["transfer"]
            assert (e["args"]["src_node"], e["args"]["dst_node"], e["args"]["flow"], e["args"]["step"]) == \
                (int(s.src[i]), int(s.dst[i]), int(s.flow[i]), int(s.step[i]))
            # 1 GHz: a microsecond is 1000 cycles
            assert e["ts"] * 1000 == pytest.approx(e["args"]["start_cycles"])
            assert (e["ts"] + e["dur"]) * 1000 == pytest.approx(e["args"]["arrive_cycles"])
        arrive = np.array([e["args"]["arrive_cycles"] for e in sorted(ni, key=lambda e: e["args"]["transfer"])])
        assert arrive.max() == res.total_cycles
        step_end = [arrive[s.step == k].max() for k in range(s.num_steps)]
        assert step_end == pytest.approx(res.step_end_cycles)
        # every transfer crosses, on the link tracks, the links of its route (injection and ejection included)
        routes = route_pairs(t, t.node_endpoints[s.src, 0], t.node_endpoints[s.dst, 0], "auto")
        per_transfer = np.bincount([e["args"]["transfer"] for e in xs if e["cat"].startswith("link")],
                                   minlength=s.num_transfers)
        assert per_transfer.tolist() == routes.length.tolist()


def test_allreduce_trace_option_writes_a_new_trace_and_refuses_an_existing_file(tmp_path, capsys):
    path = tmp_path / "t.json"
    argv = ["allreduce", "-t", "ring:4", "-a", "ring", "-s", "4KiB", "-o", str(tmp_path / "out"), "--trace", str(path)]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    doc = json.loads(path.read_text())
    ring = build(__import__("noc.topology", fromlist=["ring"]).ring(4), "ring")
    assert sum(e["ph"] == "X" and e["cat"].startswith("ni") for e in doc["traceEvents"]) == ring.num_transfers
    before = path.read_bytes()
    code, _, err = run(argv, capsys)
    assert code == 2 and "exists" in err and path.read_bytes() == before
