"""A batched Numba port of mpe2's simple_speaker_listener, bit-exact to mpe2.

Agent 0 is the speaker (does not move; its action is a 3-value communication vector),
agent 1 the listener (moves, sensitivity 5; silent). Three landmarks, one of which
(``goal[b, 0]``) the listener must reach; only the speaker knows which::

    port = SpeakerListenerPort(n_envs=1024)
    obs = port.reset(seed=0)          # [B, 2, 11] float32; the speaker's row has 3 values
    obs, rew = port.step(actions)     # actions [B, 2, 5] float32: the speaker reads [:3]

Observations (mpe2's): the speaker sees the goal landmark's colour (3); the listener
``[vel, lm_j - pos (all 3), the speaker's last communication (3)]``. The communication is
the speaker's action clipped to [0, 1], as mpe2 stores it (``maddpg.env`` runs mpe2 with
``continuous_actions=True``). Both agents get ``-|listener - goal|^2``.

Reset draws as mpe2: ``integers(3)`` for the goal, then ``uniform(-1, 1)`` per agent and
per landmark; for a batch, all envs' goals first, then all envs' positions.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from maddpg.mpe_core import ACT_MOVE, BatchPort, check_int, clip01, bodies, physics_step, put2

__all__ = ["SpeakerListenerPort", "LANDMARK_COLORS", "speaker_listener_obs", "speaker_listener_step"]

DIM_C = 3
N_LANDMARKS = 3
# mpe2's landmark colours (the speaker observes the goal's)
LANDMARK_COLORS = np.array([[0.65, 0.15, 0.15], [0.15, 0.65, 0.15], [0.15, 0.15, 0.65]])


@njit(cache=True)
def speaker_listener_obs(pos, vel, lm, goal, comm, colors, obs):
    B = pos.shape[0]
    L = lm.shape[1]
    for b in range(B):
        g = goal[b, 0]
        for c in range(DIM_C):
            obs[b, 0, c] = np.float32(colors[g, c])
        k = put2(obs, b, 1, 0, vel[b, 1, 0], vel[b, 1, 1])
        for j in range(L):
            k = put2(obs, b, 1, k, lm[b, j, 0] - pos[b, 1, 0], lm[b, j, 1] - pos[b, 1, 1])
        for c in range(DIM_C):
            obs[b, 1, k + c] = comm[b, 0, c]


@njit(cache=True, error_model="numpy")
def speaker_listener_step(pos, vel, lm, goal, comm, colors, act, obs, rew):
    """One mpe2 world step for every env, then observations and rewards."""
    B = pos.shape[0]
    L = lm.shape[1]
    accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy = bodies(2, L, 0.075, False, 0.04, False)
    movable[0] = False  # the speaker does not move
    for b in range(B):
        physics_step(pos, vel, lm, act, b, accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy)
        for c in range(DIM_C):
            comm[b, 0, c] = clip01(act[b, 0, c])  # the speaker's utterance; the listener is silent
        g = goal[b, 0]
        dx = pos[b, 1, 0] - lm[b, g, 0]
        dy = pos[b, 1, 1] - lm[b, g, 1]
        r = -(dx * dx + dy * dy)
        rew[b, 0] = r
        rew[b, 1] = r
    speaker_listener_obs(pos, vel, lm, goal, comm, colors, obs)


class SpeakerListenerPort(BatchPort):
    """``n_envs`` copies of simple_speaker_listener (exactly 2 agents: speaker, listener)."""

    def __init__(self, n_envs: int, n_agents: int = 2, max_cycles: int = 25) -> None:
        B = check_int("n_envs", n_envs, 1)
        check_int("n_agents", n_agents, 2, 2)
        super().__init__(B, 2, N_LANDMARKS, [DIM_C, 2 + 2 * N_LANDMARKS + DIM_C], [DIM_C, ACT_MOVE],
                         max_cycles, dim_c=DIM_C, n_goals=1)

    def _observe(self, obs):
        speaker_listener_obs(self.pos, self.vel, self.lm, self.goal, self.comm, LANDMARK_COLORS, obs)

    def _step(self, act, obs, rew):
        speaker_listener_step(self.pos, self.vel, self.lm, self.goal, self.comm, LANDMARK_COLORS, act, obs, rew)
