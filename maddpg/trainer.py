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
two draws of it);
episode ``e`` resets the environment with seed ``seed * 1_000_003 + e`` so an environment
needs no saved state. Same seed, same result, byte for byte, with or without a resume.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import numpy as np
from pydantic import Field, model_validator

from maddpg import batch_parts as BP
from maddpg import kernels as K
from maddpg.checkpoint import CheckpointError, load_npz, save_npz_atomic
from maddpg.kernels_mlp import MLP
from maddpg.replay import ReplayBuffer
from noc.config import SEED_RULE, Seed, StrictModel, finite
from noc.errors import ConfigError

U_MIN, U_MAX = K.U_MIN, K.U_MAX  # the Gumbel-softmax kernel clips uniform samples into [U_MIN, U_MAX]


class MADDPGConfig(StrictModel):
    """Everything that determines a training run except how many episodes it lasts."""

    env: str = Field("simple_spread", description="MPE scenario (simple_spread, simple, simple_adversary, simple_tag)")
    n_agents: int = Field(3, ge=1, le=64)
    seed: Seed = Field(0, description=f"seed of everything random: {SEED_RULE}")
    max_cycles: int = Field(25, ge=1, description="environment steps per episode")
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

    @model_validator(mode="after")
    def _check(self) -> "MADDPGConfig":
        if self.fixed_point_bits and self.fixed_point_frac_bits >= self.fixed_point_bits:
            raise ValueError(f"fixed_point_frac_bits ({self.fixed_point_frac_bits}) must be < fixed_point_bits ({self.fixed_point_bits})")
        return self

    @property
    def learning_starts_samples(self) -> int:
        return self.learning_starts if self.learning_starts is not None else self.batch_size * self.max_cycles


@dataclass(frozen=True)
class EpisodeRecord:
    episode: int
    reward: float  # summed over agents and steps (openai/maddpg's episode reward)
    env_steps: int
    updates: int


def _default_env_factory(name: str, n_agents: int, seed: int, max_cycles: int):
    from maddpg.env import make_env  # the mpe2 wrapper; imported late (it is a separate module)

    return make_env(name, n_agents, seed, max_cycles=max_cycles)


EnvFactory = Callable[[str, int, int, int], Any]


class _Agent:
    def __init__(self, i: int, obs_dims: list[int], act_dims: list[int], cfg: MADDPGConfig) -> None:
        tiling = K.Tiling(cfg.tile_b, cfg.unroll)
        q = (cfg.fixed_point_frac_bits, cfg.fixed_point_bits)
        hidden = [cfg.hidden_units] * cfg.hidden_layers
        a_sizes = [obs_dims[i], *hidden, act_dims[i]]
        c_sizes = [sum(obs_dims) + sum(act_dims), *hidden, 1]
        parts = cfg.batch_parts
        self.actor = MLP(a_sizes, tiling, *q, parts=parts)
        self.critic = MLP(c_sizes, tiling, *q, parts=parts)
        self.actor_t = MLP(a_sizes, tiling, *q, parts=parts)
        self.critic_t = MLP(c_sizes, tiling, *q, parts=parts)
        self.opt = {}
        for name, net in (("actor", self.actor), ("critic", self.critic)):
            self.opt[name] = [K.aligned_zeros(net.n_params), K.aligned_zeros(net.n_params), 0]

    def nets(self) -> dict[str, MLP]:
        return {"actor": self.actor, "critic": self.critic, "actor_t": self.actor_t, "critic_t": self.critic_t}


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


