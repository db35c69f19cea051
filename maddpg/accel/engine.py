"""An agent's training engine: cycles of the kernels' loop nests on per-layer MAC arrays.

Fidelity: cycle-approximate (loop trip counts, initiation intervals, pipeline depths; no
memory-bank conflicts, no stalls other than loop-carried ones). Built from the
:class:`~maddpg.kernels.LoopNest` records the kernels publish next to themselves, so the
cost model and the CPU kernels describe one loop nest:

* a dense kernel (forward, weight gradient, input gradient) runs on its layer's array of
  ``pe`` PEs x ``lanes`` MAC lanes: the PEs split the loop the nest marks ``parallel``, the
  lanes the loop it unrolls, every other loop runs in sequence, pipelined at II
  ``ii_cycles``;
* a reduction carried by the pipelined loops (the sum over ``in`` of a forward pass, over
  the batch of a weight gradient, over ``out`` of an input gradient) re-uses an
  accumulator every ``d`` iterations, ``d`` the iterations nested inside it times the
  register block's points outside it; the floating-point adder's latency then stretches
  the II to ``ceil(add_latency / d)`` (fixed point: one-cycle adds, II 1);
* a reduction over the unrolled lanes goes through an adder tree, ``ceil(log2 lanes)``
  levels deep;
* each kernel uses as many PEs and lanes as pay off (an HLS designer's per-kernel unroll up
  to the array's width): more MACs never cost cycles;
* elementwise kernels (Adam, soft update, Gumbel-softmax and its gradient, random
  numbers, the TD loss) run on the engine's ``vector_lanes``-wide unit; exp and log cost
  ``special_fn_cycles`` more per element.

A pass (an MLP's forward or backward) with ``layer_pipelining``: every layer has its own
array, so the minibatch's tiles of ``tile_b`` rows stream through the layers, and the pass
takes the sum of one tile's stage times (the fill) plus ``tiles - 1`` times the slowest
stage's; without it, the layers run one after another over the whole minibatch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from maddpg import kernels as K
from maddpg.accel.config import AccelConfig, Workload

REDUCTION = {"dense_forward": "in", "dense_backward_weights": "batch", "dense_backward_input": "out"}


def _pass_counts(trip: int, width: int) -> np.ndarray:
    """The distinct ``ceil(trip / w)`` for ``w = 1 .. min(width, trip)``: the pass counts a
    loop of ``trip`` iterations can take on up to ``width`` parallel units."""
    w = np.arange(1, max(1, min(width, trip)) + 1, dtype=np.int64)
    return np.unique(-(-trip // w))


@lru_cache(maxsize=65536)
def _mac_cycles(loops: tuple, kernel: str, pe: int, lanes: int, ii: int, mul: int, add: int) -> int:
    par = next((k for k, lp in enumerate(loops) if lp.parallel), None)
    unr = next((k for k, lp in enumerate(loops) if lp.unroll > 1), len(loops) - 1)
    red_name = REDUCTION[kernel]
    red = next(k for k, lp in enumerate(loops) if lp.name == red_name)
    best = None
    shared = par == unr  # one loop split over PEs and lanes (the narrow weight gradient)
    pe_opts = _pass_counts(loops[par].trip, pe * (lanes if shared else 1)) if par is not None else np.array([1])
    lane_opts = np.array([1]) if shared else _pass_counts(loops[unr].trip, lanes)
    for p_par in pe_opts.tolist():
        for p_unr in lane_opts.tolist():
            seq = []  # sequential trip of every loop, in nest order
            for k, lp in enumerate(loops):
                if k == par:
                    seq.append(p_par)
                elif k == unr:
                    seq.append(p_unr)
                else:
                    seq.append(lp.trip)
            iters = math.prod(seq)
            tree = 0
            if red == unr and not shared:
                lanes_used = -(-loops[unr].trip // p_unr)
                tree = math.ceil(math.log2(lanes_used)) if lanes_used > 1 else 0
            elif shared and red == par:
                units = -(-loops[par].trip // p_par)
                tree = math.ceil(math.log2(units)) if units > 1 else 0
            # iterations between two updates of one accumulator: the loops inside the
            # reduction, times the register block's points outside it (they run innermost)
            dist = math.prod(seq[red + 1:])
            for k in range(red):
                b = loops[k].block
                if b > 1:
                    if k == unr:
                        b = max(1, b // max(1, -(-loops[unr].trip // p_unr)))
                    elif k == par:
                        b = max(1, min(b, p_par))
                    dist *= b
            ii_eff = max(ii, -(-add // max(dist, 1))) if seq[red] > 1 else ii
            cyc = iters * ii_eff + mul + add * (1 + tree)
            if best is None or cyc < best:
                best = cyc
    return int(best)


def nest_cycles(nest: K.LoopNest, cfg: AccelConfig, pe: int, lanes: int) -> int:
    """Cycles of one kernel call described by ``nest`` on a ``pe`` x ``lanes`` array (dense
    kernels) or on the engine's vector unit (the rest)."""
    if nest.kernel in REDUCTION:
        return _mac_cycles(nest.loops, nest.kernel, int(pe), int(lanes), cfg.ii_cycles, cfg.mul_cycles, cfg.add_cycles)
    return vector_cycles(nest.iterations, cfg, special=int(nest.extra.get("exp", 0)) + int(nest.extra.get("log", 0)))


