"""A batched Numba port of mpe2's simple_reference, bit-exact to mpe2.

Two agents, both moving (sensitivity 5) and speaking (10 communication values); three
landmarks. Agent ``i`` knows a goal landmark ``goal[b, i]`` that the *other* agent must
reach, and tells it through communication::

    port = ReferencePort(n_envs=1024)
    obs = port.reset(seed=0)          # [B, 2, 21] float32
    obs, rew = port.step(actions)     # actions [B, 2, 15] float32: 5 move + 10 communication

An action vector is mpe2's continuous one: ``[:5]`` moves as in every scenario, ``[5:]`` is the
utterance, clipped to [0, 1] and stored as mpe2 stores it. Observations (mpe2's): ``[vel,
lm_j - pos (all 3), colour of the own goal landmark (3), the other agent's last
utterance (10)]``. Rewards (mpe2's, ``local_ratio = 0.5``): ``r_i = -|pos_other - lm_goal_i|``,
reward ``i`` = ``0.5 * (r_0 + r_1) / 2 + 0.5 * r_i``.

Reset draws as mpe2: ``integers(3)`` for agent 0's goal, then agent 1's, then ``uniform(-1,
1)`` per agent and per landmark; for a batch, all envs' goals first, then all positions.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from maddpg.mpe_core import ACT_MOVE, BatchPort, check_int, clip01, bodies, physics_step, put2

__all__ = ["ReferencePort", "LANDMARK_COLORS", "reference_obs", "reference_step"]

DIM_C = 10
N_LANDMARKS = 3
LOCAL_RATIO = 0.5
LANDMARK_COLORS = np.array([[0.75, 0.25, 0.25], [0.25, 0.75, 0.25], [0.25, 0.25, 0.75]])


@njit(cache=True)
def reference_obs(pos, vel, lm, goal, comm, colors, obs):
    B = pos.shape[0]
    L = lm.shape[1]
    for b in range(B):
        for i in range(2):
            k = put2(obs, b, i, 0, vel[b, i, 0], vel[b, i, 1])
            for j in range(L):
                k = put2(obs, b, i, k, lm[b, j, 0] - pos[b, i, 0], lm[b, j, 1] - pos[b, i, 1])
            g = goal[b, i]
            for c in range(3):
                obs[b, i, k] = np.float32(colors[g, c])
                k += 1
            for c in range(DIM_C):
                obs[b, i, k] = comm[b, 1 - i, c]
                k += 1


@njit(cache=True, error_model="numpy")
def reference_step(pos, vel, lm, goal, comm, colors, act, obs, rew):
    """One mpe2 world step for every env, then observations and rewards."""
    B = pos.shape[0]
    L = lm.shape[1]
    accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy = bodies(2, L, 0.05, False, 0.05, False)
    r = np.empty(2)
    for b in range(B):
        physics_step(pos, vel, lm, act, b, accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy)
        for i in range(2):
            for c in range(DIM_C):
                comm[b, i, c] = clip01(act[b, i, ACT_MOVE + c])
        for i in range(2):
            g = goal[b, i]
            dx = pos[b, 1 - i, 0] - lm[b, g, 0]
            dy = pos[b, 1 - i, 1] - lm[b, g, 1]
            r[i] = -math.sqrt(dx * dx + dy * dy)
        glob = ((0.0 + r[0]) + r[1]) / 2  # Python's sum starts at 0
        for i in range(2):
            rew[b, i] = glob * (1 - LOCAL_RATIO) + r[i] * LOCAL_RATIO
    reference_obs(pos, vel, lm, goal, comm, colors, obs)


class ReferencePort(BatchPort):
    """``n_envs`` copies of simple_reference (exactly 2 agents)."""

    def __init__(self, n_envs: int, n_agents: int = 2, max_cycles: int = 25) -> None:
        B = check_int("n_envs", n_envs, 1)
        check_int("n_agents", n_agents, 2, 2)
        obs_dim = 2 + 2 * N_LANDMARKS + 3 + DIM_C
        super().__init__(B, 2, N_LANDMARKS, [obs_dim] * 2, [ACT_MOVE + DIM_C] * 2,
                         max_cycles, dim_c=DIM_C, n_goals=2)

    def _observe(self, obs):
        reference_obs(self.pos, self.vel, self.lm, self.goal, self.comm, LANDMARK_COLORS, obs)

    def _step(self, act, obs, rew):
        reference_step(self.pos, self.vel, self.lm, self.goal, self.comm, LANDMARK_COLORS, act, obs, rew)
