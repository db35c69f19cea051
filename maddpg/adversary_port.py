"""A batched Numba port of mpe2's simple_adversary, bit-exact to mpe2.

Agent 0 is the adversary, agents ``1..n-1`` the good agents, with ``n - 1`` landmarks of
which one (``goal[b, 0]``) is the target (``maddpg.env`` counts agents the same way: mpe2's
``N = n_agents - 1``). Nothing collides; every agent moves with sensitivity 5, no top speed::

    port = AdversaryPort(n_envs=1024, n_agents=3)
    obs = port.reset(seed=0)            # [B, n, 4n - 2] float32; the adversary's row has 4n - 4
    obs, rew = port.step(actions)       # actions [B, n, 5] float32; rewards [B, n] float64

Observations (mpe2's, full observability): a good agent sees ``[goal - pos, lm_j - pos (all
j), other - pos (other agents in order)]``; the adversary ``[lm_j - pos, other - pos]`` (it is
not told the goal; its row is zero-padded to the good agents' length). Rewards are mpe2's
shaped ones: the adversary gets ``-|adv - goal|``, every good agent ``-min_good |g - goal| +
|adv - goal|``.

Reset draws as mpe2: ``integers(n_landmarks)`` for the goal, then ``uniform(-1, 1)`` per
agent and per landmark; for a batch, all envs' goals first, then all envs' positions.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from maddpg.mpe_core import ACT_MOVE, BatchPort, check_int, bodies, physics_step, put2

__all__ = ["AdversaryPort", "adversary_obs", "adversary_step"]


@njit(cache=True)
def adversary_obs(pos, lm, goal, obs):
    B, N = pos.shape[0], pos.shape[1]
    L = lm.shape[1]
    for b in range(B):
        g = goal[b, 0]
        for i in range(N):
            k = 0
            if i > 0:
                k = put2(obs, b, i, k, lm[b, g, 0] - pos[b, i, 0], lm[b, g, 1] - pos[b, i, 1])
            for j in range(L):
                k = put2(obs, b, i, k, lm[b, j, 0] - pos[b, i, 0], lm[b, j, 1] - pos[b, i, 1])
            for o in range(N):
                if o != i:
                    k = put2(obs, b, i, k, pos[b, o, 0] - pos[b, i, 0], pos[b, o, 1] - pos[b, i, 1])


@njit(cache=True, error_model="numpy")
def adversary_step(pos, vel, lm, goal, act, obs, rew):
    """One mpe2 world step of simple_adversary for every env, then observations and rewards."""
    B, N = pos.shape[0], pos.shape[1]
    L = lm.shape[1]
    accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy = bodies(N, L, 0.15, False, 0.08, False)
    for b in range(B):
        physics_step(pos, vel, lm, act, b, accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy)
        g = goal[b, 0]
        dx = pos[b, 0, 0] - lm[b, g, 0]
        dy = pos[b, 0, 1] - lm[b, g, 1]
        d_adv = math.sqrt(dx * dx + dy * dy)
        m = 0.0
        for a in range(1, N):  # Python's min: the first, replaced by anything smaller
            dx = pos[b, a, 0] - lm[b, g, 0]
            dy = pos[b, a, 1] - lm[b, g, 1]
            d = math.sqrt(dx * dx + dy * dy)
            if a == 1 or d < m:
                m = d
        rew[b, 0] = -d_adv
        good = -m + (0 + d_adv)  # pos_rew + adv_rew, adv_rew = sum(...) over the one adversary
        for i in range(1, N):
            rew[b, i] = good
    adversary_obs(pos, lm, goal, obs)


class AdversaryPort(BatchPort):
    """``n_envs`` copies of simple_adversary: 1 adversary and ``n_agents - 1`` good agents."""

    def __init__(self, n_envs: int, n_agents: int = 3, max_cycles: int = 25) -> None:
        B = check_int("n_envs", n_envs, 1)
        n = check_int("n_agents", n_agents, 2)
        L = n - 1
        obs_dims = [2 * L + 2 * (n - 1)] + [2 + 2 * L + 2 * (n - 1)] * (n - 1)
        super().__init__(B, n, L, obs_dims, [ACT_MOVE] * n, max_cycles, n_goals=1)

    def _observe(self, obs):
        adversary_obs(self.pos, self.lm, self.goal, obs)

    def _step(self, act, obs, rew):
        adversary_step(self.pos, self.vel, self.lm, self.goal, act, obs, rew)
