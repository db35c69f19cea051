"""The real MPE environments (``mpe2``, PettingZoo parallel API) behind one small interface.

``make_env(name, n_agents, seed, max_cycles=25)`` returns an :class:`MpeEnv` with
``n_agents``, ``agent_names``, ``obs_dims``, ``act_dims``, ``reset(seed)`` and
``step(actions) -> (obs, rewards, done)``; observations are float32 arrays in agent order.

Actions are float32 vectors of length ``act_dim`` (5: no-op, and the four directions), as
a Gumbel-softmax actor produces them. As in openai/maddpg, the vector is not sampled to a
discrete move: it is applied as a force, through mpe2's ``continuous_actions=True`` mode
(``u_x = a[2] - a[1]``, ``u_y = a[4] - a[3]``, times the agent's sensitivity). Values are
clipped to mpe2's action box [0, 1].

Scenarios and what ``n_agents`` means (all agents, learners and opponents alike):

* ``simple_spread`` — n cooperating agents cover n landmarks (n >= 1);
* ``simple`` — one agent goes to a landmark (n = 1);
* ``simple_adversary`` — 1 adversary and n - 1 good agents (n >= 2);
* ``simple_tag`` — n - 1 chasers and 1 runner (n >= 2).
"""

from __future__ import annotations

import numpy as np

from noc.errors import HwModelsError

SCENARIOS = ("simple_spread", "simple", "simple_adversary", "simple_tag")


class EnvError(HwModelsError):
    """An unknown scenario or an impossible agent count."""


def _scenario(name: str) -> str:
    key = name.strip().lower()
    if key.endswith("_v3"):
        key = key[:-3]
    if key not in SCENARIOS:
        raise EnvError(f"unknown MPE scenario {name!r}; choose one of {', '.join(SCENARIOS)} (optionally with _v3)")
    return key


def _parallel_env(name: str, n_agents: int, max_cycles: int):
    if not isinstance(n_agents, int) or isinstance(n_agents, bool):
        raise EnvError(f"n_agents must be an integer, got {n_agents!r}")
    if max_cycles < 1:
        raise EnvError(f"max_cycles must be >= 1, got {max_cycles}")
    kw = dict(max_cycles=max_cycles, continuous_actions=True)
    if name == "simple_spread":
        if n_agents < 1:
            raise EnvError(f"simple_spread needs n_agents >= 1, got {n_agents}")
        from mpe2 import simple_spread_v3

        return simple_spread_v3.parallel_env(N=n_agents, **kw)
    if name == "simple":
        if n_agents != 1:
            raise EnvError(f"simple has exactly 1 agent, got n_agents = {n_agents}")
        from mpe2 import simple_v3

        return simple_v3.parallel_env(**kw)
    if name == "simple_adversary":
        if n_agents < 2:
            raise EnvError(f"simple_adversary needs n_agents >= 2 (1 adversary + good agents), got {n_agents}")
        from mpe2 import simple_adversary_v3

        return simple_adversary_v3.parallel_env(N=n_agents - 1, **kw)
    if n_agents < 2:
        raise EnvError(f"simple_tag needs n_agents >= 2 (chasers + 1 runner), got {n_agents}")
    from mpe2 import simple_tag_v3

    return simple_tag_v3.parallel_env(num_good=1, num_adversaries=n_agents - 1, num_obstacles=2, **kw)


class MpeEnv:
    """One mpe2 scenario, seeded, with list-in/list-out steps in a fixed agent order."""

    def __init__(self, name: str, n_agents: int, seed: int, max_cycles: int = 25) -> None:
        self.name = _scenario(name)
        self._env = _parallel_env(self.name, n_agents, max_cycles)
        self.seed = int(seed)
        self.max_cycles = int(max_cycles)
        self.agent_names = list(self._env.possible_agents)
        self.n_agents = len(self.agent_names)
        self.obs_dims = [int(self._env.observation_space(a).shape[0]) for a in self.agent_names]
        self.act_dims = [int(self._env.action_space(a).shape[0]) for a in self.agent_names]
        self._t = 0

    def reset(self, seed: int | None = None) -> list[np.ndarray]:
        obs, _ = self._env.reset(seed=self.seed if seed is None else int(seed))
        self._t = 0
        return [np.asarray(obs[a], dtype=np.float32) for a in self.agent_names]

    def step(self, actions) -> tuple[list[np.ndarray], list[float], bool]:
        if len(actions) != self.n_agents:
            raise EnvError(f"{self.name}: {len(actions)} actions for {self.n_agents} agents")
        act = {}
        for a, u, d in zip(self.agent_names, actions, self.act_dims):
            u = np.asarray(u, dtype=np.float32).reshape(-1)
            if u.shape[0] != d:
                raise EnvError(f"{self.name}: agent {a} takes {d} action values, got {u.shape[0]}")
            act[a] = np.clip(u, 0.0, 1.0)
        obs, rew, term, trunc, _ = self._env.step(act)
        self._t += 1
        done = self._t >= self.max_cycles or any(term.values()) or any(trunc.values()) or not self._env.agents
        zero = [np.zeros(d, np.float32) for d in self.obs_dims]
        return ([np.asarray(obs[a], dtype=np.float32) if a in obs else zero[i] for i, a in enumerate(self.agent_names)],
                [float(rew.get(a, 0.0)) for a in self.agent_names], bool(done))

    def close(self) -> None:
        self._env.close()


def make_env(name: str, n_agents: int, seed: int, max_cycles: int = 25) -> MpeEnv:
    """The mpe2 scenario ``name`` with ``n_agents`` agents, seeded (see the module docstring)."""
    return MpeEnv(name, n_agents, seed, max_cycles)
