"""A MADDPG training run as ``hw-models maddpg train`` runs it: the trainer configs its flags
ask for (checked by the config's own rules, errors naming the flags), the output
directories, and each run — progress, checkpoints, TensorBoard, rewards.csv, metrics.csv
and learning_curve.png — stopped cleanly by SIGINT/SIGTERM (:class:`Stop`).

:func:`env_factory` is where tests put a stand-in environment.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Optional

from hw_models.maddpg_outputs import write_outputs
from noc.base.errors import HwModelsError

OUTPUTS = ("rewards.csv", "metrics.csv", "learning_curve.png", "checkpoint.npz")
ENV_BACKENDS = ("auto", "port", "mpe2")


class Interrupted(Exception):
    """A run stopped at once (a second signal, or Ctrl-C outside the trainer's loop): the exit status."""

    def __init__(self, exit_code: int):
        super().__init__(exit_code)
        self.exit_code = exit_code


def env_factory():
    """None: the trainer picks the environments (``--env-backend``); tests put a stand-in here."""
    return None


def check_env_backend(env_backend: str) -> None:
    if env_backend not in ENV_BACKENDS:
        raise HwModelsError(f"--env-backend {env_backend!r}: allowed: {', '.join(ENV_BACKENDS)}")


def check_threads(threads: Optional[int]) -> None:
    if threads is not None:
        import numba

        if not 1 <= threads <= numba.config.NUMBA_NUM_THREADS:
            raise HwModelsError(f"--threads {threads}: allowed: 1..{numba.config.NUMBA_NUM_THREADS} (NUMBA_NUM_THREADS)")


def trainer_configs(run_seeds: list[int], several: bool, *, env, agents, batch_size, envs, learning_starts,
                    fixed_point, batch_parts, critic="global") -> list:
    """One trainer config per seed (``fixed_point``: (bits, fraction bits), (0, 0) for float32), checked by the config's own rules and named as the flags in its errors."""
    from maddpg.trainer import MADDPGConfig
    from noc.base.config import validate

    q_bits, q_frac = fixed_point
    flags = {"env": "--env", "n_agents": "--agents", "seed": "--seeds" if several else "--seed",
             "batch_size": "--batch-size", "n_envs": "--envs", "learning_starts": "--learning-starts",
             "fixed_point_bits": "--fixed-point", "fixed_point_frac_bits": "--fixed-point", "batch_parts": "--batch-parts",
             "critic": "--critic"}
    return [validate({"env": env, "n_agents": agents, "seed": s, "batch_size": batch_size, "n_envs": envs,
                      "learning_starts": learning_starts, "fixed_point_bits": q_bits, "fixed_point_frac_bits": q_frac,
                      "batch_parts": batch_parts, "critic": critic}, MADDPGConfig, source="maddpg train", flags=flags)
            for s in run_seeds]


def check_episodes(episodes: int, envs: int) -> None:
    if episodes % envs:
        lo, hi = episodes // envs * envs, (episodes // envs + 1) * envs
        raise HwModelsError(f"--episodes {episodes}: not a multiple of --envs {envs}; allowed: a multiple of {envs} "
                            f"(e.g. {f'{lo} or ' if lo else ''}{hi})")


def output_dirs(out: Optional[Path], env: str, agents: int, run_seeds: list[int]) -> tuple[Path, list[Path]]:
    """(the base directory, one directory per run), each checked before training, not after it."""
    from hw_models.store import check_output_dir

    tag = f"seed{run_seeds[0]}" if len(run_seeds) == 1 else "seeds" + "-".join(map(str, run_seeds))
    base = out or Path("results") / "maddpg" / f"{env}_{agents}a_{tag}"
    named = "--out" if out else "the default output directory"
    dirs = [base] if len(run_seeds) == 1 else [base / f"seed{s}" for s in run_seeds]
    for d in dirs:
        check_output_dir(d, named, OUTPUTS)
    if len(run_seeds) > 1:
        check_output_dir(base, named, ("seeds_curve.png", "seeds_summary.csv"))
    return base, dirs


def no_learning_note(cfg, episodes: int) -> str | None:
    """The warning, printed before training, that these settings never update the networks."""
    from maddpg.trainer import no_learning_warning

    msg = no_learning_warning(cfg, episodes)
    return f"warning: {msg}" if msg else None


class Stop:
    """SIGINT / SIGTERM: the first asks the trainer to save and stop after the current round
    of episodes; a second one stops at once (the last checkpoint is kept)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._old: dict[int, object] = {}

    def __call__(self, signum, frame) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum

    def __enter__(self) -> "Stop":
        import threading

        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                self._old[s] = signal.signal(s, self)
        return self

    def __exit__(self, *exc) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum or signal.SIGINT)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else "SIGINT"


def train_one(cfg, out_dir: Path, episodes: int, env_backend: str, threads: Optional[int], checkpoint_every: int,
               log_every: int, tensorboard: bool, resume: bool, random_episodes: int, stop: Stop) -> list[float]:
    """One training run into ``out_dir``; returns its episode rewards."""
    from hw_models.console import console as make_console, progress_bar
    from hw_models.store import write_csv_atomic
    from maddpg.trainer import MADDPG

    ck = out_dir / "checkpoint.npz"
    console = make_console()
    trainer = MADDPG(cfg, env_factory(), env_backend=env_backend, threads=threads)
    if resume:
        trainer.load(ck)
        console.print(f"resumed from {ck} at episode {trainer.episode}")
    elif ck.exists():
        console.print(f"note: {ck} exists; a fresh run replaces it at its first checkpoint (use --resume to continue)")
    every = checkpoint_every or episodes
    _print_start(console, cfg, trainer, episodes, every, ck)
    tb = _tensorboard(console, out_dir, trainer, resume) if tensorboard else None
    metrics_path = out_dir / "metrics.csv"

    t0 = time.perf_counter()
    steps0 = trainer.env_steps
    interrupted = False
    try:
        with progress_bar(console, "mean reward {task.fields[mean]:>9.2f}  {task.fields[rate]:>7.0f} steps/s") as progress:
            task = progress.add_task("episodes", total=episodes, completed=trainer.episode, mean=float("nan"), rate=0.0)

            def on_episode(rec) -> None:
                last = trainer.rewards[-100:]
                rate = (trainer.env_steps - steps0) / max(time.perf_counter() - t0, 1e-9)
                progress.update(task, completed=rec.episode + 1, mean=sum(last) / len(last), rate=rate)

            def on_log(row) -> None:
                write_csv_atomic(metrics_path, [_csv_row(r) for r in trainer.log_rows])
                if tb is not None:
                    tb.write(row)

            try:
                trainer.train(episodes, checkpoint_path=ck, checkpoint_every=every, on_episode=on_episode,
                              log_every=log_every, on_log=on_log, should_stop=lambda: stop.requested)
            except KeyboardInterrupt:
                interrupted = True
    finally:
        if tb is not None:
            tb.close()
    stopped = stop.requested and trainer.episode < episodes
    random_ret = None
    if random_episodes and not (interrupted or stopped):
        random_ret = _random_return(cfg, random_episodes)
    title = f"MADDPG {cfg.env}, {trainer.n} agent(s), seed {cfg.seed}" + (f", {cfg.n_envs} envs" if cfg.n_envs > 1 else "")
    csv_path, png_path = write_outputs(out_dir, trainer.rewards, random_ret, title, agent_rewards=trainer.agent_rewards)
    if trainer.log_rows:
        write_csv_atomic(metrics_path, [_csv_row(r) for r in trainer.log_rows])
    n_saves, save_s, save_bytes = trainer.save_stats
    cost = (f"; {n_saves} checkpoint(s), {1e3 * save_s / max(n_saves, 1):.0f} ms and {save_bytes / max(n_saves, 1) / 1e6:.2f} MB "
            "each on average" if n_saves else "")
    if interrupted:
        done = _checkpoint_episode(ck)
        console.print(f"interrupted at episode {trainer.episode}; last checkpoint ({done}) kept in {ck}: "
                      f"continue with --resume")
        raise Interrupted(130)
    if stopped:
        console.print(f"{stop.name}: stopped after episode {trainer.episode}, checkpoint saved to {ck}{cost}; "
                      f"continue with --resume")
        return trainer.rewards
    last = trainer.rewards[-100:]
    console.print(f"done: {trainer.episode} episodes, {trainer.env_steps} env steps, {trainer.updates} updates; "
                  f"mean reward (last {len(last)}) {sum(last) / max(len(last), 1):.2f}"
                  + (f", random policy {random_ret:.2f}" if random_ret is not None else "") + cost)
    if trainer.updates == 0:
        print(f"warning: no update ran in {trainer.env_steps:,} env steps (the first comes at step "
              f"{cfg.first_update_step or 'never'}): no learning happened")
    console.print(f"wrote {csv_path}, {png_path}, {ck}" + (f", {metrics_path}" if trainer.log_rows else "")
                  + (f", {out_dir / 'tb'}" if tb is not None else ""))
    return trainer.rewards


def _print_start(console, cfg, trainer, episodes: int, every: int, ck: Path) -> None:
    q_bits, q_frac = cfg.fixed_point_bits, cfg.fixed_point_frac_bits
    console.print(f"MADDPG on {cfg.env}, {trainer.n} agent(s), episodes {trainer.episode}..{episodes}, seed {cfg.seed}; "
                  "datapath " + (f"Q{q_bits - q_frac - 1}.{q_frac} fixed point ({q_bits} bits)" if q_bits else "float32"))
    console.print(f"{cfg.n_envs} env(s) ({trainer.venv.backend} backend), update threads {trainer.update_threads()}; "
                  f"checkpoint every {every} episode(s) to {ck}")
    if trainer.episode >= episodes:
        console.print(f"nothing to do: the checkpoint already holds {trainer.episode} episodes")


def _tensorboard(console, out_dir: Path, trainer, resume: bool):
    """The TensorBoard log, or None (with a note) where TensorBoard is not installed."""
    from maddpg.train_log import TensorBoardLog, TensorBoardUnavailable

    try:
        # a resumed run drops what the interrupted one logged after its checkpoint
        return TensorBoardLog(out_dir / "tb", resume_step=trainer.env_steps + 1 if resume else None)
    except TensorBoardUnavailable as exc:
        console.print(f"note: {exc}")
        return None


def _random_return(cfg, random_episodes: int) -> float:
    from maddpg.env import make_env
    from maddpg.trainer import random_policy_return

    factory = env_factory() or (lambda name, n, s, mc: make_env(name, n, s, max_cycles=mc))
    return random_policy_return(factory(cfg.env, cfg.n_agents, cfg.seed + 1, cfg.max_cycles), random_episodes,
                                cfg.seed + 1, cfg.max_cycles)


def _csv_row(row: dict) -> dict:
    return {k: (v if isinstance(v, int) else f"{v:.7g}") for k, v in row.items()}


def _checkpoint_episode(ck: Path) -> str:
    from maddpg.checkpoint import load_npz

    try:
        return f"episode {load_npz(ck)[1]['episode']}"
    except HwModelsError:
        return "none written yet"
