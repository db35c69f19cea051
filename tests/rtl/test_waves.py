"""One waveform file per simulator run: a second run into the same directory keeps the first's."""

from __future__ import annotations

import pytest

from rtl_matrix import HDL_PARAMS, SIMS
from hw_models.rtl.regress import random_episodes, regress


def _sim_id(sim):
    return sim.values[0] if hasattr(sim, "values") else sim


@pytest.mark.parametrize("sim", [s if _sim_id(s) == "icarus" else pytest.param(s, marks=pytest.mark.slow)
                                 for s in SIMS])
def test_every_run_writes_its_own_waveform_file(sim, tmp_path):
    params = HDL_PARAMS["d6n3narrow"]
    eps = random_episodes(params, range(2))
    seen = []
    for k in range(2):
        r = regress(_sim_id(sim), params, eps, out_dir=tmp_path, waves=True)
        assert r.ok, r.mismatch_text or r.error
        waves = sorted(tmp_path.glob("waves-*"))
        assert len(waves) == k + 1 and all(w.stat().st_size > 0 for w in waves)
        seen.append({w.name: w.stat().st_mtime_ns for w in waves})
    first = next(iter(seen[0]))
    assert seen[1][first] == seen[0][first]  # the first run's file was not rewritten
