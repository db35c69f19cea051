"""Communication costs for the training timeline: the alpha-beta formulas, and the NIC-backed
cost against direct simulations of the NIC model."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from hw_models.training.comm import AlphaBeta, NicComm, collective_s
from nic.allreduce import NicConfig, simulate_allreduce
from nic.collectives import build
from noc.base.errors import ConfigError
from noc.topology import parse_spec

KIB = 1 << 10


# ---- alpha-beta ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 8, 16])
@pytest.mark.parametrize("nbytes", [1, 1000, 1 << 20])
def test_ring_formula_exact(n, nbytes):
    alpha, bw = Fraction(7, 10**6), Fraction(5 * 10**9)
    m = AlphaBeta(float(alpha), float(bw), n)
    expected = 2 * Fraction(n - 1, n) * nbytes / bw + 2 * (n - 1) * alpha
    assert m.allreduce_s(nbytes) == pytest.approx(float(expected), rel=1e-12)
    assert m.reduce_scatter_s(nbytes) == pytest.approx(float(expected / 2), rel=1e-12)
    assert m.all_gather_s(nbytes) == pytest.approx(float(expected / 2), rel=1e-12)


def test_halving_doubling_formula():
    m = AlphaBeta(1e-6, 1e9, 16, "halving_doubling")
    assert m.allreduce_s(1 << 20) == pytest.approx(2 * 4 * 1e-6 + 2 * 15 / 16 * (1 << 20) / 1e9, rel=1e-12)
    with pytest.raises(ConfigError, match="num_workers = 12.*power of two"):
        AlphaBeta(1e-6, 1e9, 12, "halving_doubling")


def test_alpha_beta_edges():
    assert AlphaBeta(1e-3, 1e9, 1).allreduce_s(1 << 20) == 0.0  # one worker: nothing to exchange
    assert AlphaBeta(1e-3, 1e9, 8).allreduce_s(0) == 0.0
    free = AlphaBeta(0.0, math.inf, 8)
    assert free.allreduce_s(1 << 30) == 0.0
    assert collective_s(free, "reduce_scatter", 123) == 0.0


@pytest.mark.parametrize("kwargs, key", [
    ({"latency_s": -1.0, "bytes_per_s": 1e9, "num_workers": 4}, "latency_s = -1.0"),
    ({"latency_s": math.nan, "bytes_per_s": 1e9, "num_workers": 4}, "latency_s = nan"),
    ({"latency_s": 0.0, "bytes_per_s": 0.0, "num_workers": 4}, "bytes_per_s = 0.0"),
    ({"latency_s": 0.0, "bytes_per_s": 1e9, "num_workers": 0}, "num_workers = 0"),
    ({"latency_s": 0.0, "bytes_per_s": 1e9, "num_workers": 4, "algorithm": "tree"}, "algorithm = 'tree'"),
])
def test_alpha_beta_bad_input_names_the_key(kwargs, key):
    with pytest.raises(ConfigError, match=key.replace("(", r"\(")):
        AlphaBeta(**kwargs)


def test_collective_kind_checked():
    with pytest.raises(ConfigError, match="kind 'broadcast' is unknown"):
        collective_s(AlphaBeta(0.0, 1e9, 2), "broadcast", 10)


# ---- the NIC-backed cost ------------------------------------------------------------------


@pytest.fixture(scope="module")
def torus_ring():
    t = parse_spec("torus:4x4")
    return t, build(t, "ring")


@pytest.mark.parametrize("nbytes", [64 * KIB, 1 << 20])
def test_nic_cost_equals_direct_simulation(torus_ring, nbytes):
    t, s = torus_ring
    nic = NicConfig(clock_ghz=2.0)
    c = NicComm(t, s, nic)
    direct = simulate_allreduce(t, s, nic, None, nbytes)  # message level, 4x4 torus, ring
    assert c.allreduce_s(nbytes) == direct.seconds
    assert c.cycles("allreduce", nbytes) == direct.total_cycles
    assert direct.seconds == direct.total_cycles / 2e9  # the clock converts cycles


def test_nic_cost_rounds_to_whole_elements_per_flow(torus_ring):
    t, s = torus_ring  # 16 flows of 4-byte elements
    c = NicComm(t, s)
    assert c.sim_bytes(1) == 64
    assert c.sim_bytes(1001) == 1004
    assert c.allreduce_s(1001) == simulate_allreduce(t, s, NicConfig(), None, 1004).seconds
    assert c.allreduce_s(0) == 0.0


def test_nic_cost_cached_and_monotone(torus_ring):
    t, s = torus_ring
    c = NicComm(t, s)
    sizes = [64, 1000, 4 * KIB, 16 * KIB, 64 * KIB, 100_000, 256 * KIB, 1 << 20]
    costs = [c.allreduce_s(n) for n in sizes]
    assert all(a <= b for a, b in zip(costs, costs[1:])), costs
    assert c.cache_info()["allreduce"] == len(sizes)
    again = [c.allreduce_s(n) for n in sizes]
    assert again == costs and c.cache_info()["allreduce"] == len(sizes)  # no new simulation


def test_fixed_latency_added_per_collective(torus_ring):
    t, s = torus_ring
    base, lat = NicComm(t, s), NicComm(t, s, fixed_latency_s=5e-6)
    for kind in ("allreduce", "reduce_scatter", "all_gather"):
        assert collective_s(lat, kind, 8 * KIB) == pytest.approx(collective_s(base, kind, 8 * KIB) + 5e-6, rel=1e-12)


@pytest.mark.parametrize("algorithm", ["ring", "multitree"])
def test_reduce_scatter_and_all_gather_split_the_allreduce(algorithm):
    """The phases are simulated on their own (and the split is checked on exact integers when
    first used): together they take what the whole all-reduce takes, within 1 %, on
    schedules whose phases do not overlap; each takes about half."""
    t = parse_spec("torus:4x4")
    c = NicComm(t, build(t, algorithm))
    for nbytes in (16 * KIB, 1 << 20):
        ar, rs, ag = c.allreduce_s(nbytes), c.reduce_scatter_s(nbytes), c.all_gather_s(nbytes)
        assert rs + ag == pytest.approx(ar, rel=0.01)
        assert 0.4 * ar < rs < 0.6 * ar and 0.4 * ar < ag < 0.6 * ar


def test_phases_of_an_overlapping_schedule_cost_more():
    """The pipelined double binary tree overlaps its reduce and gather phases: run one after
    the other they take longer than the all-reduce."""
    t = parse_spec("torus:4x4")
    c = NicComm(t, build(t, "dbtree"))
    n = 256 * KIB
    assert c.reduce_scatter_s(n) + c.all_gather_s(n) > 1.02 * c.allreduce_s(n)


def test_from_config_takes_the_config_clock(tmp_path):
    slow, fast = tmp_path / "slow.toml", tmp_path / "fast.toml"
    slow.write_text('[network]\ntopology = "torus:4x4"\nclock_ghz = 1.0\n')
    fast.write_text('[network]\ntopology = "torus:4x4"\nclock_ghz = 2.0\n')
    a, b = NicComm.from_config(slow), NicComm.from_config(fast)
    assert a.num_workers == b.num_workers == 16
    assert a.cycles("allreduce", 1 << 20) == b.cycles("allreduce", 1 << 20)
    assert b.allreduce_s(1 << 20) == pytest.approx(a.allreduce_s(1 << 20) / 2, rel=1e-12)
    # the config's routers are the network: the same as a direct run with them
    direct = simulate_allreduce(a.topology, build(a.topology, "ring"), a.nic, a.network, 1 << 20)
    assert a.allreduce_s(1 << 20) == direct.seconds


def test_nic_bad_input():
    t = parse_spec("torus:4x4")
    with pytest.raises(ConfigError, match="model = 'booksim'"):
        NicComm(t, build(t, "ring"), model="booksim")
    with pytest.raises(ConfigError, match="fixed_latency_s = -1"):
        NicComm(t, build(t, "ring"), fixed_latency_s=-1)
    with pytest.raises(ConfigError, match="nbytes = -5"):
        NicComm(t, build(t, "ring")).allreduce_s(-5)


@pytest.mark.slow
def test_flit_level_phases_split_the_flit_allreduce():
    """Flit level: the all-reduce is the flit co-simulation's; the two phases share it in the
    message level's proportion (analytical split), so they add up to it exactly."""
    from noc.flit import FlitNetworkConfig

    t = parse_spec("torus:4x4")
    s = build(t, "ring")
    c = NicComm(t, s, None, FlitNetworkConfig(), model="flit")
    n = 4 * KIB
    assert c.allreduce_s(n) == simulate_allreduce(t, s, NicConfig(), FlitNetworkConfig(), n, model="flit").seconds
    assert c.reduce_scatter_s(n) + c.all_gather_s(n) == pytest.approx(c.allreduce_s(n), rel=1e-12)


