"""A tiny numpy stand-in with the ``maddpg.env`` interface and MPE "simple" dynamics.

Used by the trainer tests so they run without the mpe2 wrapper: each agent is a point mass
(damping 0.25, dt 0.1, action sensitivity 5) that should reach its own landmark; the reward
is minus the squared distance, as in MPE's simple scenario. Actions are probability vectors
over MPE's five discrete moves (no-op, +x, -x, +y, -y), mapped as MPE maps them.
"""

from __future__ import annotations

import numpy as np


class StandInSimple:
    def __init__(self, n_agents: int, seed: int, max_cycles: int = 25) -> None:
        self.n_agents = n_agents
        self.obs_dims = [4] * n_agents
        self.act_dims = [5] * n_agents
        self.max_cycles = max_cycles
        self._rng = np.random.default_rng(seed)
        self.reset(seed)

    def _obs(self):
        return [np.concatenate([self.v[i], self.lm[i] - self.p[i]]).astype(np.float32) for i in range(self.n_agents)]

    def reset(self, seed=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.p = self._rng.uniform(-1, 1, (self.n_agents, 2))
        self.v = np.zeros((self.n_agents, 2))
        self.lm = self._rng.uniform(-1, 1, (self.n_agents, 2))
        self.t = 0
        return self._obs()

    def step(self, actions):
        for i, a in enumerate(actions):
            u = np.array([a[1] - a[2], a[3] - a[4]], np.float64) * 5.0
            self.v[i] = self.v[i] * 0.75 + u * 0.1
            self.p[i] = self.p[i] + self.v[i] * 0.1
        self.t += 1
        rew = [float(-np.sum((self.p[i] - self.lm[i]) ** 2)) for i in range(self.n_agents)]
        return self._obs(), rew, self.t >= self.max_cycles


def make_standin(name: str, n_agents: int, seed: int, max_cycles: int = 25) -> StandInSimple:
    return StandInSimple(n_agents, seed, max_cycles)
