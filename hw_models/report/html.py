"""One self-contained HTML page of results: every preset figure the rows allow (embedded
as base64 PNG), and a table of the rows (the columns that vary, and the main metrics).

The page needs no other file and no network. A small inline script counts, once the page
has loaded, the figures that decoded (``naturalWidth > 0``) and writes the count into the
page (``<body data-figures-loaded="N">``), so a headless browser's DOM dump shows whether
every figure rendered.
"""

from __future__ import annotations

import base64
import html

from hw_models.report.figures import PRESETS, preset_spec, render, series
from hw_models.report.writer import format_number
from noc.base.errors import HwModelsError

_MAIN_COLUMNS = ("kind", "topology", "algorithm", "nic", "model", "size_bytes", "total_cycles", "busbw_gbps",
                 "speedup_vs_ring", "bound_fraction", "offered_flits", "accepted_flits", "latency_avg", "workload",
                 "policy", "reduction_vs_ring_percent")

_SCRIPT = """<script>
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.figure');
  var ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  document.body.setAttribute('data-figures-loaded', String(ok));
  document.body.setAttribute('data-figures-total', String(imgs.length));
});
</script>"""

_STYLE = """<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #eee; }
img.figure { max-width: 100%; display: block; margin: 1em 0; }
</style>"""


def figures(rows: list[dict]) -> list[tuple[str, str, bytes, list[str]]]:
    """(preset, title, PNG bytes, notes) of every preset the rows hold data for; the notes
    say which rows the figure leaves out (NaN or infinite values)."""
    out = []
    for name in PRESETS:
        notes: list[str] = []
        try:
            prows, spec = preset_spec(name, rows)
            lines = series(prows, spec, notes)
        except HwModelsError:
            continue  # the results hold nothing for this figure (or it would be ambiguous)
        out.append((name, spec.title, render(spec, lines, "png"), notes))
    return out


def table_columns(rows: list[dict]) -> list[str]:
    have = {k for r in rows for k in r}
    cols = [c for c in _MAIN_COLUMNS if c in have]
    varying = [k for k in sorted(have) if k.startswith("config.") and k not in cols
               and len({str(r.get(k)) for r in rows}) > 1]
    return cols + varying


def page(rows: list[dict], source: str) -> tuple[str, int]:
    """The HTML text and the number of figures in it."""
    figs = figures(rows)
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             f"<title>hw-models report: {html.escape(source)}</title>", _STYLE, _SCRIPT, "</head><body>",
             f"<h1>hw-models report</h1><p>Results: <code>{html.escape(source)}</code>, {len(rows)} row(s).</p>"]
    if not figs:
        parts.append("<p>No preset figure fits these results (they hold no all-reduce, load-point or training "
                     "rows); see the table.</p>")
    for name, title, png, notes in figs:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(f"<img class=\"figure\" id=\"figure-{name}\" alt=\"{html.escape(title)}\" "
                     f"src=\"data:image/png;base64,{data}\">")
        parts.extend(f"<p class=\"note\">{html.escape(note)}</p>" for note in notes)
    cols = table_columns(rows)
    parts.append(f"<h2>Rows</h2><table><thead><tr>{''.join(f'<th>{html.escape(c)}</th>' for c in cols)}</tr></thead>"
                 "<tbody>")
    for r in rows:
        parts.append("<tr>" + "".join(f"<td>{html.escape(format_number(r.get(c)))}</td>" for c in cols) + "</tr>")
    parts.append("</tbody></table></body></html>")
    return "\n".join(parts) + "\n", len(figs)
