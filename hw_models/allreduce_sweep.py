"""The all-reduce comparison: algorithms x sizes x NIC designs on one topology, resumable.

Each finished run is appended to a JSONL ResultStore under a key that names everything
that determines it, so an interrupted sweep resumes where it stopped and a changed
parameter never reuses a stale result. A record the store cannot vouch for (damaged,
checksum mismatch, another store format; :mod:`hw_models.store`) is not reused: its run is
simulated again and appended. :func:`table_rows` adds speedup over ring and the share of
the bandwidth bound (:func:`hw_models.report.charts.bandwidth_chart` draws them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hw_models.store import ResultStore
from nic.allreduce import NicConfig, simulate_allreduce
from nic.message_sim import MODEL_VERSION as MESSAGE_MODEL_VERSION
from nic.collectives import SCHEDULE_VERSION, build
from nic.result import AllreduceResult
from noc.flit import MODEL_VERSION as FLIT_MODEL_VERSION
from noc.topology import Topology


@dataclass(frozen=True)
class Job:
    algorithm: str
    size_bytes: int
    nic: str  # design
    model: str


def run_key(topology: Topology, job: Job, nic: NicConfig, network, seed: int,
            schedule_options: dict | None = None) -> str:
    """Everything that determines a run, hashed into a short stable key: the topology, the
    job, the NIC and router configs, the seed, the schedule builder's options and version,
    and the model's version."""
    net = network.key_fields() if network is not None else None
    fields = {"topology": topology.to_dict(), "job": job.__dict__, "nic": nic.key_fields(),
              "network": net, "seed": seed, "schedule_version": SCHEDULE_VERSION}
    if schedule_options:
        fields["schedule_options"] = schedule_options
    if job.model == "message":  # results of an older model are not reused
        fields["message_model_version"] = MESSAGE_MODEL_VERSION
    elif job.model == "flit":
        fields["flit_model_version"] = FLIT_MODEL_VERSION
    blob = json.dumps(fields, sort_keys=True)
    return f"{topology.name}|{job.algorithm}|{job.nic}|{job.model}|{job.size_bytes}|" + hashlib.sha1(blob.encode()).hexdigest()[:12]


def run_sweep(topology: Topology, jobs: Iterable[Job], *, nic: NicConfig, network=None, store: ResultStore | None,
              seed: int = 0, on_result: Callable[[Job, AllreduceResult, bool], None] | None = None,
              schedule_options: dict | None = None, fresh: bool = False,
              schedules: dict | None = None) -> list[AllreduceResult]:
    """Run ``jobs`` (skipping those already in ``store``, unless ``fresh``: then they run
    again and their new records supersede the old); ``on_result(job, result, reused)``
    after each. A job listed twice runs once. ``schedules`` maps algorithms to schedules
    already built with ``schedule_options`` (the rest are built here)."""
    done = {r["key"]: r for r in store.records()} if store is not None and not fresh else {}
    this_run: dict[str, AllreduceResult] = {}
    schedules = dict(schedules or {})
    out = []
    for job in jobs:
        cfg = nic.model_copy(update={"design": job.nic})
        options = (schedule_options or {}).get(job.algorithm, {})
        key = run_key(topology, job, cfg, network, seed, options)
        if key in this_run:
            res, reused = this_run[key], True
        elif key in done and (res := _stored_result(done[key])) is not None:
            reused = True
        else:
            if job.algorithm not in schedules:
                schedules[job.algorithm] = build(topology, job.algorithm, **options)
            res = simulate_allreduce(topology, schedules[job.algorithm], cfg, network, job.size_bytes,
                                     model=job.model, seed=seed)
            if store is not None:
                store.append(key, json.loads(res.to_json()))
            reused = False
        this_run[key] = res
        out.append(res)
        if on_result is not None:
            on_result(job, res, reused)
    return out


def _stored_result(record: dict) -> AllreduceResult | None:
    """The result a store record holds, or None when the record is damaged (the run is then
    simulated again and its new record supersedes this one)."""
    try:
        return AllreduceResult.from_json(json.dumps({k: v for k, v in record.items() if k != "key"}))
    except (KeyError, TypeError, ValueError):
        return None


def table_rows(results: list[AllreduceResult]) -> list[dict]:
    """CSV/table rows with speedup over ring (same size, NIC and model) and % of the bound."""
    ring = {(r.size_bytes, r.nic, r.model): r.total_cycles for r in results if r.algorithm == "ring"}
    rows = []
    for r in results:
        row = r.row()
        base = ring.get((r.size_bytes, r.nic, r.model))
        row["speedup_vs_ring"] = round(base / r.total_cycles, 4) if base and r.total_cycles > 0 else ""
        row["bound_percent"] = round(100 * r.bound_fraction, 2)
        rows.append(row)
    return rows


def calibration_rows(results: list[AllreduceResult]) -> list[dict]:
    """Message level against flit level for every (size, algorithm, NIC) run by both:
    both cycle counts and the message model's deviation in per cent (negative: faster)."""
    by_model: dict[str, dict[tuple, AllreduceResult]] = {"message": {}, "flit": {}}
    for r in results:
        by_model[r.model][(r.size_bytes, r.algorithm, r.nic)] = r
    rows = []
    for key, f in by_model["flit"].items():
        m = by_model["message"].get(key)
        if m is None:
            continue
        rows.append({"size_bytes": key[0], "algorithm": key[1], "nic": key[2], "flit_cycles": f.total_cycles,
                     "message_cycles": m.total_cycles,
                     "message_vs_flit_percent": round(100 * (m.total_cycles / f.total_cycles - 1), 3)})
    return rows
