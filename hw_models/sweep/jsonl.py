"""The JSONL result stores of the earlier releases' ``hw-models allreduce``, ``noc
sweep-load`` and ``train``, copied into a sweep store: this module is the one reader of
that format (one JSON record per line, each with its ``key``, ``store_format`` 2 and a
``sha256`` checksum of its canonical JSON).

:func:`import_jsonl` reads the valid records (a line that is not a record, of another store
format or whose checksum does not match is skipped and counted; the last valid record of a
key counts) and writes each into a sweep store:

* as **a finished point** of its kind, under the key the sweep pipeline gives that point
  (:func:`hw_models.sweep.store.point_key`), when the record's old key can be recomputed
  from a full point config and matches: a command or sweep asking for that point then
  reuses it. A ``train`` record's point is rebuilt from the record itself (its config
  source, topology, NIC, model, batch, device, engine, iterations, seed, workload, algorithm
  and policy); an ``allreduce`` record's from the config it was run with (``config``: the
  experiment TOML's data, default the defaults) with the record's topology, NIC, seed,
  algorithm, size and model; a ``noc sweep-load`` record's from the ``hw-models noc`` TOML
  it was run with (``config``: its network, channels, router and traffic, with the record's
  pattern and load);
* otherwise as **an imported row** keyed by the hash of its kind and old key (importing a
  file twice adds nothing), its config what the record tells about the run, its old key
  in ``alias``: kept for export, not matched to new points.

An imported row's wall time is unknown (NULL), its code version "unknown (imported from a
JSONL store)".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from hw_models.sweep.store import PointRecord, SweepStore, canonical_json, point_key
from noc.base.errors import ConfigError, HwModelsError
from noc.base.files import why_missing

IMPORTED_CODE_VERSION = "unknown (imported from a JSONL store)"
STORE_FORMAT = 2  # the last format of those stores: every record with store_format and sha256
_WHAT = "a JSONL result store of hw-models allreduce, noc sweep-load or train"


@dataclass
class ImportReport:
    path: str
    imported: dict = field(default_factory=dict)  # kind -> rows added
    matched: int = 0  # of them, finished points under their own keys (reused by commands and sweeps)
    already: int = 0  # records whose rows were in the store already
    skipped: dict = field(default_factory=dict)  # why -> records

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def imported_key(kind: str, old_key: str) -> str:
    text = canonical_json({"kind": kind, "jsonl_key": old_key})
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _checksum(record: dict) -> str:
    body = {k: v for k, v in record.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
                          ).hexdigest()


def read_records(path: Path, report: ImportReport) -> dict[str, dict]:
    """The valid records of JSONL store ``path`` by key (the last of a key), without the
    store's own fields; what is skipped is counted in ``report``."""
    latest: dict[str, dict] = {}
    with path.open("rb") as f:
        for raw in f:
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                report.skip("damaged line (not UTF-8 JSON, e.g. a torn write)")
                continue
            if not isinstance(record, dict) or not isinstance(record.get("key"), str):
                report.skip("not a record")
            elif record.get("store_format") != STORE_FORMAT:
                report.skip(f"store format {record.get('store_format', 1)}, not {STORE_FORMAT} (no checksum to check)")
            elif record.get("sha256") != _checksum(record):
                report.skip("checksum mismatch (edited or damaged)")
            else:
                latest[record["key"]] = {k: v for k, v in record.items() if k not in ("sha256", "store_format")}
    return latest


def _kind_of(record: dict) -> str | None:
    if "algorithm" in record and "total_cycles" in record:
        return "allreduce"
    if "latency_avg" in record and "stable" in record and "link_utilisation" in record:
        return "noc_load"
    if "iteration_s" in record and "policy" in record and "workload" in record:
        return "training"
    return None


# --- imported rows: what a record tells ------------------------------------------------------

def _allreduce_result(record: dict):
    """The :class:`nic.result.AllreduceResult` an ``allreduce`` record holds."""
    from nic.result import AllreduceResult

    return AllreduceResult.from_json(json.dumps({k: v for k, v in record.items() if k != "key"}))


def _experiment_point(data: dict | None, record: dict) -> dict:
    """Experiment config data ``data`` (its ``allreduce`` section left out) with the record's
    topology (the NI count and routing left to it), NIC design and seed."""
    data = data or {}
    out = {k: v for k, v in data.items() if k not in ("allreduce", "network", "nic", "run")}
    net = {k: v for k, v in (data.get("network") or {}).items() if k not in ("nis_per_node", "routing")}
    return {**out, "network": {**net, "topology": record["topology"]},
            "nic": {**(data.get("nic") or {}), "design": record["nic"]},
            "run": {**(data.get("run") or {}), "seed": record["seed"]}}


def _allreduce_row(record: dict) -> tuple[dict, dict]:
    from hw_models.sweep.kinds.allreduce import metrics

    res = _allreduce_result(record)
    config = {"topology": res.topology, "algorithm": res.algorithm, "nic": res.nic, "model": res.model,
              "size_bytes": res.size_bytes, "seed": res.seed, "num_nodes": res.num_nodes,
              "nis_per_node": res.nis_per_node, "clock_ghz": res.clock_ghz}
    return config, metrics(res)


