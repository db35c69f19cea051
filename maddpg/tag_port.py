"""A batched Numba port of mpe2's simple_tag, bit-exact to mpe2.

Agents ``0..n_adv-1`` are the adversaries (size 0.075, accel 3, top speed 1.0), the last
``n_good`` the prey (size 0.05, accel 4, top speed 1.3); ``n_obstacles`` fixed obstacles
(size 0.2). Everything collides (mpe2's soft contact). ``maddpg.env`` builds simple_tag with
one prey and ``n_agents - 1`` adversaries, which is this port's default::

    port = TagPort(n_envs=1024, n_agents=4)          # 3 adversaries + 1 prey, 2 obstacles
    obs = port.reset(seed=0)                          # [B, n, obs_dim] float32 (prey row padded)
    obs, rew = port.step(actions)                     # actions [B, n, 5] float32

Observations (mpe2's, full observability): ``[vel, pos, obstacle - pos (all), other - pos
(other agents in order), vel of the other prey]``. Rewards (mpe2's, unshaped): an adversary
gets +10 per touching (prey, adversary) pair, all adversaries alike; a prey gets -10 per
adversary touching it and a bounds penalty per coordinate ``x = |p|``: 0 below 0.9,
``10 (x - 0.9)`` below 1, ``min(exp(2x - 2), 10)`` beyond. Touching is ``|p_a - p_b| <
size_a + size_b``.

Reset draws as mpe2: ``uniform(-1, 1)`` per agent, then ``uniform(-0.9, 0.9)`` per obstacle;
for a batch, all envs' agents first, then all envs' obstacles. Not ported: mpe2's optional
curriculum, terminate_on_success and partial observability (``maddpg.env`` uses none).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from maddpg.mpe_core import ACT_MOVE, BatchPort, check_int, bodies, physics_step, put2

__all__ = ["TagPort", "tag_obs", "tag_step"]

ADV_SIZE, ADV_ACCEL, ADV_MAX_SPEED = 0.075, 3.0, 1.0
PREY_SIZE, PREY_ACCEL, PREY_MAX_SPEED = 0.05, 4.0, 1.3
OBSTACLE_SIZE = 0.2


@njit(cache=True)
def tag_obs(pos, vel, lm, n_adv, obs):
    B, N = pos.shape[0], pos.shape[1]
    L = lm.shape[1]
    for b in range(B):
        for i in range(N):
            k = put2(obs, b, i, 0, vel[b, i, 0], vel[b, i, 1])
            k = put2(obs, b, i, k, pos[b, i, 0], pos[b, i, 1])
            for j in range(L):
                k = put2(obs, b, i, k, lm[b, j, 0] - pos[b, i, 0], lm[b, j, 1] - pos[b, i, 1])
            for o in range(N):
                if o != i:
                    k = put2(obs, b, i, k, pos[b, o, 0] - pos[b, i, 0], pos[b, o, 1] - pos[b, i, 1])
            for o in range(n_adv, N):
                if o != i:
                    k = put2(obs, b, i, k, vel[b, o, 0], vel[b, o, 1])


@njit(cache=True)
def _bound(x):
    """mpe2 simple_tag's penalty for leaving the screen, for one |coordinate|."""
    if x < 0.9:
        return 0.0
    if x < 1.0:
        return (x - 0.9) * 10
    e = math.exp(2 * x - 2)
    return 10.0 if 10.0 < e else e  # Python's min(e, 10)


@njit(cache=True)
def _touch(pos, b, i, j, dist_min):
    dx = pos[b, i, 0] - pos[b, j, 0]
    dy = pos[b, i, 1] - pos[b, j, 1]
    return math.sqrt(dx * dx + dy * dy) < dist_min


@njit(cache=True, error_model="numpy")
def tag_step(pos, vel, lm, act, n_adv, obs, rew):
    """One mpe2 world step of simple_tag for every env, then observations and rewards."""
    B, N = pos.shape[0], pos.shape[1]
    L = lm.shape[1]
    accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy = bodies(
        N, L, PREY_SIZE, True, OBSTACLE_SIZE, True)
    for i in range(N):
        adv = i < n_adv
        accel[i] = ADV_ACCEL if adv else PREY_ACCEL
        size_a[i] = ADV_SIZE if adv else PREY_SIZE
        max_speed[i] = ADV_MAX_SPEED if adv else PREY_MAX_SPEED
    catch_min = ADV_SIZE + PREY_SIZE
    for b in range(B):
        physics_step(pos, vel, lm, act, b, accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy)
        caught_pairs = 0
        for p in range(n_adv, N):
            caught = 0
            for a in range(n_adv):
                if _touch(pos, b, a, p, catch_min):
                    caught += 1
            caught_pairs += caught
            r = 0.0 - 10.0 * caught  # mpe2 counts down from the integer 0: never -0.0
            for d in range(2):
                r = r - _bound(abs(pos[b, p, d]))
            rew[b, p] = r
        for a in range(n_adv):
            rew[b, a] = 10.0 * caught_pairs
    tag_obs(pos, vel, lm, n_adv, obs)


class TagPort(BatchPort):
    """``n_envs`` copies of simple_tag: ``n_agents - n_good`` adversaries, then ``n_good`` prey."""

    def __init__(self, n_envs: int, n_agents: int = 4, max_cycles: int = 25, n_good: int = 1, n_obstacles: int = 2) -> None:
        B = check_int("n_envs", n_envs, 1)
        n_good = check_int("n_good", n_good, 1)
        n = check_int("n_agents", n_agents, n_good + 1)
        L = check_int("n_obstacles", n_obstacles, 0)
        self.n_adv = n - n_good
        self.n_good = n_good
        base = 4 + 2 * L + 2 * (n - 1)
        obs_dims = [base + 2 * n_good] * self.n_adv + [base + 2 * (n_good - 1)] * n_good
        super().__init__(B, n, L, obs_dims, [ACT_MOVE] * n, max_cycles)

    def _draw(self, rng):
        B, n, L = self.n_envs, self.n_agents, self.n_landmarks
        pos = rng.uniform(-1.0, 1.0, size=(B, n, 2))
        lm = rng.uniform(-0.9, 0.9, size=(B, L, 2))
        return {"pos": pos, "lm": lm}

    def _observe(self, obs):
        tag_obs(self.pos, self.vel, self.lm, self.n_adv, obs)

    def _step(self, act, obs, rew):
        tag_step(self.pos, self.vel, self.lm, act, self.n_adv, obs, rew)
