"""Evaluate a checkpoint's actors with deterministic policies, and render an episode.

The deterministic policy of a Gumbel-softmax actor is its noise-free action: the softmax of
its logits (:meth:`maddpg.trainer.MADDPG.act` with ``deterministic=True``), applied as
training applies actions. Evaluation episode ``e`` resets its environment with seed
``seed * 1_000_003 + e`` (the trainer's rule, with the evaluation's own seed), so a seed
fixes the episodes; all episodes run together as one round of vectorised environments.

:func:`render_gif` plays evaluation episode 0 in one mpe2 environment (whatever the
training backend: the Numba ports are bit-exact to mpe2) and draws every step with
matplotlib's Agg backend (no screen), written as an animated GIF by Pillow.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from maddpg.checkpoint import CheckpointError, load_npz
from noc.base.errors import ConfigError

__all__ = ["EvalResult", "load_policy", "evaluate", "render_gif"]


@dataclass(frozen=True)
class EvalResult:
    seed: int
    returns: np.ndarray  # [episodes] summed over agents and steps
    agent_returns: np.ndarray  # [episodes, n_agents]

    @property
    def mean(self) -> float:
        return float(self.returns.mean())

    @property
    def std(self) -> float:
        return float(self.returns.std(ddof=1)) if self.returns.size > 1 else 0.0


def load_policy(checkpoint: str | Path, n_envs: int, env_backend: str = "auto", env_factory=None):
    """A learner with ``n_envs`` environments and the checkpoint's actors (nothing else loaded)."""
    from maddpg.trainer import MADDPG, make_config

    from pydantic import ValidationError

    _, meta = load_npz(checkpoint)
    cfg = dict(meta.get("config") or {})
    cfg.update(n_envs=n_envs, buffer_size=1, learning_starts=None)
    try:
        config = make_config(**cfg)
    except (ValidationError, TypeError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else {"loc": ("config",), "msg": str(exc)}
        field = ".".join(str(x) for x in first["loc"])
        raise CheckpointError(f"{checkpoint}: corrupt checkpoint, config key {field!r}: {first['msg']}") from None
    t = MADDPG(config, env_factory, env_backend=env_backend)
    t.load_actors(checkpoint)
    return t


def evaluate(trainer, episodes: int, seed: int) -> EvalResult:
    """``episodes`` deterministic episodes (``trainer`` must have ``n_envs == episodes``)."""
    if trainer.n_envs != episodes:
        raise ConfigError(f"episodes: {episodes} evaluation episodes need a learner with as many envs "
                          f"(it has {trainer.n_envs}); allowed: {trainer.n_envs}")
    c = trainer.cfg
    venv = trainer.venv
    obs = venv.reset([seed * 1_000_003 + e for e in range(episodes)])
    totals = np.zeros(episodes)
    per_agent = np.zeros((episodes, trainer.n))
    active = np.ones(episodes, bool)
    for _ in range(c.max_cycles):
        actions = trainer.act(obs, deterministic=True)
        obs, rew, done = venv.step(actions, active)
        for b in np.flatnonzero(active):
            totals[b] += float(sum(rew[b].tolist()))
            per_agent[b] += rew[b]
        active &= ~done
        if not active.any():
            break
    return EvalResult(seed, totals, per_agent)


def _frame(world, step: int, total: float, title: str, lim: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    fig, ax = plt.subplots(figsize=(4, 4), dpi=80)
    for ent in list(world.landmarks) + list(world.agents):
        color = np.clip(np.asarray(ent.color, float), 0, 1)
        ax.add_patch(plt.Circle(tuple(ent.state.p_pos), ent.size, color=color, alpha=0.9 if ent in world.agents else 0.6))
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"{title}\nstep {step}, return {total:.2f}", fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    buf.seek(0)
    return Image.open(buf).convert("P", palette=Image.Palette.ADAPTIVE)


def render_gif(trainer, seed: int, path: str | Path, title: str = "", frame_ms: int = 100) -> float:
    """Play evaluation episode 0 of ``seed`` in one mpe2 environment with the deterministic
    policy, write it to ``path`` as a GIF; returns the episode's return (summed over agents)."""
    from maddpg.env import make_env
    from noc.base.files import replace_atomically

    c = trainer.cfg
    env = make_env(c.env, c.n_agents, seed, max_cycles=c.max_cycles)
    obs = env.reset(seed=seed * 1_000_003)
    world = env.world
    lim = 1.0 + max(1.0, float(np.max(np.abs([e.state.p_pos for e in list(world.agents) + list(world.landmarks)]))))
    total = 0.0
    frames = [_frame(world, 0, total, title, lim)]
    for step in range(c.max_cycles):
        actions = trainer.act([np.asarray(o, np.float32)[None, :] for o in obs], deterministic=True)
        obs, rew, done = env.step([a[0] for a in actions])
        total += float(sum(rew))
        frames.append(_frame(world, step + 1, total, title, lim))
        if done:
            break
    env.close()

    def write(tmp: Path) -> None:
        frames[0].save(tmp, format="GIF", save_all=True, append_images=frames[1:], duration=frame_ms, loop=0)

    replace_atomically(path, write)
    return total
