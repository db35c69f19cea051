"""Engine cycles from the kernels' loop nests: hand formulas, monotonicity, and the engines'
work against the trainer's own list of an update's loop nests."""

from __future__ import annotations

import math

import numpy as np
import pytest

from maddpg import kernels as K
from maddpg.accel import engine as E
from maddpg.accel.config import AccelConfig, Workload, spread_workload


def test_fixed_point_forward_is_trips_over_the_array():
    """II 1 (one-cycle adds), the output loop on the lanes, the batch on the PEs: every
    other loop in sequence, plus multiplier and one adder stage."""
    cfg = AccelConfig(fixed_point_bits=16, fixed_point_frac_bits=10)
    for B, n_in, n_out, pe, lanes in [(1024, 69, 64, 4, 8), (64, 18, 64, 16, 64), (100, 64, 20, 3, 7)]:
        nest = K.dense_forward_nest(B, n_in, n_out)
        want = math.ceil(B / pe) * n_in * math.ceil(n_out / lanes) + 3 + 1
        assert E.nest_cycles(nest, cfg, pe, lanes) == want


def test_float_reduction_stretches_the_ii_without_enough_accumulators():
    """A mid-width forward pass (loops batch, in, out; out unrolled): the sum over ``in`` reuses
    an accumulator every ceil(out / lanes) iterations; the fp32 adder (5 cycles) needs 5."""
    cfg = AccelConfig()  # add latency 5, multiplier 4
    B, n_in, n_out = 64, 30, 16
    nest = K.dense_forward_nest(B, n_in, n_out)
    assert [lp.name for lp in nest.loops] == ["batch", "in", "out"]
    # one PE, 16 lanes: one pass over out, an accumulator reused every iteration -> II 5; with
    # 4 lanes (4 passes) II ceil(5/4) = 2 -> 2 x 4 = 8 cycles per (row, in); 3 lanes: 6 passes,
    # II 1 -> 6; 16 lanes are best used as 16 (II 5) -> 5 per (row, in): the model takes the best
    best = min(p * max(1, math.ceil(5 / p)) for p in range(1, 17))  # p = passes over out, lanes = ceil(16 / p)
    assert best == 5
    assert E.nest_cycles(nest, cfg, 1, 16) == B * n_in * best + 4 + 5
    assert E.nest_cycles(nest, cfg, 1, 3) == B * n_in * 6 + 4 + 5


def test_adder_tree_over_unrolled_reduction():
    """The narrow forward pass (a critic head, 64 -> 1) unrolls its reduction: a tree of
    ceil(log2 lanes) adder levels; fixed point, so II 1."""
    cfg = AccelConfig(fixed_point_bits=16, fixed_point_frac_bits=10)
    nest = K.dense_forward_nest(256, 64, 1)
    assert nest.loops[-1].name == "in" and nest.loops[-1].unroll > 1
    assert E.nest_cycles(nest, cfg, 8, 64) == 32 * 1 * 1 + 3 + 1 * (1 + 6)
    assert E.nest_cycles(nest, cfg, 8, 16) == 32 * 4 + 3 + 1 * (1 + 4)


def _tasks_total(w, cfg) -> np.ndarray:
    return np.array([list(E.engine_tasks(w, i, cfg).__dict__.values()) for i in range(w.n_agents)])


@pytest.mark.parametrize("fixed", [0, 16])
@pytest.mark.parametrize("pipelined, balance", [(True, "uniform"), (False, "uniform"), (True, "work")])
def test_more_macs_never_more_cycles(fixed, pipelined, balance):
    w = Workload((10, 26), (3, 5), batch=200)  # agents of different sizes, a batch that is not a tile multiple
    rng = np.random.default_rng(3)
    base = dict(fixed_point_bits=fixed, fixed_point_frac_bits=10 if fixed else 0, layer_pipelining=pipelined,
                layer_balance=balance)
    for _ in range(25):
        pe, lanes = int(rng.integers(1, 40)), int(rng.integers(1, 70))
        a = _tasks_total(w, AccelConfig(pe=pe, lanes=lanes, **base))
        for more in (dict(pe=pe + int(rng.integers(1, 9)), lanes=lanes), dict(pe=pe, lanes=lanes + int(rng.integers(1, 9)))):
            b = _tasks_total(w, AccelConfig(**more, **base))
            assert np.all(b <= a), (pe, lanes, more)


def test_layer_pipelining_is_fill_plus_slowest_stage():
    cfg = AccelConfig(pe=2, lanes=8)
    sizes, B = [18, 64, 64, 5], 256
    stages = E.pass_stages(sizes, cfg.tile_b, cfg, forward=True)
    per_tile = [sum(E.nest_cycles(n, cfg, 2, 8) for n in st) for st in stages]
    tiles = B // cfg.tile_b
    assert E.pass_cycles(sizes, B, cfg, "critic", forward=True) == sum(per_tile) + (tiles - 1) * max(per_tile)
    flat = cfg.model_copy(update={"layer_pipelining": False})
    whole = sum(E.nest_cycles(n, flat, 2, 8) for st in E.pass_stages(sizes, B, flat, forward=True) for n in st)
    assert E.pass_cycles(sizes, B, flat, "critic", forward=True) == whole
    assert E.pass_cycles(sizes, B, cfg, "critic", forward=True) < whole


def test_engines_do_the_trainers_update_work():
    """The dense MACs of every engine's tasks add up to those of the trainer's own list of an
    update's loop nests (MADDPG.update_loop_nests)."""
    from maddpg.trainer import MADDPG, make_config

    t = MADDPG(make_config(env="simple_spread", n_agents=3, batch_size=96, buffer_size=200))
    want = sum(n.macs for n in t.update_loop_nests() if n.kernel in E.REDUCTION)
    w = Workload(tuple(t.obs_dims), tuple(t.act_dims), batch=96)
    cfg = AccelConfig()
    got = 0
    for i in range(w.n_agents):
        a, c = w.actor_sizes(i), w.critic_sizes()
        off = sum(w.obs_dims) + sum(w.act_dims[:i])
        passes = [(a, dict(forward=True))] * w.n_agents  # its target actor on every agent's minibatch
        passes += [(c, dict(forward=True))] * 3  # Q(x, a), Q'(x', a'), Q(x, .. pi_i ..)
        passes += [(c, dict(backward=True)), (c, dict(backward=True, weights=False, inputs=(off, w.act_dims[i])))]
        passes += [(a, dict(forward=True)), (a, dict(backward=True))]
        for sizes, kw in passes:
            got += sum(n.macs for st in E.pass_stages(sizes, 96, cfg, **kw) for n in st)
    assert got == want


def test_spread_workload_matches_the_environment():
    from maddpg.accel.config import workload_for

    for n in (2, 4):
        assert workload_for("simple_spread", n) == spread_workload(n)


def test_work_balanced_lanes():
    cfg = AccelConfig(lanes=64, layer_balance="work")
    # critic [69, 64, 64, 1]: per-row MACs 4416, 4096, 64 -> ceil(64 x share of the largest)
    assert cfg.layer_lanes("critic", [69, 64, 64, 1]) == [64, 60, 1]
    assert AccelConfig(lanes=64).layer_lanes("critic", [69, 64, 64, 1]) == [64, 64, 64]
    w = spread_workload(3)
    assert E.engine_macs(cfg, w) == 4 * (64 + 60 + 1) + 4 * sum(-(-64 * x // 4096) for x in (18 * 64, 64 * 64, 64 * 5))
