"""A batched Numba port of mpe2's simple_push (the MADDPG paper's keep-away), bit-exact to mpe2.

Agent 0 is the adversary, agent 1 the good agent; two landmarks, one of which
(``goal[b, 0]``) is the good agent's target (both know which: the adversary through its
reward only). Both agents collide with each other (size 0.05), not with the landmarks;
both move with sensitivity 5, no top speed::

    port = PushPort(n_envs=1024)
    obs = port.reset(seed=0)          # [B, 2, 19] float32; the adversary's row has 8 values
    obs, rew = port.step(actions)     # actions [B, 2, 5] float32; rewards [B, 2] float64

Observations (mpe2's): the good agent sees ``[vel, goal - pos, its colour (3), lm_j - pos
(both j), the landmarks' colours (2 x 3), adversary - pos]`` (19); the adversary ``[vel,
lm_j - pos (both j), agent - pos]`` (8, zero-padded to 19). The colours are mpe2's: a
landmark ``j`` is grey 0.1 with 0.8 added to channel ``j + 1``, the good agent grey 0.25 with
0.5 added to channel ``goal + 1`` (so its colour tells it the goal). Rewards are mpe2's: the
good agent gets ``-|agent - goal|``, the adversary ``|agent - goal| - |adversary - goal|``.

Reset draws as mpe2: ``integers(2)`` for the goal, then ``uniform(-1, 1)`` per agent and per
landmark; for a batch, all envs' goals first, then all envs' positions.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from maddpg.mpe_core import ACT_MOVE, BatchPort, check_int, bodies, physics_step, put2

__all__ = ["PushPort", "AGENT_COLORS", "LANDMARK_COLORS", "push_obs", "push_step"]

N_LANDMARKS = 2
OBS_GOOD = 2 + 2 + 3 + 2 * N_LANDMARKS + 3 * N_LANDMARKS + 2
OBS_ADV = 2 + 2 * N_LANDMARKS + 2


def _colors(grey: float, add: float, n: int) -> np.ndarray:
    """mpe2's colours, with its float64 arithmetic: ``[grey] * 3``, ``add`` added to channel ``j + 1``."""
    out = np.full((n, 3), grey)
    for j in range(n):
        out[j, j + 1] += add
    return out


LANDMARK_COLORS = _colors(0.1, 0.8, N_LANDMARKS)  # landmark j
AGENT_COLORS = _colors(0.25, 0.5, N_LANDMARKS)  # the good agent when landmark j is its goal


@njit(cache=True)
def push_obs(pos, vel, lm, goal, lm_colors, agent_colors, obs):
    B = pos.shape[0]
    L = lm.shape[1]
    for b in range(B):
        g = goal[b, 0]
        # the good agent (1)
        k = put2(obs, b, 1, 0, vel[b, 1, 0], vel[b, 1, 1])
        k = put2(obs, b, 1, k, lm[b, g, 0] - pos[b, 1, 0], lm[b, g, 1] - pos[b, 1, 1])
        for c in range(3):
            obs[b, 1, k + c] = np.float32(agent_colors[g, c])
        k += 3
        for j in range(L):
            k = put2(obs, b, 1, k, lm[b, j, 0] - pos[b, 1, 0], lm[b, j, 1] - pos[b, 1, 1])
        for j in range(L):
            for c in range(3):
                obs[b, 1, k + c] = np.float32(lm_colors[j, c])
            k += 3
        put2(obs, b, 1, k, pos[b, 0, 0] - pos[b, 1, 0], pos[b, 0, 1] - pos[b, 1, 1])
        # the adversary (0)
        k = put2(obs, b, 0, 0, vel[b, 0, 0], vel[b, 0, 1])
        for j in range(L):
            k = put2(obs, b, 0, k, lm[b, j, 0] - pos[b, 0, 0], lm[b, j, 1] - pos[b, 0, 1])
        put2(obs, b, 0, k, pos[b, 1, 0] - pos[b, 0, 0], pos[b, 1, 1] - pos[b, 0, 1])


@njit(cache=True, error_model="numpy")
def push_step(pos, vel, lm, goal, lm_colors, agent_colors, act, obs, rew):
    """One mpe2 world step of simple_push for every env, then observations and rewards."""
    B = pos.shape[0]
    L = lm.shape[1]
    accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy = bodies(2, L, 0.05, True, 0.05, False)
    for b in range(B):
        physics_step(pos, vel, lm, act, b, accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy)
        g = goal[b, 0]
        dx = pos[b, 1, 0] - lm[b, g, 0]
        dy = pos[b, 1, 1] - lm[b, g, 1]
        d_good = math.sqrt(dx * dx + dy * dy)
        dx = lm[b, g, 0] - pos[b, 0, 0]
        dy = lm[b, g, 1] - pos[b, 0, 1]
        d_adv = math.sqrt(dx * dx + dy * dy)
        rew[b, 0] = d_good - d_adv  # min over the one good agent, minus the adversary's distance
        rew[b, 1] = -d_good
    push_obs(pos, vel, lm, goal, lm_colors, agent_colors, obs)


class PushPort(BatchPort):
    """``n_envs`` copies of simple_push (exactly 2 agents: adversary, good agent)."""

    def __init__(self, n_envs: int, n_agents: int = 2, max_cycles: int = 25) -> None:
        B = check_int("n_envs", n_envs, 1)
        check_int("n_agents", n_agents, 2, 2)
        super().__init__(B, 2, N_LANDMARKS, [OBS_ADV, OBS_GOOD], [ACT_MOVE, ACT_MOVE], max_cycles, n_goals=1)

    def _observe(self, obs):
        push_obs(self.pos, self.vel, self.lm, self.goal, LANDMARK_COLORS, AGENT_COLORS, obs)

    def _step(self, act, obs, rew):
        push_step(self.pos, self.vel, self.lm, self.goal, LANDMARK_COLORS, AGENT_COLORS, act, obs, rew)
