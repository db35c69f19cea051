"""What every batched Numba port of an mpe2 scenario shares: physics, observation writes, API.

mpe2's ``World.step`` is the same for every scenario; only the bodies differ (size, whether
they move or collide, acceleration, top speed). The kernels here repeat its arithmetic in
its order, on structure-of-arrays state (float64 as mpe2 keeps it), one env ``b`` at a time:

* :func:`move_force` — continuous action to force: the action vector clipped to [0, 1] in
  float32 (as ``maddpg.env`` and mpe2's clip wrapper do), ``u = (a[2] - a[1], a[4] - a[3])``
  taken in float32, then float64 times the sensitivity (5, or the agent's ``accel``);
* :func:`add_contact_forces` — mpe2's soft contact ``F = c * d / |d| * k * log(1 + exp(-(|d| -
  dist_min) / k))`` for every colliding pair, summed per agent in mpe2's pair order (ascending
  other entity index: agents first, then landmarks); landmarks never move;
* :func:`integrate` — ``p += v dt``, ``v = v (1 - damping) + F / m dt``, then mpe2's speed
  clamp for agents with a top speed;
* :func:`put2` — one observation pair written as float32 (mpe2 builds observations in
  float64 and casts them to float32 at the end; casting each value is the same).

:class:`BatchPort` is the common Python side: sizes, state arrays, seeded masked reset,
step with shape checks, per-agent observation views (agents of one scenario may observe
different numbers of values: the ``[B, n, obs_dim]`` array is zero-padded past
``obs_dims[i]``, and an action array is ``[B, n, act_dim]`` with agent ``i`` reading its first
``act_dims[i]`` entries). Every port is built as ``cls(n_envs, n_agents, max_cycles=25)``
with ``n_agents`` counted as ``maddpg.env.make_env`` counts them.

Physics constants are mpe2's: dt 0.1, damping 0.25, contact force 100, contact margin 1e-3,
mass 1, sensitivity 5.

The kernels are inlined into each scenario's step kernel (``inline="always"``: a call per env
with a dozen array arguments cost a quarter of simple_spread's step time); the step kernels
compile with ``error_model="numpy"``, so two bodies on the same point give NaN forces as in
mpe2 rather than an exception.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from noc.base.errors import ConfigError

__all__ = [
    "ACT_MOVE", "BatchPort", "PortError", "add_contact_forces", "check_int", "clip01",
    "integrate", "logaddexp0", "move_force", "physics_step", "put2",
]

DT = 0.1
DAMPING = 0.25
CONTACT_FORCE = 1e2
CONTACT_MARGIN = 1e-3
MASS = 1.0
SENSITIVITY = 5.0
ACT_MOVE = 5  # [no_action, move_left, move_right, move_down, move_up]
LOGE2 = 0.693147180559945309417232121458176568  # numpy's NPY_LOGE2


class PortError(ConfigError):
    """Impossible sizes for a port, or action arrays of the wrong shape."""


@njit(cache=True, inline="always")
def logaddexp0(x: float) -> float:
    """numpy's ``logaddexp(0.0, x)`` (npy_logaddexp), branch for branch."""
    if x == 0.0:
        return 0.0 + LOGE2
    tmp = 0.0 - x
    if tmp > 0.0:
        return 0.0 + math.log1p(math.exp(-tmp))
    return x + math.log1p(math.exp(tmp))


@njit(cache=True, inline="always")
def clip01(a):
    """``np.clip(a, 0, 1)`` on a float32 value (keeps -0.0 and NaN as numpy does)."""
    if a < np.float32(0.0):
        return np.float32(0.0)
    if a > np.float32(1.0):
        return np.float32(1.0)
    return a


@njit(cache=True, inline="always")
def move_force(act, b, i, accel):
    """mpe2 continuous mode: u = (a2 - a1, a4 - a3) in float32, then float64 * accel."""
    a1 = clip01(act[b, i, 1])
    a2 = clip01(act[b, i, 2])
    a3 = clip01(act[b, i, 3])
    a4 = clip01(act[b, i, 4])
    ux = np.float64(np.float32(a2 - a1))
    uy = np.float64(np.float32(a4 - a3))
    # u = zeros + diff; u *= accel; p_force = u + 0.0 (no motor noise)
    return (0.0 + ux) * accel + 0.0, (0.0 + uy) * accel + 0.0


@njit(cache=True, error_model="numpy", inline="always")
def _contact(xi, yi, xj, yj, dist_min):
    """mpe2's get_collision_force on entity i (as ``entity_a``) from entity j."""
    dx = xi - xj
    dy = yi - yj
    dist = math.sqrt(dx * dx + dy * dy)
    pen = logaddexp0(-(dist - dist_min) / CONTACT_MARGIN) * CONTACT_MARGIN
    return CONTACT_FORCE * dx / dist * pen, CONTACT_FORCE * dy / dist * pen