def vector_cycles(elements: int, cfg: AccelConfig, special: int = 0) -> int:
    """An elementwise loop of ``elements`` on the vector unit (``special`` exp/log evaluations)."""
    v = cfg.vector_lanes
    return -(-elements // v) * cfg.ii_cycles + -(-special * cfg.special_fn_cycles // v) + cfg.mul_cycles + cfg.add_cycles


# ---------------------------------------------------------------------------------------
# Passes
# ---------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _mlp(sizes: tuple[int, ...], unroll: int, tile_b: int):
    from maddpg.kernels_mlp import MLP

    return MLP(list(sizes), K.Tiling(tile_b, unroll))


def pass_stages(sizes: list[int], batch: int, cfg: AccelConfig, **kw) -> list[list[K.LoopNest]]:
    """The loop nests of an MLP pass at ``batch`` rows (from :meth:`MLP.loop_nests`, the
    trainer's own), grouped by the layer array that runs them, in pass order."""
    return _stages_and_layers(sizes, batch, cfg, **kw)[0]


def _stages_and_layers(sizes: list[int], batch: int, cfg: AccelConfig, *, forward: bool = False,
                       backward: bool = False, weights: bool = True, inputs: bool | tuple[int, int] = False,
                       unroll: int = 8) -> tuple[list[list[K.LoopNest]], list[int]]:
    mlp = _mlp(tuple(sizes), unroll, cfg.tile_b)
    nests = mlp.loop_nests(batch, forward=forward, backward=backward, weights=weights, inputs=inputs)
    n_layers = len(sizes) - 1
    stages: list[list[K.LoopNest]] = []
    layers: list[int] = []
    k = 0
    if forward:
        for layer in range(n_layers):
            stages.append([nests[k]])
            layers.append(layer)
            k += 1
    if backward:
        for layer in range(n_layers - 1, -1, -1):
            st = []
            if weights:
                st.append(nests[k])
                k += 1
            if layer > 0 or inputs is not False:
                st.append(nests[k])
                k += 1
            if st:
                stages.append(st)
                layers.append(layer)
    assert k == len(nests), (k, len(nests))
    return stages, layers


def pass_cycles(sizes: list[int], batch: int, cfg: AccelConfig, net: str, *, tail: K.LoopNest | None = None,
                **kw) -> int:
    """Cycles of one MLP pass on the arrays of ``net`` ("actor"/"critic"), ``tail``: an
    elementwise kernel streamed after the last layer (the Gumbel-softmax of a sampled
    forward pass), at ``batch`` rows."""
    pe = cfg.array(net)[0]
    lanes = cfg.layer_lanes(net, sizes)
    if cfg.layer_pipelining and batch > cfg.tile_b:
        rows = cfg.tile_b
        tiles = -(-batch // rows)
    else:
        rows, tiles = batch, 1
    stages, layers = _stages_and_layers(sizes, rows, cfg, **kw)
    times = [sum(nest_cycles(n, cfg, pe, lanes[lay]) for n in st) for st, lay in zip(stages, layers)]
    if tail is not None:
        times.append(nest_cycles(_tail_at(tail, rows), cfg, 1, 1))
    return int(sum(times) + (tiles - 1) * max(times))


def _tail_at(nest: K.LoopNest, rows: int) -> K.LoopNest:
    n_act = nest.loops[-1].trip
    fn = K.gumbel_softmax_nest if nest.kernel == "gumbel_softmax" else K.gumbel_softmax_backward_nest
    return fn(rows, n_act)


# ---------------------------------------------------------------------------------------
# An engine's tasks in one update
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineTasks:
    """Cycles of every task of agent ``i``'s engine in one update (one minibatch each)."""

    target_actor_pass: int  # one target-actor forward + Gumbel sample over a minibatch
    critic_forward: int  # Q(x, a) (and Q(x, ..pi_i..), same shape)
    target_critic_forward: int
    td_loss: int
    critic_backward: int  # weights + bias
    critic_input_grad: int  # dQ/da_i (input columns of agent i only, no weight gradient)
    actor_forward_sample: int
    gumbel_backward: int  # plus the regulariser's gradient
    actor_backward: int
    adam_critic: int
    adam_actor: int
    soft_update: int  # both target networks


def engine_tasks(w: Workload, i: int, cfg: AccelConfig, unroll: int = 8) -> EngineTasks:
    B = w.batch
    a_sizes, c_sizes = w.actor_sizes(i), w.critic_sizes()
    act_off = sum(w.obs_dims) + sum(w.act_dims[:i])
    gs = K.gumbel_softmax_nest(B, w.act_dims[i])
    gb = K.gumbel_softmax_backward_nest(B, w.act_dims[i])
    n_a = sum(a * b + b for a, b in zip(a_sizes[:-1], a_sizes[1:]))
    n_c = sum(a * b + b for a, b in zip(c_sizes[:-1], c_sizes[1:]))
    seg_a, seg_c = 2 * (len(a_sizes) - 1), 2 * (len(c_sizes) - 1)
    crit = dict(forward=True)
    return EngineTasks(
        target_actor_pass=pass_cycles(a_sizes, B, cfg, "actor", tail=gs, forward=True, unroll=unroll),
        critic_forward=pass_cycles(c_sizes, B, cfg, "critic", unroll=unroll, **crit),
        target_critic_forward=pass_cycles(c_sizes, B, cfg, "critic", unroll=unroll, **crit),
        td_loss=vector_cycles(3 * B, cfg),
        critic_backward=pass_cycles(c_sizes, B, cfg, "critic", backward=True, unroll=unroll),
        critic_input_grad=pass_cycles(c_sizes, B, cfg, "critic", backward=True, weights=False,
                                      inputs=(act_off, w.act_dims[i]), unroll=unroll),
        actor_forward_sample=pass_cycles(a_sizes, B, cfg, "actor", tail=gs, forward=True, unroll=unroll),
        gumbel_backward=nest_cycles(gb, cfg, 1, 1) + vector_cycles(B * w.act_dims[i], cfg),
        actor_backward=pass_cycles(a_sizes, B, cfg, "actor", backward=True, unroll=unroll),
        adam_critic=nest_cycles(K.adam_nest(n_c, seg_c), cfg, 1, 1),
        adam_actor=nest_cycles(K.adam_nest(n_a, seg_a), cfg, 1, 1),
        soft_update=nest_cycles(K.soft_update_nest(n_a), cfg, 1, 1) + nest_cycles(K.soft_update_nest(n_c), cfg, 1, 1),
    )


def engine_macs(cfg: AccelConfig, w: Workload, i: int | None = None) -> int:
    """MAC units of agent ``i``'s engine (None: the largest engine): one array per layer of
    the actor and of the critic."""
    if i is None:
        return max(engine_macs(cfg, w, k) for k in range(w.n_agents))
    pa, pc = cfg.array("actor")[0], cfg.array("critic")[0]
    return (pa * sum(cfg.layer_lanes("actor", w.actor_sizes(i)))
            + pc * sum(cfg.layer_lanes("critic", w.critic_sizes())))
