"""``hw-models report``: one self-contained HTML page whose embedded figures are the preset
figures of the rows, and which a headless Chromium renders with every figure decoded."""

from __future__ import annotations

import base64
import re
import struct

import pytest

from cli_run import run
from hw_models.report.data import load_rows
from hw_models.report.figures import preset_spec, render, series
from report_data import CHROMIUM, figures_decoded, results, write_store

def _png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    return struct.unpack(">II", data[16:24])


def test_report_embeds_the_preset_figures_and_a_row_per_point(tmp_path, capsys):
    path = write_store(tmp_path / "s.sqlite")
    code, out, err = run(["report", str(path)], capsys)
    assert code == 0, err
    page = (tmp_path / "s_report.html").read_text()
    assert "src=\"http" not in page and "<link" not in page  # nothing outside the page
    images = dict(re.findall(r'id="figure-([a-z-]+)"[^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page))
    assert sorted(images) == ["bandwidth", "speedup"]  # all-reduce rows: no load or training figure
    rows = load_rows(path)
    for name, data in images.items():
        png = base64.b64decode(data)
        assert png == render(*_spec_and_lines(name, rows))  # the figure of those rows, byte for byte
        w, h = _png_size(png)
        assert w > 200 and h > 200
    assert page.count("<tr>") == 1 + len(results())  # header + one row per point
    code, _, err = run(["report", str(path)], capsys)
    assert code == 2 and "exists" in err


def _spec_and_lines(name, rows):
    prows, spec = preset_spec(name, rows)
    return spec, series(prows, spec)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium; "
                    ".ci/setup.sh installs it when run as root)")
def test_headless_chromium_renders_every_figure(tmp_path, capsys):
    path = write_store(tmp_path / "s.sqlite")
    assert run(["report", str(path), "--out", str(tmp_path / "r.html")], capsys)[0] == 0
    assert figures_decoded(tmp_path / "r.html", tmp_path / "profile") == (2, 2)  # both: naturalWidth > 0


def test_a_nan_or_infinite_value_is_left_out_of_its_figure_with_a_note_on_the_page(tmp_path):
    from hw_models.report.html import page

    rows = load_rows(write_store(tmp_path / "s.sqlite"))
    clean, _ = page(rows, "s.sqlite")
    rows[0]["busbw_gbps"], rows[1]["busbw_gbps"] = float("nan"), float("inf")
    text, count = page(rows, "s.sqlite")
    assert count >= 1 and re.search(r"left out [12] of \d+ row\(s\)", text) and "NaN or infinite" in text
    assert "left out" not in clean