def _noc_row(record: dict) -> tuple[dict, dict]:
    from hw_models.sweep.kinds.noc_load import metrics, stats_from_metrics

    parts = record["key"].split("|")
    if len(parts) != 4:
        raise ValueError(f"key {record['key']!r} is not TOPOLOGY|PATTERN|RATE|HASH")
    config = {"topology": parts[0], "pattern": parts[1], "rate_packets": float(parts[2])}
    return config, metrics(stats_from_metrics(record))


_TRAIN_CONFIG = ("topology", "nic", "model", "batch", "device", "engine", "iterations", "config", "seed")


def _train_row(record: dict) -> tuple[dict, dict]:
    config = {k: record[k] for k in ("workload", "algorithm", "policy", *_TRAIN_CONFIG)}
    return config, {k: v for k, v in record.items() if k != "key"}


# --- finished points: a record's point rebuilt and its old key checked ---------------------------

def _allreduce_point(record: dict, config: dict | None) -> tuple[dict, dict] | None:
    """(the allreduce point of ``record`` on the experiment data ``config``, its metrics), or
    None when the record's old key is not that point's."""
    from hw_models.sweep.kinds.allreduce import metrics, objects, validate
    from hw_models.sweep.kinds import model_version
    from nic.collectives import schedule_versions

    data = {**_experiment_point(config, record),
            "allreduce": {"algorithm": record["algorithm"], "size": record["size_bytes"], "model": record["model"]}}
    try:
        resolved = validate(data, "imported record")
    except (ConfigError, HwModelsError):
        return None
    t, _, nic, router = objects(resolved)
    job = {"algorithm": resolved["algorithm"], "size_bytes": resolved["size_bytes"], "nic": record["nic"],
           "model": resolved["model"]}
    fields = {"topology": t.to_dict(), "job": job, "nic": nic.key_fields(), "network": router.key_fields(),
              f"{resolved['model']}_model_version": model_version(f"{resolved['model']}_model")}
    if resolved["schedule_options"]:
        fields["schedule_options"] = {resolved["algorithm"]: resolved["schedule_options"]}
    digests = {hashlib.sha1(json.dumps({**fields, "seed": resolved["seed"], "schedule_version": v},
                                       sort_keys=True).encode()).hexdigest()[:12]
               for v in schedule_versions(resolved["algorithm"])}
    if record["key"].rsplit("|", 1)[-1] not in digests:
        return None
    return resolved, metrics(_allreduce_result(record))


def _noc_point(record: dict, noc_config: dict | None) -> tuple[dict, dict] | None:
    """(the noc_load point of ``record`` from the TOML data ``noc_config``, its metrics), or
    None when there is no config or the record's old key is not that point's."""
    from hw_models.sweep.kinds.noc_load import metrics, objects, stats_from_metrics, validate
    from hw_models.sweep.kinds import model_version

    if noc_config is None:
        return None
    topology, pattern, rate, digest = record["key"].split("|")
    traffic = {**(noc_config.get("traffic") or {}), "pattern": pattern, "rate_packets": float(rate)}
    point = {**{k: noc_config[k] for k in ("network", "channels", "router") if k in noc_config}, "traffic": traffic}
    try:
        resolved = validate(point, "imported record")
    except (ConfigError, HwModelsError):
        return None
    fields = {"topology": objects(resolved)[0].to_dict(), "router": resolved["router"],
              "traffic": resolved["traffic"], "flit_model_version": model_version("flit_model")}
    if hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16] != digest:
        return None
    return resolved, metrics(stats_from_metrics(record))


def _train_points(records: dict[str, dict]) -> dict[str, tuple[dict, dict]]:
    """The training points of the ``train`` records whose old keys they reproduce, by old
    key: (resolved point, metrics). The records of one command share the hash in their key,
    which covers the layer costs of all its workloads."""
    groups: dict[str, list[tuple[str, dict]]] = {}
    for old, r in records.items():  # a record of other types than train writes is not a point: a row, or skipped
        if all(isinstance(r.get(k), str) for k in ("workload", "policy", "algorithm", "config")):
            groups.setdefault(old.rsplit("|", 1)[-1], []).append((old, r))
    out = {}
    for digest, members in groups.items():
        workloads = list(dict.fromkeys(r["workload"] for _, r in members))
        ring = {(r["workload"], r["policy"]): r["iteration_s"] for _, r in members if r["algorithm"] == "ring"}
        for old, r in members:
            try:
                found = _train_point(r, workloads, digest, ring.get((r["workload"], r["policy"])))
            except (ConfigError, HwModelsError, KeyError, TypeError, ValueError, AttributeError, ArithmeticError):
                found = None
            if found is not None:
                out[old] = found
    return out


