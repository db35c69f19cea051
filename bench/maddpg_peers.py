"""Our MADDPG pieces side by side with the peers a MARL researcher would pick: environment
steps/s of simple_spread (3 agents) for our Numba port, VMAS (PyTorch, CPU) and JaxMARL (JAX
jit + vmap, CPU); the time of one MADDPG update of the same networks with our kernels,
PyTorch and JAX (jit); end to end, environment steps/s with learning (openai/maddpg's
cadence) for our trainer and for a PyTorch MADDPG written here, both on our port.

    .venv-peers/bin/python bench/maddpg_peers.py [--parts env update e2e] [--envs 1 64 1024 16384]
        [--rounds 3] [--threads 1] [--agents 3] [--out bench/data/maddpg_peers.txt]

The peers are the ``peers`` extra (``pip install -e '.[peers]'``, best in its own virtual
environment: they pull large trees). Every comparison is interleaved: each round times every
contender once, in turn, and the tables give the median over the rounds and the range.
All run on ``--threads`` threads (Numba's ``set_num_threads``, ``torch.set_num_threads``,
XLA's intra-op threads through ``XLA_FLAGS``, set before JAX is imported) with one OpenMP
wait policy, ``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets one (idle threads
sleep: the trainer's default).

Environment steps: one env step is one environment advancing one time step with all
agents acting; random actions (softmax vectors for ours, the same as force vectors for
VMAS's continuous actions, uniform discrete actions for JaxMARL), 25-step episodes with the
resets counted (JaxMARL resets inside its step, as its API does).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def _set_threads_before_imports(k: int) -> None:
    # One OpenMP wait policy for every contender, set before any OpenMP runtime is loaded:
    # idle threads sleep, as our trainer asks when it is imported. main() starts Numba's
    # OpenMP pool (set_num_threads) before the trainer is imported, so without this the pool's
    # threads spun between passes (on a shared 2-vCPU machine our end-to-end run at 2 threads
    # was 8x slower in this script than in bench/maddpg_train_speed.py).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if k == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


# ---- environment steps ---------------------------------------------------------------------

def env_ours(B: int, n: int, steps: int):
    from maddpg.spread_port import SpreadPort

    port = SpreadPort(B, n)
    acts = _softmax(np.random.default_rng(0).standard_normal((8, B, n, 5)))
    port.reset(seed=0)
    port.step(acts[0])

    def run():
        ep = 0
        t0 = time.perf_counter()
        done = 0
        while done < steps:
            port.reset(seed=ep)
            for t in range(25):
                port.step(acts[t % 8])
            done += 25
            ep += 1
        return done * B / (time.perf_counter() - t0)

    return run


def env_vmas(B: int, n: int, steps: int):
    import torch
    import vmas

    env = vmas.make_env("simple_spread", num_envs=B, device="cpu", continuous_actions=True, n_agents=n, seed=0,
                        max_steps=None)
    g = torch.Generator().manual_seed(0)
    acts = [[torch.rand((B, 2), generator=g) * 2 - 1 for _ in range(n)] for _ in range(8)]
    env.reset()
    env.step(acts[0])

    def run():
        t0 = time.perf_counter()
        done = 0
        while done < steps:
            env.reset()
            for t in range(25):
                env.step(acts[t % 8])
            done += 25
        return done * B / (time.perf_counter() - t0)

    return run


def env_jaxmarl(B: int, n: int, steps: int):
    import jax
    import jax.numpy as jnp
    from jaxmarl import make

    env = make("MPE_simple_spread_v3", num_agents=n, num_landmarks=n, max_steps=25)
    agents = env.agents

    def one(carry, key):
        state = carry
        k_act, k_step = jax.random.split(key)
        ks = jax.random.split(k_act, n)
        act = {a: jax.random.randint(ks[i], (), 0, 5) for i, a in enumerate(agents)}
        _, state, rew, dones, _ = env.step(k_step, state, act)
        return state, rew[agents[0]]

    @jax.jit
    def rollout(key):
        keys = jax.random.split(key, B)
        _, states = jax.vmap(env.reset)(keys)

        def body(states, k):
            ks = jax.random.split(k, B)
            states, r = jax.vmap(one)(states, ks)
            return states, r.sum()

        _, rs = jax.lax.scan(body, states, jax.random.split(key, 25))
        return rs.sum()

    key = jax.random.PRNGKey(0)
    rollout(key).block_until_ready()  # compile

    def run():
        t0 = time.perf_counter()
        done = 0
        k = key
        while done < steps:
            k, sub = jax.random.split(k)
            rollout(sub).block_until_ready()
            done += 25
        return done * B / (time.perf_counter() - t0)

    return run


def bench_env(args, out) -> None:
    out(f"## simple_spread, {args.agents} agents: env steps/s (median of {args.rounds} interleaved rounds, range)")
    out(f"{'envs':>6} {'ours (Numba port)':>26} {'VMAS (torch CPU)':>26} {'JaxMARL (jax CPU)':>26} {'ours / best peer':>17}")
    for B in args.envs:
        steps = max(25, min(2500, (200_000 // B) // 25 * 25))  # env steps per env per round
        runs = {}
        for name, make in (("ours", env_ours), ("vmas", env_vmas), ("jaxmarl", env_jaxmarl)):
            try:
                runs[name] = make(B, args.agents, steps)
            except Exception as e:  # a peer that cannot run at this size: say so in its column
                runs[name] = None
                out(f"#   {name} at {B} envs: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
        res = {k: [] for k in runs}
        for _ in range(args.rounds):
            for k, run in runs.items():
                if run is not None:
                    res[k].append(run())
        cells = []
        for k in ("ours", "vmas", "jaxmarl"):
            v = res[k]
            cells.append(f"{np.median(v):>12,.0f} ({min(v):,.0f}-{max(v):,.0f})" if v else f"{'-':>26}")
        peers = [np.median(res[k]) for k in ("vmas", "jaxmarl") if res[k]]
        ratio = f"{np.median(res['ours']) / max(peers):>16.1f}x" if peers and res["ours"] else f"{'-':>17}"
        out(f"{B:>6} {cells[0]:>26} {cells[1]:>26} {cells[2]:>26} {ratio}")


# ---- one update ------------------------------------------------------------------------------

def build_jax(n: int, batch: int):
    """The MADDPG update of maddpg_speed.build_torch in JAX, jitted as one function (every
    agent's critic step, actor step and target updates); returns a callable that runs one."""
    import jax
    import jax.numpy as jnp

    from maddpg_speed import ACT, REPLAY, spread_obs_dim

    od = spread_obs_dim(n)
    c_in = n * (od + ACT)
    key = jax.random.PRNGKey(0)

    def init_mlp(k, sizes):
        ps = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            k, s = jax.random.split(k)
            lim = np.sqrt(6.0 / (a + b))
            ps.append((jax.random.uniform(s, (a, b), minval=-lim, maxval=lim), jnp.zeros(b)))
        return ps

    def mlp(ps, x):
        for w, b in ps[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = ps[-1]
        return x @ w + b

    keys = jax.random.split(key, 2 * n + 4)
    actors = [init_mlp(keys[i], [od, 64, 64, ACT]) for i in range(n)]
    critics = [init_mlp(keys[n + i], [c_in, 64, 64, 1]) for i in range(n)]
    zeros = lambda t: jax.tree.map(jnp.zeros_like, t)
    state = dict(actors=actors, critics=critics, actors_t=actors, critics_t=critics,
                 a_m=zeros(actors), a_v=zeros(actors), c_m=zeros(critics), c_v=zeros(critics), step=jnp.zeros((), jnp.int32))
    g = np.random.default_rng(0)
    obs = jnp.asarray(g.normal(size=(n, REPLAY, od)), jnp.float32)
    nobs = jnp.asarray(g.normal(size=(n, REPLAY, od)), jnp.float32)
    act = jax.nn.softmax(jnp.asarray(g.normal(size=(n, REPLAY, ACT)), jnp.float32), -1)
    rew = jnp.asarray(g.normal(size=(n, REPLAY)), jnp.float32)

    def gumbel(k, logits):
        u = jnp.clip(jax.random.uniform(k, logits.shape), 1e-10, 1 - 2**-24)
        return jax.nn.softmax(logits - jnp.log(-jnp.log(u)), -1)

    def clip_adam(p, gr, m, v, t):
        def one(p, gr, m, v):
            nrm = jnp.sqrt(jnp.sum(gr * gr))
            gr = gr * jnp.minimum(1.0, 0.5 / jnp.maximum(nrm, 1e-12))
            m = 0.9 * m + 0.1 * gr
            v = 0.999 * v + 0.001 * gr * gr
            mh = m / (1 - 0.9**t)
            vh = v / (1 - 0.999**t)
            return p - 1e-2 * mh / (jnp.sqrt(vh) + 1e-8), m, v
        out = jax.tree.map(one, p, gr, m, v)
        istuple = lambda x: isinstance(x, tuple) and len(x) == 3 and not isinstance(x[0], tuple)
        return (jax.tree.map(lambda o: o[0], out, is_leaf=istuple), jax.tree.map(lambda o: o[1], out, is_leaf=istuple),
                jax.tree.map(lambda o: o[2], out, is_leaf=istuple))

    @jax.jit
    def update(state, key):
        st = dict(state)
        t = st["step"] + 1
        for i in range(n):
            key, k_idx, k_t, k_a = jax.random.split(key, 4)
            idx = jax.random.randint(k_idx, (batch,), 0, REPLAY)
            o = [obs[j, idx] for j in range(n)]
            no = [nobs[j, idx] for j in range(n)]
            a = [act[j, idx] for j in range(n)]
            kt = jax.random.split(k_t, n)
            ta = [gumbel(kt[j], mlp(st["actors_t"][j], no[j])) for j in range(n)]
            y = rew[i, idx] + 0.95 * mlp(st["critics_t"][i], jnp.concatenate(no + ta, 1))[:, 0]
            y = jax.lax.stop_gradient(y)
            x = jnp.concatenate(o + a, 1)
            c_loss = lambda cp: jnp.mean((mlp(cp, x)[:, 0] - y) ** 2)
            gc = jax.grad(c_loss)(st["critics"][i])
            cp, cm, cv = clip_adam(st["critics"][i], gc, st["c_m"][i], st["c_v"][i], t)

            def a_loss(ap):
                logits = mlp(ap, o[i])
                a2 = list(a)
                a2[i] = gumbel(k_a, logits)
                return -jnp.mean(mlp(cp, jnp.concatenate(o + a2, 1))) + 1e-3 * jnp.mean(logits**2)

            ga = jax.grad(a_loss)(st["actors"][i])
            ap, am, av = clip_adam(st["actors"][i], ga, st["a_m"][i], st["a_v"][i], t)
            soft = lambda tp, sp: jax.tree.map(lambda a_, b_: 0.99 * a_ + 0.01 * b_, tp, sp)
            for name, val in (("critics", cp), ("c_m", cm), ("c_v", cv), ("actors", ap), ("a_m", am), ("a_v", av)):
                lst = list(st[name])
                lst[i] = val
                st[name] = lst
            for name, src in (("actors_t", ap), ("critics_t", cp)):
                lst = list(st[name])
                lst[i] = soft(lst[i], src)
                st[name] = lst
        st["step"] = t
        return st, key

    box = {"state": state, "key": key}

    def run():
        box["state"], box["key"] = update(box["state"], box["key"])
        jax.block_until_ready(box["state"]["actors"][0][0][0])

    run()  # compile
    return run


def _median_ms(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(ts))


def bench_update(args, out) -> None:
    from maddpg_speed import build_ours, build_torch

    out(f"## one MADDPG update, batch {args.batch}, {args.threads} thread(s): ms (median of {args.rounds} interleaved "
        f"rounds of {args.repeats} updates, range)")
    out(f"{'agents':>6} {'ours':>22} {'PyTorch':>22} {'JAX jit':>22} {'torch/ours':>11} {'jax/ours':>9}")
    for n in args.update_agents:
        makers = {"ours": lambda: build_ours(n, args.batch), "torch": lambda: build_torch(n, args.batch),
                  "jax": lambda: build_jax(n, args.batch)}
        fns = {k: m() for k, m in makers.items()}
        res = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, f in fns.items():
                res[k].append(_median_ms(f, args.repeats))
        med = {k: float(np.median(v)) for k, v in res.items()}
        cells = [f"{med[k]:>8.2f} ({min(res[k]):.2f}-{max(res[k]):.2f})" for k in ("ours", "torch", "jax")]
        out(f"{n:>6} {cells[0]:>22} {cells[1]:>22} {cells[2]:>22} {med['torch'] / med['ours']:>10.2f}x "
            f"{med['jax'] / med['ours']:>8.2f}x")


# ---- end to end ---------------------------------------------------------------------------------

def torch_maddpg_e2e(n: int, n_envs: int, episodes: int, batch: int = 1024):
    """A PyTorch MADDPG with openai/maddpg's cadence on our port: Gumbel-softmax actions from
    each actor, replay of 10^6, learning from batch x 25 transitions, one update (every agent)
    per 100 env steps, batch 1024; returns a callable that trains ``episodes`` and gives env
    steps/s over the whole run and over its learning phase (from the first update on)."""
    import torch

    from maddpg.spread_port import SpreadPort
    from maddpg_speed import spread_obs_dim

    from torch import nn

    torch.manual_seed(0)
    od = spread_obs_dim(n)
    c_in = n * (od + 5)
    mk = lambda i, o: nn.Sequential(nn.Linear(i, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, o))
    actors = [mk(od, 5) for _ in range(n)]
    critics = [mk(c_in, 1) for _ in range(n)]
    actors_t = [mk(od, 5) for _ in range(n)]
    critics_t = [mk(c_in, 1) for _ in range(n)]
    for a, b in zip(actors_t + critics_t, actors + critics):
        a.load_state_dict(b.state_dict())
    a_opt = [torch.optim.Adam(a.parameters(), lr=1e-2) for a in actors]
    c_opt = [torch.optim.Adam(c.parameters(), lr=1e-2) for c in critics]
    cap = 1_000_000
    R_o = torch.zeros(cap, n, od)
    R_a = torch.zeros(cap, n, 5)
    R_r = torch.zeros(cap, n)
    R_no = torch.zeros(cap, n, od)
    g = torch.Generator().manual_seed(0)

    def gumbel(logits):
        u = torch.rand(logits.shape, generator=g).clamp_(1e-10, 1 - 2**-24)
        return torch.softmax(logits - torch.log(-torch.log(u)), -1)

    def update(size):
        for i in range(n):
            idx = torch.randint(0, size, (batch,), generator=g)
            o, a, r, no = R_o[idx], R_a[idx], R_r[idx, i], R_no[idx]
            with torch.no_grad():
                ta = torch.stack([gumbel(actors_t[j](no[:, j])) for j in range(n)], 1)
                y = r + 0.95 * critics_t[i](torch.cat([no.flatten(1), ta.flatten(1)], 1))[:, 0]
            q = critics[i](torch.cat([o.flatten(1), a.flatten(1)], 1))[:, 0]
            loss = ((q - y) ** 2).mean()
            c_opt[i].zero_grad()
            loss.backward()
            for p in critics[i].parameters():
                torch.nn.utils.clip_grad_norm_([p], 0.5)
            c_opt[i].step()
            logits = actors[i](o[:, i])
            a2 = a.clone()
            a2[:, i] = gumbel(logits)
            pl = -critics[i](torch.cat([o.flatten(1), a2.flatten(1)], 1)).mean() + 1e-3 * (logits**2).mean()
            a_opt[i].zero_grad()
            pl.backward()
            for p in actors[i].parameters():
                torch.nn.utils.clip_grad_norm_([p], 0.5)
            a_opt[i].step()
            with torch.no_grad():
                for tn, sn in ((actors_t[i], actors[i]), (critics_t[i], critics[i])):
                    for tp, sp in zip(tn.parameters(), sn.parameters()):
                        tp.mul_(0.99).add_(sp, alpha=0.01)

    def run():
        port = SpreadPort(n_envs, n)
        steps = size = pos = 0
        t0 = time.perf_counter()
        t_learn, s_learn = None, 0
        for ep in range(0, episodes, n_envs):
            obs = torch.from_numpy(port.reset(seed=ep))
            for _ in range(25):
                with torch.no_grad():
                    act = torch.stack([gumbel(actors[j](obs[:, j])) for j in range(n)], 1)
                nobs, rew = port.step(act.numpy())
                nobs = torch.from_numpy(nobs)
                k = n_envs
                sl = slice(pos, pos + k)
                R_o[sl], R_a[sl], R_r[sl], R_no[sl] = obs, act, torch.from_numpy(rew).float(), nobs
                pos = (pos + k) % cap
                size = min(size + k, cap)
                before = steps
                steps += k
                for s in range(before // 100 + 1, steps // 100 + 1):  # updates whose step number fell in this vector step
                    if s * 100 >= batch * 25:
                        if t_learn is None:
                            t_learn, s_learn = time.perf_counter(), before
                        update(size)
                obs = nobs
        t1 = time.perf_counter()
        return steps / (t1 - t0), (steps - s_learn) / (t1 - t_learn)

    return run


def ours_e2e(n: int, n_envs: int, episodes: int):
    from maddpg.trainer import MADDPG, make_config

    warm = MADDPG(make_config(env="simple_spread", n_agents=n, n_envs=n_envs, batch_size=256, learning_starts=256))
    warm.train(n_envs * max(1, 16 // n_envs))

    def run():
        """env steps/s over the whole run and over its learning phase (the first update falls in
        the vector step after the first ``learning_starts`` env steps)."""
        t = MADDPG(make_config(env="simple_spread", n_agents=n, n_envs=n_envs, seed=0))
        warm = t.cfg.learning_starts_samples // t.cfg.max_cycles // n_envs * n_envs  # episodes before learning
        t0 = time.perf_counter()
        t.train(warm)
        s_learn, t_learn = t.env_steps, time.perf_counter()
        t.train(episodes)
        t1 = time.perf_counter()
        return t.env_steps / (t1 - t0), (t.env_steps - s_learn) / (t1 - t_learn)

    return run


def bench_e2e(args, out) -> None:
    n, B = args.agents, args.e2e_envs
    eps = args.e2e_episodes // B * B
    out(f"## end to end with learning: simple_spread {n} agents, {B} envs (our port), {eps} episodes = {eps * 25:,} env "
        f"steps from scratch (updates from 25,600 on, one per 100 env steps, batch 1024), {args.threads} thread(s): "
        f"env steps/s (median of {args.rounds} interleaved rounds, range)")
    fns = {"ours": ours_e2e(n, B, eps), "torch": torch_maddpg_e2e(n, B, eps)}
    res = {k: [] for k in fns}
    learn = {k: [] for k in fns}
    for _ in range(args.rounds):
        for k, f in fns.items():
            whole, learning = f()
            res[k].append(whole)
            learn[k].append(learning)
    out(f"{'':>8} {'whole run':>28} {'learning phase':>28}")
    for k in fns:
        v, w = res[k], learn[k]
        out(f"{k:>8} {np.median(v):>12,.0f} ({min(v):>6,.0f}-{max(v):>6,.0f}) {np.median(w):>12,.0f} "
            f"({min(w):>6,.0f}-{max(w):>6,.0f})")
    out(f"ours / PyTorch MADDPG: {np.median(res['ours']) / np.median(res['torch']):.2f}x whole run, "
        f"{np.median(learn['ours']) / np.median(learn['torch']):.2f}x learning phase")


def _versions() -> str:
    vs = []
    for m in ("numba", "numpy", "torch", "jax", "jaxlib", "vmas", "jaxmarl"):
        try:
            vs.append(f"{m} {__import__(m).__version__}")
        except Exception:
            try:
                from importlib.metadata import version

                vs.append(f"{m} {version(m)}")
            except Exception:
                vs.append(f"{m} missing")
    return ", ".join(vs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", nargs="+", default=["env", "update", "e2e"], choices=["env", "update", "e2e"])
    ap.add_argument("--envs", type=int, nargs="+", default=[1, 64, 1024, 16384])
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--update-agents", type=int, nargs="+", default=[3, 12])
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--e2e-envs", type=int, default=64)
    ap.add_argument("--e2e-episodes", type=int, default=2048)
    ap.add_argument("--out", type=Path, default=None, help="also append the output to this file")
    args = ap.parse_args()
    _set_threads_before_imports(args.threads)
    import numba
    import torch

    numba.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    lines: list[str] = []

    def out(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    from maddpg.kernels import host_lanes
    from maddpg_speed import _commit, _cpu_name

    load0 = os.getloadavg()
    out(f"# bench/maddpg_peers.py {' '.join(sys.argv[1:])}; commit {_commit()}; {_cpu_name()}; lanes {host_lanes()}; "
        f"{args.threads} thread(s); {_versions()}; Python {platform.python_version()}; load average {load0[0]:.2f}")
    for part in args.parts:
        {"env": bench_env, "update": bench_update, "e2e": bench_e2e}[part](args, out)
    load1 = os.getloadavg()
    out(f"# load average after: {load1[0]:.2f}")
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