def test_a_sized_algorithm_runs_the_schedule_built_for_each_bucket_size():
    """forest (a sized algorithm) on torus:4x4: a 32 KiB bucket runs the schedule the registry
    builds for 32 KiB (MultiTree's trees there) and an 8 MiB one the optimum forest; each
    costs what that schedule costs run on its own, and the one-schedule cost of before (no
    algorithm given) differs at 32 KiB."""
    t = parse_spec("torus:4x4")
    nic = NicConfig()
    large = build(t, "forest")
    comm = NicComm(t, large, nic, algorithm="tree_packing")  # an alias: the registry's name is used
    small = comm.schedule_for(32 << 10)
    assert comm.algorithm == "forest" and small.params["construction"] == "multitree"
    assert comm.schedule_for(8 << 20) == large
    alone = NicComm(t, build(t, "multitree"), nic)
    for kind in ("allreduce", "reduce_scatter", "all_gather"):
        assert comm.cycles(kind, 32 << 10) == alone.cycles(kind, 32 << 10)
    assert comm.cycles("allreduce", 32 << 10) == simulate_allreduce(t, small, nic, size_bytes=32 << 10).total_cycles
    assert comm.cycles("allreduce", 8 << 20) == simulate_allreduce(t, large, nic, size_bytes=8 << 20).total_cycles
    one_schedule = NicComm(t, large, nic)
    assert one_schedule.cycles("allreduce", 32 << 10) > comm.cycles("allreduce", 32 << 10)
    assert NicComm(t, build(t, "ring"), nic, algorithm="ring").algorithm is None  # not sized: one schedule


def test_train_gives_forest_its_bucket_sizes():
    """hw-models train's communication model of forest (hw_models.training.endtoend.nic_comms,
    the training sweep kind's) rebuilds it per size, with the command's NIC and routers."""
    from hw_models.config import ExperimentConfig
    from hw_models.experiment import resolve_experiment
    from hw_models.training import endtoend as e2e
    from noc.base.config import validate

    cfg = validate({"network": {"topology": "torus:4x4"}}, ExperimentConfig, source="test")
    exp = resolve_experiment(cfg, "test", algorithms=["forest"])
    comms = e2e.nic_comms(exp, cfg.nic.design)
    assert comms["forest"].algorithm == "forest" and comms["ring"].algorithm is None
    chosen = comms["forest"].schedule_for(32 << 10)
    assert chosen == build(exp.topology, "forest", size_bytes=32 << 10, nic=exp.nics[cfg.nic.design],
                           network=exp.router)