@njit(cache=True, error_model="numpy", inline="always")
def add_contact_forces(pos, lm, b, size_a, collide_a, size_l, collide_l, fx, fy):
    """Add every colliding pair's force to the agents of env ``b``, in mpe2's order.

    mpe2 loops over entity pairs ``a < b`` (agents, then landmarks) and adds ``+F`` to ``a``
    and ``-F`` to ``b``; per agent that is ascending other index, and ``-F(j, i)`` equals
    ``F(i, j)`` bit for bit (a negated difference squares and divides the same way).
    """
    N = pos.shape[1]
    L = lm.shape[1]
    for i in range(N):
        if not collide_a[i]:
            continue
        for j in range(N):
            if j == i or not collide_a[j]:
                continue
            cx, cy = _contact(pos[b, i, 0], pos[b, i, 1], pos[b, j, 0], pos[b, j, 1], size_a[i] + size_a[j])
            fx[i] = cx + fx[i]
            fy[i] = cy + fy[i]
        for j in range(L):
            if not collide_l[j]:
                continue
            cx, cy = _contact(pos[b, i, 0], pos[b, i, 1], lm[b, j, 0], lm[b, j, 1], size_a[i] + size_l[j])
            fx[i] = cx + fx[i]
            fy[i] = cy + fy[i]


@njit(cache=True, error_model="numpy", inline="always")
def integrate(pos, vel, b, fx, fy, movable, max_speed):
    """mpe2's integrate_state for the agents of env ``b`` (``max_speed`` inf: no clamp)."""
    for i in range(pos.shape[1]):
        if not movable[i]:
            continue
        pos[b, i, 0] += vel[b, i, 0] * DT
        pos[b, i, 1] += vel[b, i, 1] * DT
        vx = vel[b, i, 0] * (1 - DAMPING)
        vy = vel[b, i, 1] * (1 - DAMPING)
        vx += (fx[i] / MASS) * DT
        vy += (fy[i] / MASS) * DT
        top = max_speed[i]
        if top < np.inf:  # mpe2 checks only agents that have a top speed
            speed = math.sqrt(vx * vx + vy * vy)
            if speed > top:
                vx = vx / speed * top
                vy = vy / speed * top
        vel[b, i, 0] = vx
        vel[b, i, 1] = vy


@njit(cache=True, error_model="numpy", inline="always")
def physics_step(pos, vel, lm, act, b, accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy):
    """One mpe2 World.step of env ``b``'s bodies: action forces, contacts, integration."""
    for i in range(pos.shape[1]):
        if movable[i]:
            fx[i], fy[i] = move_force(act, b, i, accel[i])
        else:
            fx[i] = 0.0
            fy[i] = 0.0
    add_contact_forces(pos, lm, b, size_a, collide_a, size_l, collide_l, fx, fy)
    integrate(pos, vel, b, fx, fy, movable, max_speed)


@njit(cache=True, inline="always")
def bodies(n, n_landmarks, agent_size, agents_collide, landmark_size, landmarks_collide):
    """The per-body arrays ``physics_step`` reads, for ``n`` alike agents and alike landmarks:
    ``(accel, movable, size_a, collide_a, max_speed, size_l, collide_l, fx, fy)``, every agent
    movable with mpe2's sensitivity and no top speed. A scenario with unlike bodies changes
    entries afterwards."""
    accel = np.full(n, SENSITIVITY)
    movable = np.ones(n, np.bool_)
    size_a = np.full(n, agent_size)
    collide_a = np.full(n, agents_collide)
    max_speed = np.full(n, np.inf)
    size_l = np.full(n_landmarks, landmark_size)
    collide_l = np.full(n_landmarks, landmarks_collide)
    return accel, movable, size_a, collide_a, max_speed, size_l, collide_l, np.empty(n), np.empty(n)


@njit(cache=True, inline="always")
def put2(obs, b, i, k, x, y):
    """obs[b, i, k:k+2] = (x, y) as float32; returns k + 2."""
    obs[b, i, k] = np.float32(x)
    obs[b, i, k + 1] = np.float32(y)
    return k + 2