class MADDPG:
    """A MADDPG learner over an environment with the ``maddpg.env`` interface."""

    def __init__(self, config: MADDPGConfig, env_factory: EnvFactory | None = None) -> None:
        self.cfg = cfg = config
        self.env = (env_factory or _default_env_factory)(cfg.env, cfg.n_agents, cfg.seed, cfg.max_cycles)
        self.n = self.env.n_agents
        self.obs_dims = [int(d) for d in self.env.obs_dims]
        self.act_dims = [int(d) for d in self.env.act_dims]
        self.rng = np.random.default_rng(cfg.seed)
        self.agents = [_Agent(i, self.obs_dims, self.act_dims, cfg) for i in range(self.n)]
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
        self._q = (cfg.fixed_point_frac_bits, cfg.fixed_point_bits)
        self._alloc(cfg.batch_size)

    # ---- buffers --------------------------------------------------------------------------

    def _alloc(self, B: int) -> None:
        self.act_off = [int(v) for v in sum(self.obs_dims) + np.cumsum([0, *self.act_dims])[:-1]]
        self.mb = _Minibatch(B, self.obs_dims, self.act_dims)
        self.b_dlogits = [K.aligned_zeros((B, d)) for d in self.act_dims]
        self.dq = K.aligned_zeros((B, 1))
        self.a1_u = [np.zeros((1, d), np.float32) for d in self.act_dims]
        self.a1_out = [np.zeros((1, d), np.float32) for d in self.act_dims]

    def _uniform(self, buf: np.ndarray) -> np.ndarray:
        """Uniform samples in [0, 1) into ``buf`` (the Gumbel-softmax kernel clips them)."""
        self.rng.random(out=buf, dtype=np.float32)
        return buf

    # ---- acting ---------------------------------------------------------------------------

    def act(self, obs: list[np.ndarray]) -> list[np.ndarray]:
        """Each actor's Gumbel-softmax sample for its observation (exploration included)."""
        out = []
        for j, ag in enumerate(self.agents):
            logits = ag.actor.forward(np.ascontiguousarray(obs[j], np.float32).reshape(1, -1))
            K.gumbel_softmax(logits, self._uniform(self.a1_u[j]), self.a1_out[j], self.cfg.temperature, 1)
            out.append(self.a1_out[j][0].copy())
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

    def update(self) -> float:
        """One MADDPG update of every agent (critic, actor, targets); returns the mean critic loss.

        The agents update one after the other, as published; each pass over a minibatch runs
        its ``batch_parts`` row ranges in parallel (:mod:`maddpg.batch_parts`)."""
        losses = 0.0
        mb = self.mb
        c = self.cfg
        for i, ag in enumerate(self.agents):
            self._sample(i, mb)
            for j in range(self.n):  # every target actor's sample, into the next-state critic input
                self.agents[j].actor_t.forward_sample(mb.nobs[j], mb.u[j], mb.act[j], c.temperature,
                                                      into=(mb.c_in_next, self.act_off[j]))
            ag.critic.forward(mb.c_in)  # Q(x, a) on the sampled actions
            ag.actor.forward_sample(mb.obs[i], mb.u_actor[i], mb.pi[i], c.temperature)
            losses += self._update_agent(i, ag, mb)
        self.updates += 1
        return losses / self.n

    def _update_agent(self, i: int, ag: _Agent, mb: "_Minibatch") -> float:
        """Agent ``i``'s critic step, actor step and target updates on the prepared ``mb``."""
        c = self.cfg
        B = c.batch_size
        rp = self.replay
        tb = c.tile_b
        temp = c.temperature
        # critic: minimise (Q(x, a) - (r + gamma Q'(x', mu'(o'))))^2 (Q(x, a) ran in update)
        q_next = ag.critic_t.forward(mb.c_in_next)
        q = ag.critic.workspace(B).acts[-1]
        loss = K.td_loss_grad(q, q_next, rp.rew[i], rp.done, mb.idx, c.gamma, self.dq)
        ag.critic.backward(self.dq, weights=True)
        self._adam(ag, "critic", ag.critic)
        # actor: maximise Q(x, a_1..mu_i(o_i)..a_n) with a Gumbel-softmax sample of mu_i (the
        # actor's forward pass and sample ran in update; it replaces the sampled action in
        # the critic input only now, since the critic step needed the sampled one)
        logits = ag.actor.workspace(B).acts[-1]
        K.put_columns(mb.pi[i], mb.c_in, self.act_off[i])
        ag.critic.forward(mb.c_in)
        self.dq.fill(np.float32(-1.0 / B))
        da = ag.critic.backward(self.dq, weights=False, inputs=(self.act_off[i], self.act_dims[i]))
        K.gumbel_softmax_backward(mb.pi[i], da, self.b_dlogits[i], temp, tb)
        K.add_l2_grad(self.b_dlogits[i], logits, c.actor_reg)
        ag.actor.backward(self.b_dlogits[i], weights=True)
        self._adam(ag, "actor", ag.actor)
        K.soft_update(ag.actor_t.params, ag.actor.params, c.tau)
        K.soft_update(ag.critic_t.params, ag.critic.params, c.tau)
        return loss

    # ---- episodes -------------------------------------------------------------------------

    def run_episode(self) -> EpisodeRecord:
        c = self.cfg
        obs = self.env.reset(seed=c.seed * 1_000_003 + self.episode)
        total = 0.0
        for step in range(c.max_cycles):
            actions = self.act(obs)
            next_obs, rew, done = self.env.step(actions)
            terminal = bool(done) and step + 1 < c.max_cycles  # a time limit is not a terminal state
            self.replay.add(obs, actions, rew, next_obs, terminal)
            total += float(sum(rew))
            self.env_steps += 1
            obs = next_obs
            if len(self.replay) >= c.learning_starts_samples and self.env_steps % c.update_every_steps == 0:
                self.update()
            if done:
                break
        rec = EpisodeRecord(self.episode, total, self.env_steps, self.updates)
        self.rewards.append(total)
        self.episode += 1
        return rec

    def train(
        self,
        episodes: int,
        checkpoint_path: str | Path | None = None,
        checkpoint_every: int = 0,
        on_episode: Callable[[EpisodeRecord], None] | None = None,
    ) -> list[EpisodeRecord]:
        """Run until ``self.episode == episodes`` (a resumed run continues where it stopped)."""
        out = []
        while self.episode < episodes:
            rec = self.run_episode()
            out.append(rec)
            if checkpoint_path is not None and checkpoint_every > 0 and (
                self.episode % checkpoint_every == 0 or self.episode == episodes
            ):
                self.save(checkpoint_path)
            if on_episode is not None:
                on_episode(rec)
        return out

    # ---- checkpoints ----------------------------------------------------------------------

    def _array_keys(self) -> list[str]:
        keys = ["rng_state", "rewards"]
        for i, ag in enumerate(self.agents):
            keys += [f"agent{i}/{name}" for name in ag.nets()]
            keys += [f"agent{i}/adam_{name}_{s}" for name in ag.opt for s in ("m", "v")]
        keys += ["replay/pos", "replay/size", "replay/done", "replay/rew"]
        for j in range(self.n):
            keys += [f"replay/obs{j}", f"replay/act{j}", f"replay/next_obs{j}"]
        return keys

    def save(self, path: str | Path) -> Path:
        arrays: dict[str, np.ndarray] = {}
        for i, ag in enumerate(self.agents):
            for name, net in ag.nets().items():
                arrays[f"agent{i}/{name}"] = net.params
            for name, (m, v, _) in ag.opt.items():
                arrays[f"agent{i}/adam_{name}_m"] = m
                arrays[f"agent{i}/adam_{name}_v"] = v
        arrays.update(self.replay.state())
        arrays["rng_state"] = np.frombuffer(json.dumps(self.rng.bit_generator.state).encode(), np.uint8)
        arrays["rewards"] = np.asarray(self.rewards, np.float64)
        meta = {
            "config": self.cfg.model_dump(),
            "episode": self.episode,
            "env_steps": self.env_steps,
            "updates": self.updates,
            "obs_dims": self.obs_dims,
            "act_dims": self.act_dims,
            "adam_steps": [[ag.opt["actor"][2], ag.opt["critic"][2]] for ag in self.agents],
        }
        return save_npz_atomic(path, arrays, meta)

    def load(self, path: str | Path) -> None:
        """Restore everything a checkpoint holds; it must have been written with the same config."""
        arrays, meta = load_npz(path)
        p = Path(path)
        saved = meta.get("config", {})
        now = self.cfg.model_dump()
        diff = [k for k in sorted(set(saved) | set(now)) if saved.get(k) != now.get(k)]
        if diff:
            k = diff[0]
            raise CheckpointError(
                f"{p}: checkpoint was written with a different configuration: key {k!r} is "
                f"{saved.get(k)!r} in the checkpoint but {now.get(k)!r} now"
                + (f" (and {len(diff) - 1} more)" if len(diff) > 1 else "")
            )
        if meta.get("obs_dims") != self.obs_dims or meta.get("act_dims") != self.act_dims:
            raise CheckpointError(f"{p}: checkpoint's observation/action sizes {meta.get('obs_dims')}/{meta.get('act_dims')} "
                                  f"do not match the environment's {self.obs_dims}/{self.act_dims}")
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
            self.replay.load_state(arrays)
            self.rng.bit_generator.state = json.loads(bytes(arrays["rng_state"]).decode())
            self.rewards = [float(r) for r in arrays["rewards"]]
            self.episode = int(meta["episode"])
            self.env_steps = int(meta["env_steps"])
            self.updates = int(meta["updates"])
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            raise CheckpointError(f"{p}: corrupt checkpoint ({type(exc).__name__}: {exc})") from None
        if len(self.rewards) != self.episode:
            raise CheckpointError(f"{p}: corrupt checkpoint ({len(self.rewards)} episode rewards for {self.episode} episodes)")

    # ---- accelerator view -----------------------------------------------------------------

    def update_loop_nests(self) -> list[K.LoopNest]:
        """The loop nests of one update of every agent (what an accelerator model costs)."""
        B = self.cfg.batch_size
        t = K.Tiling(self.cfg.tile_b, self.cfg.unroll)
        nests: list[K.LoopNest] = []
        for i, ag in enumerate(self.agents):
            nests.append(K.counter_rng_nest(B, t))  # minibatch indices
            nests.append(K.counter_rng_nest(B * (sum(self.act_dims) + self.act_dims[i]), t))  # Gumbel uniforms
            for j in range(self.n):
                nests += [K.dense_forward_nest(B, a, b, t) for a, b in zip(self.agents[j].actor_t.sizes[:-1], self.agents[j].actor_t.sizes[1:])]
                nests.append(K.gumbel_softmax_nest(B, self.act_dims[j], t))
            cs = ag.critic.sizes
            nests += [K.dense_forward_nest(B, a, b, t) for a, b in zip(cs[:-1], cs[1:])]  # target critic
            nests += ag.critic.loop_nests(B)  # critic step
            nests += ag.actor.loop_nests(B, backward=False)
            nests.append(K.gumbel_softmax_nest(B, self.act_dims[i], t))
            nests += ag.critic.loop_nests(B, weights=False, inputs=(self.act_off[i], self.act_dims[i]))  # dQ/da_i
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
    from noc.config import validate

    return validate(kwargs, MADDPGConfig, source="maddpg config")


__all__ = ["MADDPG", "MADDPGConfig", "EpisodeRecord", "CheckpointError", "ConfigError", "random_policy_return", "make_config"]
