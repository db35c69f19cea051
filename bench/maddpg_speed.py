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

``--peak`` instead measures the machine's limit and the dense kernels against it, on one
thread: an FMA-throughput microbenchmark (register-resident accumulators, ``acc = acc * a +
c``, as 6 x 64 and 6 x 16 float32 blocks: the two register blocks of the kernels; the larger
is the core's peak), then each dense kernel of a 3-agent simple_spread update at batch 1024
(the critic's 69 -> 64 -> 64 -> 1, the actor's 18 -> 64 -> 64 -> 5; forward, weight
gradient, input gradient, and the critic's first-layer input gradient for one agent's 5
action columns only, ``dense_backward_input[5]``, as the trainer runs it) with each register blocking (``--lanes``, default both), its
GFLOP/s (2 x MACs of its loop nest / time, median of ``--repeats`` calls in each of
``--rounds`` interleaved rounds) and its share of the peak. It also measures one thread's
cache bandwidth (reading and writing a float32 buffer of 256 KiB, the size of a 1024 x 64
activation, which stays in L2) and prints each kernel's roofline: the lesser of the peak and
its FLOPs per byte (its loop nest's words in and out, each operand moved once) times those
bandwidths, and the kernel's share of it. To measure a CPU without
AVX-512 on one that has it: ``--avx2`` (the script runs itself again with
``NUMBA_CPU_FEATURES`` set to the host's features without AVX-512 and AMX, so Numba compiles
AVX2 code and the detected vector width is 8).

PyTorch is the optional ``bench`` extra (``pip install -e '.[bench]'``); without it the
PyTorch column is skipped with a message.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
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


def build_ours(n: int, batch: int, batch_parts: int | None = None, lanes: int | None = None):
    """A fresh trainer with a filled replay, warmed up; returns its update."""
    extra = {} if batch_parts is None else {"batch_parts": batch_parts}
    cfg = make_config(env="simple_spread", n_agents=n, seed=0, batch_size=batch, buffer_size=REPLAY, **extra)
    t = MADDPG(cfg, lambda *a: _ShapeOnlyEnv(n), lanes=lanes)
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


# ---- the machine's limit -------------------------------------------------------------------

def _peak_kernels():
    from numba import carray, njit

    from maddpg.kernels import _local_f32, _wide_vectors

    @njit(fastmath=True, nogil=True)
    def fma_6x64(n_iter, a, c):
        _wide_vectors()
        acc = carray(_local_f32(384), (6, 64))
        for r in range(6):
            for o in range(64):
                acc[r, o] = np.float32(r * 64 + o) * np.float32(1e-3)
        for _ in range(n_iter):
            for r in range(6):
                for o in range(64):
                    acc[r, o] = acc[r, o] * a + c
        s = np.float32(0.0)
        for r in range(6):
            for o in range(64):
                s += acc[r, o]
        return s

    @njit(fastmath=True, nogil=True)
    def fma_6x16(n_iter, a, c):  # rows unrolled by hand, as the kernels' 8-lane block
        _wide_vectors()
        r0 = carray(_local_f32(16), (16,))
        r1 = carray(_local_f32(16), (16,))
        r2 = carray(_local_f32(16), (16,))
        r3 = carray(_local_f32(16), (16,))
        r4 = carray(_local_f32(16), (16,))
        r5 = carray(_local_f32(16), (16,))
        for o in range(16):
            v = np.float32(o) * np.float32(1e-3)
            r0[o] = v
            r1[o] = v + np.float32(1.0)
            r2[o] = v + np.float32(2.0)
            r3[o] = v + np.float32(3.0)
            r4[o] = v + np.float32(4.0)
            r5[o] = v + np.float32(5.0)
        for _ in range(n_iter):
            for o in range(16):
                r0[o] = r0[o] * a + c
                r1[o] = r1[o] * a + c
                r2[o] = r2[o] * a + c
                r3[o] = r3[o] * a + c
                r4[o] = r4[o] * a + c
                r5[o] = r5[o] * a + c
        s = np.float32(0.0)
        for o in range(16):
            s += r0[o] + r1[o] + r2[o] + r3[o] + r4[o] + r5[o]
        return s

    return {"6x64": (fma_6x64, 384), "6x16": (fma_6x16, 96)}


def fma_peak(rounds: int) -> dict[str, float]:
    """GFLOP/s of each register-resident FMA block on one thread (median of ``rounds``)."""
    out = {}
    a, c = np.float32(0.999), np.float32(1e-4)
    for name, (fn, width) in _peak_kernels().items():
        fn(10, a, c)  # compile
        n_iter = 8_000_000 // width  # calls of about 50 us: the median of many short calls is
        times = []  # what one core delivers while it runs, on a loaded machine too
        for _ in range(100 * rounds):
            t0 = time.perf_counter()
            fn(n_iter, a, c)
            times.append(time.perf_counter() - t0)
        out[name] = 2 * width * n_iter / float(np.median(times)) / 1e9
    return out


BW_KIB = (256,)  # buffer size of the bandwidth microbenchmark: 256 KiB = a 1024 x 64 activation (in L2)


def _bandwidth_kernels():
    from numba import carray, njit

    from maddpg.kernels import _local_f32, _wide_vectors

    @njit(fastmath={"contract"}, nogil=True)
    def read(n_iter, a):  # 8 independent 16-lane sums (one accumulator array each, as fma_6x16's rows)
        _wide_vectors()
        r0 = carray(_local_f32(16), (16,))
        r1 = carray(_local_f32(16), (16,))
        r2 = carray(_local_f32(16), (16,))
        r3 = carray(_local_f32(16), (16,))
        r4 = carray(_local_f32(16), (16,))
        r5 = carray(_local_f32(16), (16,))
        r6 = carray(_local_f32(16), (16,))
        r7 = carray(_local_f32(16), (16,))
        for c in range(16):
            r0[c] = r1[c] = r2[c] = r3[c] = r4[c] = r5[c] = r6[c] = r7[c] = np.float32(0.0)
        for _ in range(n_iter):
            for r in range(a.shape[0]):
                for c in range(16):
                    r0[c] += a[r, c]
                    r1[c] += a[r, 16 + c]
                    r2[c] += a[r, 32 + c]
                    r3[c] += a[r, 48 + c]
                    r4[c] += a[r, 64 + c]
                    r5[c] += a[r, 80 + c]
                    r6[c] += a[r, 96 + c]
                    r7[c] += a[r, 112 + c]
        s = np.float32(0.0)
        for c in range(16):
            s += r0[c] + r1[c] + r2[c] + r3[c] + r4[c] + r5[c] + r6[c] + r7[c]
        return s

    @njit(fastmath={"contract"}, nogil=True)
    def write(n_iter, a):  # every element stored once per iteration
        _wide_vectors()
        for it in range(n_iter):
            v = np.float32(it)
            for r in range(a.shape[0]):
                for c in range(128):
                    a[r, c] = v
        return a[0, 0]

    return read, write


def bandwidth(rounds: int) -> dict[str, float]:
    """GB/s of one thread reading (8 independent 16-lane sums) and writing (a fill) a float32
    buffer of each size in ``BW_KIB`` that stays in cache between calls (median of ``100 x
    rounds`` calls of about 50 us, as :func:`fma_peak`)."""
    from maddpg.kernels import aligned_zeros

    read, write = _bandwidth_kernels()
    out = {}
    for kib in BW_KIB:
        a = aligned_zeros((kib * 1024 // 4 // 128, 128))  # on a cache line, as the kernels' buffers: a
        a[...] = 1.0  # buffer off it reads at about half the speed (vector loads split across lines)
        for name, fn in (("read", read), ("write", write)):
            fn(2, a)  # compile, warm the buffer into the cache
            n_iter = max(1, 2_000_000 // (kib * 1024 // 4))  # about 2M elements per call
            times = []
            for _ in range(100 * rounds):
                t0 = time.perf_counter()
                fn(n_iter, a)
                times.append(time.perf_counter() - t0)
            out[f"{name} {kib} KiB"] = a.nbytes * n_iter / float(np.median(times)) / 1e9
    return out


def kernel_bytes(kname: str, batch: int, n_in: int, n_out: int) -> tuple[int, int]:
    """The fewest bytes a dense kernel reads and writes, as the bench calls it: its loop nest's
    words in and out (each operand once, float32; the input gradient with its ReLU mask, the
    action columns' without one)."""
    from maddpg import kernels as K

    nest = {"dense_forward": lambda: K.dense_forward_nest(batch, n_in, n_out),
            "dense_backward_weights": lambda: K.dense_backward_weights_nest(batch, n_in, n_out),
            "dense_backward_input": lambda: K.dense_backward_input_nest(batch, n_in, n_out, relu_mask=True),
            ACTION_COLS: lambda: K.dense_backward_input_nest(batch, n_in, n_out, width=ACT)}[kname]()
    return 4 * nest.words_in, 4 * nest.words_out


def roofline(macs: int, rd: int, wr: int, peak: float, bw_read: float, bw_write: float) -> float:
    """The GFLOP/s a kernel cannot exceed on one core: its FLOPs over the longer of their time
    at the FMA peak and the time to move its bytes (reads at ``bw_read``, then writes at
    ``bw_write``, GB/s; the L2 figures at batch 1024, whose activations are 256 KiB)."""
    t = max(2 * macs / peak, rd / bw_read + wr / bw_write)
    return 2 * macs / t


def _compiled_loops():
    """Each dense kernel called ``n`` times from compiled code, as the trainer's passes call them
    (:mod:`maddpg.batch_parts`): a call from Python adds the dispatcher's argument checks, about
    as long as a narrow layer's whole call at batch 1024. Every scalar is an argument, as in the
    trainer: a constant would make Numba compile the kernel again specialised to it."""
    from numba import njit

    from maddpg import kernels as K

    @njit(nogil=True, cache=True)
    def forward(n, x, w, wt, b, y, relu, tile_b, q_frac, q_bits, lanes):
        for _ in range(n):
            K.dense_forward(x, w, wt, b, y, relu, tile_b, q_frac, q_bits, lanes)

    @njit(nogil=True, cache=True)
    def weights(n, x, dy, dw, db, q_frac, q_bits, lanes):
        for _ in range(n):
            K.dense_backward_weights(x, dy, dw, db, q_frac, q_bits, lanes)

    @njit(nogil=True, cache=True)
    def inputs(n, dy, w, wt, dx, col0, h, tile_b, q_frac, q_bits, lanes):
        for _ in range(n):
            K.dense_backward_input(dy, w, wt, dx, col0, h, tile_b, q_frac, q_bits, lanes)

    return forward, weights, inputs


LOOP_CALLS = 10  # kernel calls per timed compiled loop


def _gflops(call, L, macs: int, repeats: int, calls: int) -> float:
    """GFLOP/s of the median of ``repeats`` timings of ``call(L)``, which makes ``calls`` kernel calls."""
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call(L)
        ts.append((time.perf_counter() - t0) / calls)
    return 2 * macs / float(np.median(ts)) / 1e9


ACTION_COLS = f"dense_backward_input[{ACT}]"  # the critic's input gradient for one agent's action columns only
KERNEL_SHAPES = [("critic", 69, 64), ("critic", 64, 64), ("critic", 64, 1), ("actor", 18, 64), ("actor", 64, 64),
                 ("actor", 64, 5)]


def kernel_gflops(batch: int, lanes_list: list[int], repeats: int, rounds: int) -> list[tuple]:
    """(net, n_in, n_out, kernel, lanes, GFLOP/s median, min, max, GFLOP/s in a compiled loop median, MACs)
    for each dense kernel, serial: one call from Python per timing, and ``LOOP_CALLS`` calls from
    compiled code per timing."""
    from maddpg import kernels as K

    loop_fwd, loop_w, loop_in = _compiled_loops()
    rng = np.random.default_rng(0)
    rows = []
    for net, n_in, n_out in KERNEL_SHAPES:
        x = K.aligned_zeros((batch, n_in))
        x[...] = rng.normal(size=x.shape)
        w = K.aligned_zeros((n_in, n_out))
        w[...] = rng.normal(size=w.shape) * 0.1
        b = K.aligned_zeros(n_out)
        y = K.aligned_zeros((batch, n_out))
        dy = K.aligned_zeros((batch, n_out))
        dy[...] = rng.normal(size=dy.shape)
        h = K.aligned_zeros((batch, n_in))
        h[...] = np.maximum(rng.normal(size=h.shape), 0)
        wt = K.aligned_zeros((n_out, n_in))
        dw = K.aligned_zeros((n_in, n_out))
        db = K.aligned_zeros(n_out)
        dx = K.aligned_zeros((batch, n_in))
        n = LOOP_CALLS
        calls = {
            "dense_forward": (lambda L: K.dense_forward(x, w, wt, b, y, True, 64, 0, 0, L),
                              lambda L: loop_fwd(n, x, w, wt, b, y, True, 64, 0, 0, L), K.dense_forward_nest(batch, n_in, n_out).macs),
            "dense_backward_weights": (lambda L: K.dense_backward_weights(x, dy, dw, db, 0, 0, L),
                                       lambda L: loop_w(n, x, dy, dw, db, 0, 0, L),
                                       K.dense_backward_weights_nest(batch, n_in, n_out).macs),
            "dense_backward_input": (lambda L: K.dense_backward_input(dy, w, wt, dx, 0, h, 64, 0, 0, L),
                                     lambda L: loop_in(n, dy, w, wt, dx, 0, h, 64, 0, 0, L),
                                     K.dense_backward_input_nest(batch, n_in, n_out).macs),
        }
        if net == "critic" and n_in > 64:  # what the trainer runs: dQ/da for one agent's actions, no mask
            dx_a = K.aligned_zeros((batch, ACT))
            c0 = n_in - ACT
            calls[ACTION_COLS] = (lambda L: K.dense_backward_input(dy, w, wt, dx_a, c0, None, 64, 0, 0, L),
                                  lambda L: loop_in(n, dy, w, wt, dx_a, c0, None, 64, 0, 0, L),
                                  K.dense_backward_input_nest(batch, n_in, n_out, width=ACT).macs)
        for kname, (call, loop, macs) in calls.items():
            per_round = {L: [] for L in lanes_list}
            in_loop = {L: [] for L in lanes_list}
            for L in lanes_list:
                call(L)  # compile, warm
                loop(L)
            for _ in range(rounds):  # interleaved: each round times every blocking, both ways
                for L in lanes_list:
                    per_round[L].append(_gflops(call, L, macs, repeats, 1))
                    in_loop[L].append(_gflops(loop, L, macs, repeats, n))
            for L in lanes_list:
                g = per_round[L]
                rows.append((net, n_in, n_out, kname, L, float(np.median(g)), min(g), max(g), float(np.median(in_loop[L])),
                             macs))
    return rows


def print_peak(args) -> None:
    import numba

    from maddpg.kernels import host_lanes, vector_width

    numba.set_num_threads(1)
    load0 = os.getloadavg()
    lanes_list = args.lanes or [8, 16]
    print(f"# bench/maddpg_speed.py {' '.join(sys.argv[1:])}: the machine's limit and the dense kernels at batch "
          f"{args.batch}, 1 thread; commit {_commit()}; "
          f"{_cpu_name()}; NUMBA_CPU_NAME={os.environ.get('NUMBA_CPU_NAME', 'host')}, vector width {vector_width()} lanes"
          f"{' (AVX-512 and AMX features off)' if os.environ.get(AVX2_ENV) == '1' else ''}, blocking {host_lanes()}; "
          f"numba {numba.__version__}; load average {load0[0]:.2f}")
    peaks = fma_peak(max(args.rounds, 3))
    peak = max(peaks.values())
    for name, g in peaks.items():
        print(f"# FMA throughput, {name} float32 accumulators in registers: {g:.1f} GFLOP/s")
    print(f"# peak (the larger): {peak:.1f} GFLOP/s")
    bws = bandwidth(max(args.rounds, 3))
    for name, g in bws.items():
        print(f"# bandwidth, one thread, {name}: {g:.1f} GB/s")
    bw_r, bw_w = bws["read 256 KiB"], bws["write 256 KiB"]
    print(f"# GFLOP/s: one call from Python per timing; 'in loop': {LOOP_CALLS} calls from compiled code per "
          f"timing, as the trainer calls the kernels; 'bound': the roofline, the lesser of the peak and the FLOPs "
          f"per byte moved (each operand read or written once) x the 256 KiB bandwidths; 'of bound': in loop / bound")
    print(f"{'net':<7} {'in':>4} {'out':>4} {'kernel':<24} {'lanes':>5} {'GFLOP/s':>8} {'range':>13} {'of peak':>8} "
          f"{'in loop':>8} {'of peak':>8} {'FLOP/B':>7} {'bound':>7} {'of bound':>8}")
    for net, n_in, n_out, kname, L, g, lo, hi, gl, macs in kernel_gflops(args.batch, lanes_list, args.repeats,
                                                                          args.rounds):
        rd, wr = kernel_bytes(kname, args.batch, n_in, n_out)
        bound = roofline(macs, rd, wr, peak, bw_r, bw_w)
        print(f"{net:<7} {n_in:>4} {n_out:>4} {kname:<24} {L:>5} {g:>8.1f} {lo:>6.1f}-{hi:<6.1f} {g / peak:>7.0%} "
              f"{gl:>8.1f} {gl / peak:>7.0%} {2 * macs / (rd + wr):>7.2f} {bound:>7.1f} {gl / bound:>7.0%}", flush=True)
    load1 = os.getloadavg()
    print(f"# load average after: {load1[0]:.2f}")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + f", {os.cpu_count()} CPUs"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str:
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "maddpg", "bench/maddpg_*.py"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("+local edits" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


AVX2_ENV = "MADDPG_BENCH_AVX2"  # set in the re-run of --avx2


def _rerun_for_avx2() -> None:
    """``--avx2``: run this script again, compiled for the host's features without AVX-512 and
    AMX (Numba reads ``NUMBA_CPU_FEATURES`` once, when it is imported, so it takes a new process)."""
    if os.environ.get(AVX2_ENV) == "1":
        return
    import llvmlite.binding as llvm

    feats = [f if "avx512" not in f and "amx" not in f else "-" + f[1:]
             for f in llvm.get_host_cpu_features().flatten().split(",") if f]
    env = dict(os.environ, NUMBA_CPU_FEATURES=",".join(feats), **{AVX2_ENV: "1"})
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


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
    ap.add_argument("--peak", action="store_true", help="FMA peak and each dense kernel's GFLOP/s instead")
    ap.add_argument("--lanes", type=int, nargs="+", choices=(8, 16), default=None,
                    help="register blockings (--peak: default both; otherwise the trainer's, detected)")
    ap.add_argument("--avx2", action="store_true", help="compile for AVX2 only (the host's features without AVX-512)")
    args = ap.parse_args()
    if args.avx2:
        _rerun_for_avx2()
    import numba

    if args.peak:
        print_peak(args)
        return

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
