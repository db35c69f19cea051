"""``hw-models maddpg``: train MADDPG on an MPE environment with the HLS-style kernels, and
evaluate a checkpoint."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperCommand

from hw_models.flags import parse_fixed_point as _parse_fixed_point
from hw_models.maddpg_outputs import write_outputs, write_seed_summary
from maddpg.env import SCENARIOS
from noc.base.errors import HwModelsError

app = typer.Typer(help="MADDPG on MPE environments (HLS-style Numba kernels).", no_args_is_help=True)

OUTPUTS = ("rewards.csv", "metrics.csv", "learning_curve.png", "checkpoint.npz")


class _SeedsCommand(TyperCommand):
    """Lets ``--seeds 1 2 3`` take several values (click options take one per occurrence)."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            out.append(a)
            i += 1
            if a == "--seeds":
                first = True
                while i < len(args) and (not args[i].startswith("-") or args[i][1:].isdigit()):  # -5: a bad seed
                    if not first:
                        out.append("--seeds")
                    out.append(args[i])
                    first = False
                    i += 1
        return super().parse_args(ctx, out)


class _Stop:
    """SIGINT / SIGTERM: the first asks the trainer to save and stop after the current round
    of episodes; a second one stops at once (the last checkpoint is kept)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._old: dict[int, object] = {}

    def __call__(self, signum, frame) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum

    def __enter__(self) -> "_Stop":
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


@app.command(cls=_SeedsCommand)
def train(
    env: str = typer.Option("simple_spread", "--env", help=f"MPE scenario: {', '.join(SCENARIOS)}."),
    agents: int = typer.Option(3, "--agents", help="Number of agents, 1 to 64 (simple_spread: agents = landmarks)."),
    episodes: int = typer.Option(..., "--episodes", min=1, help="Train until this many episodes (a resumed run counts the "
                                 "ones done); a multiple of --envs."),
    seed: int = typer.Option(0, "--seed", help="Seed of everything random (weights, exploration, batches, env resets): "
                             "an integer in [0, 2**32 - 1]."),
    seeds: Optional[List[int]] = typer.Option(None, "--seeds", help="Several runs, one per seed (--seeds 1 2 3), each in "
                                              "<out>/seed<S>/, plus their mean and spread on one plot; replaces --seed."),
    envs: int = typer.Option(1, "--envs", help="Environments stepped together (1 to 65536); the update schedule counts "
                             "every env's steps (one update per 100 env steps)."),
    env_backend: str = typer.Option("auto", "--env-backend", help="auto: the scenario's Numba port if it has one "
                                    "(simple_spread, simple), else mpe2; port; mpe2. Same results either way."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default results/maddpg/<env>_<agents>a_seed<seed>)."),
    checkpoint_every: int = typer.Option(100, "--checkpoint-every", min=0, help="Checkpoint every K episodes (0: only at "
                                         "the end): networks, optimiser and the replay transitions added since the last one."),
    log_every: int = typer.Option(100, "--log-every", min=1, help="Log row (metrics.csv, TensorBoard) every K episodes."),
    tensorboard: bool = typer.Option(True, "--tensorboard/--no-tensorboard", help="Also write TensorBoard event files to <out>/tb."),
    resume: bool = typer.Option(False, "--resume", help="Continue from <out>/checkpoint.npz with nothing lost."),
    batch_size: int = typer.Option(1024, "--batch-size", help="Minibatch size (openai/maddpg: 1024)."),
    learning_starts: Optional[int] = typer.Option(None, "--learning-starts", help="Replay size before updates (default batch x episode length)."),
    batch_parts: int = typer.Option(2, "--batch-parts",
                                    help="Row ranges each minibatch pass is split into, run on Numba's threads; results "
                                         "depend on this, not on the thread count (NUMBA_NUM_THREADS)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="Numba threads an update uses (default: 1 below batch 512, "
                                          "else all); results do not depend on it."),
    random_episodes: int = typer.Option(100, "--random-episodes", min=0, help="Episodes of a uniformly random policy measured for the plot (0: skip)."),
    fixed_point: Optional[str] = typer.Option(None, "--fixed-point", metavar="BITS.FRAC",
                                              help="Fixed-point datapath: every kernel output rounded to a signed BITS-bit "
                                                   "Q-format with FRAC fraction bits, saturating (e.g. 16.10). Default: float32."),
    critic: str = typer.Option("global", "--critic", help="global: MADDPG (each critic sees all agents' observations "
                               "and actions); local: DDPG (each critic sees only its own agent's)."),
) -> None:
    """Train MADDPG; print the seed, show progress, write rewards.csv, metrics.csv, learning_curve.png, checkpoint.npz
    (+ checkpoint.replay/) and TensorBoard events. SIGINT/SIGTERM save a checkpoint, then exit (130/143)."""
    from maddpg.trainer import MADDPGConfig
    from noc.base.config import validate

    q_bits, q_frac = _parse_fixed_point(fixed_point)
    if env_backend not in ("auto", "port", "mpe2"):
        raise HwModelsError(f"--env-backend {env_backend!r}: allowed: auto, port, mpe2")
    if threads is not None:
        import numba

        if not 1 <= threads <= numba.config.NUMBA_NUM_THREADS:
            raise HwModelsError(f"--threads {threads}: allowed: 1..{numba.config.NUMBA_NUM_THREADS} (NUMBA_NUM_THREADS)")
    run_seeds = list(dict.fromkeys(seeds)) if seeds else [seed]
    cfgs = []
    for s in run_seeds:  # the flags are checked by the trainer config's own rules, and named in its errors
        cfgs.append(validate({"env": env, "n_agents": agents, "seed": s, "batch_size": batch_size, "n_envs": envs,
                              "learning_starts": learning_starts, "fixed_point_bits": q_bits,
                              "fixed_point_frac_bits": q_frac, "batch_parts": batch_parts, "critic": critic}, MADDPGConfig,
                             source="maddpg train",
                             flags={"env": "--env", "n_agents": "--agents", "seed": "--seeds" if seeds else "--seed",
                                    "batch_size": "--batch-size", "n_envs": "--envs", "learning_starts": "--learning-starts",
                                    "fixed_point_bits": "--fixed-point", "fixed_point_frac_bits": "--fixed-point",
                                    "batch_parts": "--batch-parts", "critic": "--critic"}))
    if episodes % envs:
        lo, hi = episodes // envs * envs, (episodes // envs + 1) * envs
        raise HwModelsError(f"--episodes {episodes}: not a multiple of --envs {envs}; allowed: a multiple of {envs} "
                            f"(e.g. {f'{lo} or ' if lo else ''}{hi})")
    tag = f"seed{run_seeds[0]}" if len(run_seeds) == 1 else "seeds" + "-".join(map(str, run_seeds))
    base = out or Path("results") / "maddpg" / f"{env}_{agents}a_{tag}"
    named = "--out" if out else "the default output directory"
    dirs = [base] if len(run_seeds) == 1 else [base / f"seed{s}" for s in run_seeds]
    from hw_models.store import check_output_dir

    for d in dirs:  # before training, not after it
        check_output_dir(d, named, OUTPUTS)
    if len(run_seeds) > 1:
        check_output_dir(base, named, ("seeds_curve.png", "seeds_summary.csv"))
    _warn_no_learning(cfgs[0], episodes)
    with _Stop() as stop:
        results = []
        for cfg, d in zip(cfgs, dirs):
            results.append(_train_one(cfg, d, episodes, env_backend, threads, checkpoint_every, log_every, tensorboard,
                                      resume, random_episodes, stop))
            if stop.requested:
                break
    if len(run_seeds) > 1 and not stop.requested:
        csv_path, png_path = write_seed_summary(base, run_seeds, [r for r in results],
                                                f"MADDPG {env}, {agents} agent(s), seeds {', '.join(map(str, run_seeds))}")
        typer.echo(f"seeds {', '.join(map(str, run_seeds))}: wrote {csv_path}, {png_path}")
    if stop.requested:
        raise typer.Exit(stop.exit_code)


def _warn_no_learning(cfg, episodes: int) -> None:
    from maddpg.trainer import no_learning_warning

    msg = no_learning_warning(cfg, episodes)
    if msg:
        typer.echo(f"warning: {msg}")  # stdout, with the run's other lines (stderr is for errors)


def _train_one(cfg, out_dir: Path, episodes: int, env_backend: str, threads: Optional[int], checkpoint_every: int,
               log_every: int, tensorboard: bool, resume: bool, random_episodes: int, stop: _Stop) -> list[float]:
    """One training run into ``out_dir``; returns its episode rewards."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hw_models.store import write_csv_atomic
    from maddpg.trainer import MADDPG, random_policy_return

    ck = out_dir / "checkpoint.npz"
    console = Console(width=None if sys.stdout.isatty() else 120)
    trainer = MADDPG(cfg, _env_factory(), env_backend=env_backend, threads=threads)
    if resume:
        trainer.load(ck)
        console.print(f"resumed from {ck} at episode {trainer.episode}")
    elif ck.exists():
        console.print(f"note: {ck} exists; a fresh run replaces it at its first checkpoint (use --resume to continue)")
    q_bits, q_frac = cfg.fixed_point_bits, cfg.fixed_point_frac_bits
    every = checkpoint_every or episodes
    console.print(f"MADDPG on {cfg.env}, {trainer.n} agent(s), episodes {trainer.episode}..{episodes}, seed {cfg.seed}; "
                  "datapath " + (f"Q{q_bits - q_frac - 1}.{q_frac} fixed point ({q_bits} bits)" if q_bits else "float32"))
    console.print(f"{cfg.n_envs} env(s) ({trainer.venv.backend} backend), update threads {trainer.update_threads()}; "
                  f"checkpoint every {every} episode(s) to {ck}")
    if trainer.episode >= episodes:
        console.print(f"nothing to do: the checkpoint already holds {trainer.episode} episodes")
    tb = None
    if tensorboard:
        from maddpg.train_log import TensorBoardLog, TensorBoardUnavailable

        try:
            # a resumed run drops what the interrupted one logged after its checkpoint
            tb = TensorBoardLog(out_dir / "tb", resume_step=trainer.env_steps + 1 if resume else None)
        except TensorBoardUnavailable as exc:
            console.print(f"note: {exc}")
    metrics_path = out_dir / "metrics.csv"

    t0 = time.perf_counter()
    steps0 = trainer.env_steps
    interrupted = False
    try:
        with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("mean reward {task.fields[mean]:>9.2f}  {task.fields[rate]:>7.0f} steps/s"),
                      TimeElapsedColumn(), console=console) as progress:
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
        from maddpg.env import make_env

        factory = _env_factory() or (lambda name, n, s, mc: make_env(name, n, s, max_cycles=mc))
        random_ret = random_policy_return(factory(cfg.env, cfg.n_agents, cfg.seed + 1, cfg.max_cycles), random_episodes,
                                          cfg.seed + 1, cfg.max_cycles)
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
        raise typer.Exit(130)
    if stopped:
        console.print(f"{stop.name}: stopped after episode {trainer.episode}, checkpoint saved to {ck}{cost}; "
                      f"continue with --resume")
        return trainer.rewards
    last = trainer.rewards[-100:]
    console.print(f"done: {trainer.episode} episodes, {trainer.env_steps} env steps, {trainer.updates} updates; "
                  f"mean reward (last {len(last)}) {sum(last) / max(len(last), 1):.2f}"
                  + (f", random policy {random_ret:.2f}" if random_ret is not None else "") + cost)
    if trainer.updates == 0:
        typer.echo(f"warning: no update ran in {trainer.env_steps:,} env steps (the first comes at step "
                   f"{cfg.first_update_step or 'never'}): no learning happened")
    console.print(f"wrote {csv_path}, {png_path}, {ck}" + (f", {metrics_path}" if trainer.log_rows else "")
                  + (f", {out_dir / 'tb'}" if tb is not None else ""))
    return trainer.rewards


