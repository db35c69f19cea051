"""Time per MADDPG update (every agent: critic step, actor step, soft target updates; batch
1024) with our Numba kernels vs PyTorch on the CPU, identical shapes and hyperparameters, in
the same run. Shapes are simple_spread's: N agents, observation 4 + 2N + 4(N - 1), 5 actions,
critics over all observations and actions, two 64-unit ReLU layers.

    .venv/bin/python bench/maddpg_speed.py [--agents 3 6 12] [--repeats 20] [--rounds 3] [--batch 1024]
                                           [--threads N] [--batch-parts P] [--profile]

Each round builds fresh instances of both (so allocation luck varies between rounds), times
``--repeats`` updates of ours, then of PyTorch, and keeps each median; the table shows the
median over ``--rounds`` rounds and the range of the per-round speed-ups (the machine may be
shared: alternating rounds spreads load changes over both). The header names the commit,
the thread counts and the load average before and after. Ours splits each minibatch pass
into ``--batch-parts`` row ranges (default: the trainer's, 2) run on Numba's threads;
``--threads k`` (default: Numba's, one per CPU) is the thread count of *both*: Numba's
``set_num_threads(k)`` and PyTorch's ``torch.set_num_threads(k)``. Each round is printed
(ours, PyTorch, ratio), so the spread is visible.

``--profile`` instead times the parts of our update (every agent, summed per update):
each network pass (critic / target critic / actor / target actor, forward or backward),
Adam, the soft target updates, the replay gather, the random numbers and the small
kernels, by wrapping each call with a timer (about 1 us per call of overhead).

PyTorch is the optional ``bench`` extra (``pip install -e '.[bench]'``); without it the
PyTorch column is skipped with a message.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from maddpg.trainer import MADDPG, make_config

ACT = 5
REPLAY = 20_000


def spread_obs_dim(n: int) -> int:
    return 4 + 2 * n + 4 * (n - 1)


class _ShapeOnlyEnv:
    """Dimensions only: the bench fills the replay directly and never steps an environment."""

    def __init__(self, n: int) -> None:
        self.n_agents = n
        self.obs_dims = [spread_obs_dim(n)] * n
        self.act_dims = [ACT] * n


def _fill(rp, rng: np.random.Generator) -> None:
    for j in range(len(rp.obs)):
        rp.obs[j][:REPLAY] = rng.normal(size=rp.obs[j][:REPLAY].shape)
        rp.next_obs[j][:REPLAY] = rng.normal(size=rp.obs[j][:REPLAY].shape)
        a = rng.random((REPLAY, ACT))
        rp.act[j][:REPLAY] = a / a.sum(1, keepdims=True)
    rp.rew[:, :REPLAY] = rng.normal(size=(len(rp.obs), REPLAY))
    rp.size = rp.pos = REPLAY


def build_ours(n: int, batch: int, batch_parts: int | None = None):
    """A fresh trainer with a filled replay, warmed up; returns its update."""
    extra = {} if batch_parts is None else {"batch_parts": batch_parts}
    cfg = make_config(env="simple_spread", n_agents=n, seed=0, batch_size=batch, buffer_size=REPLAY, **extra)
    t = MADDPG(cfg, lambda *a: _ShapeOnlyEnv(n))
    _fill(t.replay, np.random.default_rng(0))
    t.update()  # warm-up (compilation, workspaces)
    return t.update


def build_torch(n: int, batch: int):
    """The same update in PyTorch (fresh networks and optimisers), warmed up; returns it."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    od = spread_obs_dim(n)
    c_in = n * (od + ACT)

    def mlp(i, o):
        return nn.Sequential(nn.Linear(i, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, o))

    actors = [mlp(od, ACT) for _ in range(n)]
    critics = [mlp(c_in, 1) for _ in range(n)]
    actors_t = [mlp(od, ACT) for _ in range(n)]
    critics_t = [mlp(c_in, 1) for _ in range(n)]
    for a, b in zip(actors_t + critics_t, actors + critics):
        a.load_state_dict(b.state_dict())
    a_opt = [torch.optim.Adam(a.parameters(), lr=1e-2, eps=1e-8) for a in actors]
    c_opt = [torch.optim.Adam(c.parameters(), lr=1e-2, eps=1e-8) for c in critics]
    g = torch.Generator().manual_seed(0)
    obs = torch.randn(n, REPLAY, od, generator=g)
    nobs = torch.randn(n, REPLAY, od, generator=g)
    act = torch.softmax(torch.randn(n, REPLAY, ACT, generator=g), -1)
    rew = torch.randn(n, REPLAY, generator=g)
    done = torch.zeros(REPLAY)

    def gumbel(logits):
        u = torch.rand(logits.shape, generator=g).clamp_(1e-10, 1 - 2**-24)
        return torch.softmax(logits - torch.log(-torch.log(u)), -1)

    def clip_per_tensor(params):
        for p in params:
            torch.nn.utils.clip_grad_norm_([p], 0.5)

    def update():
        for i in range(n):
            idx = torch.randint(0, REPLAY, (batch,), generator=g)
            o = [obs[j, idx] for j in range(n)]
            no = [nobs[j, idx] for j in range(n)]
            a = [act[j, idx] for j in range(n)]
            with torch.no_grad():
                ta = [gumbel(actors_t[j](no[j])) for j in range(n)]
                q_next = critics_t[i](torch.cat(no + ta, 1)).squeeze(1)
                y = rew[i, idx] + 0.95 * (1 - done[idx]) * q_next
            q = critics[i](torch.cat(o + a, 1)).squeeze(1)
            loss = ((q - y) ** 2).mean()
            c_opt[i].zero_grad()
            loss.backward()
            clip_per_tensor(critics[i].parameters())
            c_opt[i].step()
            logits = actors[i](o[i])
            a2 = list(a)
            a2[i] = gumbel(logits)
            p_loss = -critics[i](torch.cat(o + a2, 1)).mean() + 1e-3 * (logits**2).mean()
            a_opt[i].zero_grad()
            p_loss.backward()
            clip_per_tensor(actors[i].parameters())
            a_opt[i].step()
            with torch.no_grad():
                for tn, sn in ((actors_t[i], actors[i]), (critics_t[i], critics[i])):
                    for tp, sp in zip(tn.parameters(), sn.parameters()):
                        tp.mul_(0.99).add_(sp, alpha=0.01)

    update()
    return update


