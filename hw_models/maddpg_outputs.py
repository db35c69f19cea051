"""What a MADDPG training run writes: its rewards CSV and learning curve, and the summary
of several seeds (``hw-models maddpg train``; ``bench/maddpg_learning.py``). Each file is
written whole (a temporary file renamed over the target)."""

from __future__ import annotations

from pathlib import Path


def _mean100(r):
    import numpy as np

    csum = np.concatenate([[0.0], np.cumsum(r)])
    lo = np.maximum(np.arange(len(r)) + 1 - 100, 0)
    return (csum[1:] - csum[lo]) / (np.arange(len(r)) + 1 - lo) if len(r) else r


def write_outputs(out_dir: Path, rewards: list[float], random_ret: float | None, title: str,
                  agent_rewards: list[list[float]] | None = None) -> tuple[Path, Path]:
    """rewards.csv (episode, reward, mean of the last 100, each agent's return) and
    learning_curve.png, each written atomically."""
    import numpy as np

    from hw_models.plots import save_figure
    from hw_models.store import write_csv_atomic

    r = np.asarray(rewards, np.float64)
    mean100 = _mean100(r)
    rows = []
    for e in range(len(r)):
        row = {"episode": e, "reward": f"{r[e]:.6f}", "reward_mean100": f"{mean100[e]:.6f}"}
        if agent_rewards:
            row.update({f"reward_agent{i}": f"{v:.6f}" for i, v in enumerate(agent_rewards[e])})
        rows.append(row)
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


def write_seed_summary(out_dir: Path, seeds: list[int], rewards: list[list[float]], title: str) -> tuple[Path, Path]:
    """seeds_summary.csv (per episode: each seed's mean of the last 100, their mean and
    standard deviation) and seeds_curve.png (the mean with a +-1 std band, each seed thin)."""
    import numpy as np

    from hw_models.plots import save_figure
    from hw_models.store import write_csv_atomic

    n = min(len(r) for r in rewards)
    curves = np.stack([_mean100(np.asarray(r[:n], np.float64)) for r in rewards])
    mean = curves.mean(axis=0)
    std = curves.std(axis=0, ddof=1) if len(seeds) > 1 else np.zeros(n)
    rows = [{"episode": e, **{f"seed{s}_mean100": f"{curves[k, e]:.6f}" for k, s in enumerate(seeds)},
             "mean": f"{mean[e]:.6f}", "std": f"{std[e]:.6f}"} for e in range(n)]
    csv_path = write_csv_atomic(out_dir / "seeds_summary.csv", rows)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    x = np.arange(n)
    for k, s in enumerate(seeds):
        ax.plot(x, curves[k], lw=0.6, alpha=0.5, label=f"seed {s}")
    ax.plot(x, mean, lw=2, color="k", label=f"mean of {len(seeds)} seeds")
    ax.fill_between(x, mean - std, mean + std, color="k", alpha=0.15, label="±1 std across seeds")
    ax.set_xlabel("episode")
    ax.set_ylabel("episode reward, mean of last 100")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    try:
        png_path = save_figure(fig, out_dir / "seeds_curve.png", bbox_inches=None)
    finally:
        plt.close(fig)
    return csv_path, png_path