def _csv_row(row: dict) -> dict:
    return {k: (v if isinstance(v, int) else f"{v:.7g}") for k, v in row.items()}


@app.command(name="eval")
def eval_(
    checkpoint: Path = typer.Argument(..., help="A checkpoint.npz written by hw-models maddpg train."),
    episodes: int = typer.Option(100, "--episodes", min=1, max=65536, help="Evaluation episodes (run together, one env each)."),
    seed: int = typer.Option(12345, "--seed", help="Seed of the evaluation episodes' initial states: an integer in "
                             "[0, 2**32 - 1] (episode e resets with seed * 1000003 + e)."),
    env_backend: str = typer.Option("auto", "--env-backend", help="auto, port or mpe2 (same results)."),
    gif: Optional[Path] = typer.Option(None, "--gif", help="Also render evaluation episode 0 to this animated GIF."),
    csv: Optional[Path] = typer.Option(None, "--csv", help="Write every episode's return (total and per agent) here."),
) -> None:
    """Run the checkpoint's actors deterministically (softmax of the logits, no exploration noise) and print the mean
    and spread of the episode returns."""
    from maddpg.evaluate import evaluate, load_policy, render_gif
    from noc.base.config import SEED_RULE

    if not 0 <= seed <= 2**32 - 1:
        raise HwModelsError(f"--seed {seed}: {SEED_RULE}")
    if env_backend not in ("auto", "port", "mpe2"):
        raise HwModelsError(f"--env-backend {env_backend!r}: allowed: auto, port, mpe2")
    if gif is not None:
        from hw_models.store import check_output_file

        check_output_file(gif, "--gif")
    if csv is not None:
        from hw_models.store import check_output_file

        check_output_file(csv, "--csv")
    t = load_policy(checkpoint, episodes, env_backend, _env_factory())
    res = evaluate(t, episodes, seed)
    c = t.cfg
    typer.echo(f"evaluation of {checkpoint}: {c.env}, {t.n} agent(s), deterministic policy, {episodes} episode(s), "
               f"seed {seed} ({t.venv.backend})")
    typer.echo(f"return (sum over agents): mean {res.mean:.3f}, std {res.std:.3f}, min {res.returns.min():.3f}, "
               f"max {res.returns.max():.3f}")
    for i in range(t.n):
        a = res.agent_returns[:, i]
        typer.echo(f"  agent {i}: mean {a.mean():.3f}, std {a.std(ddof=1) if a.size > 1 else 0.0:.3f}")
    if csv is not None:
        from hw_models.store import write_csv_atomic

        rows = [{"episode": e, "reward": f"{res.returns[e]:.6f}",
                 **{f"reward_agent{i}": f"{res.agent_returns[e, i]:.6f}" for i in range(t.n)}} for e in range(episodes)]
        typer.echo(f"wrote {write_csv_atomic(csv, rows)}")
    if gif is not None:
        ret = render_gif(t, seed, gif, title=f"{c.env}, {t.n} agent(s), seed {seed}, episode 0")
        typer.echo(f"wrote {gif} (episode 0, return {ret:.3f})")


def _env_factory():
    """None: the trainer picks the environments (``--env-backend``); tests put a stand-in here."""
    return None


def _checkpoint_episode(ck: Path) -> str:
    from maddpg.checkpoint import load_npz

    try:
        return f"episode {load_npz(ck)[1]['episode']}"
    except HwModelsError:
        return "none written yet"
