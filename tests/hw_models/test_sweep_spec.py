"""The sweep file: axes, ranges, zips, sampling and the errors of a bad file."""

from __future__ import annotations

import itertools

import pytest

from hw_models.sweep.spec import expand, load_sweep, point_config
from noc.base.errors import ConfigError


def _spec(tmp_path, text, seed=None):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return load_sweep(p, seed)


def test_crossed_axes_are_the_cartesian_product_in_file_order(tmp_path):
    spec = _spec(tmp_path, """
kind = "allreduce"
[base]
network.topology = "torus:4x4"
[axes]
"allreduce.algorithm" = ["ring", "multitree"]
allreduce.size = "32KiB..128KiB"
"nic.design" = ["codesigned", "baseline"]
""")
    pts = expand(spec)
    want = [{"allreduce.algorithm": a, "allreduce.size": s, "nic.design": d}
            for a, s, d in itertools.product(["ring", "multitree"], [32768, 65536, 131072], ["codesigned", "baseline"])]
    assert pts == want and spec.grid_points == 12
    assert point_config(spec.base, pts[0]) == {"network": {"topology": "torus:4x4"},
                                               "allreduce": {"algorithm": "ring", "size": 32768},
                                               "nic": {"design": "codesigned"}}


def test_ranges_by_step_and_by_factor(tmp_path):
    spec = _spec(tmp_path, """
kind = "noc_load"
[axes]
"traffic.rate_packets" = {from = 0.0, to = 0.3, step = 0.1}
"router.num_vcs" = {from = 1, to = 10, step = 3}
"router.vc_depth_flits" = {from = 2, to = 40, times = 2}
""")
    axes = {a.keys[0]: [v[0] for v in a.values] for a in spec.axes}
    assert axes == {"traffic.rate_packets": [0.0, 0.1, 0.2, 0.3], "router.num_vcs": [1, 4, 7, 10],
                    "router.vc_depth_flits": [2, 4, 8, 16, 32]}
    assert all(isinstance(v, int) for v in axes["router.num_vcs"] + axes["router.vc_depth_flits"])


def test_zipped_keys_advance_together_and_cross_the_other_axes(tmp_path):
    spec = _spec(tmp_path, """
kind = "allreduce"
[axes]
"allreduce.size" = [4096, 8192]
[zip.nets]
"network.topology" = ["torus:2x2", "torus:4x4", "mesh:4x4"]
"nic.packet_bytes" = [256, 512, 1024]
""")
    pts = expand(spec)
    assert len(pts) == 6
    pairs = {(p["network.topology"], p["nic.packet_bytes"]) for p in pts}
    assert pairs == {("torus:2x2", 256), ("torus:4x4", 512), ("mesh:4x4", 1024)}


def test_same_seed_same_sample_and_another_seed_another(tmp_path):
    text = """
kind = "noc_load"
[axes]
"traffic.rate_packets" = {low = 0.01, high = 0.5}
"router.num_vcs" = [2, 4, 8]
[sample]
method = "latin_hypercube"
points = 30
seed = 7
"""
    a = expand(_spec(tmp_path, text))
    b = expand(_spec(tmp_path, text))
    c = expand(_spec(tmp_path, text, seed=8))  # --seed replaces the file's
    assert a == b and a != c and len(a) == 30


def test_latin_hypercube_puts_one_point_in_each_stratum(tmp_path):
    n = 40
    spec = _spec(tmp_path, f"""
kind = "noc_load"
[axes]
"traffic.rate_packets" = {{low = 0.1, high = 0.5}}
"router.num_vcs" = [1, 2, 3, 4]
"traffic.seed" = {{low = 1, high = 1000, log = true, integer = true}}
[sample]
method = "latin_hypercube"
points = {n}
seed = 3
""")
    pts = expand(spec)
    strata = sorted(int((p["traffic.rate_packets"] - 0.1) / 0.4 * n) for p in pts)
    assert strata == list(range(n))  # the defining property: each of n equal strata holds one point
    counts = {v: sum(p["router.num_vcs"] == v for p in pts) for v in (1, 2, 3, 4)}
    assert counts == {1: 10, 2: 10, 3: 10, 4: 10}  # a discrete axis: each value n / 4 times
    seeds = [p["traffic.seed"] for p in pts]
    assert all(isinstance(s, int) and 1 <= s <= 1000 for s in seeds)


