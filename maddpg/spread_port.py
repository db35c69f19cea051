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
The kernels repeat mpe2's arithmetic in mpe2's order (float64 physics; the action
difference ``a[2] - a[1]`` taken in float32 as mpe2 takes it on a float32 action vector;
the soft contact ``logaddexp(0, x)`` evaluated as numpy evaluates it; collision forces
summed per agent in mpe2's pair order). tests/maddpg/test_spread_port.py checks this over
many random episodes, crowded ones included.

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

from noc.errors import ConfigError

__all__ = ["PortError", "SpreadPort", "SimplePort", "spread_step", "spread_obs", "simple_step", "simple_obs"]

DT = 0.1
DAMPING = 0.25
CONTACT_FORCE = 1e2
CONTACT_MARGIN = 1e-3
SENSITIVITY = 5.0
SPREAD_AGENT_SIZE = 0.15
SPREAD_LOCAL_RATIO = 0.5
DIM_C = 2
ACT_DIM = 5
LOGE2 = 0.693147180559945309417232121458176568  # numpy's NPY_LOGE2


class PortError(ConfigError):
    """Impossible sizes for the port, or action arrays of the wrong shape."""


@njit(cache=True)
def _logaddexp0(x: float) -> float:
    """numpy's ``logaddexp(0.0, x)`` (npy_logaddexp), branch for branch."""
    if x == 0.0:
        return 0.0 + LOGE2
    tmp = 0.0 - x
    if tmp > 0.0:
        return 0.0 + math.log1p(math.exp(-tmp))
    return x + math.log1p(math.exp(tmp))


@njit(cache=True)
def _force_from_action(act, b, i):
    """mpe2 continuous mode: u = (a2 - a1, a4 - a3) in float32, then float64 * sensitivity,
    on the action clipped to [0, 1] as maddpg.env clips it."""
    a1 = min(max(act[b, i, 1], np.float32(0.0)), np.float32(1.0))
    a2 = min(max(act[b, i, 2], np.float32(0.0)), np.float32(1.0))
    a3 = min(max(act[b, i, 3], np.float32(0.0)), np.float32(1.0))
    a4 = min(max(act[b, i, 4], np.float32(0.0)), np.float32(1.0))
    ux = np.float64(np.float32(a2 - a1))
    uy = np.float64(np.float32(a4 - a3))
    # u = zeros + diff; u *= sensitivity; p_force = u + 0.0 (no motor noise)
    return (0.0 + ux) * SENSITIVITY + 0.0, (0.0 + uy) * SENSITIVITY + 0.0


@njit(cache=True)
def spread_obs(pos, vel, lm, obs):
    """obs[b, i] = [vel_i, pos_i, lm_j - pos_i (all j), pos_o - pos_i (o != i), 0 (comm, o != i)]."""
    B, N = pos.shape[0], pos.shape[1]
    L = lm.shape[1]
    for b in range(B):
        for i in range(N):
            k = 0
            obs[b, i, 0] = np.float32(vel[b, i, 0])
            obs[b, i, 1] = np.float32(vel[b, i, 1])
            obs[b, i, 2] = np.float32(pos[b, i, 0])
            obs[b, i, 3] = np.float32(pos[b, i, 1])
            k = 4
            for j in range(L):
                obs[b, i, k] = np.float32(lm[b, j, 0] - pos[b, i, 0])
                obs[b, i, k + 1] = np.float32(lm[b, j, 1] - pos[b, i, 1])
                k += 2
            for o in range(N):
                if o != i:
                    obs[b, i, k] = np.float32(pos[b, o, 0] - pos[b, i, 0])
                    obs[b, i, k + 1] = np.float32(pos[b, o, 1] - pos[b, i, 1])
                    k += 2
            for o in range(N):
                if o != i:
                    for c in range(DIM_C):
                        obs[b, i, k] = np.float32(0.0)
                        k += 1


@njit(cache=True)
def spread_step(pos, vel, lm, act, obs, rew):
    """One mpe2 world step of simple_spread for every env, then observations and rewards."""
    B, N = pos.shape[0], pos.shape[1]
    L = lm.shape[1]
    fx = np.empty(N)
    fy = np.empty(N)
    dist_min = SPREAD_AGENT_SIZE + SPREAD_AGENT_SIZE
    k = CONTACT_MARGIN
    for b in range(B):
        # forces: action force, then contact forces added in mpe2's pair order (ascending
        # other index); force(i, j) = -force(j, i) holds bit for bit
        for i in range(N):
            fx[i], fy[i] = _force_from_action(act, b, i)
        for i in range(N):
            for j in range(N):
                if j == i:
                    continue
                dx = pos[b, i, 0] - pos[b, j, 0]
                dy = pos[b, i, 1] - pos[b, j, 1]
                dist = math.sqrt(dx * dx + dy * dy)
                pen = _logaddexp0(-(dist - dist_min) / k) * k
                fx[i] = CONTACT_FORCE * dx / dist * pen + fx[i]
                fy[i] = CONTACT_FORCE * dy / dist * pen + fy[i]
        # integrate (mass 1, no max speed)
        for i in range(N):
            pos[b, i, 0] += vel[b, i, 0] * DT
            pos[b, i, 1] += vel[b, i, 1] * DT
            vel[b, i, 0] = vel[b, i, 0] * (1 - DAMPING)
            vel[b, i, 1] = vel[b, i, 1] * (1 - DAMPING)
            vel[b, i, 0] += (fx[i] / 1.0) * DT
            vel[b, i, 1] += (fy[i] / 1.0) * DT
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
        obs[b, 0, 0] = np.float32(vel[b, 0, 0])
        obs[b, 0, 1] = np.float32(vel[b, 0, 1])
        obs[b, 0, 2] = np.float32(lm[b, 0, 0] - pos[b, 0, 0])
        obs[b, 0, 3] = np.float32(lm[b, 0, 1] - pos[b, 0, 1])


@njit(cache=True)
def simple_step(pos, vel, lm, act, obs, rew):
    """One mpe2 world step of simple (one agent, no collisions); reward -|pos - lm|^2."""
    for b in range(pos.shape[0]):
        fx, fy = _force_from_action(act, b, 0)
        pos[b, 0, 0] += vel[b, 0, 0] * DT
        pos[b, 0, 1] += vel[b, 0, 1] * DT
        vel[b, 0, 0] = vel[b, 0, 0] * (1 - DAMPING)
        vel[b, 0, 1] = vel[b, 0, 1] * (1 - DAMPING)
        vel[b, 0, 0] += (fx / 1.0) * DT
        vel[b, 0, 1] += (fy / 1.0) * DT
        dx = pos[b, 0, 0] - lm[b, 0, 0]
        dy = pos[b, 0, 1] - lm[b, 0, 1]
        rew[b, 0] = -(dx * dx + dy * dy)
    simple_obs(pos, vel, lm, obs)


def _check_int(key: str, value, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo or (hi is not None and value > hi):
        allowed = f"exactly {lo}" if hi == lo else f"an integer >= {lo}"
        raise PortError(f"{key}: {value!r} is not allowed; allowed: {allowed}")
    return int(value)


class _Port:
    """Batched state (``pos``, ``vel`` [B, n, 2], ``lm`` [B, n_landmarks, 2], float64; ``t`` [B])."""

    _step_kernel = None
    _obs_kernel = None

    def __init__(self, n_envs: int, n_agents: int, n_landmarks: int, obs_dim: int, max_cycles: int) -> None:
        self.n_envs = n_envs
        self.n_agents = n_agents
        self.obs_dim = obs_dim
        self.act_dim = ACT_DIM
        self.max_cycles = _check_int("max_cycles", max_cycles, 1)
        self.pos = np.zeros((n_envs, n_agents, 2))
        self.vel = np.zeros((n_envs, n_agents, 2))
        self.lm = np.zeros((n_envs, n_landmarks, 2))
        self.t = np.zeros(n_envs, np.int64)

    @property
    def done(self) -> np.ndarray:
        return self.t >= self.max_cycles

    def observe(self) -> np.ndarray:
        obs = np.empty((self.n_envs, self.n_agents, self.obs_dim), np.float32)
        type(self)._obs_kernel(self.pos, self.vel, self.lm, obs)
        return obs

    def reset(self, seed: int, env_mask: np.ndarray | None = None) -> np.ndarray:
        """New episodes (all envs, or those where ``env_mask``); returns every env's obs."""
        n, L = self.n_agents, self.lm.shape[1]
        u = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(self.n_envs, n + L, 2))
        m = np.ones(self.n_envs, bool) if env_mask is None else np.asarray(env_mask, bool)
        if m.shape != (self.n_envs,):
            raise PortError(f"env_mask: shape {m.shape}; allowed: ({self.n_envs},)")
        self.pos[m] = u[m, :n]
        self.vel[m] = 0.0
        self.lm[m] = u[m, n:]
        self.t[m] = 0
        return self.observe()

    def set_state(self, pos, vel, lm) -> None:
        """Copy a world state in (broadcast over envs); for tests and for mirroring mpe2."""
        self.pos[...] = pos
        self.vel[...] = vel
        self.lm[...] = lm

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Advance every env one step: obs [B, n, obs_dim] float32, rewards [B, n] float64."""
        a = np.ascontiguousarray(actions, dtype=np.float32)
        want = (self.n_envs, self.n_agents, ACT_DIM)
        if a.shape != want:
            raise PortError(f"actions: shape {a.shape}; allowed: {want} (float32 action vectors)")
        obs = np.empty((self.n_envs, self.n_agents, self.obs_dim), np.float32)
        rew = np.empty((self.n_envs, self.n_agents))
        type(self)._step_kernel(self.pos, self.vel, self.lm, a, obs, rew)
        self.t += 1
        return obs, rew


class SpreadPort(_Port):
    """``n_envs`` copies of simple_spread with ``n_agents`` agents and as many landmarks."""

    _step_kernel = staticmethod(spread_step)
    _obs_kernel = staticmethod(spread_obs)

    def __init__(self, n_envs: int, n_agents: int = 3, max_cycles: int = 25) -> None:
        B = _check_int("n_envs", n_envs, 1)
        n = _check_int("n_agents", n_agents, 1)
        super().__init__(B, n, n, 6 * n, max_cycles)


class SimplePort(_Port):
    """``n_envs`` copies of simple (one agent, one landmark)."""

    _step_kernel = staticmethod(simple_step)
    _obs_kernel = staticmethod(simple_obs)

    def __init__(self, n_envs: int, n_agents: int = 1, max_cycles: int = 25) -> None:
        B = _check_int("n_envs", n_envs, 1)
        _check_int("n_agents", n_agents, 1, 1)
        super().__init__(B, 1, 1, 4, max_cycles)