def profile_ours(n: int, batch: int, repeats: int, batch_parts: int | None) -> list[tuple[str, float, int]]:
    """Median ms per update spent in each part of our update, and calls per update."""
    from maddpg import batch_parts as BP
    from maddpg import kernels as K
    from maddpg import trainer as T

    extra = {} if batch_parts is None else {"batch_parts": batch_parts}
    cfg = make_config(env="simple_spread", n_agents=n, seed=0, batch_size=batch, buffer_size=REPLAY, **extra)
    t = MADDPG(cfg, lambda *a: _ShapeOnlyEnv(n))
    _fill(t.replay, np.random.default_rng(0))
    acc: dict[str, list[float]] = {}

    def timed(fn, name):
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                acc.setdefault(name, []).append(time.perf_counter() - t0)
        return wrapper

    for ag in t.agents:
        for role, net in ag.nets().items():
            for m in ("forward", "forward_sample", "backward"):
                setattr(net, m, timed(getattr(net, m), f"{role}.{m}"))
    # the trainer calls the kernels as K.name / BP.name: give it proxies whose listed functions
    # are timed (the kernels' own modules stay untouched, Numba resolves them at compile time)
    class _Proxy:
        def __init__(self, mod, names):
            self._mod = mod
            for name in names:
                setattr(self, name, timed(getattr(mod, name), name))

        def __getattr__(self, name):
            return getattr(self._mod, name)

    saved = (T.K, T.BP)
    T.K = _Proxy(K, ("adam_clip", "soft_update", "randint_fill", "uniform_fill", "td_loss_grad", "put_columns",
                     "gumbel_softmax_backward", "add_l2_grad"))
    T.BP = _Proxy(BP, ("gather_transitions",))
    try:
        t.update()  # warm-up
        per_update: dict[str, list[float]] = {}
        calls: dict[str, int] = {}
        totals = []
        for _ in range(repeats):
            acc.clear()
            t0 = time.perf_counter()
            t.update()
            totals.append(time.perf_counter() - t0)
            for k, v in acc.items():
                per_update.setdefault(k, []).append(sum(v))
                calls[k] = len(v)
    finally:
        T.K, T.BP = saved
    rows = sorted(((k, float(np.median(v)) * 1e3, calls[k]) for k, v in per_update.items()), key=lambda r: -r[1])
    parts_ms = sum(r[1] for r in rows)
    total_ms = float(np.median(totals)) * 1e3
    rows.append(("rest (Python, statistics, thread switches)", total_ms - parts_ms, 0))
    rows.append(("whole update", total_ms, 1))
    return rows


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def time_round(n: int, batch: int, repeats: int, batch_parts: int | None, with_torch: bool) -> tuple[float, float | None]:
    """Median update time of ours, then of PyTorch's, over one round of fresh instances.

    Blocks of updates, not one-by-one alternation: alternating one by one measured ours at
    9.4 ms against 5-7 ms in blocks (3 agents, the earlier helper-thread trainer). The likely
    cause, not proven: PyTorch's OpenMP workers spin briefly on the second core after each of
    its updates, where our second thread runs."""
    ours = _median_time(build_ours(n, batch, batch_parts), repeats)
    theirs = _median_time(build_torch(n, batch), repeats) if with_torch else None
    return ours, theirs


