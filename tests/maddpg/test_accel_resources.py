"""Resources per design and the fit check: a design at the limit fits, one short does not,
and the error names the resource."""

from __future__ import annotations

import dataclasses

import pytest

from maddpg.accel import resources as R
from maddpg.accel.config import AccelConfig, spread_workload
from maddpg.accel.interconnect import build_topology
from maddpg.accel.model import simulate_update
from maddpg.accel.parts import PARTS, RESOURCES, Part, get_part
from noc.base.errors import HwModelsError


def _exact_part(res: R.Resources) -> Part:
    return Part("exact", "a part with exactly what the design needs", res.dsp, res.bram36, max(res.uram, 1), res.lut,
                res.ff, 10.0)


def test_dsp_count_is_macs_times_cost_per_mac():
    w = spread_workload(3)
    for q, per_mac in ((0, 5), (16, 1), (24, 2), (32, 4)):  # DSP48E2: 27 x 18 multipliers
        cfg = AccelConfig(pe=3, lanes=5, actor_lanes=2, fixed_point_bits=q, fixed_point_frac_bits=8 if q else 0)
        macs = 3 * (3 * 5 + 3 * 2)  # three layers per network, critic 3x5 and actor 3x2 per layer
        res = R.estimate(cfg, w, PARTS["u250"])
        assert res.dsp == 3 * (macs * per_mac + 16 * 8)


@pytest.mark.parametrize("resource", RESOURCES)
def test_at_the_limit_fits_one_short_does_not(resource):
    w = spread_workload(3)
    cfg = AccelConfig(usable_fraction=1.0, minibatch_buffer="whole")
    topo = build_topology("mesh", 3, cfg)
    res = R.estimate(cfg, w, PARTS["u250"], topo)
    part = _exact_part(res)
    R.check_fits(R.estimate(cfg, w, part, topo), part, cfg)  # exactly at the limit: fits
    short = dataclasses.replace(part, **{resource: part.amount(resource) - 1})
    with pytest.raises(R.DesignDoesNotFit, match=R.NAMES[resource].split(" (")[0]) as info:
        R.check_fits(R.estimate(cfg, w, short, topo), short, cfg)
    assert info.value.resource == resource
    assert isinstance(info.value, HwModelsError)


def test_on_u250_the_widest_engine_that_fits_and_one_lane_more():
    """Grow the critic's lanes until the design stops fitting: the last one fits, the next one's
    error names DSPs (fp32 MACs cost 5 each), and simulate_update(check=True) agrees."""
    w, part = spread_workload(3), get_part("u250")
    lanes = 1
    while True:
        cfg = AccelConfig(pe=1, lanes=lanes + 1, actor_lanes=4)
        if R.overfull(R.estimate(cfg, w, part, build_topology("ring", 3, cfg)), part, cfg):
            break
        lanes += 1
    ok = AccelConfig(pe=1, lanes=lanes, actor_lanes=4)
    simulate_update(w, ok, part, check=True)
    with pytest.raises(R.DesignDoesNotFit, match="DSP slices") as info:
        simulate_update(w, AccelConfig(pe=1, lanes=lanes + 1, actor_lanes=4), part, check=True)
    assert "does not fit on u250" in str(info.value)
    limit = int(part.dsp * 0.8)
    assert R.estimate(ok, w, part).dsp <= limit < R.estimate(AccelConfig(pe=1, lanes=lanes + 1, actor_lanes=4), w, part).dsp


def test_buffers_hold_the_networks_and_the_minibatch():
    w = spread_workload(3, batch=128)
    cfg = AccelConfig()
    bufs = {b.name: b.words for b in R.engine_buffers(cfg, w, 0, "whole")}
    n_c = 69 * 64 + 64 + 64 * 64 + 64 + 64 + 1
    assert sum(v for k, v in bufs.items() if k.startswith("critic layer") and k.endswith("weights")) == n_c
    assert sum(v for k, v in bufs.items() if k.startswith("critic layer") and k.endswith("Adam moments")) == 2 * n_c
    assert bufs["minibatch critic inputs [x, a] and [x', a']"] == 2 * 128 * 69
    tiles = {b.name: b.words for b in R.engine_buffers(cfg, w, 0, "tiles")}
    assert tiles["minibatch critic inputs [x, a] and [x', a']"] == 2 * 2 * 64 * 69


def test_unknown_part():
    with pytest.raises(HwModelsError, match="allowed: u250, u55c, zcu104"):
        get_part("vu19p")
