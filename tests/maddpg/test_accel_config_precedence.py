"""``maddpg accel --config FILE``: a flag given overrides the file's key, a flag left out never
does (the file's interconnect, level, semantics and PCIe link survive); a bad interconnect in
the file is refused naming the file."""

from __future__ import annotations

import pytest

from hw_models.maddpg_accel_run import DEFAULT_INTERCONNECTS, AccelRequest, resolve
from noc.base.errors import HwModelsError

FILE = 'interconnect = "torus:2x2"\nlevel = "flit"\nsemantics = "sequential"\npcie_gen = 4\npcie_lanes = 8\n'


def _req(tmp_path, config, **flags):
    args = dict(agents="4", interconnect=None, part="u250", env="simple_spread", batch=64, fixed_point=None,
                engine="auto", level=None, semantics=None, pcie=None, config=config, cpu="none",
                cpu_cache=tmp_path / "cpu", seed=0, search=False, out=tmp_path / "out")
    args.update(flags)
    return AccelRequest(**args)


def test_the_file_keys_survive_when_no_flag_is_given(tmp_path):
    cfg = tmp_path / "a.toml"
    cfg.write_text(FILE)
    s = resolve(_req(tmp_path, cfg))
    assert s.interconnects == ["torus:2x2"]
    assert (s.base.level, s.base.semantics, s.base.pcie_gen, s.base.pcie_lanes) == ("flit", "sequential", 4, 8)


def test_a_flag_given_overrides_the_file_key(tmp_path):
    cfg = tmp_path / "a.toml"
    cfg.write_text(FILE)
    s = resolve(_req(tmp_path, cfg, interconnect="ring", level="message", semantics="parallel", pcie="gen3x16"))
    assert s.interconnects == ["ring"]
    assert (s.base.level, s.base.semantics, s.base.pcie_gen, s.base.pcie_lanes) == ("message", "parallel", 3, 16)


def test_without_file_or_flags_the_defaults_apply(tmp_path):
    s = resolve(_req(tmp_path, None))
    assert s.interconnects == DEFAULT_INTERCONNECTS.split(",")
    assert (s.base.level, s.base.semantics, s.base.pcie_gen, s.base.pcie_lanes) == ("message", "parallel", 3, 16)


def test_a_bad_interconnect_in_the_file_is_named(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('interconnect = "torus:²"\n')
    with pytest.raises(HwModelsError, match=r"bad.toml: interconnect 'torus:²'"):
        resolve(_req(tmp_path, cfg))
