"""Synthesis baselines (hw_models.rtl.baseline, tests/rtl/data/synth_baseline.json): a
configuration's area may not grow by more than 10 % nor its Fmax drop by more than 5 %
against the baseline stored for the installed tool versions; a change that does so on
purpose records a new baseline (bench/rtl_synth_baseline.py) in the same commit.

Default suite: the small scheduler and the int32 adder (seconds of generic synthesis);
``-m slow``: the rest of the generic flow and the ECP5 place and route (minutes each).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hw_models.rtl import baseline as B
from hw_models.rtl.pnr import place_and_route, sources_for

PATH = Path(__file__).parent / "data" / "synth_baseline.json"
STORED = B.load(PATH)


def _stored(key: str, name: str) -> dict:
    if key not in STORED or name not in STORED[key]:
        pytest.skip(f"no baseline of {name!r} for {key}: record one with .venv/bin/python bench/rtl_synth_baseline.py"
                    f"{' --ecp5' if 'nextpnr' in key else ''}")
    return STORED[key][name]


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if fast else pytest.mark.slow)
                                  for n, fast in B.GENERIC_CONFIGS.items()])
def test_generic_synthesis_is_within_its_baseline(name):
    from hw_models.rtl.pnr import yosys_version

    stored = _stored(B.generic_key(yosys_version()), name)
    assert B.regressions(stored, B.measure_generic(name)) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", B.ECP5_CONFIGS)
def test_place_and_route_is_within_its_baseline(name, tmp_path):
    from hw_models.rtl.pnr import tool_versions

    stored = _stored(B.ecp5_key(*tool_versions()), name)
    job = B.ecp5_job(name)
    row = place_and_route(job, sources_for(job.top), work_dir=tmp_path)
    assert B.regressions(stored, B.figures(row, B.ECP5_KEYS)) == []


def test_the_check_allows_10_percent_more_area_and_5_percent_less_fmax_and_no_more():
    base = {"cells": 1000, "lut_levels": 20, "fmax_mhz": 100.0, "ebr": 0}
    assert B.regressions(base, {"cells": 1100, "lut_levels": 22, "fmax_mhz": 95.0, "ebr": 0}) == []
    assert B.regressions(base, {"cells": 900, "lut_levels": 10, "fmax_mhz": 150.0, "ebr": 0}) == []
    worse = B.regressions(base, {"cells": 1101, "lut_levels": 23, "fmax_mhz": 94.9, "ebr": 1})
    assert [w.split()[0] for w in worse] == ["cells", "lut_levels", "fmax_mhz", "ebr"]
    assert "from 1000 to 1101" in worse[0] and "from 100.0 to 94.9 MHz" in worse[2]
    # a figure the measurement lacks does not pass by being left out
    assert B.regressions(base, {"cells": 1000, "lut_levels": 20, "ebr": 0}) == ["fmax_mhz: in the baseline (100.0) "
                                                                               "but not measured"]


def test_every_configuration_has_a_stored_baseline():
    generic = [k for k in STORED if "nextpnr" not in k]
    ecp5 = [k for k in STORED if "nextpnr" in k]
    assert generic and ecp5, sorted(STORED)
    assert any(set(B.GENERIC_CONFIGS) <= set(STORED[k]) for k in generic)
    assert any(set(B.ECP5_CONFIGS) <= set(STORED[k]) for k in ecp5)
    for entries in STORED.values():
        for figs in entries.values():
            assert all(v >= 0 for v in figs.values()) and figs
