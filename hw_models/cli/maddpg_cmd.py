"""``hw-models maddpg``: train MADDPG on an MPE environment with the HLS-style kernels, and
evaluate a checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from typer.core import TyperCommand

from hw_models.cli.options import EnvBackend, FixedPoint
from maddpg.env import SCENARIOS
from noc.base.errors import HwModelsError

#: the most episodes one training run may ask for (bounds a typo such as --episodes 1000000000)
MAX_EPISODES = 1_000_000

app = typer.Typer(help="MADDPG on MPE environments (HLS-style Numba kernels).", no_args_is_help=True)


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


@app.command(cls=_SeedsCommand)
def train(
    env: str = typer.Option("simple_spread", "--env", help=f"MPE scenario: {', '.join(SCENARIOS)}."),
    agents: int = typer.Option(3, "--agents", help="Number of agents, 1 to 64 (simple_spread: agents = landmarks)."),
    episodes: int = typer.Option(..., "--episodes", min=1, max=MAX_EPISODES,
                                 help="Train until this many episodes (a resumed run counts the ones done); a multiple "
                                 f"of --envs; at most {MAX_EPISODES:,} (the MADDPG paper's runs take 25,000-60,000)."),
    seed: int = typer.Option(0, "--seed", help="Seed of everything random (weights, exploration, batches, env resets): "
                             "an integer in [0, 2**32 - 1]."),
    seeds: Optional[List[int]] = typer.Option(None, "--seeds", help="Several runs, one per seed (--seeds 1 2 3), each in "
                                              "<out>/seed<S>/, plus their mean and spread on one plot; replaces --seed."),
    envs: int = typer.Option(1, "--envs", help="Environments stepped together (1 to 65536); the update schedule counts "
                             "every env's steps (one update per 100 env steps)."),
    env_backend: EnvBackend = "auto",
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
    fixed_point: FixedPoint = None,
    critic: str = typer.Option("global", "--critic", help="global: MADDPG (each critic sees all agents' observations "
                               "and actions); local: DDPG (each critic sees only its own agent's)."),
) -> None:
    """Train MADDPG; print the seed, show progress, write rewards.csv, metrics.csv, learning_curve.png, checkpoint.npz
    (+ checkpoint.replay/) and TensorBoard events. SIGINT/SIGTERM save a checkpoint, then exit (130/143)."""
    from hw_models import maddpg_run as run
    from hw_models.flags import parse_fixed_point
    from hw_models.maddpg_outputs import write_seed_summary

    q_bits, q_frac = parse_fixed_point(fixed_point)
    run.check_env_backend(env_backend)
    run.check_threads(threads)
    run_seeds = list(dict.fromkeys(seeds)) if seeds else [seed]
    cfgs = run.trainer_configs(run_seeds, bool(seeds), env=env, agents=agents, batch_size=batch_size, envs=envs,
                               learning_starts=learning_starts, fixed_point=(q_bits, q_frac), batch_parts=batch_parts,
                               critic=critic)
    run.check_episodes(episodes, envs)
    base, dirs = run.output_dirs(out, env, agents, run_seeds)
    note = run.no_learning_note(cfgs[0], episodes)
    if note:
        typer.echo(note)  # stdout, with the run's other lines (stderr is for errors)
    try:
        with run.Stop() as stop:
            results = []
            for cfg, d in zip(cfgs, dirs):
                results.append(run.train_one(cfg, d, episodes, env_backend, threads, checkpoint_every, log_every,
                                             tensorboard, resume, random_episodes, stop))
                if stop.requested:
                    break
    except run.Interrupted as exc:
        raise typer.Exit(exc.exit_code) from None
    if len(run_seeds) > 1 and not stop.requested:
        csv_path, png_path = write_seed_summary(base, run_seeds, results,
                                                f"MADDPG {env}, {agents} agent(s), seeds {', '.join(map(str, run_seeds))}")
        typer.echo(f"seeds {', '.join(map(str, run_seeds))}: wrote {csv_path}, {png_path}")
    if stop.requested:
        raise typer.Exit(stop.exit_code)


@app.command(name="eval")
def eval_(
    checkpoint: Path = typer.Argument(..., help="A checkpoint.npz written by hw-models maddpg train."),
    episodes: int = typer.Option(100, "--episodes", min=1, max=65536, help="Evaluation episodes (run together, one env each)."),
    seed: int = typer.Option(12345, "--seed", help="Seed of the evaluation episodes' initial states: an integer in "
                             "[0, 2**32 - 1] (episode e resets with seed * 1000003 + e)."),
    env_backend: EnvBackend = "auto",
    gif: Optional[Path] = typer.Option(None, "--gif", help="Also render evaluation episode 0 to this animated GIF."),
    csv: Optional[Path] = typer.Option(None, "--csv", help="Write every episode's return (total and per agent) here."),
) -> None:
    """Run the checkpoint's actors deterministically (softmax of the logits, no exploration noise) and print the mean
    and spread of the episode returns."""
    from hw_models import maddpg_run as run
    from maddpg.evaluate import evaluate, load_policy, render_gif
    from hw_models.store import check_output_file, write_csv_atomic
    from noc.base.config import SEED_RULE

    if not 0 <= seed <= 2**32 - 1:
        raise HwModelsError(f"--seed {seed}: {SEED_RULE}")
    run.check_env_backend(env_backend)
    for path, flag in ((gif, "--gif"), (csv, "--csv")):
        if path is not None:
            check_output_file(path, flag)
    t = load_policy(checkpoint, episodes, env_backend, run.env_factory())
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
        rows = [{"episode": e, "reward": f"{res.returns[e]:.6f}",
                 **{f"reward_agent{i}": f"{res.agent_returns[e, i]:.6f}" for i in range(t.n)}} for e in range(episodes)]
        typer.echo(f"wrote {write_csv_atomic(csv, rows)}")
    if gif is not None:
        ret = render_gif(t, seed, gif, title=f"{c.env}, {t.n} agent(s), seed {seed}, episode 0")
        typer.echo(f"wrote {gif} (episode 0, return {ret:.3f})")