def check_int(key: str, value, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo or (hi is not None and value > hi):
        allowed = f"exactly {lo}" if hi == lo else (f"{lo}..{hi}" if hi is not None else f"an integer >= {lo}")
        raise PortError(f"{key}: {value!r} is not allowed; allowed: {allowed}")
    return int(value)


class BatchPort:
    """``n_envs`` copies of one scenario in structure-of-arrays state.

    State: ``pos``, ``vel`` [B, n, 2] and ``lm`` [B, n_landmarks, 2] (float64), ``t`` [B] steps
    taken; scenarios with goals keep ``goal`` [B, n_goals] (landmark indices) and speaking
    scenarios ``comm`` [B, n, dim_c] (float32, the last clipped communication action).
    Subclasses define ``_observe(obs)`` and ``_step(act, obs, rew)`` (the kernels), and
    ``_draw(rng)`` where their reset draws differ from mpe2's usual one.
    """

    def __init__(self, n_envs: int, n_agents: int, n_landmarks: int, obs_dims, act_dims,
                 max_cycles: int, dim_c: int = 0, n_goals: int = 0) -> None:
        self.n_envs = n_envs
        self.n_agents = n_agents
        self.n_landmarks = n_landmarks
        self.obs_dims = [int(d) for d in obs_dims]
        self.act_dims = [int(d) for d in act_dims]
        self.obs_dim = max(self.obs_dims)
        self.act_dim = max(self.act_dims)
        self.max_cycles = check_int("max_cycles", max_cycles, 1)
        self.pos = np.zeros((n_envs, n_agents, 2))
        self.vel = np.zeros((n_envs, n_agents, 2))
        self.lm = np.zeros((n_envs, n_landmarks, 2))
        self.goal = np.zeros((n_envs, n_goals), np.int64)
        self.comm = np.zeros((n_envs, n_agents, dim_c), np.float32)
        self.t = np.zeros(n_envs, np.int64)
        self._even = len(set(self.obs_dims)) == 1

    @property
    def done(self) -> np.ndarray:
        return self.t >= self.max_cycles

    def _obs_buffer(self) -> np.ndarray:
        shape = (self.n_envs, self.n_agents, self.obs_dim)
        return np.empty(shape, np.float32) if self._even else np.zeros(shape, np.float32)

    def observe(self) -> np.ndarray:
        obs = self._obs_buffer()
        self._observe(obs)
        return obs

    def agent_obs(self, obs: np.ndarray) -> list[np.ndarray]:
        """Agent ``i``'s observations [B, obs_dims[i]] (views into ``obs``)."""
        return [obs[:, i, :d] for i, d in enumerate(self.obs_dims)]

    def reset(self, seed: int, env_mask: np.ndarray | None = None) -> np.ndarray:
        """New episodes (all envs, or those where ``env_mask``); returns every env's obs.

        The draws are mpe2's reset draws from ``Generator(PCG64(seed))`` for all envs at once
        (each kind of draw for every env, in mpe2's order of kinds); with ``n_envs == 1``
        that is exactly the state mpe2's ``reset(seed=seed)`` builds.
        """
        m = np.ones(self.n_envs, bool) if env_mask is None else np.asarray(env_mask, bool)
        if m.shape != (self.n_envs,):
            raise PortError(f"env_mask: shape {m.shape}; allowed: ({self.n_envs},)")
        for name, value in self._draw(np.random.default_rng(seed)).items():
            getattr(self, name)[m] = value[m]
        self.vel[m] = 0.0
        self.comm[m] = 0.0
        self.t[m] = 0
        return self.observe()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Advance every env one step: obs [B, n, obs_dim] float32, rewards [B, n] float64."""
        a = np.ascontiguousarray(actions, dtype=np.float32)
        want = (self.n_envs, self.n_agents, self.act_dim)
        if a.shape != want:
            raise PortError(f"actions: shape {a.shape}; allowed: {want} (float32 action vectors)")
        obs = self._obs_buffer()
        rew = np.empty((self.n_envs, self.n_agents))
        self._step(a, obs, rew)
        self.t += 1
        return obs, rew

    def _draw(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """mpe2's usual reset: each env's goal landmarks (``integers``), then every agent's and
        landmark's position (``uniform(-1, 1)``), each kind for all envs at once. Scenarios
        that draw otherwise override it."""
        B, n, L = self.n_envs, self.n_agents, self.n_landmarks
        out = {}
        if self.goal.shape[1]:
            out["goal"] = rng.integers(L, size=self.goal.shape)
        u = rng.uniform(-1.0, 1.0, size=(B, n + L, 2))
        out.update(pos=u[:, :n], lm=u[:, n:])
        return out

    def _observe(self, obs: np.ndarray) -> None:
        raise NotImplementedError

    def _step(self, act: np.ndarray, obs: np.ndarray, rew: np.ndarray) -> None:
        raise NotImplementedError
