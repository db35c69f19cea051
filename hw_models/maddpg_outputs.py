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

    from hw_models.report.charts import learning_curve_chart
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
    return csv_path, learning_curve_chart(r, mean100, random_ret, out_dir / "learning_curve.png", title)


def write_seed_summary(out_dir: Path, seeds: list[int], rewards: list[list[float]], title: str) -> tuple[Path, Path]:
    """seeds_summary.csv (per episode: each seed's mean of the last 100, their mean and
    standard deviation) and seeds_curve.png (the mean with a +-1 std band, each seed thin)."""
    import numpy as np

    from hw_models.report.charts import seeds_curve_chart
    from hw_models.store import write_csv_atomic

    n = min(len(r) for r in rewards)
    curves = np.stack([_mean100(np.asarray(r[:n], np.float64)) for r in rewards])
    mean = curves.mean(axis=0)
    std = curves.std(axis=0, ddof=1) if len(seeds) > 1 else np.zeros(n)
    rows = [{"episode": e, **{f"seed{s}_mean100": f"{curves[k, e]:.6f}" for k, s in enumerate(seeds)},
             "mean": f"{mean[e]:.6f}", "std": f"{std[e]:.6f}"} for e in range(n)]
    csv_path = write_csv_atomic(out_dir / "seeds_summary.csv", rows)
    return csv_path, seeds_curve_chart(seeds, curves, mean, std, out_dir / "seeds_curve.png", title)
