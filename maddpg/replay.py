"""Replay buffer, transition-major: one ring-buffer row per transition holds what the
critics read, ``[obs_0 .. obs_{n-1}, act_0 .. act_{n-1}]`` (the concatenated critic input) in
``oa`` and ``[next_obs_0 .. next_obs_{n-1}]`` in ``next_o``; ``obs[j]``, ``act[j]`` and
``next_obs[j]`` are each agent's column views of them.

A sampled minibatch is then two contiguous row reads per sample (the critic inputs straight
from the replay) instead of three scattered rows per agent: the replay is larger than the
caches, so that is what the gather costs. Capacity-sized arrays are allocated with
``np.zeros`` (pages are only touched when written), so the default 1e6-transition buffer
costs memory in proportion to what it holds. A checkpoint stores only the filled rows plus
``pos`` and ``size``, per agent (the format does not depend on the layout).
"""

from __future__ import annotations

import numpy as np


class ReplayBuffer:
    def __init__(self, capacity: int, obs_dims: list[int], act_dims: list[int]) -> None:
        self.capacity = int(capacity)
        self.obs_dims = list(obs_dims)
        self.act_dims = list(act_dims)
        n = len(obs_dims)
        n_obs, n_act = sum(obs_dims), sum(act_dims)
        self.oa = np.zeros((capacity, n_obs + n_act), np.float32)
        self.next_o = np.zeros((capacity, n_obs), np.float32)
        o_off = np.cumsum([0, *obs_dims])
        a_off = n_obs + np.cumsum([0, *act_dims])
        self.obs = [self.oa[:, o_off[j] : o_off[j + 1]] for j in range(n)]
        self.act = [self.oa[:, a_off[j] : a_off[j + 1]] for j in range(n)]
        self.next_obs = [self.next_o[:, o_off[j] : o_off[j + 1]] for j in range(n)]
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
            out[f"replay/obs{j}"] = np.ascontiguousarray(self.obs[j][:s])
            out[f"replay/act{j}"] = np.ascontiguousarray(self.act[j][:s])
            out[f"replay/next_obs{j}"] = np.ascontiguousarray(self.next_obs[j][:s])
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
