"""The accelerator's functional path: one MADDPG update organised as the engines run it, on
the trainer's own kernels and networks, with every byte that crosses the host link or the
agent interconnect counted.

Per update:

1. **host**: agent ``i``'s minibatch indices and Gumbel uniforms (the trainer's counter-based
   generators, keyed by the same draws of its seeded generator, in the same order); the host
   sends engine ``j`` its agent's columns (observations, actions, next observations) of every
   agent's minibatch and engine ``i`` its rewards and done flags;
2. **engine j**: its target actor on every agent's next observations (``parallel``), or on
   agent ``i``'s just before agent ``i`` updates (``sequential``);
3. **interconnect**: engine ``i`` receives every other engine's columns of its minibatch and
   target actions on it, assembling its critic inputs ``[x, a]`` and ``[x', a']``;
4. **engine i**: ``Q(x, a)``, its actor's forward pass and sample, then the trainer's own
   critic step, actor step and soft target updates.

``sequential`` gives the trainer's :meth:`~maddpg.trainer.MADDPG.update` bit for bit (float32
and fixed point): agent ``i``'s target actions come from target actors ``0 .. i-1`` after
their soft updates. ``parallel`` (every engine at once) takes every agent's target actions
from the target actors as they were before the update — a different, equally valid order
of the same algorithm, which the tests check against the trainer's code run in that order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from maddpg import kernels as K
from noc.base.errors import ConfigError


@dataclass
class Traffic:
    """Bytes moved in one update: ``inputs[(j, i)]`` / ``targets[(j, i)]`` from engine ``j`` to
    ``i`` over the interconnect, ``host_to_card`` over PCIe (at ``word_bytes`` per word)."""

    word_bytes: int
    inputs: dict = field(default_factory=dict)
    targets: dict = field(default_factory=dict)
    host_to_card: int = 0

    def add(self, kind: str, src: int, dst: int, arr: np.ndarray) -> None:
        if src != dst:
            d = getattr(self, kind)
            d[(src, dst)] = d.get((src, dst), 0) + arr.size * self.word_bytes


def accel_update(t, semantics: str = "parallel", word_bytes: int = 4) -> Traffic:
    """One update of every agent of trainer ``t`` (a :class:`~maddpg.trainer.MADDPG`), as the
    engines compute it; returns the traffic. Changes ``t`` as :meth:`MADDPG.update` does."""
    from maddpg.trainer import _Minibatch

    if semantics not in ("parallel", "sequential"):
        raise ConfigError(f"semantics {semantics!r}: allowed: parallel, sequential")
    c = t.cfg
    n, B = t.n, c.batch_size
    rp = t.replay
    obs_off = np.cumsum([0, *t.obs_dims])
    traffic = Traffic(word_bytes)
    # 1. host: indices and uniforms of every agent (the trainer's draws, in its order)
    mbs = [_Minibatch(B, t.obs_dims, t.act_dims) for _ in range(n)]
    for i, mb in enumerate(mbs):
        key_idx, key_u = t.rng.integers(0, 2**64 - 1, size=2, dtype=np.uint64, endpoint=True)
        K.randint_fill(key_idx, rp.size, mb.idx)
        K.uniform_fill(key_u, mb.u_all[: B * (sum(t.act_dims) + t.act_dims[i])])
    # host -> engine j: its columns of every minibatch; -> engine i: its rewards and done flags
    own = [[None] * n for _ in range(n)]  # own[j][i] = (obs_j, act_j, next_obs_j) rows of minibatch i
    for j in range(n):
        for i in range(n):
            rows = mbs[i].idx
            cols = (rp.obs[j][rows], rp.act[j][rows], rp.next_obs[j][rows])
            own[j][i] = tuple(np.ascontiguousarray(a) for a in cols)
            traffic.host_to_card += sum(a.size for a in cols) * word_bytes
    for i in range(n):
        traffic.host_to_card += 2 * B * word_bytes  # rewards and done flags
    # 3a. inputs exchange: engine i assembles [x, a] and x' of its minibatch
    for i, mb in enumerate(mbs):
        for j in range(n):
            o, a, no = own[j][i]
            mb.c_in[:, obs_off[j]:obs_off[j + 1]] = o
            mb.c_in[:, t.act_off[j]:t.act_off[j] + t.act_dims[j]] = a
            mb.c_in_next[:, obs_off[j]:obs_off[j + 1]] = no
            for arr in (o, a, no):
                traffic.add("inputs", j, i, arr)

    def targets_for(i: int) -> None:
        """2 + 3b: every engine's target actions on minibatch i, sent to engine i."""
        mb = mbs[i]
        for j in range(n):
            out = np.zeros((B, t.act_dims[j]), np.float32)
            t.agents[j].actor_t.forward_sample(own[j][i][2], mb.u[j], out, c.temperature)
            mb.act[j][...] = out
            mb.c_in_next[:, t.act_off[j]:t.act_off[j] + t.act_dims[j]] = out
            traffic.add("targets", j, i, out)

    if semantics == "parallel":
        for i in range(n):
            targets_for(i)
    for i, ag in enumerate(t.agents):
        if semantics == "sequential":
            targets_for(i)
        mb = mbs[i]
        ag.critic.forward(mb.c_in)
        ag.actor.forward_sample(mb.obs[i], mb.u_actor[i], mb.pi[i], c.temperature)
        t._update_agent(i, ag, mb)
    t.updates += 1
    t.stats.updates += 1
    t.stats.rows += B
    return traffic
