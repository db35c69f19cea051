"""MADDPG (Lowe et al., 2017) on the kernels of :mod:`maddpg.kernels`.

As published and as in openai/maddpg: every agent has a decentralised actor (its own
observation in, logits of its discrete actions out, Gumbel-softmax sample as the action)
and a centralised critic that sees all agents' observations and actions. Defaults are
openai/maddpg's: Adam lr 1e-2, gamma 0.95, batch 1024, two 64-unit ReLU layers, tau 0.01,
a 1e6 replay, learning starts once the replay holds batch x episode-length transitions, one
update (every agent: critic step, actor step, soft target updates) every 100 environment
steps, per-tensor gradient clip 0.5, 25-step episodes, actor regulariser 1e-3 * mean(logits^2).

Each agent samples its own batch indices (as openai/maddpg does); time-limit ends of
episodes are not stored as terminal. All randomness — initial weights, exploration noise,
batch indices, the updates' Gumbel noise — comes from one seeded ``numpy`` generator whose
state is checkpointed (an update's indices and Gumbel uniforms are drawn by the counter-based
kernels :func:`maddpg.kernels.randint_fill` / :func:`~maddpg.kernels.uniform_fill` keyed by
two draws of it); episode ``e`` resets its environment with seed ``seed * 1_000_003 + e`` so
an environment needs no saved state. Same seed (and ``n_envs``), same result, byte for byte,
with or without a resume.

Vectorised environments (``n_envs = N``): episodes run in rounds of N, env ``b`` of the
round that starts at episode ``e`` playing episode ``e + b``. Every step all N actors' rows
act in one call, the N transitions enter the replay in env order, and the update rule counts
environment steps of all envs: an update runs each time the number of transitions added
crosses a multiple of ``update_every_steps`` (once the replay holds ``learning_starts``),
exactly as if the N transitions had been added one at a time — except that the updates a
vector step triggers run after all N of its transitions are in the replay. With N = 1 this
is openai/maddpg's loop, unchanged.

Threads: acting runs serial kernels (a few rows; it never starts Numba's thread pool). An
update's minibatch passes run in ``batch_parts`` parts on Numba's threads
(:mod:`maddpg.batch_parts`) when the minibatch is large enough for that to pay
(:data:`PARALLEL_MIN_BATCH`), otherwise on the calling thread; results depend on
``batch_parts`` only, never on the thread count. Importing this module sets
``OMP_WAIT_POLICY=PASSIVE`` unless the environment already sets it, so the pool's idle
threads sleep instead of spinning (it must be set before the pool starts).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Optional

import numpy as np
from numba import njit
from pydantic import Field, model_validator

from maddpg import batch_parts as BP
from maddpg import kernels as K
from maddpg.checkpoint import (CheckpointError, load_chunk, load_npz, remove_stale_chunks, save_chunk,
                               save_npz_atomic)
from maddpg.kernels import _wide_vectors
from maddpg.kernels_mlp import MLP
from maddpg.replay import ReplayBuffer
from maddpg.vec_env import VecEnv, make_vec_env
from noc.base.config import SEED_RULE, Seed, StrictModel, finite
from noc.base.errors import ConfigError

U_MIN, U_MAX = K.U_MIN, K.U_MAX  # the Gumbel-softmax kernel clips uniform samples into [U_MIN, U_MAX]

# below this minibatch size an update's passes run on the calling thread: measured at 3
# agents on 2 shared cores, batch 256 updated in 17 ms on one thread and 24 ms on two
# (passive wait), batch 1024 in 53 ms on one and 46 ms on two
PARALLEL_MIN_BATCH = 512


def _libgomp_loaded() -> bool:
    try:
        with open("/proc/self/maps") as f:
            return "libgomp" in f.read()
    except OSError:  # not Linux: cannot tell
        return False


def _passive_wait_policy() -> bool:
    """Ask OpenMP's idle threads to sleep (``OMP_WAIT_POLICY=PASSIVE``) unless the user chose a
    policy; True if the policy in force is passive (set before the runtime was loaded)."""
    if "OMP_WAIT_POLICY" in os.environ:
        return os.environ["OMP_WAIT_POLICY"].strip().upper() == "PASSIVE"
    loaded = _libgomp_loaded()
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return not loaded


PASSIVE_WAIT = _passive_wait_policy()


class MADDPGConfig(StrictModel):
    """Everything that determines a training run except how many episodes it lasts."""

    env: str = Field("simple_spread", description="MPE scenario (simple_spread, simple, simple_adversary, simple_tag, "
                     "simple_speaker_listener, simple_reference, simple_push)")
    n_agents: int = Field(3, ge=1, le=64)
    seed: Seed = Field(0, description=f"seed of everything random: {SEED_RULE}")
    max_cycles: int = Field(25, ge=1, description="environment steps per episode")
    n_envs: int = Field(1, ge=1, le=65536, description="environments stepped together (episodes run in rounds of n_envs)")
    lr: Annotated[float, finite(1e-9, 10.0)] = 1e-2
    gamma: Annotated[float, finite(0.0, 1.0)] = 0.95
    batch_size: int = Field(1024, ge=1, le=1 << 20)
    hidden_units: int = Field(64, ge=1)
    hidden_layers: int = Field(2, ge=1)
    tau: Annotated[float, finite(0.0, 1.0, lo_open=True)] = 0.01
    buffer_size: int = Field(1_000_000, ge=1)
    learning_starts: Optional[int] = Field(None, ge=1, description="replay size before updates; None: batch_size * max_cycles")
    update_every_steps: int = Field(100, ge=1)
    grad_clip: Annotated[float, finite(0.0, 1e6)] = Field(0.5, description="per-tensor gradient-norm clip; 0: off")
    actor_reg: Annotated[float, finite(0.0, 1e6)] = Field(1e-3, description="coefficient of mean(logits^2) in the actor loss")
    temperature: Annotated[float, finite(1e-6, 1e6)] = Field(1.0, description="Gumbel-softmax temperature")
    adam_beta1: Annotated[float, finite(0.0, 0.999999)] = 0.9
    adam_beta2: Annotated[float, finite(0.0, 0.999999)] = 0.999
    adam_eps: Annotated[float, finite(1e-12, 1.0)] = 1e-8
    tile_b: int = Field(64, ge=1, description="batch rows per parallel tile of the kernels")
    batch_parts: int = Field(2, ge=1, le=64, description="row ranges a minibatch is split into, run in parallel "
                             "(Numba threads); weight gradients are the parts' in-order sum, so results depend "
                             "on this, not on the thread count")
    unroll: int = Field(8, ge=1, description="innermost unroll factor (loop-nest data)")
    fixed_point_bits: int = Field(0, ge=0, le=32, description="total bits of the Q-format datapath; 0: float32")
    fixed_point_frac_bits: int = Field(0, ge=0, le=31)
    critic: Literal["global", "local"] = Field("global", description="global: MADDPG, each critic sees every agent's "
                                                "observation and action; local: DDPG, only its own agent's")
    critic_of: Optional[tuple[Literal["global", "local"], ...]] = Field(
        None, description="per agent, in agent order, overriding critic (the paper's crossed pairings, e.g. "
        "MADDPG agents against DDPG adversaries); None: every agent's is critic")

    @model_validator(mode="after")
    def _check(self) -> "MADDPGConfig":
        if self.fixed_point_bits and self.fixed_point_frac_bits >= self.fixed_point_bits:
            raise ValueError(f"fixed_point_frac_bits ({self.fixed_point_frac_bits}) must be < fixed_point_bits ({self.fixed_point_bits})")
        if self.critic_of is not None and len(self.critic_of) != self.n_agents:
            raise ValueError(f"critic_of: {len(self.critic_of)} entries for {self.n_agents} agents; allowed: one "
                             f"'global' or 'local' per agent")
        return self

    def critic_kind(self, i: int) -> str:
        """Agent ``i``'s critic: ``"global"`` (MADDPG) or ``"local"`` (DDPG)."""
        return self.critic if self.critic_of is None else self.critic_of[i]

    @property
    def learning_starts_samples(self) -> int:
        return self.learning_starts if self.learning_starts is not None else self.batch_size * self.max_cycles

    @property
    def first_update_step(self) -> int | None:
        """The environment step (all envs counted) of the first update, or None if the replay
        can never hold ``learning_starts`` transitions."""
        ls = self.learning_starts_samples
        if ls > self.buffer_size:
            return None
        u = self.update_every_steps
        return -(-ls // u) * u


@dataclass(frozen=True)
class EpisodeRecord:
    episode: int
    reward: float  # summed over agents and steps (openai/maddpg's episode reward)
    env_steps: int
    updates: int
    agent_rewards: tuple[float, ...] = ()  # each agent's return (summed over steps)


def _default_env_factory(name: str, n_agents: int, seed: int, max_cycles: int):
    from maddpg.env import make_env  # the mpe2 wrapper; imported late (it is a separate module)

    return make_env(name, n_agents, seed, max_cycles=max_cycles)


EnvFactory = Callable[[str, int, int, int], Any]

_SKW = dict(cache=True, fastmath=True, boundscheck=False, error_model="numpy", nogil=True)


@njit(**_SKW)
def act_rows(x, params, seg_start, wt, acts, u, out, temperature, tile_b, q_frac, q_bits, lanes):
    """Acting, serial: an actor's forward pass over the rows of ``x`` (one per env) and the
    Gumbel-softmax sample of its logits with uniforms ``u`` into ``out``. The same arithmetic
    as :func:`maddpg.batch_parts.forward` in one part; no parallel region, so acting never
    wakes Numba's thread pool."""
    _wide_vectors()
    BP._forward_rows(x, params, seg_start, wt, acts, 0, 0, x.shape[0], tile_b, q_frac, q_bits, lanes)
    K.gumbel_softmax(acts[len(acts) - 1], u, out, temperature, 1)


class _Agent:
    def __init__(self, i: int, obs_dims: list[int], act_dims: list[int], cfg: MADDPGConfig, lanes: int) -> None:
        tiling = K.Tiling(cfg.tile_b, cfg.unroll)
        q = (cfg.fixed_point_frac_bits, cfg.fixed_point_bits)
        hidden = [cfg.hidden_units] * cfg.hidden_layers
        a_sizes = [obs_dims[i], *hidden, act_dims[i]]
        c_sizes = [critic_inputs(cfg.critic_kind(i), i, obs_dims, act_dims), *hidden, 1]
        parts = cfg.batch_parts
        self.actor = MLP(a_sizes, tiling, *q, parts=parts, lanes=lanes)
        self.critic = MLP(c_sizes, tiling, *q, parts=parts, lanes=lanes)
        self.actor_t = MLP(a_sizes, tiling, *q, parts=parts, lanes=lanes)
        self.critic_t = MLP(c_sizes, tiling, *q, parts=parts, lanes=lanes)
        self.opt = {}
        for name, net in (("actor", self.actor), ("critic", self.critic)):
            self.opt[name] = [K.aligned_zeros(net.n_params), K.aligned_zeros(net.n_params), 0]

    def nets(self) -> dict[str, MLP]:
        return {"actor": self.actor, "critic": self.critic, "actor_t": self.actor_t, "critic_t": self.critic_t}


def critic_inputs(critic: str, i: int, obs_dims: list[int], act_dims: list[int]) -> int:
    """Width of agent ``i``'s critic input: every agent's observation and action (MADDPG's
    centralised critic, ``critic="global"``) or only agent ``i``'s (DDPG, ``"local"``)."""
    if critic == "local":
        return obs_dims[i] + act_dims[i]
    return sum(obs_dims) + sum(act_dims)


class _Minibatch:
    """One agent's sampled minibatch: indices, the critic inputs (sampled ``[obs, actions]`` and
    ``[next obs, target actions]``), the actors' inputs as column views of them, the Gumbel
    uniforms and the sampled actions (target actors' and the updated actor's)."""

    def __init__(self, B: int, obs_dims: list[int], act_dims: list[int]) -> None:
        n_in = sum(obs_dims) + sum(act_dims)
        obs_off = np.cumsum([0, *obs_dims])
        self.idx = np.zeros(B, np.int64)
        self.c_in = K.aligned_zeros((B, n_in))
        self.c_in_next = K.aligned_zeros((B, n_in))
        # the actors' inputs are column views of the critic inputs (the kernels take strided rows)
        self.obs = [self.c_in[:, o : o + d] for o, d in zip(obs_off, obs_dims)]
        self.nobs = [self.c_in_next[:, o : o + d] for o, d in zip(obs_off, obs_dims)]
        self.act = [K.aligned_zeros((B, d)) for d in act_dims]  # the target actors' samples
        self.pi = [K.aligned_zeros((B, d)) for d in act_dims]  # each actor's own sample (its update's)
        # one agent's update draws all its uniforms at once: every agent's target-actor
        # sample, then its own actor's (the same stream as one draw per buffer, in order)
        n_u = sum(act_dims)
        self.u_all = K.aligned_zeros(B * (n_u + max(act_dims)))
        u_off = np.cumsum([0, *act_dims]) * B
        self.u = [self.u_all[u_off[j] : u_off[j + 1]].reshape(B, d) for j, d in enumerate(act_dims)]
        self.u_actor = [self.u_all[B * n_u : B * (n_u + d)].reshape(B, d) for d in act_dims]
        # DDPG's local critics: agent i's own [obs_i, a_i] and [next obs_i, mu'_i(next obs_i)]
        self.loc_in = [K.aligned_zeros((B, o + a)) for o, a in zip(obs_dims, act_dims)]
        self.loc_in_next = [K.aligned_zeros((B, o + a)) for o, a in zip(obs_dims, act_dims)]


class _UpdateStats:
    """Per-agent sums over the updates of one logging interval (float64; checkpointed)."""

    FIELDS = ("critic_loss", "actor_loss", "q_sum", "q_sq", "q_min", "q_max")

    def __init__(self, n: int) -> None:
        self.n = n
        self.reset()

    def reset(self) -> None:
        self.updates = 0
        self.rows = 0  # minibatch rows per agent seen (for the Q mean and spread)
        self.a = {k: np.zeros(self.n) for k in self.FIELDS}
        self.a["q_min"][:] = np.inf
        self.a["q_max"][:] = -np.inf

    def arrays(self) -> dict[str, np.ndarray]:
        out = {f"log/{k}": v.copy() for k, v in self.a.items()}
        out["log/counts"] = np.array([self.updates, self.rows], np.int64)
        return out

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        for k in self.FIELDS:
            _copy_into(self.a[k], arrays[f"log/{k}"], f"log/{k}")
        self.updates, self.rows = (int(v) for v in arrays["log/counts"])


class MADDPG:
    """A MADDPG learner over ``cfg.n_envs`` environments of one MPE scenario.

    ``env_factory`` (``make_env``-like: ``(name, n_agents, seed, max_cycles) -> env`` with the
    ``maddpg.env`` interface) replaces the environments, e.g. by a test's stand-in; without
    it ``env_backend`` chooses (:func:`maddpg.vec_env.make_vec_env`: ``"auto"`` = the
    scenario's Numba port if it has one, else mpe2). ``threads``: Numba threads an update
    may use (None: all of ``NUMBA_NUM_THREADS``); results do not depend on it."""

    def __init__(self, config: MADDPGConfig, env_factory: EnvFactory | None = None, env_backend: str = "auto",
                 threads: int | None = None, lanes: int | None = None) -> None:
        self.cfg = cfg = config
        self.lanes = K.host_lanes() if lanes is None else int(lanes)  # register blocking; results do not depend on it
        self.venv: VecEnv = make_vec_env(cfg.env, cfg.n_envs, cfg.n_agents, cfg.seed, cfg.max_cycles, env_backend,
                                         env_factory)
        self.n_envs = cfg.n_envs
        self.n = self.venv.n_agents
        self.obs_dims = [int(d) for d in self.venv.obs_dims]
        self.act_dims = [int(d) for d in self.venv.act_dims]
        self.rng = np.random.default_rng(cfg.seed)
        self.agents = [_Agent(i, self.obs_dims, self.act_dims, cfg, self.lanes) for i in range(self.n)]
        for ag in self.agents:
            ag.actor.init_glorot(self.rng)
            ag.critic.init_glorot(self.rng)
            ag.actor_t.params[:] = ag.actor.params
            ag.critic_t.params[:] = ag.critic.params
        self.replay = ReplayBuffer(cfg.buffer_size, self.obs_dims, self.act_dims)
        self.episode = 0
        self.env_steps = 0
        self.updates = 0
        self.rewards: list[float] = []
        self.agent_rewards: list[list[float]] = []  # per episode, each agent's return
        self.log_rows: list[dict[str, float]] = []
        self.stats = _UpdateStats(self.n)
        self.threads = threads
        self._q = (cfg.fixed_point_frac_bits, cfg.fixed_point_bits)
        self._chunks: list[tuple[int, int]] = []  # replay chunks written next to _chunks_for
        self._chunks_for: Path | None = None
        self.save_stats = [0, 0.0, 0]  # checkpoints written, seconds spent, bytes written
        self._mark_interval()
        self._alloc(cfg.batch_size)

    # ---- buffers --------------------------------------------------------------------------

    def _alloc(self, B: int) -> None:
        self.act_off = [int(v) for v in sum(self.obs_dims) + np.cumsum([0, *self.act_dims])[:-1]]
        self.mb = _Minibatch(B, self.obs_dims, self.act_dims)
        self.b_dlogits = [K.aligned_zeros((B, d)) for d in self.act_dims]
        self.dq = K.aligned_zeros((B, 1))
        self._act_bufs: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}

    def _act_buffers(self, rows: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        bufs = self._act_bufs.get(rows)
        if bufs is None:
            bufs = self._act_bufs[rows] = ([np.zeros((rows, d), np.float32) for d in self.act_dims],
                                           [np.zeros((rows, d), np.float32) for d in self.act_dims])
        return bufs

    # ---- acting ---------------------------------------------------------------------------

    def act(self, obs: list[np.ndarray], deterministic: bool = False) -> list[np.ndarray]:
        """Each actor's action for its observations: a vector per agent (one env) or
        ``[rows, act_dim]`` per agent (one row per env). Exploration: a Gumbel-softmax sample,
        uniforms drawn from the run's generator agent by agent; ``deterministic``: the
        softmax of the logits (Gumbel noise 0; draws nothing)."""
        single = np.ndim(obs[0]) == 1
        rows = 1 if single else int(np.shape(obs[0])[0])
        u_bufs, out_bufs = self._act_buffers(rows)
        out = []
        for j, ag in enumerate(self.agents):
            x = np.ascontiguousarray(obs[j], np.float32).reshape(rows, -1)
            u = u_bufs[j]
            if deterministic:
                u.fill(np.float32(np.exp(-1.0)))  # -log(-log u) = 0: no noise
            else:
                self.rng.random(out=u, dtype=np.float32)
            net = ag.actor
            act_rows(x, net.params, net.seg_start, net.WT, net.workspace(rows).acts, u, out_bufs[j],
                     float(self.cfg.temperature), net.tiling.tile_b, net.q_frac, net.q_bits, net.lanes)
            out.append(out_bufs[j][0].copy() if single else out_bufs[j].copy())
        return out

    # ---- learning -------------------------------------------------------------------------

    def _adam(self, ag: _Agent, name: str, net: MLP) -> None:
        st = ag.opt[name]
        st[2] += 1
        c = self.cfg
        K.adam_clip(net.params, net.grad, st[0], st[1], net.seg_start, st[2], c.lr, c.adam_beta1, c.adam_beta2,
                    c.adam_eps, c.grad_clip, *self._q)

    def _sample(self, i: int, mb: "_Minibatch") -> None:
        """Agent ``i``'s minibatch indices and Gumbel uniforms, and the sampled transitions."""
        c = self.cfg
        B = c.batch_size
        rp = self.replay
        # minibatch indices and Gumbel uniforms: the counter-based generator, keyed by two
        # draws of the seeded generator (so its checkpointed state still determines them)
        key_idx, key_u = self.rng.integers(0, 2**64 - 1, size=2, dtype=np.uint64, endpoint=True)
        K.randint_fill(key_idx, rp.size, mb.idx)
        K.uniform_fill(key_u, mb.u_all[: B * (sum(self.act_dims) + self.act_dims[i])])
        # the sampled rows are the critics' inputs (the replay stores them in that layout)
        BP.gather_transitions(rp.oa, rp.next_o, mb.idx, mb.c_in, mb.c_in_next, BP.effective_parts(c.batch_parts, B))

    def update_threads(self) -> int:
        """Numba threads an update uses: ``threads`` when given, else 1 below
        :data:`PARALLEL_MIN_BATCH` rows and Numba's current count (``numba.set_num_threads``,
        default ``NUMBA_NUM_THREADS``) from there; never more than ``batch_parts`` (a part is
        the unit of parallel work) or ``NUMBA_NUM_THREADS``."""
        import numba
        from numba.np.ufunc import parallel

        if self.threads is None:
            # (asking for the count starts the pool: before it started, the count is the default)
            started = getattr(parallel, "_is_initialized", True)
            current = numba.get_num_threads() if started else numba.config.NUMBA_NUM_THREADS
            want = 1 if self.cfg.batch_size < PARALLEL_MIN_BATCH else current
        else:
            want = self.threads
        return max(1, min(int(want), self.cfg.batch_parts, numba.config.NUMBA_NUM_THREADS))

    def update(self) -> float:
        """One MADDPG update of every agent (critic, actor, targets); returns the mean critic loss.

        The agents update one after the other, as published; each pass over a minibatch runs
        its ``batch_parts`` row ranges in parallel (:mod:`maddpg.batch_parts`) on
        :meth:`update_threads` threads."""
        import numba

        nt = self.update_threads()
        prev = numba.get_num_threads()
        if nt != prev:
            numba.set_num_threads(nt)
        try:
            losses = 0.0
            mb = self.mb
            c = self.cfg
            for i, ag in enumerate(self.agents):
                local = c.critic_kind(i) == "local"
                self._sample(i, mb)
                for j in ([i] if local else range(self.n)):  # the target actors' samples, into the next-state
                    self.agents[j].actor_t.forward_sample(mb.nobs[j], mb.u[j], mb.act[j], c.temperature,  # critic input
                                                          into=(mb.c_in_next, self.act_off[j]))
                if local:  # DDPG: agent i's own observation and action columns only
                    self._local_inputs(i, mb)
                x, _, _ = self._critic_in(i, mb)
                ag.critic.forward(x)  # Q(x, a) on the sampled actions
                ag.actor.forward_sample(mb.obs[i], mb.u_actor[i], mb.pi[i], c.temperature)
                losses += self._update_agent(i, ag, mb)
        finally:
            if nt != prev:
                numba.set_num_threads(prev)
        self.updates += 1
        self.stats.updates += 1
        self.stats.rows += self.cfg.batch_size
        return losses / self.n

    def _local_inputs(self, i: int, mb: "_Minibatch") -> None:
        """Copy agent ``i``'s observation and action columns of the sampled critic inputs into
        its local critic's inputs (``[o_i, a_i]`` and ``[o'_i, mu'_i(o'_i)]``)."""
        o, a0, d = self.obs_dims[i], self.act_off[i], self.act_dims[i]
        for src, dst in ((mb.c_in, mb.loc_in[i]), (mb.c_in_next, mb.loc_in_next[i])):
            o0 = sum(self.obs_dims[:i])
            K.put_columns(src[:, o0 : o0 + o], dst, 0)
            K.put_columns(src[:, a0 : a0 + d], dst, o)

    def _critic_in(self, i: int, mb: "_Minibatch") -> tuple[np.ndarray, np.ndarray, int]:
        """Agent ``i``'s critic inputs (sampled, next) and the column where its action starts."""
        if self.cfg.critic_kind(i) == "local":
            return mb.loc_in[i], mb.loc_in_next[i], self.obs_dims[i]
        return mb.c_in, mb.c_in_next, self.act_off[i]

    def _update_agent(self, i: int, ag: _Agent, mb: "_Minibatch") -> float:
        """Agent ``i``'s critic step, actor step and target updates on the prepared ``mb``."""
        c = self.cfg
        B = c.batch_size
        rp = self.replay
        tb = c.tile_b
        temp = c.temperature
        st = self.stats.a
        # critic: minimise (Q(x, a) - (r + gamma Q'(x', mu'(o'))))^2 (Q(x, a) ran in update)
        x, x_next, a_col = self._critic_in(i, mb)
        q_next = ag.critic_t.forward(x_next)
        q = ag.critic.workspace(B).acts[-1]
        loss = K.td_loss_grad(q, q_next, rp.rew[i], rp.done, mb.idx, c.gamma, self.dq)
        st["critic_loss"][i] += loss
        st["q_sum"][i] += np.sum(q, dtype=np.float64)
        st["q_sq"][i] += float(np.dot(q[:, 0].astype(np.float64), q[:, 0].astype(np.float64)))
        st["q_min"][i] = min(st["q_min"][i], float(q.min()))
        st["q_max"][i] = max(st["q_max"][i], float(q.max()))
        ag.critic.backward(self.dq, weights=True)
        self._adam(ag, "critic", ag.critic)
        # actor: maximise Q(x, a_1..mu_i(o_i)..a_n) with a Gumbel-softmax sample of mu_i (the
        # actor's forward pass and sample ran in update; it replaces the sampled action in
        # the critic input only now, since the critic step needed the sampled one)
        logits = ag.actor.workspace(B).acts[-1]
        K.put_columns(mb.pi[i], x, a_col)
        q_pi = ag.critic.forward(x)
        # the actor's loss at its pre-step parameters: -mean Q(x, .. pi_i ..) + reg * mean(logits^2)
        st["actor_loss"][i] += (-np.mean(q_pi, dtype=np.float64)
                                + c.actor_reg * float(np.mean(np.square(logits, dtype=np.float64))))
        self.dq.fill(np.float32(-1.0 / B))
        da = ag.critic.backward(self.dq, weights=False, inputs=(a_col, self.act_dims[i]))
        K.gumbel_softmax_backward(mb.pi[i], da, self.b_dlogits[i], temp, tb)
        K.add_l2_grad(self.b_dlogits[i], logits, c.actor_reg)
        ag.actor.backward(self.b_dlogits[i], weights=True)
        self._adam(ag, "actor", ag.actor)
        K.soft_update(ag.actor_t.params, ag.actor.params, c.tau)
        K.soft_update(ag.critic_t.params, ag.critic.params, c.tau)
        return loss

    # ---- episodes -------------------------------------------------------------------------

    def _after_steps(self, added: int, size_before: int) -> None:
        """``added`` transitions entered the replay (which held ``size_before``): run the
        updates whose environment step lies among them, in order."""
        c = self.cfg
        u = c.update_every_steps
        s0 = self.env_steps
        self.env_steps += added
        for m in range((s0 // u + 1) * u, self.env_steps + 1, u):
            if min(size_before + (m - s0), self.replay.capacity) >= c.learning_starts_samples:
                self.update()

    def run_round(self) -> list[EpisodeRecord]:
        """Episodes ``episode .. episode + n_envs - 1``, one per env, stepped together."""
        c = self.cfg
        N = self.n_envs
        e0 = self.episode
        obs = self.venv.reset([c.seed * 1_000_003 + e0 + b for b in range(N)])
        totals = [0.0] * N
        per_agent = np.zeros((N, self.n))
        active = np.ones(N, bool)
        for step in range(c.max_cycles):
            actions = self.act(obs)
            next_obs, rew, done = self.venv.step(actions, active)
            terminal = done & (step + 1 < c.max_cycles)  # a time limit is not a terminal state
            rows = np.flatnonzero(active)
            size_before = len(self.replay)
            if rows.size == N:
                self.replay.add_batch(obs, actions, rew, next_obs, terminal)
            else:
                self.replay.add_batch([o[rows] for o in obs], [a[rows] for a in actions], rew[rows],
                                      [o[rows] for o in next_obs], terminal[rows])
            for b in rows:
                totals[b] += float(sum(rew[b].tolist()))
                per_agent[b] += rew[b]
            self._after_steps(int(rows.size), size_before)
            active &= ~done
            obs = next_obs
            if not active.any():
                break
        recs = []
        for b in range(N):
            self.rewards.append(totals[b])
            self.agent_rewards.append([float(v) for v in per_agent[b]])
            recs.append(EpisodeRecord(e0 + b, totals[b], self.env_steps, self.updates, tuple(self.agent_rewards[-1])))
        self.episode += N
        return recs

    def run_episode(self) -> EpisodeRecord:
        """One episode (``n_envs == 1``)."""
        if self.n_envs != 1:
            raise ConfigError(f"run_episode: n_envs is {self.n_envs}; use run_round() (allowed: n_envs == 1)")
        return self.run_round()[0]

    def check_episodes(self, episodes: int, key: str = "episodes") -> None:
        """Runs end on a round boundary: ``episodes`` must be a multiple of ``n_envs``."""
        N = self.n_envs
        if episodes % N:
            lo, hi = episodes // N * N, (episodes // N + 1) * N
            alt = f"e.g. {lo} or {hi}" if lo else f"e.g. {hi}"
            raise ConfigError(f"{key}: {episodes} is not a multiple of n_envs ({N}); allowed: a multiple of {N} ({alt})")

    def train(
        self,
        episodes: int,
        checkpoint_path: str | Path | None = None,
        checkpoint_every: int = 0,
        on_episode: Callable[[EpisodeRecord], None] | None = None,
        log_every: int = 0,
        on_log: Callable[[dict[str, float]], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[EpisodeRecord]:
        """Run until ``self.episode == episodes`` (a resumed run continues where it stopped).

        A checkpoint is written whenever the episode count reaches or passes a multiple of
        ``checkpoint_every`` and at the end; a log row (:meth:`log_row`) whenever it passes a
        multiple of ``log_every``. ``should_stop`` is asked after every round: if it says yes,
        the learner saves a checkpoint (when it has a path) and returns early."""
        self.check_episodes(episodes)
        out = []
        while self.episode < episodes:
            before = self.episode
            recs = [self.run_episode()] if self.n_envs == 1 else self.run_round()
            out.extend(recs)
            if log_every > 0 and self.episode // log_every > before // log_every:
                row = self.log_row()
                if on_log is not None:
                    on_log(row)
            stop = should_stop is not None and should_stop()
            if checkpoint_path is not None and checkpoint_every > 0 and (
                self.episode // checkpoint_every > before // checkpoint_every or self.episode == episodes or stop
            ):
                self.save(checkpoint_path)
            if on_episode is not None:
                for rec in recs:
                    on_episode(rec)
            if stop:
                break
        return out

    # ---- logs -----------------------------------------------------------------------------

    def _mark_interval(self) -> None:
        self._log_t0 = time.perf_counter()
        self._log_steps0 = self.env_steps
        self._log_episode0 = self.episode if not self.log_rows else int(self.log_rows[-1]["episode"])

    def log_row(self) -> dict[str, float]:
        """Close a logging interval: a row with the interval's mean episode reward (total and per
        agent), each agent's mean critic loss, actor loss and Q statistics over the interval's
        updates (NaN without updates), the update count and environment steps per second
        (wall clock); appended to :attr:`log_rows`."""
        e0 = self._log_episode0
        ep = np.asarray(self.rewards[e0:], np.float64)
        ag = np.asarray(self.agent_rewards[e0:], np.float64).reshape(-1, self.n)
        s = self.stats
        nu = max(s.updates, 1)
        nan = float("nan")
        dt = time.perf_counter() - self._log_t0
        row: dict[str, float] = {"episode": self.episode, "env_steps": self.env_steps, "updates": self.updates,
                                 "updates_in_interval": s.updates,
                                 "reward_mean": float(ep.mean()) if ep.size else nan}
        for i in range(self.n):
            row[f"reward_agent{i}"] = float(ag[:, i].mean()) if ag.size else nan
        for i in range(self.n):
            q_mean = s.a["q_sum"][i] / max(s.rows, 1)
            q_var = max(s.a["q_sq"][i] / max(s.rows, 1) - q_mean * q_mean, 0.0)
            row[f"critic_loss_agent{i}"] = float(s.a["critic_loss"][i] / nu) if s.updates else nan
            row[f"actor_loss_agent{i}"] = float(s.a["actor_loss"][i] / nu) if s.updates else nan
            row[f"q_mean_agent{i}"] = float(q_mean) if s.updates else nan
            row[f"q_std_agent{i}"] = float(np.sqrt(q_var)) if s.updates else nan
            row[f"q_min_agent{i}"] = float(s.a["q_min"][i]) if s.updates else nan
            row[f"q_max_agent{i}"] = float(s.a["q_max"][i]) if s.updates else nan
        row["env_steps_per_s"] = (self.env_steps - self._log_steps0) / dt if dt > 0 else nan
        self.log_rows.append(row)
        s.reset()
        self._mark_interval()
        return row

    # ---- checkpoints ----------------------------------------------------------------------

    def _array_keys(self) -> list[str]:
        keys = ["rng_state", "rewards"]
        for i, ag in enumerate(self.agents):
            keys += [f"agent{i}/{name}" for name in ag.nets()]
            keys += [f"agent{i}/adam_{name}_{s}" for name in ag.opt for s in ("m", "v")]
        return keys

    def save(self, path: str | Path) -> Path:
        """Write a checkpoint: ``path`` (networks, optimiser, generator, histories) and one new
        replay chunk with the transitions added since the last save to ``path``."""
        t0 = time.perf_counter()
        p = Path(path)
        T = self.env_steps
        lo = T - len(self.replay)  # the oldest transition still in the buffer
        written = 0
        if self._chunks_for != p.resolve():
            self._chunks, self._chunks_for = [], p.resolve()
        chunks = [(a, b) for a, b in self._chunks if b > lo]
        start = max(chunks[-1][1] if chunks else lo, lo)
        if T > start:
            written += save_chunk(p, start, T, self.replay.rows(start, T, T)).stat().st_size
            chunks.append((start, T))
        arrays: dict[str, np.ndarray] = {}
        for i, ag in enumerate(self.agents):
            for name, net in ag.nets().items():
                arrays[f"agent{i}/{name}"] = net.params
            for name, (m, v, _) in ag.opt.items():
                arrays[f"agent{i}/adam_{name}_m"] = m
                arrays[f"agent{i}/adam_{name}_v"] = v
        arrays["rng_state"] = np.frombuffer(json.dumps(self.rng.bit_generator.state).encode(), np.uint8)
        arrays["rewards"] = np.asarray(self.rewards, np.float64)
        arrays["agent_rewards"] = np.asarray(self.agent_rewards, np.float64).reshape(-1, self.n)
        arrays.update(self.stats.arrays())
        meta = {
            "config": self.cfg.model_dump(),
            "episode": self.episode,
            "env_steps": T,
            "updates": self.updates,
            "obs_dims": self.obs_dims,
            "act_dims": self.act_dims,
            "adam_steps": [[ag.opt["actor"][2], ag.opt["critic"][2]] for ag in self.agents],
            "replay": {"pos": self.replay.pos, "size": len(self.replay), "chunks": [list(c) for c in chunks]},
            "log_rows": self.log_rows,
            "log_episode0": self._log_episode0,
        }
        out = save_npz_atomic(p, arrays, meta)
        self._chunks = chunks
        remove_stale_chunks(p, chunks)
        self.save_stats[0] += 1
        self.save_stats[1] += time.perf_counter() - t0
        self.save_stats[2] += written + out.stat().st_size
        return out

    def _check_meta(self, p: Path, meta: dict, keys: list[str] | None = None) -> None:
        saved = meta.get("config", {})
        now = self.cfg.model_dump()
        defaults = MADDPGConfig().model_dump()  # a key a checkpoint predates has its default
        diff = [k for k in sorted(set(saved) | set(now)) if (keys is None or k in keys)
                and saved.get(k, defaults.get(k)) != now.get(k)]
        if diff:
            k = diff[0]
            raise CheckpointError(
                f"{p}: checkpoint was written with a different configuration: key {k!r} is "
                f"{saved.get(k, defaults.get(k))!r} in the checkpoint but {now.get(k)!r} now"
                + (f" (and {len(diff) - 1} more)" if len(diff) > 1 else "")
            )
        if meta.get("obs_dims") != self.obs_dims or meta.get("act_dims") != self.act_dims:
            raise CheckpointError(f"{p}: checkpoint's observation/action sizes {meta.get('obs_dims')}/{meta.get('act_dims')} "
                                  f"do not match the environment's {self.obs_dims}/{self.act_dims}")

    def load(self, path: str | Path) -> None:
        """Restore everything a checkpoint holds; it must have been written with the same config."""
        arrays, meta = load_npz(path)
        p = Path(path)
        self._check_meta(p, meta)
        missing = [k for k in self._array_keys() if k not in arrays]
        if missing:
            raise CheckpointError(f"{p}: corrupt checkpoint, missing array(s) {', '.join(missing[:5])}")
        try:
            for i, ag in enumerate(self.agents):
                for name, net in ag.nets().items():
                    _copy_into(net.params, arrays[f"agent{i}/{name}"], f"agent{i}/{name}")
                for k, name in enumerate(("actor", "critic")):
                    st = ag.opt[name]
                    _copy_into(st[0], arrays[f"agent{i}/adam_{name}_m"], f"agent{i}/adam_{name}_m")
                    _copy_into(st[1], arrays[f"agent{i}/adam_{name}_v"], f"agent{i}/adam_{name}_v")
                    st[2] = int(meta["adam_steps"][i][k])
            self.episode = int(meta["episode"])
            self.env_steps = int(meta["env_steps"])
            self.updates = int(meta["updates"])
            self.rng.bit_generator.state = json.loads(bytes(arrays["rng_state"]).decode())
            self.rewards = [float(r) for r in arrays["rewards"]]
            if "agent_rewards" in arrays:
                self.agent_rewards = [[float(v) for v in row] for row in arrays["agent_rewards"]]
            else:  # format 1 kept no per-agent returns
                self.agent_rewards = [[float("nan")] * self.n for _ in self.rewards]
            if "log/counts" in arrays:
                self.stats.load(arrays)
            self.log_rows = [dict(r) for r in meta.get("log_rows", [])]
            chunks: list[tuple[int, int]] = []
            if "replay/obs0" in arrays:  # format 1: the whole replay in the file
                self.replay.load_state(arrays)
            else:
                rp = meta["replay"]
                size, pos = int(rp["size"]), int(rp["pos"])
                if size > self.replay.capacity or size > self.env_steps or pos != self.env_steps % self.replay.capacity:
                    raise ValueError(f"replay size {size} / position {pos} impossible after {self.env_steps} transitions")
                chunks = [(int(a), int(b)) for a, b in rp["chunks"]]
                lo = self.env_steps - size
                covered = lo
                for a, b in chunks:  # contiguous, ending at env_steps, covering the buffer
                    if a > covered or b <= covered:
                        raise ValueError(f"replay chunks {chunks} do not cover transitions {lo}..{self.env_steps}")
                    covered = b
                if covered != self.env_steps:
                    raise ValueError(f"replay chunks {chunks} do not cover transitions {lo}..{self.env_steps}")
                self.replay.size, self.replay.pos = size, pos
                for a, b in chunks:
                    data = load_chunk(p, a, b)
                    skip = max(lo - a, 0)
                    self.replay.put_rows(a + skip, {k: (v[:, skip:] if k == "rew" else v[skip:]) for k, v in data.items()},
                                         self.env_steps)
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            raise CheckpointError(f"{p}: corrupt checkpoint ({type(exc).__name__}: {exc})") from None
        if len(self.rewards) != self.episode or len(self.agent_rewards) != self.episode:
            raise CheckpointError(f"{p}: corrupt checkpoint ({len(self.rewards)} episode rewards for {self.episode} episodes)")
        self._chunks, self._chunks_for = chunks, p.resolve()
        self._log_t0, self._log_steps0 = time.perf_counter(), self.env_steps
        self._log_episode0 = int(meta.get("log_episode0", 0))

    def load_actors(self, path: str | Path) -> dict:
        """Only the actors' parameters (for evaluation); the network shapes and datapath must
        match. Returns the checkpoint's meta data."""
        arrays, meta = load_npz(path)
        p = Path(path)
        self._check_meta(p, meta, keys=["env", "n_agents", "hidden_units", "hidden_layers", "fixed_point_bits",
                                        "fixed_point_frac_bits", "temperature", "max_cycles"])
        try:
            for i, ag in enumerate(self.agents):
                _copy_into(ag.actor.params, arrays[f"agent{i}/actor"], f"agent{i}/actor")
        except (KeyError, ValueError) as exc:
            raise CheckpointError(f"{p}: corrupt checkpoint ({type(exc).__name__}: {exc})") from None
        return meta

    # ---- accelerator view -----------------------------------------------------------------

    def update_loop_nests(self) -> list[K.LoopNest]:
        """The loop nests of one update of every agent (what an accelerator model costs)."""
        B = self.cfg.batch_size
        t = K.Tiling(self.cfg.tile_b, self.cfg.unroll)
        nests: list[K.LoopNest] = []
        for i, ag in enumerate(self.agents):
            nests.append(K.counter_rng_nest(B, t))  # minibatch indices
            nests.append(K.counter_rng_nest(B * (sum(self.act_dims) + self.act_dims[i]), t))  # Gumbel uniforms
            for j in ([i] if self.cfg.critic_kind(i) == "local" else range(self.n)):
                nests += [K.dense_forward_nest(B, a, b, t) for a, b in zip(self.agents[j].actor_t.sizes[:-1], self.agents[j].actor_t.sizes[1:])]
                nests.append(K.gumbel_softmax_nest(B, self.act_dims[j], t))
            cs = ag.critic.sizes
            nests += [K.dense_forward_nest(B, a, b, t) for a, b in zip(cs[:-1], cs[1:])]  # target critic
            nests += ag.critic.loop_nests(B)  # critic step
            nests += ag.actor.loop_nests(B, backward=False)
            nests.append(K.gumbel_softmax_nest(B, self.act_dims[i], t))
            a_col = self.obs_dims[i] if self.cfg.critic_kind(i) == "local" else self.act_off[i]
            nests += ag.critic.loop_nests(B, weights=False, inputs=(a_col, self.act_dims[i]))  # dQ/da_i
            nests.append(K.gumbel_softmax_backward_nest(B, self.act_dims[i], t))
            nests += ag.actor.loop_nests(B, forward=False)
            nests.append(K.adam_nest(ag.actor.n_params, len(ag.actor.seg_start) - 1, t))
            nests.append(K.adam_nest(ag.critic.n_params, len(ag.critic.seg_start) - 1, t))
            nests.append(K.soft_update_nest(ag.actor.n_params, t))
            nests.append(K.soft_update_nest(ag.critic.n_params, t))
        return nests


def _copy_into(dst: np.ndarray, src: np.ndarray, key: str) -> None:
    if src.shape != dst.shape:
        raise ValueError(f"array {key} has shape {src.shape}, expected {dst.shape}")
    dst[...] = src


def no_learning_warning(cfg: MADDPGConfig, episodes: int, flag: str = "--episodes") -> str | None:
    """A sentence if a run of ``episodes`` (full-length episodes) ends before its first update."""
    steps = episodes * cfg.max_cycles
    first = cfg.first_update_step
    if first is None:
        return (f"the replay ({cfg.buffer_size:,} transitions) can never hold learning_starts "
                f"({cfg.learning_starts_samples:,}): no update will run, no learning happens")
    if steps < first:
        return (f"{flag} {episodes} ends after {steps:,} env steps, before the first update at {first:,} "
                f"(learning starts at {cfg.learning_starts_samples:,} transitions, then one update every "
                f"{cfg.update_every_steps} env steps): no learning happens")
    return None


def random_policy_return(env, episodes: int, seed: int, max_cycles: int) -> float:
    """Mean episode reward (summed over agents) of uniformly random one-hot actions."""
    rng = np.random.default_rng(seed)
    totals = []
    for e in range(episodes):
        env.reset(seed=seed * 1_000_003 + e)
        total = 0.0
        for _ in range(max_cycles):
            acts = [np.eye(d, dtype=np.float32)[rng.integers(d)] for d in env.act_dims]
            _, rew, done = env.step(acts)
            total += float(sum(rew))
            if done:
                break
        totals.append(total)
    return float(np.mean(totals))


def make_config(**kwargs: Any) -> MADDPGConfig:
    """Build a :class:`MADDPGConfig`, turning validation errors into :class:`ConfigError`."""
    from noc.base.config import validate

    return validate(kwargs, MADDPGConfig, source="maddpg config")


__all__ = ["MADDPG", "MADDPGConfig", "EpisodeRecord", "CheckpointError", "ConfigError", "random_policy_return",
           "make_config", "no_learning_warning", "act_rows", "PASSIVE_WAIT", "PARALLEL_MIN_BATCH"]
