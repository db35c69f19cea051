"""N copies of one MPE scenario stepped together, for the trainer's ``--envs N``.

Two implementations behind one interface (:class:`VecEnv`):

* :class:`PortVecEnv` — a batched Numba port (one kernel call advances all N envs). Which
  scenario has a port is a name lookup in :data:`PORTS` (``scenario -> "module:Class"``,
  imported on first use); a new port plugs in with one entry there.
* :class:`ListVecEnv` — N single environments with the ``maddpg.env`` interface (mpe2
  through Python, or any factory a caller passes, e.g. a test's stand-in), stepped one
  after the other. It is the fallback for a scenario without a port.

Both reset env ``b`` with its own seed (``reset(seeds)``), so an episode's initial state
depends only on its seed, not on N or on the backend: a port's env ``b`` is put into
exactly the state that the port gives a single env for that seed, which is mpe2's state
for ``reset(seed=...)``. Since the ports are bit-exact to mpe2, both backends give the same
observations and rewards bit for bit (tests/maddpg/test_trainer_vec.py).

A port class (``maddpg.mpe_core.BatchPort`` and its scenarios follow this) takes
``(n_envs, n_agents, max_cycles)``, has ``n_envs``, ``n_agents``, ``obs_dim`` (and per-agent
``obs_dims``), ``act_dim`` (and per-agent ``act_dims``), ``observe()``, ``reset(seed)`` and
``step(actions[B, n, act_dim]) -> (obs, rewards[B, n])`` where agent ``j`` reads the first
``act_dims[j]`` action entries and ``obs`` is ``[B, n, obs_dim]`` (agent ``j`` uses its first
``obs_dims[j]`` columns) or a list of per-agent ``[B, obs_dims[j]]`` arrays, ``done`` (per
env), and keeps its per-env state in array attributes whose first axis is the env (what
:class:`PortVecEnv` copies when it resets one env).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np

from noc.base.errors import ConfigError

__all__ = ["PORTS", "BACKENDS", "VecEnv", "PortVecEnv", "ListVecEnv", "port_class", "make_vec_env"]

# scenario -> "module:Class" of its batched Numba port
PORTS: dict[str, str] = {
    "simple_spread": "maddpg.spread_port:SpreadPort",
    "simple": "maddpg.spread_port:SimplePort",
    "simple_adversary": "maddpg.adversary_port:AdversaryPort",
    "simple_tag": "maddpg.tag_port:TagPort",
    "simple_speaker_listener": "maddpg.speaker_listener_port:SpeakerListenerPort",
    "simple_reference": "maddpg.reference_port:ReferencePort",
    "simple_push": "maddpg.push_port:PushPort",
}

BACKENDS = ("auto", "port", "mpe2")


def _base_name(name: str) -> str:
    """The scenario without mpe2's version suffix (``_v3``, ``_v4`` for simple_speaker_listener);
    a name ``maddpg.env`` does not know is returned as given."""
    from maddpg.env import scenario_name

    base = scenario_name(name)
    return name if base is None else base


def port_class(name: str) -> type | None:
    """The batched port of scenario ``name`` (mpe2's version suffix optional), or None if it has none."""
    target = PORTS.get(_base_name(name))
    if target is None:
        return None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


class VecEnv:
    """``n_envs`` environments of one scenario; per-agent lists of ``[n_envs, dim]`` arrays."""

    backend: str
    n_envs: int
    n_agents: int
    obs_dims: list[int]
    act_dims: list[int]

    def reset(self, seeds: list[int]) -> list[np.ndarray]:
        """New episodes in every env, env ``b`` seeded with ``seeds[b]``; each agent's observations."""
        raise NotImplementedError

    def step(self, actions: list[np.ndarray], active: np.ndarray | None = None
             ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """Every env one step (those where ``active``, when given; the others' results are
        meaningless): (each agent's observations, rewards ``[n_envs, n]`` float64, done ``[n_envs]``)."""
        raise NotImplementedError


class PortVecEnv(VecEnv):
    backend = "port"

    def __init__(self, cls: type, n_envs: int, n_agents: int, max_cycles: int) -> None:
        self.port = cls(n_envs, n_agents, max_cycles)
        self._one = cls(1, n_agents, max_cycles)  # resets one env at a time (its seed, its state)
        self.n_envs = int(n_envs)
        self.n_agents = int(self.port.n_agents)
        n = self.n_agents
        self.obs_dims = [int(d) for d in (getattr(self.port, "obs_dims", None) or [self.port.obs_dim] * n)]
        self.act_dims = [int(d) for d in (getattr(self.port, "act_dims", None) or [self.port.act_dim] * n)]
        # the per-env state: every array attribute whose first axis is the env
        self._state = sorted(k for k, v in vars(self.port).items()
                             if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == self.n_envs)
        # one [B, n, act_dim] action array; agent j fills its first act_dims[j] entries
        self._act = np.zeros((self.n_envs, n, int(getattr(self.port, "act_dim", max(self.act_dims)))), np.float32)

    def _split(self, obs: Any) -> list[np.ndarray]:
        if isinstance(obs, (list, tuple)):
            return [np.ascontiguousarray(o, np.float32) for o in obs]
        return [np.ascontiguousarray(obs[:, j, : self.obs_dims[j]]) for j in range(self.n_agents)]

    def reset(self, seeds: list[int]) -> list[np.ndarray]:
        if len(seeds) != self.n_envs:
            raise ValueError(f"reset: {len(seeds)} seeds for {self.n_envs} envs")
        for b, s in enumerate(seeds):
            self._one.reset(seed=int(s))
            for k in self._state:
                getattr(self.port, k)[b] = getattr(self._one, k)[0]
        return self._split(self.port.observe())

    def step(self, actions: list[np.ndarray], active: np.ndarray | None = None
             ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        for j, a in enumerate(actions):  # the port steps every env (an ended one costs as much)
            self._act[:, j, : self.act_dims[j]] = a
        obs, rew = self.port.step(self._act)
        return self._split(obs), np.asarray(rew, np.float64), np.asarray(self.port.done, bool).copy()


class ListVecEnv(VecEnv):
    backend = "mpe2"

    def __init__(self, factory: Callable[..., Any], name: str, n_envs: int, n_agents: int, seed: int,
                 max_cycles: int, backend: str = "mpe2") -> None:
        self.envs = [factory(name, n_agents, seed, max_cycles) for _ in range(int(n_envs))]
        e = self.envs[0]
        self.backend = backend
        self.n_envs = int(n_envs)
        self.n_agents = int(e.n_agents)
        self.obs_dims = [int(d) for d in e.obs_dims]
        self.act_dims = [int(d) for d in e.act_dims]

    def _stack(self, per_env: list[list[np.ndarray]]) -> list[np.ndarray]:
        return [np.stack([np.asarray(o[j], np.float32) for o in per_env]) for j in range(self.n_agents)]

    def reset(self, seeds: list[int]) -> list[np.ndarray]:
        if len(seeds) != self.n_envs:
            raise ValueError(f"reset: {len(seeds)} seeds for {self.n_envs} envs")
        return self._stack([env.reset(seed=int(s)) for env, s in zip(self.envs, seeds)])

    def step(self, actions: list[np.ndarray], active: np.ndarray | None = None
             ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        obs, rew, done = [], np.zeros((self.n_envs, self.n_agents)), np.ones(self.n_envs, bool)
        for b, env in enumerate(self.envs):
            if active is not None and not active[b]:  # its episode is over: zeros in its place
                obs.append([np.zeros(d, np.float32) for d in self.obs_dims])
                continue
            o, r, d = env.step([a[b] for a in actions])
            obs.append(o)
            rew[b] = r
            done[b] = d
        return self._stack(obs), rew, done


def _mpe2_factory(name: str, n_agents: int, seed: int, max_cycles: int):
    from maddpg.env import make_env

    return make_env(name, n_agents, seed, max_cycles=max_cycles)


def make_vec_env(name: str, n_envs: int, n_agents: int, seed: int, max_cycles: int, backend: str = "auto",
                 factory: Callable[..., Any] | None = None) -> VecEnv:
    """``n_envs`` copies of scenario ``name``.

    ``factory`` (a ``maddpg.env.make_env``-like callable) overrides the backend: N of its envs.
    Otherwise ``backend`` ``"auto"`` takes the scenario's port when :data:`PORTS` has one and
    mpe2 when not; ``"port"`` insists on a port; ``"mpe2"`` always uses mpe2."""
    if factory is not None:
        return ListVecEnv(factory, name, n_envs, n_agents, seed, max_cycles, backend="custom")
    if backend not in BACKENDS:
        raise ConfigError(f"env_backend: {backend!r} is not allowed; allowed: {', '.join(BACKENDS)}")
    cls = port_class(name) if backend != "mpe2" else None
    if cls is None and backend == "port":
        raise ConfigError(f"env_backend: 'port' but {name!r} has no batched port; allowed: auto or mpe2 "
                          f"(ports exist for {', '.join(sorted(PORTS))})")
    if cls is None:
        return ListVecEnv(_mpe2_factory, name, n_envs, n_agents, seed, max_cycles)
    from maddpg.env import SCENARIOS

    if _base_name(name) in SCENARIOS:  # mpe2's agent-count rule, in its wording (the port checks its own too)
        _, lo, hi, _ = SCENARIOS[_base_name(name)]
        if n_agents < lo or (hi is not None and n_agents > hi):
            allowed = f"exactly {lo}" if hi == lo else (f"{lo}..{hi}" if hi is not None else f"an integer >= {lo}")
            raise ConfigError(f"n_agents: {n_agents} agents is impossible for {_base_name(name)}; allowed: {allowed}")
    return PortVecEnv(cls, n_envs, n_agents, max_cycles)
