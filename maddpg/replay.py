"""Replay buffer, transition-major: one ring-buffer row per transition holds what the
critics read, ``[obs_0 .. obs_{n-1}, act_0 .. act_{n-1}]`` (the concatenated critic input) in
``oa`` and ``[next_obs_0 .. next_obs_{n-1}]`` in ``next_o``; ``obs[j]``, ``act[j]`` and
``next_obs[j]`` are each agent's column views of them.

A sampled minibatch is then two contiguous row reads per sample (the critic inputs straight
from the replay) instead of three scattered rows per agent: the replay is larger than the
caches, so that is what the gather costs. Capacity-sized arrays are allocated with
``np.zeros`` (pages are only touched when written), so the default 1e6-transition buffer
costs memory in proportion to what it holds.

Transitions are numbered in the order they were added (0, 1, 2, ...); transition ``g`` sits
in row ``g % capacity`` while it is among the last ``capacity`` added. :meth:`rows` and
:meth:`put_rows` move a range of transitions by number, which is how a checkpoint saves
the buffer in append-only chunks (:mod:`maddpg.checkpoint`).
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

    def add_batch(self, obs, act, rew, next_obs, done) -> None:
        """``k`` transitions at once, in row order (the same rows as ``k`` calls of :meth:`add`):
        per agent ``obs[j]``, ``act[j]``, ``next_obs[j]`` of shape ``[k, dim]``, ``rew[k, n]``,
        ``done[k]`` (bool)."""
        k = len(done)
        src = 0
        while src < k:
            p = self.pos
            m = min(k - src, self.capacity - p)
            for j in range(len(self.obs)):
                self.obs[j][p : p + m] = obs[j][src : src + m]
                self.act[j][p : p + m] = act[j][src : src + m]
                self.next_obs[j][p : p + m] = next_obs[j][src : src + m]
            self.rew[:, p : p + m] = np.asarray(rew[src : src + m]).T
            self.done[p : p + m] = np.where(np.asarray(done[src : src + m], bool), np.float32(1.0), np.float32(0.0))
            self.pos = (p + m) % self.capacity
            self.size = min(self.size + m, self.capacity)
            src += m

    def _slots(self, start: int, stop: int, total: int) -> np.ndarray:
        if not (total - self.size <= start <= stop <= total):
            raise ValueError(f"transitions {start}..{stop} are not in the buffer (it holds {total - self.size}..{total})")
        return np.arange(start, stop, dtype=np.int64) % self.capacity

    def rows(self, start: int, stop: int, total: int) -> dict[str, np.ndarray]:
        """Transitions ``start .. stop - 1`` (numbered in order of adding; ``total`` have been
        added so far) as arrays: ``oa``, ``next_o``, ``rew`` ``[n, k]``, ``done``."""
        s = self._slots(start, stop, total)
        return {"oa": self.oa[s], "next_o": self.next_o[s], "rew": self.rew[:, s], "done": self.done[s]}

    def put_rows(self, start: int, arrays: dict[str, np.ndarray], total: int) -> None:
        """Inverse of :meth:`rows` into a buffer whose ``size`` and ``pos`` are already set for ``total``."""
        k = int(arrays["done"].shape[0])
        s = self._slots(start, start + k, total)
        want = {"oa": (k, self.oa.shape[1]), "next_o": (k, self.next_o.shape[1]), "rew": (self.rew.shape[0], k), "done": (k,)}
        for key, shape in want.items():
            if arrays[key].shape != shape:
                raise ValueError(f"array {key} has shape {arrays[key].shape}, expected {shape}")
        self.oa[s] = arrays["oa"]
        self.next_o[s] = arrays["next_o"]
        self.rew[:, s] = arrays["rew"]
        self.done[s] = arrays["done"]

    def state(self) -> dict[str, np.ndarray]:
        """The filled rows and the ring position, as arrays (the single-file checkpoint layout)."""
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
