"""``hw-models maddpg``: train MADDPG on an MPE environment with the HLS-style kernels."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer

from noc.errors import HwModelsError

app = typer.Typer(help="MADDPG on MPE environments (HLS-style Numba kernels).", no_args_is_help=True)


@app.command()
def train(
    env: str = typer.Option("simple_spread", "--env", help="MPE scenario: simple_spread, simple, simple_adversary, simple_tag."),
    agents: int = typer.Option(3, "--agents", help="Number of agents, 1 to 64 (simple_spread: agents = landmarks)."),
    episodes: int = typer.Option(..., "--episodes", min=1, help="Train until this many episodes (a resumed run counts the ones done)."),
    seed: int = typer.Option(0, "--seed", help="Seed of everything random (weights, exploration, batches, env resets): "
                             "an integer in [0, 2**32 - 1]."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default results/maddpg/<env>_<agents>a_seed<seed>)."),
    checkpoint_every: int = typer.Option(100, "--checkpoint-every", min=0, help="Checkpoint every K episodes (0: only at the end)."),
    resume: bool = typer.Option(False, "--resume", help="Continue from <out>/checkpoint.npz with nothing lost."),
    batch_size: int = typer.Option(1024, "--batch-size", help="Minibatch size (openai/maddpg: 1024)."),
    learning_starts: Optional[int] = typer.Option(None, "--learning-starts", help="Replay size before updates (default batch x episode length)."),
    batch_parts: int = typer.Option(2, "--batch-parts",
                                    help="Row ranges each minibatch pass is split into, run on Numba's threads; results "
                                         "depend on this, not on the thread count (NUMBA_NUM_THREADS)."),
    random_episodes: int = typer.Option(100, "--random-episodes", min=0, help="Episodes of a uniformly random policy measured for the plot (0: skip)."),
    fixed_point: Optional[str] = typer.Option(None, "--fixed-point", metavar="BITS.FRAC",
                                              help="Fixed-point datapath: every kernel output rounded to a signed BITS-bit "
                                                   "Q-format with FRAC fraction bits, saturating (e.g. 16.10). Default: float32."),
) -> None:
    """Train MADDPG; print the seed, show progress, write rewards.csv, learning_curve.png and checkpoint.npz."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hw_models.store import check_output_dir
    from maddpg.trainer import MADDPG, MADDPGConfig, random_policy_return
    from noc.config import validate

    q_bits, q_frac = _parse_fixed_point(fixed_point)
    # the flags are checked by the trainer config's own rules, and named in its errors
    cfg = validate({"env": env, "n_agents": agents, "seed": seed, "batch_size": batch_size,
                    "learning_starts": learning_starts, "fixed_point_bits": q_bits, "fixed_point_frac_bits": q_frac,
                    "batch_parts": batch_parts}, MADDPGConfig, source="maddpg train",
                   flags={"env": "--env", "n_agents": "--agents", "seed": "--seed", "batch_size": "--batch-size",
                          "learning_starts": "--learning-starts", "fixed_point_bits": "--fixed-point",
                          "fixed_point_frac_bits": "--fixed-point", "batch_parts": "--batch-parts"})
    out_dir = out or Path("results") / "maddpg" / f"{env}_{agents}a_seed{seed}"
    ck = out_dir / "checkpoint.npz"
    # before training, not after it
    check_output_dir(out_dir, "--out" if out else "the default output directory",
                     ("rewards.csv", "learning_curve.png", "checkpoint.npz"))
    console = Console(width=None if sys.stdout.isatty() else 120)
    trainer = MADDPG(cfg, _env_factory())
    if resume:
        trainer.load(ck)
        console.print(f"resumed from {ck} at episode {trainer.episode}")
    elif ck.exists():
        console.print(f"note: {ck} exists; a fresh run replaces it at its first checkpoint (use --resume to continue)")
    console.print(f"MADDPG on {env}, {trainer.n} agent(s), episodes {trainer.episode}..{episodes}, seed {seed}; "
                  f"checkpoint every {checkpoint_every or episodes} episode(s) to {ck}; datapath "
                  + (f"Q{q_bits - q_frac - 1}.{q_frac} fixed point ({q_bits} bits)" if q_bits else "float32"))
    if trainer.episode >= episodes:
        console.print(f"nothing to do: the checkpoint already holds {trainer.episode} episodes")
    t0 = time.perf_counter()
    steps0 = trainer.env_steps
    interrupted = False
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("mean reward {task.fields[mean]:>9.2f}  {task.fields[rate]:>7.0f} steps/s"),
                  TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task("episodes", total=episodes, completed=trainer.episode, mean=float("nan"), rate=0.0)

        def on_episode(rec) -> None:
            last = trainer.rewards[-100:]
            rate = (trainer.env_steps - steps0) / max(time.perf_counter() - t0, 1e-9)
            progress.update(task, completed=trainer.episode, mean=sum(last) / len(last), rate=rate)

        try:
            trainer.train(episodes, checkpoint_path=ck, checkpoint_every=checkpoint_every or episodes, on_episode=on_episode)
        except KeyboardInterrupt:
            interrupted = True
    random_ret = None
    if random_episodes and not interrupted:
        random_ret = random_policy_return(_env_factory()(env, agents, seed + 1, cfg.max_cycles), random_episodes, seed + 1, cfg.max_cycles)
    csv_path, png_path = write_outputs(out_dir, trainer.rewards, random_ret, f"MADDPG {env}, {trainer.n} agent(s), seed {seed}")
    if interrupted:
        done = _checkpoint_episode(ck)
        console.print(f"interrupted at episode {trainer.episode}; last checkpoint ({done}) kept in {ck}: "
                      f"continue with --resume")
        raise typer.Exit(130)
    last = trainer.rewards[-100:]
    console.print(f"done: {trainer.episode} episodes, {trainer.env_steps} env steps, {trainer.updates} updates; "
                  f"mean reward (last {len(last)}) {sum(last) / max(len(last), 1):.2f}"
                  + (f", random policy {random_ret:.2f}" if random_ret is not None else ""))
    console.print(f"wrote {csv_path}, {png_path}, {ck}")


