"""Heterogeneous worker and link profiles against their definitions: the factors written out
by hand, the random walk redrawn from its own stream, and the two parts the parameter server
had before (``slow``, ``lognormal``) drawing exactly as they did."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hw_models.training.hetero import WALK_MAX, Profile
from noc.base.errors import ConfigError


def test_slow_const_and_schedule_multiply_as_written():
    p = Profile.parse("slow:1:3+const:1/2/1/4+at:10:0:5", 4)
    want = {0: [1, 2, 1, 12], 10: [5, 2, 1, 12]}
    for step, fs in want.items():
        assert [p.factor(i, 4, step) for i in range(4)] == pytest.approx(fs, rel=1e-15)
    assert p.factor(0, 4, 9) == 1.0 and p.label == "slow:1:3+const:1/2/1/4+at:10:0:5"
    assert p.link_factor(0, 3, 4, 0) == 12 and p.link_factor(0, 1, 4, 10) == 5
    assert p.link_factor(3, 3, 4, 0) == 1.0  # no link from a node to itself, however slow the node


def test_walk_is_its_own_seeded_stream_reflected_into_its_bounds():
    p = Profile.parse("walk:0.5", 3, seed=7)
    for node in range(3):
        rng = np.random.default_rng([7, 11, node])
        x = 0.0
        for step in range(1, 200):
            x += 0.5 * rng.standard_normal()
            while x < 0 or x > WALK_MAX:
                x = -x if x < 0 else 2 * WALK_MAX - x
            assert p.factor(node, 3, step) == pytest.approx(math.exp(x), rel=1e-12)
    assert p.factor(0, 3, 0) == 1.0
    assert Profile.parse("walk:0.5", 3, seed=8).factor(0, 3, 50) != p.factor(0, 3, 50)


def test_slow_and_lognormal_draw_as_the_former_stragglers():
    """The former ``Stragglers.sample``: the slow factor times exp(sigma z - sigma^2/2)."""
    p = Profile.parse("slow:2:3+lognormal:0.4", 5)
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    for k in range(50):
        i = k % 5
        f = 3.0 if i >= 3 else 1.0
        want = f * float(np.exp(0.4 * b.standard_normal() - 0.5 * 0.4 ** 2))
        assert p.sample(a, i, 5, k) == want


@pytest.mark.parametrize("spec, says", [
    ("fast:2", "'fast:2' is not one of none, slow:COUNT:FACTOR"),
    ("const:1/2", "const needs 1 or 4 factors"),
    ("at:3:9:2", "NODE in [0, 3]"),
    ("walk:5", "walk SIGMA must be in [0, 3]"),
    ("slow:9:2", "COUNT must be in [0, 4]"),
])
def test_bad_profiles_name_the_part(spec, says):
    with pytest.raises(ConfigError, match=None) as info:
        Profile.parse(spec, 4)
    assert says in str(info.value) and f"stragglers = {spec!r}" in str(info.value)


def test_event_simulations_reproduce_the_figures_stored_before_profiles():
    """``stragglers_before_profiles.json``: the parameter server's and EASGD's event
    simulations with ``slow``/``lognormal`` stragglers, run by the code before the profiles
    replaced its straggler class; the same calls now give the same figures exactly."""
    import json
    from pathlib import Path

    from hw_models.training.costs import LayerCost
    from hw_models.training.systems.hogwild import simulate_easgd
    from hw_models.training.systems.ps import Stragglers, simulate_ps
    from hw_models.training.systems.ps_layers import simulate_ps_layers

    stored = json.loads((Path(__file__).parent / "systems" / "stragglers_before_profiles.json").read_text())
    out = {}
    for spec in ("slow:2:3", "slow:1:4+lognormal:0.3", "lognormal:0.5"):
        s = Stragglers.parse(spec, 6)
        for mode in ("sync", "async", "ssp:1"):
            r = simulate_ps(6, 0.1, 0.03, 0.02, mode=mode, stragglers=s, gradients=120, seed=3)
            out[f"ps {spec} {mode}"] = [r.time_per_iteration_s(), r.mean_staleness(), [u.time_s for u in r.updates][-5:]]
            r = simulate_ps_layers([LayerCost("a", 0.01, 0.02, 4000), LayerCost("b", 0.02, 0.03, 8000)],
                                   [0.01, 0.02], [0.01, 0.015], 6, mode=mode, stragglers=s, gradients=120, seed=3)
            out[f"psl {spec} {mode}"] = [r.time_per_iteration_s(), r.mean_staleness(),
                                         [u.time_s for u in r.updates][-5:]]
        for v in ("sync", "async", "hogwild"):
            r = simulate_easgd(v, 2, 6, 0.1, exchange_s=0.01, update_s=0.002, allreduce_s=0.03, stragglers=s,
                               iterations=60, seed=3)
            out[f"easgd {spec} {v}"] = [r.time_per_iteration_s(), r.mean_staleness(), r.max_staleness()]
    # exactly, up to numpy's exp/log: its AVX-512 paths (Intel SVML) and its AVX2 paths round the
    # lognormal draws a unit in the last place apart, so the stored figures hold to 1e-12 relative
    def flat(d):
        return {f"{k} {i}": v for k, row in d.items() for i, v in enumerate(
            [x for item in row for x in (item if isinstance(item, list) else [item])])}

    got, want = flat(json.loads(json.dumps(out))), flat(stored)
    assert got.keys() == want.keys() and len(got) > 100
    assert got == pytest.approx(want, rel=1e-12, abs=0)


def test_baselines_pay_their_slow_links():
    """Link profiles in the parameter server's and EASGD's event simulations: constant equal
    workers, worker 3's link to the server on node 0 ``F`` times slower. Sync PS, by hand: all
    pushes arrive at ``c`` and are served one after another (``3 s + F s``), then the pulls
    (``3 p + F p``). Async EASGD with tau 1: the master serves one exchange at a time, so over
    a round of N exchanges it is busy ``(3 + F) x + N u`` -- the steady time per iteration when
    the master is the bottleneck. Links of factor 1 give the run without links exactly."""
    from hw_models.training.systems.hogwild import simulate_easgd
    from hw_models.training.systems.ps import simulate_ps

    n, c, push, pull, F = 4, 0.01, 0.4, 0.2, 5.0
    lk = Profile.parse(f"const:1/1/1/{F:g}", n)
    r = simulate_ps(n, c, push, pull, mode="sync", links=lk, gradients=40)
    per = (c + (3 + F) * push / n + (3 + F) * pull / n)
    assert r.updates[0].time_s == pytest.approx(c + (3 + F) * push / n, rel=1e-12)
    assert r.time_per_iteration_s() == pytest.approx(per, rel=1e-12)
    ones = Profile.parse("const:1", n)
    for mode in ("sync", "async"):
        a = simulate_ps(n, c, push, pull, mode=mode, links=ones, gradients=40)
        b = simulate_ps(n, c, push, pull, mode=mode, gradients=40)
        assert a.updates == b.updates
    x, u = 0.05, 0.001
    e = simulate_easgd("async", 1, n, c, exchange_s=x, update_s=u, allreduce_s=0.0, links=lk, iterations=40)
    assert e.time_per_iteration_s() == pytest.approx((3 + F) * x + n * u, rel=1e-6)
    e1 = simulate_easgd("async", 1, n, c, exchange_s=x, update_s=u, allreduce_s=0.0, links=ones, iterations=40)
    e0 = simulate_easgd("async", 1, n, c, exchange_s=x, update_s=u, allreduce_s=0.0, iterations=40)
    assert e1.time_per_iteration_s() == e0.time_per_iteration_s()
