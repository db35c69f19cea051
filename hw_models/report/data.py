"""Result rows for figures and reports, from a sweep store (SQLite) or a CSV.

A sweep store's finished points become the flat rows ``hw-models sweep export`` writes
(``config.<key>``, ``metrics.<name>``), each also under its short names: a metric under its
own name (``busbw_gbps``), a config key under its path without ``config.``
(``network.topology``) and under its last part (``topology``) when no metric or other key
has that name. A CSV's cells that read as numbers become numbers.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

from noc.base.errors import HwModelsError
from noc.base.files import why_missing

# names a user may type for the columns the commands write
ALIASES = {"size": "size_bytes", "bus_gbps": "busbw_gbps", "alg_gbps": "algbw_gbps", "cycles": "total_cycles",
           "load": "offered_flits", "latency": "latency_avg"}

def _number(text):
    if not isinstance(text, str):
        return text
    if text in ("True", "False", "true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _short_names(row: dict) -> dict:
    out = dict(row)
    for k, v in row.items():
        if k.startswith("metrics."):
            out.setdefault(k[len("metrics."):], v)
    taken_last = Counter(k.rsplit(".", 1)[1] for k in row if k.startswith("config."))
    for k, v in row.items():
        if k.startswith("config."):
            out.setdefault(k[len("config."):], v)
            if taken_last[k.rsplit(".", 1)[1]] == 1:
                out.setdefault(k.rsplit(".", 1)[1], v)
    return out


def load_rows(path: str | Path, named: str = "RESULTS") -> list[dict]:
    """The rows of ``path``: a sweep store's finished points, or a CSV's rows."""
    p = Path(path)
    what = f"{named} {p}"
    if p.is_dir():
        raise HwModelsError(f"{what}: is a directory; give a sweep store (.sqlite) or a CSV file")
    if not p.exists():
        raise HwModelsError(f"{what}: {why_missing(p)}; give a sweep store (.sqlite) or a CSV file")
    from hw_models.sweep.store import SQLITE_HEADER, file_head

    if file_head(p, what) == SQLITE_HEADER:
        from hw_models.sweep.export import flat_rows
        from hw_models.sweep.store import SweepStore

        with SweepStore(p, create=False, named=named) as store:
            rows = [_short_names(r) for r in flat_rows(store, status="done")]
    elif p.suffix.lower() == ".csv":
        try:
            with p.open(newline="", encoding="utf-8") as f:
                rows = [{k: _number(v) for k, v in r.items() if k is not None} for r in csv.DictReader(f)]
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise HwModelsError(f"{what}: cannot read as CSV ({exc})") from None
    else:
        raise HwModelsError(f"{what}: neither a sweep store (SQLite) nor a .csv file")
    if not rows:
        raise HwModelsError(f"{what}: holds no result rows")
    return rows


def column(rows: list[dict], name: str, flag: str) -> str:
    """The column ``name`` (or its alias) names in ``rows``; an error listing the columns."""
    for candidate in (name, ALIASES.get(name, name), f"metrics.{name}", f"config.{name}"):
        if any(candidate in r for r in rows):
            return candidate
    names = sorted({k for r in rows for k in r if not k.startswith(("metrics.", "config."))})
    raise HwModelsError(f"{flag} {name!r}: no such column; the results have: {', '.join(names)} "
                        f"(aliases: {', '.join(f'{a}={c}' for a, c in ALIASES.items())})")


def filter_rows(rows: list[dict], where: list[str]) -> list[dict]:
    """The rows matching every ``KEY=VALUE`` of ``where`` (values compared as text)."""
    for item in where:
        if "=" not in item:
            raise HwModelsError(f"--where {item!r}: give KEY=VALUE, e.g. nic=codesigned")
        key, value = item.split("=", 1)
        col = column(rows, key.strip(), "--where")
        rows = [r for r in rows if str(r.get(col)) == value.strip()]
        if not rows:
            raise HwModelsError(f"--where {item!r}: no row matches")
    return rows