def _parse_fixed_point(text: Optional[str]) -> tuple[int, int]:
    """``"16.10"`` -> (16, 10); None -> (0, 0), float32."""
    if text is None:
        return 0, 0
    parts = text.split(".")
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):
        raise HwModelsError(f"--fixed-point {text!r}: expected BITS.FRAC, e.g. 16.10 (16-bit words, 10 fraction bits)")
    bits, frac = int(parts[0]), int(parts[1])
    if not 2 <= bits <= 32 or frac >= bits:
        raise HwModelsError(f"--fixed-point {text!r}: need 2 <= BITS <= 32 and FRAC < BITS")
    return bits, frac


def _env_factory():
    try:
        from maddpg.env import make_env
    except ImportError as exc:
        raise HwModelsError(f"the MPE environments (maddpg.env) are not available: {exc}") from None
    return lambda name, n, seed, max_cycles: make_env(name, n, seed, max_cycles=max_cycles)


def _checkpoint_episode(ck: Path) -> str:
    from maddpg.checkpoint import load_npz

    try:
        return f"episode {load_npz(ck)[1]['episode']}"
    except HwModelsError:
        return "none written yet"


def write_outputs(out_dir: Path, rewards: list[float], random_ret: float | None, title: str) -> tuple[Path, Path]:
    """rewards.csv (episode, reward, mean of the last 100) and learning_curve.png, each written atomically."""
    import numpy as np

    from hw_models.plots import save_figure
    from hw_models.store import write_csv_atomic

    r = np.asarray(rewards, np.float64)
    csum = np.concatenate([[0.0], np.cumsum(r)])
    lo = np.maximum(np.arange(len(r)) + 1 - 100, 0)
    mean100 = (csum[1:] - csum[lo]) / (np.arange(len(r)) + 1 - lo) if len(r) else r
    rows = [{"episode": e, "reward": f"{r[e]:.6f}", "reward_mean100": f"{mean100[e]:.6f}"} for e in range(len(r))]
    csv_path = write_csv_atomic(out_dir / "rewards.csv", rows)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(r, lw=0.5, alpha=0.4, label="episode reward")
    ax.plot(mean100, lw=1.8, label="mean of last 100")
    if random_ret is not None:
        ax.axhline(random_ret, color="k", ls="--", lw=1, label=f"random policy ({random_ret:.1f})")
    ax.set_xlabel("episode")
    ax.set_ylabel("episode reward (sum over agents)")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    try:
        png_path = save_figure(fig, out_dir / "learning_curve.png", bbox_inches=None)  # the layout of tight_layout
    finally:
        plt.close(fig)
    return csv_path, png_path
