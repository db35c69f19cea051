"""Replay buffer as structure-of-arrays: one ring buffer per agent for obs, actions and next obs.

Capacity-sized arrays are allocated with ``np.zeros`` (pages are only touched when written),
so the default 1e6-transition buffer costs memory in proportion to what it holds. A
checkpoint stores only the filled rows plus ``pos`` and ``size``.
"""

from __future__ import annotations

import numpy as np


class ReplayBuffer:
    def __init__(self, capacity: int, obs_dims: list[int], act_dims: list[int]) -> None:
        self.capacity = int(capacity)
        self.obs_dims = list(obs_dims)
        self.act_dims = list(act_dims)
        n = len(obs_dims)
        self.obs = [np.zeros((capacity, d), np.float32) for d in obs_dims]
        self.next_obs = [np.zeros((capacity, d), np.float32) for d in obs_dims]
        self.act = [np.zeros((capacity, d), np.float32) for d in act_dims]
        self.rew = np.zeros((n, capacity), np.float32)
        self.done = np.zeros(capacity, np.float32)
        self.pos = 0
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add(self, obs, act, rew, next_obs, done: bool) -> None:
        p = self.pos
        for j in range(len(self.obs)):
            self.obs[j][p] = obs[j]
            self.act[j][p] = act[j]
            self.next_obs[j][p] = next_obs[j]
            self.rew[j, p] = rew[j]
        self.done[p] = 1.0 if done else 0.0
        self.pos = (p + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def state(self) -> dict[str, np.ndarray]:
        """The filled rows and the ring position, as arrays for a checkpoint."""
        s = self.size
        out = {"replay/pos": np.int64(self.pos), "replay/size": np.int64(s), "replay/done": self.done[:s],
               "replay/rew": self.rew[:, :s]}
        for j in range(len(self.obs)):
            out[f"replay/obs{j}"] = self.obs[j][:s]
            out[f"replay/act{j}"] = self.act[j][:s]
            out[f"replay/next_obs{j}"] = self.next_obs[j][:s]
        return out

    def load_state(self, arrays) -> None:
        s = int(arrays["replay/size"])
        if s > self.capacity:
            raise ValueError(f"replay size {s} exceeds capacity {self.capacity}")
        self.size = s
        self.pos = int(arrays["replay/pos"])
        self.done[:s] = arrays["replay/done"]
        self.rew[:, :s] = arrays["replay/rew"]
        for j in range(len(self.obs)):
            self.obs[j][:s] = arrays[f"replay/obs{j}"]
            self.act[j][:s] = arrays[f"replay/act{j}"]
            self.next_obs[j][:s] = arrays[f"replay/next_obs{j}"]
