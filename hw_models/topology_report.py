"""What ``hw-models topology describe`` shows and writes of a topology: its properties and its
routing's deadlock check as table rows, the topology as JSON, and a picture.

* :func:`writable_file` — a file named by a flag, checked before any work;
* :func:`describe_rows` — (label, value) rows of the properties table;
* :func:`write_json`, :func:`write_png` — the files, each error naming its flag.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional

from noc.base.errors import HwModelsError

# matplotlib draws a link in ~0.25 ms: 20,000 links take ~5 s, and a picture of more is a blur
MAX_PNG_LINKS = 20_000

LABELS = {
    "family": "family",
    "endpoints": "endpoints (NIs)",
    "routers": "routers / switches",
    "nodes": "nodes (collective participants)",
    "nis_per_node": "NIs per node (MultiTree kary - 1)",
    "links": "directed links (incl. NI links)",
    "router_links": "directed router-to-router links",
    "degree_min": "router degree (min)",
    "degree_max": "router degree (max)",
    "diameter": "diameter (router hops)",
    "average_hops": "average hops (distinct NI pairs)",
    "bisection_links": "bisection links (one direction)",
    "bisection_bytes_per_cycle": "bisection bandwidth (B/cycle, one direction)",
}


def writable_file(flag: str, raw: Optional[str], suffix: Optional[str] = None) -> Optional[Path]:
    """The file ``flag`` names, checked before any work: a non-empty name (ending in ``suffix``
    when given) that is not a directory, in a directory we can write to (missing parent
    directories are created when the file is written)."""
    if raw is None:
        return None
    if not raw.strip():
        raise HwModelsError(f"{flag}: empty file name")
    if raw.endswith(("/", os.sep)):
        raise HwModelsError(f"{flag} {raw}: names a directory; give a file name")
    path = Path(raw)
    if path.is_dir():
        raise HwModelsError(f"{flag} {raw}: is a directory; give a file name")
    if suffix is not None and path.suffix.lower() != suffix:
        raise HwModelsError(f"{flag} {raw}: the file name must end in {suffix}")
    anc = path.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise HwModelsError(f"{flag} {raw}: {anc} is not a directory")
    if path.exists() and not os.access(path, os.W_OK):
        raise HwModelsError(f"{flag} {raw}: not writable")
    try:  # creating a file is the one sure test (root passes os.access even on /proc)
        with tempfile.NamedTemporaryFile(dir=anc, prefix=".hw-models-", suffix=".probe"):
            pass
    except OSError as exc:
        raise HwModelsError(f"{flag} {raw}: cannot create a file in {anc} ({exc.strerror or exc})") from None
    return path


def check_png_size(t, flag_value: str) -> None:
    """A picture of ``t`` is refused when it has too many links to draw."""
    if t.num_links > MAX_PNG_LINKS:
        raise HwModelsError(f"--png {flag_value}: {t.name} has {t.num_links:,} directed links, too many to draw "
                            f"(limit {MAX_PNG_LINKS:,}, about 5 s)")


def describe_rows(t, routes, report) -> list[tuple[str, str]]:
    """The properties table's rows: the topology's summary, its links, its routing's deadlock
    check and what MultiTree will see of it."""
    summary = t.summary()
    rows = [(label, str(summary[key])) for key, label in LABELS.items()]
    rows.append(("link bandwidth (B/cycle)", f"{float(t.link_bytes_per_cycle.min()):g}"))
    rows.append(("link latency (cycles)", str(int(t.link_latency_cycles.min()))))
    rows.append((f"routing ({routes.algorithm}, {routes.num_vc_classes} VC class(es))",
                 "deadlock-free" if report.deadlock_free else "CAN DEADLOCK"))
    if t.is_direct:
        # MultiTree grows one tree per node over one-hop neighbours; report what it will see.
        rows.append(("MultiTree: trees / edges per tree", f"{t.num_nodes} / {t.num_nodes - 1}"))
        rows.append(("MultiTree: messages per node per step", str(t.nis_per_node)))
    else:
        rows.append(("MultiTree: trees / edges per tree", f"{t.num_nodes} / {t.num_nodes - 1} (paths through switches)"))
    return rows


def write_json(t, path: Path, flag_value: str) -> Path:
    from noc.base.files import replace_atomically

    text = t.to_json()
    try:
        replace_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    except OSError as exc:
        raise HwModelsError(f"--json {flag_value}: {exc.strerror or exc}") from None
    return path


def write_png(t, path: Path, flag_value: str) -> Path:
    from hw_models.plots import draw_topology

    try:
        return draw_topology(t, path)  # the .png suffix makes matplotlib write exactly this file
    except OSError as exc:
        raise HwModelsError(f"--png {flag_value}: {exc.strerror or exc}") from None
