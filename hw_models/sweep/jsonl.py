"""The JSONL result stores of ``hw-models noc sweep-load`` and of the earlier releases'
``hw-models allreduce`` (:class:`hw_models.store.ResultStore`), copied into a sweep store.

:func:`import_jsonl` copies their valid records (checksums checked; damaged lines are set
aside by :class:`~hw_models.store.ResultStore` as always) into a sweep store as finished
points of kind ``allreduce`` or ``noc_load``. A record's old key is kept as the row's
``alias``: a ``noc_load`` point whose legacy key is that key takes the record as its
result instead of running again (``hw-models allreduce`` runs into a sweep store now, so
an imported all-reduce record stays an imported row). Such a row is keyed by the hash of
its kind and old key, so importing a file twice adds nothing; its config holds what the
record tells about the run (the full config is only in the old key's hash), its wall time
is unknown (NULL).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hw_models.store import ResultStore
from hw_models.sweep.store import PointRecord, SweepStore, canonical_json

IMPORTED_CODE_VERSION = "unknown (imported from a JSONL store)"


@dataclass
class ImportReport:
    path: str
    imported: dict = field(default_factory=dict)  # kind -> rows added
    already: int = 0  # records whose rows were in the store already
    skipped: dict = field(default_factory=dict)  # why -> records


def imported_key(kind: str, old_key: str) -> str:
    text = canonical_json({"kind": kind, "jsonl_key": old_key})
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _allreduce(record: dict) -> tuple[dict, dict]:
    from hw_models.sweep.kinds.allreduce import metrics
    from nic.result import AllreduceResult

    res = AllreduceResult.from_json(json.dumps({k: v for k, v in record.items() if k != "key"}))
    config = {"topology": res.topology, "algorithm": res.algorithm, "nic": res.nic, "model": res.model,
              "size_bytes": res.size_bytes, "seed": res.seed, "num_nodes": res.num_nodes,
              "nis_per_node": res.nis_per_node, "clock_ghz": res.clock_ghz}
    return config, metrics(res)


def _noc_load(record: dict) -> tuple[dict, dict]:
    from hw_models.sweep.kinds.noc_load import metrics, stats_from_record

    parts = record["key"].split("|")
    if len(parts) != 4:
        raise ValueError(f"key {record['key']!r} is not TOPOLOGY|PATTERN|RATE|HASH")
    config = {"topology": parts[0], "pattern": parts[1], "rate_packets": float(parts[2])}
    return config, metrics(stats_from_record(record))


def _kind_of(record: dict) -> str | None:
    if "algorithm" in record and "total_cycles" in record:
        return "allreduce"
    if "latency_avg" in record and "stable" in record and "link_utilisation" in record:
        return "noc_load"
    return None


def check_jsonl(path: str | Path) -> Path:
    """``path`` is a file whose first line is a result-store record (a JSON object with a
    string ``key``); a :class:`noc.base.errors.HwModelsError` saying what it is otherwise. Checked
    before reading it as a store, which would set aside every line that is not a record."""
    from noc.base.errors import HwModelsError

    p = Path(path)
    what = "a JSONL result store of hw-models allreduce or hw-models noc sweep-load"
    if not p.is_file():
        raise HwModelsError(f"{p}: {'is a directory' if p.is_dir() else 'no such file'} ({what})")
    try:
        with p.open("rb") as f:
            first = f.readline()
        record = json.loads(first) if first.strip() else None
    except OSError as exc:
        raise HwModelsError(f"{p}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, RecursionError):
        record = None
    if not first.strip():
        raise HwModelsError(f"{p}: empty (not {what})")
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        raise HwModelsError(f"{p}: not {what} (its first line is not a JSON record with a key)")
    return p


def import_jsonl(path: str | Path, store: SweepStore, warn: Callable[[str], None] | None = None) -> ImportReport:
    """Copy the valid records of JSONL store ``path`` into ``store`` (module docstring)."""
    p = check_jsonl(path)
    report = ImportReport(str(p))
    latest: dict[str, dict] = {}
    for r in ResultStore(p, warn=warn).records():  # the last valid record of a key counts
        latest[r["key"]] = r
    for old_key, record in latest.items():
        kind = _kind_of(record)
        if kind is None:
            report.skipped["not an all-reduce run or a load point"] = report.skipped.get(
                "not an all-reduce run or a load point", 0) + 1
            continue
        try:
            config, metrics = (_allreduce if kind == "allreduce" else _noc_load)(record)
        except (KeyError, TypeError, ValueError) as exc:
            why = f"a {kind} record that does not read back ({type(exc).__name__})"
            report.skipped[why] = report.skipped.get(why, 0) + 1
            continue
        rec = PointRecord(imported_key(kind, old_key), kind, "done", config, {}, metrics, None, None,
                          IMPORTED_CODE_VERSION, f"jsonl {p}", alias=old_key)
        if store.put(rec):
            report.imported[kind] = report.imported.get(kind, 0) + 1
        else:
            report.already += 1
    return report
