"""All-reduce runs as a Chrome trace-event JSON (opens in Perfetto UI and chrome://tracing).

One process per run (algorithm, size, NIC design, model). In it, a track per NI that sends
and a track per link that carries a transfer; each transfer is one complete slice
(``"ph": "X"``) on its sending NI's track, from when it started to when it arrived, and one
on the track of every link of its route, over the same interval (the models time a transfer
end to end, not hop by hop). Slices that overlap on one NI or link (a NI starts its next
transfer before the previous one arrived) go to further lanes of that track (``NI 3``,
``NI 3 #2``), since trace viewers want the slices of one thread nested. Times are in
microseconds at the run's clock; every slice's ``args`` also hold the cycles, step, flow,
op, nodes and bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nic.collectives.schedule import OP_NAMES



@dataclass(frozen=True)
class TracedRun:
    """One run to trace: what to call it and what :func:`nic.allreduce.simulate_allreduce` takes."""

    label: str
    schedule: object
    nic: object
    network: object
    size_bytes: int
    model: str
    seed: int


def _lanes(start: np.ndarray, end: np.ndarray, members: list[int]) -> dict[int, int]:
    """Greedy interval colouring: a lane per transfer so that one lane's slices never overlap."""
    lane_end: list[float] = []
    out = {}
    for i in sorted(members, key=lambda i: (start[i], i)):
        for k, e in enumerate(lane_end):
            if e <= start[i]:
                lane_end[k] = end[i]
                out[i] = k
                break
        else:
            out[i] = len(lane_end)
            lane_end.append(end[i])
    return out


def run_events(topology, schedule, times: dict, pid: int, label: str, clock_ghz: float) -> list[dict]:
    """The trace events of one run whose per-transfer ``times`` (simulate_allreduce's
    ``times_out``) are given."""
    us = 1.0 / (clock_ghz * 1e3)  # microseconds per cycle
    start, arrive = times["start_cycles"], times["arrive_cycles"]
    src_ep, links = times["src_ep"], times["links"]
    ev: list[dict] = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}},
                      {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}]
    tracks: dict[tuple[str, int], list[int]] = {}
    for i in range(len(start)):
        tracks.setdefault(("ni", int(src_ep[i])), []).append(i)
        for lk in links[i]:
            if lk >= 0:
                tracks.setdefault(("link", int(lk)), []).append(i)
    names = {}
    slices = []
    for (kind, ident), members in sorted(tracks.items()):
        lanes = _lanes(start, arrive, members)
        for i, lane in lanes.items():
            base = ident if kind == "ni" else topology.num_endpoints + ident
            tid = base + lane * (topology.num_endpoints + topology.num_links)
            if tid not in names:
                if kind == "ni":
                    name = f"NI {ident} (node {int(topology.endpoint_node[ident])})"
                else:
                    name = f"link {ident}: {int(topology.link_src[ident])}->{int(topology.link_dst[ident])}"
                names[tid] = name + (f" #{lane + 1}" if lane else "")
            op = OP_NAMES[int(schedule.op[i])]
            slices.append({
                "ph": "X", "pid": pid, "tid": tid, "ts": float(start[i]) * us,
                "dur": float(arrive[i] - start[i]) * us, "cat": f"{kind},{op}",
                "name": f"{op} flow {int(schedule.flow[i])} {int(schedule.src[i])}->{int(schedule.dst[i])}",
                "args": {"transfer": i, "step": int(schedule.step[i]), "flow": int(schedule.flow[i]), "op": op,
                         "src_node": int(schedule.src[i]), "dst_node": int(schedule.dst[i]),
                         "bytes": int(times["payload_bytes"][i]), "start_cycles": float(start[i]),
                         "sent_cycles": float(times["sent_cycles"][i]), "arrive_cycles": float(arrive[i])}})
    for tid, name in sorted(names.items()):
        ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        ev.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
    return ev + slices


def trace_document(topology, runs: list[TracedRun]) -> tuple[dict, list]:
    """The trace of ``runs`` (each simulated again, with its per-transfer times) and their
    results."""
    from nic.allreduce import simulate_allreduce

    events: list[dict] = []
    results = []
    for pid, r in enumerate(runs, start=1):
        times: dict = {}
        res = simulate_allreduce(topology, r.schedule, r.nic, r.network, r.size_bytes, model=r.model, seed=r.seed,
                                 times_out=times)
        results.append(res)
        events += run_events(topology, r.schedule, times, pid, r.label, res.clock_ghz)
    doc = {"traceEvents": events, "displayTimeUnit": "ns",
           "otherData": {"generator": "hw-models allreduce --trace", "topology": topology.name,
                         "time_unit": "microseconds at each run's clock (args: cycles)"}}
    return doc, results


def write_trace(path: str | Path, topology, runs: list[TracedRun], *, named: str = "--trace") -> tuple[Path, list]:
    """Write the trace of ``runs`` to a new file ``path`` (never replacing one)."""
    from hw_models.report.writer import write_trace_json

    doc, results = trace_document(topology, runs)
    return write_trace_json(doc, path, named=named), results