def _threading_layer(n: int, batch: int, parts: int) -> str:
    """Numba's threading layer (known once a parallel function has run: a warm-up update)."""
    import numba

    build_ours(n, batch, parts)
    try:
        return numba.threading_layer()
    except ValueError:
        return "none started"


def _commit() -> str:
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "maddpg", "bench/maddpg_speed.py"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("+local edits" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, nargs="+", default=[3, 6, 12])
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=20, help="updates per round (median)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of fresh instances of ours and PyTorch (median)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of both ours (Numba) and PyTorch (default: Numba's, one per CPU)")
    ap.add_argument("--profile", action="store_true", help="time the parts of our update instead")
    ap.add_argument("--batch-parts", type=int, default=None, help="minibatch parts of ours (default: the trainer's)")
    args = ap.parse_args()
    import numba

    if args.threads is not None:
        if not 1 <= args.threads <= numba.config.NUMBA_NUM_THREADS:
            ap.error(f"--threads must be in 1..{numba.config.NUMBA_NUM_THREADS}, got {args.threads}")
        numba.set_num_threads(args.threads)
    k = numba.get_num_threads()
    try:
        import torch

        torch.set_num_threads(k)  # the same thread count as ours
        torch_info = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    except ImportError:
        torch = None
        torch_info = "PyTorch not installed: skipping the PyTorch column (pip install -e '.[bench]')"
    if args.batch_parts is not None and args.batch_parts < 1:
        ap.error(f"--batch-parts must be >= 1, got {args.batch_parts}")
    parts = args.batch_parts or make_config().batch_parts
    if args.profile:
        load0 = os.getloadavg()
        for n in args.agents:
            print(f"# our update, {n} agents, batch {args.batch}, {parts} batch parts on {k} threads; median of "
                  f"{args.repeats} updates; load average {load0[0]:.2f}")
            print(f"{'part':<44} {'ms/update':>10} {'calls':>6}")
            for name, ms, calls in profile_ours(n, args.batch, args.repeats, parts):
                print(f"{name:<44} {ms:>10.3f} {calls:>6}", flush=True)
        return
    load0 = os.getloadavg()
    print(f"# MADDPG update time, batch {args.batch}, median of {args.rounds} rounds x {args.repeats} updates; "
          f"commit {_commit()}; {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; numba "
          f"{numba.__version__} ({parts} batch parts on {numba.get_num_threads()} threads, "
          f"threading layer {_threading_layer(n=args.agents[0], batch=args.batch, parts=parts)}); {torch_info}")
    print(f"# load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}")
    print(f"{'agents':>6} {'ours ms':>9} {'torch ms':>9} {'speed-up':>9}  {'per-round range':>16}")
    for n in args.agents:
        ours_r, torch_r = [], []
        for r in range(args.rounds):
            o, t = time_round(n, args.batch, args.repeats, parts, torch is not None)
            ours_r.append(o)
            if t is not None:
                torch_r.append(t)
            print(f"#   round {r}: {n} agents, ours {o * 1e3:.2f} ms" +
                  (f", torch {t * 1e3:.2f} ms, {t / o:.2f}x" if t is not None else ""), flush=True)
        ours = float(np.median(ours_r))
        if torch is not None:
            tt = float(np.median(torch_r))
            ratios = [b / a for a, b in zip(ours_r, torch_r)]
            print(f"{n:>6} {ours * 1e3:>9.2f} {tt * 1e3:>9.2f} {tt / ours:>8.2f}x  {min(ratios):>7.2f}x-{max(ratios):.2f}x",
                  flush=True)
        else:
            print(f"{n:>6} {ours * 1e3:>9.2f} {'-':>9} {'-':>9}", flush=True)
    load1 = os.getloadavg()
    print(f"# load average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")


if __name__ == "__main__":
    main()
