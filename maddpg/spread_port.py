"""A batched Numba port of mpe2's simple_spread (and simple), bit-exact to mpe2.

``B`` independent copies of one scenario live in structure-of-arrays state (float64, as
mpe2 keeps it); one ``step`` advances all of them with one ``[B, n_agents, 5]`` float32
action array::

    port = SpreadPort(n_envs=1024, n_agents=3)           # or SimplePort(n_envs=1024)
    obs = port.reset(seed=0)                              # [B, n, obs_dim] float32
    obs, rewards = port.step(actions)                     # rewards [B, n] float64
    port.t, port.done                                     # steps taken, t >= max_cycles

What "exact" means here: for the same world state and the same action vectors, the
observations are the same float32 values and the rewards the same float64 values that
``maddpg.env.make_env(...)`` (mpe2 1.1, ``continuous_actions=True``) returns, bit for bit.
The physics (action force, soft contacts in mpe2's pair order, integration) is the shared
code of :mod:`maddpg.mpe_core`; this module adds the scenarios' observations and rewards.
tests/maddpg/test_spread_port.py checks this over many random episodes, crowded ones
included.

``reset(seed)`` draws initial positions as mpe2 does (``Generator(PCG64(seed))``,
``uniform(-1, 1)`` per agent then per landmark); with ``n_envs == 1`` it gives exactly the
state mpe2 gives for ``reset(seed=seed)``. Environment ``b`` of a batch takes the ``b``-th
block of that stream. Physics constants are mpe2's: dt 0.1, damping 0.25, contact force
100, contact margin 1e-3, sensitivity 5, agent size 0.15 (spread), local_ratio 0.5.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from maddpg.mpe_core import BatchPort, PortError, check_int, logaddexp0, bodies, physics_step, put2

__all__ = ["PortError", "SpreadPort", "SimplePort", "spread_step", "spread_obs", "simple_step", "simple_obs"]

SPREAD_AGENT_SIZE = 0.15
SPREAD_LOCAL_RATIO = 0.5
DIM_C = 2
ACT_DIM = 5
_logaddexp0 = logaddexp0  # the name tests/maddpg/test_spread_port.py checks against numpy
_check_int = check_int


@njit(cache=True)
def spread_obs(pos, vel, lm, obs):
    """obs[b, i] = [vel_i, pos_i, lm_j - pos_i (all j), pos_o - pos_i (o != i), 0 (comm, o != i)]."""
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
            for o in range(N):
                if o != i:
                    for c in range(DIM_C):
                        obs[b, i, k] = np.float32(0.0)
                        k += 1


@njit(cache=True, error_model="numpy")
def spread_step(pos, vel, lm, act, obs, rew):
    """One mpe2 world step of simple_spread for every env, then observations and rewards."""
    B, N = pos.shape[0], pos.shape[1]
    L = lm.shape[1]
    accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy = bodies(N, L, SPREAD_AGENT_SIZE, True, 0.05, False)  # spread's landmarks do not collide
    dist_min = SPREAD_AGENT_SIZE + SPREAD_AGENT_SIZE
    for b in range(B):
        physics_step(pos, vel, lm, act, b, accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy)
        # rewards: shared "-sum of each landmark's nearest-agent distance", own collisions
        g = 0.0
        for j in range(L):
            m = np.inf
            for a in range(N):
                dx = pos[b, a, 0] - lm[b, j, 0]
                dy = pos[b, a, 1] - lm[b, j, 1]
                d = math.sqrt(dx * dx + dy * dy)
                if d < m:
                    m = d
            g = g - m
        for i in range(N):
            r = 0.0
            for a in range(N):
                if a == i:
                    continue
                dx = pos[b, a, 0] - pos[b, i, 0]
                dy = pos[b, a, 1] - pos[b, i, 1]
                if math.sqrt(dx * dx + dy * dy) < dist_min:
                    r -= 1.0
            rew[b, i] = g * (1 - SPREAD_LOCAL_RATIO) + r * SPREAD_LOCAL_RATIO
    spread_obs(pos, vel, lm, obs)


@njit(cache=True)
def simple_obs(pos, vel, lm, obs):
    """obs[b, 0] = [vel, lm - pos]."""
    for b in range(pos.shape[0]):
        k = put2(obs, b, 0, 0, vel[b, 0, 0], vel[b, 0, 1])
        put2(obs, b, 0, k, lm[b, 0, 0] - pos[b, 0, 0], lm[b, 0, 1] - pos[b, 0, 1])


@njit(cache=True, error_model="numpy")
def simple_step(pos, vel, lm, act, obs, rew):
    """One mpe2 world step of simple (one agent, no collisions); reward -|pos - lm|^2."""
    accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy = bodies(1, 1, 0.05, False, 0.05, False)
    for b in range(pos.shape[0]):
        physics_step(pos, vel, lm, act, b, accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy)
        dx = pos[b, 0, 0] - lm[b, 0, 0]
        dy = pos[b, 0, 1] - lm[b, 0, 1]
        rew[b, 0] = -(dx * dx + dy * dy)
    simple_obs(pos, vel, lm, obs)


class _Port(BatchPort):
    """Agents and landmarks drawn ``uniform(-1, 1)``; kernels take (pos, vel, lm)."""

    _step_kernel = None
    _obs_kernel = None

    def __init__(self, n_envs: int, n_agents: int, n_landmarks: int, obs_dim: int, max_cycles: int) -> None:
        super().__init__(n_envs, n_agents, n_landmarks, [obs_dim] * n_agents, [ACT_DIM] * n_agents, max_cycles)

    def set_state(self, pos, vel, lm) -> None:
        """Copy a world state in (broadcast over envs); for tests and for mirroring mpe2."""
        self.pos[...] = pos
        self.vel[...] = vel
        self.lm[...] = lm

    def _observe(self, obs):
        type(self)._obs_kernel(self.pos, self.vel, self.lm, obs)

    def _step(self, act, obs, rew):
        type(self)._step_kernel(self.pos, self.vel, self.lm, act, obs, rew)


class SpreadPort(_Port):
    """``n_envs`` copies of simple_spread with ``n_agents`` agents and as many landmarks."""

    _step_kernel = staticmethod(spread_step)
    _obs_kernel = staticmethod(spread_obs)

    def __init__(self, n_envs: int, n_agents: int = 3, max_cycles: int = 25) -> None:
        B = check_int("n_envs", n_envs, 1)
        n = check_int("n_agents", n_agents, 1)
        super().__init__(B, n, n, 6 * n, max_cycles)


class SimplePort(_Port):
    """``n_envs`` copies of simple (one agent, one landmark)."""

    _step_kernel = staticmethod(simple_step)
    _obs_kernel = staticmethod(simple_obs)

    def __init__(self, n_envs: int, n_agents: int = 1, max_cycles: int = 25) -> None:
        B = check_int("n_envs", n_envs, 1)
        check_int("n_agents", n_agents, 1, 1)
        super().__init__(B, 1, 1, 4, max_cycles)