def _train_point(r: dict, workloads: list[str], digest: str, ring_s: float | None) -> tuple[dict, dict] | None:
    from hw_models.config import experiment_data
    from hw_models.experiment import resolve_experiment
    from hw_models.config import ExperimentConfig
    from hw_models.sweep.kinds import model_version
    from hw_models.sweep.kinds.training import validate
    from hw_models.training import endtoend as e2e
    from hw_models.training.compute import get_device
    from noc.base.config import validate as validate_model
    from nic.collectives import schedule_versions

    if ring_s is None:  # the ring run beside it: the point's baseline
        return None
    source = r["config"]
    preset = source.removeprefix("preset ") if source.startswith("preset ") else None
    data, _ = experiment_data(None if source == "defaults" or preset else Path(source), preset)
    name = r["policy"].split(" ")[0]
    if e2e.make_policies(name)[0].label != r["policy"]:
        return None  # a policy with options: its options are not in the record
    point = {**_experiment_point(data, r),
             "training": {"workload": r["workload"], "algorithm": r["algorithm"], "policy": name,
                          **{k: r[k] for k in ("batch", "device", "engine", "model", "iterations")}}}
    resolved = validate(point, "imported record")
    cfg = validate_model(resolved["config"], ExperimentConfig, source="imported record")
    exp = resolve_experiment(cfg, "imported record", designs=[r["nic"]], algorithms=[resolved["algorithm"]])
    works = e2e.resolve_workloads(",".join(workloads))
    costs = e2e.workload_costs(works, r["batch"], get_device(r["device"]), r["engine"])

    fields = {k: r[k] for k in _TRAIN_CONFIG}
    blobs = (json.dumps({**fields, "topology": exp.topology.to_dict(), "nic": exp.nics[r["nic"]].key_fields(),
                         "network": exp.router.key_fields(), "schedule_version": v,
                         "model_version": model_version(f"{r['model']}_model"),
                         "costs": {w: [[x.name, x.fwd_s, x.bwd_s, x.grad_bytes] for x in layers]
                                   for w, layers in costs.items()}}, sort_keys=True, default=str)
             for v in schedule_versions(resolved["algorithm"]))
    if digest not in {hashlib.sha1(b.encode()).hexdigest()[:12] for b in blobs}:
        return None
    m = {k: r[k] for k in e2e.TrainRun.__dataclass_fields__ if k not in ("workload", "algorithm", "policy")}
    m.update(policy_label=r["policy"], ring_iteration_s=ring_s,
             reduction_vs_ring_pct=e2e.reduction_percent(r["iteration_s"], ring_s))
    return resolved, m


# --- the import -------------------------------------------------------------------------------------

def check_jsonl(path: str | Path) -> Path:
    """``path`` is a file whose first line is a result-store record (a JSON object with a
    string ``key``); a :class:`noc.base.errors.HwModelsError` saying what it is otherwise."""
    p = Path(path)
    if not p.is_file():
        raise HwModelsError(f"{p}: {'is a directory' if p.is_dir() else why_missing(p)} ({_WHAT})")
    try:
        with p.open("rb") as f:
            first = f.readline()
        record = json.loads(first) if first.strip() else None
    except OSError as exc:
        raise HwModelsError(f"{p}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, RecursionError):
        record = None
    if not first.strip():
        raise HwModelsError(f"{p}: empty (not {_WHAT})")
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        raise HwModelsError(f"{p}: not {_WHAT} (its first line is not a JSON record with a key)")
    return p


def import_jsonl(path: str | Path, store: SweepStore, config: dict | None = None) -> ImportReport:
    """Copy the valid records of JSONL store ``path`` into ``store`` (module docstring);
    ``config``: the data of the TOML its runs were made with (an experiment config for
    all-reduces, a ``hw-models noc`` config for load points)."""
    from hw_models.sweep.kinds import get_kind

    p = check_jsonl(path)
    report = ImportReport(str(p))
    records = read_records(p, report)
    kinds = {old: _kind_of(r) for old, r in records.items()}
    trains = _train_points({old: r for old, r in records.items() if kinds[old] == "training"})
    rows = {"allreduce": _allreduce_row, "noc_load": _noc_row, "training": _train_row}
    for old, record in records.items():
        kind = kinds[old]
        if kind is None:
            report.skip("not an all-reduce run, a load point or a training run")
            continue
        try:
            found = trains.get(old) if kind == "training" else _noc_point(record, config) \
                if kind == "noc_load" else _allreduce_point(record, config)
            point, metrics = found if found is not None else rows[kind](record)
        except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:  # e.g. num_nodes 0
            report.skip(f"a {kind} record that does not read back ({type(exc).__name__})")
            continue
        versions = get_kind(kind).model_versions() if found is not None else {}
        key = point_key(kind, point, versions) if found is not None else imported_key(kind, old)
        if store.put(PointRecord(key, kind, "done", point, versions, metrics, None, None, IMPORTED_CODE_VERSION,
                                 f"jsonl {p}", alias=old)):
            report.imported[kind] = report.imported.get(kind, 0) + 1
            report.matched += found is not None
        else:
            report.already += 1
    return report