def test_random_sample_of_a_grid_is_distinct_grid_points(tmp_path):
    spec = _spec(tmp_path, """
kind = "allreduce"
[axes]
"allreduce.size" = {from = 4096, to = 409600, step = 4096}
"allreduce.algorithm" = ["ring", "multitree", "dbtree"]
[sample]
method = "random"
points = 50
""")
    pts = expand(spec)
    assert spec.sample.seed == 1  # the default, printed by the command
    keys = {(p["allreduce.size"], p["allreduce.algorithm"]) for p in pts}
    assert len(keys) == 50
    assert all(s % 4096 == 0 and 4096 <= s <= 409600 for s, _ in keys)


@pytest.mark.parametrize("text, message", [
    ('kind = "x"', "kind = 'x': not a sweep kind; choose one of allreduce, maddpg_accel, noc_load, rtl_synth"),
    ('[axes]\na = [1]', "missing key 'kind'"),
    ('kind = "allreduce"\nbogus = 1', "unknown key 'bogus' (allowed: kind, description, store, base, axes, zip, sample)"),
    ('kind = "allreduce"\n[axes]\n"allreduce.size" = []', "[axes] allreduce.size = []: an empty list"),
    ('kind = "allreduce"\n[axes]\n"allreduce.size" = "1KiB..x"', "[axes] allreduce.size = '1KiB..x': size 'x' is not a size"),
    ('kind = "allreduce"\n[axes]\n"a.b" = {from = 5, to = 1, step = 1}', "the range runs backwards"),
    ('kind = "allreduce"\n[axes]\n"a.b" = {from = 1, to = 5, step = 0}', "[axes] a.b.step = 0: must be positive"),
    ('kind = "allreduce"\n[axes]\n"a.b" = {low = 1, high = 5}', "an interval has values only when sampled"),
    ('kind = "allreduce"\n[base]\na.b = 1\n[axes]\n"a.b" = [1, 2]', "key 'a.b' is set in [base] already"),
    ('kind = "allreduce"\n[axes]\n"a" = [1]\n"a.b" = [2]', "key 'a.b' overlaps key 'a' of [axes] a"),
    ('kind = "allreduce"\n[axes]\n"a.b" = [1]\n[sample]\nmethod = "sobol"\npoints = 3',
     "sample.method = 'sobol': choose one of 'random', 'latin_hypercube'"),
    ('kind = "allreduce"\n[axes]\n"a.b" = [1, 2]\n[sample]\nmethod = "random"\npoints = 3',
     "[sample] points = 3: more than the 2 points of the whole grid"),
    ('kind = "allreduce"\n[axes]\n"a.b" = [1]\n[sample]\nmethod = "random"\npoints = 1\nseed = -1',
     "sample.seed = -1: a seed must be an integer in [0, 4294967295]"),
    ('kind = "allreduce"\n[axes]\n"a" = {from = 1, to = 200000, step = 1}', "at most 100,000 per axis"),
    # ranges whose arithmetic overflows a float (an OverflowError before)
    ('kind = "allreduce"\n[axes]\n"a" = {from = 1, to = 1e300, step = 1e-300}', "too many values; at most 100,000"),
    ('kind = "allreduce"\n[axes]\n"a" = {from = -1e308, to = 1e308, step = 1}', "too many values; at most 100,000"),
    ('kind = "allreduce"\n[axes]\n"a" = {from = 1e300, to = 1.7976931348623157e308, times = 1e9}', "overflow a floating-point"),
])
def test_a_bad_sweep_file_names_the_key_the_value_and_what_is_allowed(tmp_path, text, message):
    with pytest.raises(ConfigError) as info:
        _spec(tmp_path, text)
    assert message in str(info.value) and str(info.value).startswith(str(tmp_path / "s.toml"))


def test_a_seed_for_a_file_that_samples_nothing_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="--seed 5: .* samples nothing"):
        _spec(tmp_path, 'kind = "allreduce"\n[axes]\n"a.b" = [1]', seed=5)
