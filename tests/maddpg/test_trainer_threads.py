"""Threads: acting is serial and never starts Numba's thread pool; the pool's idle threads
sleep (OMP_WAIT_POLICY=PASSIVE set before the pool starts); results do not depend on the
thread count, also across processes with different NUMBA_NUM_THREADS."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from maddpg import batch_parts as BP
from maddpg import kernels as K
from maddpg.kernels_mlp import MLP
from maddpg.trainer import MADDPG, act_rows, make_config

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, env_extra: dict[str, str | None], timeout: float = 300) -> str:
    env = dict(os.environ)
    for k, v in env_extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("rows", [1, 5, 64])
def test_serial_acting_equals_the_parallel_pass(rows):
    """act_rows (serial) gives the bits of the batch-parts forward pass in one part followed by
    the Gumbel-softmax kernel, as acting computed them before."""
    rng = np.random.default_rng(rows)
    net = MLP([18, 64, 64, 5], K.Tiling(64, 8), parts=2)
    net.init_glorot(rng)
    x = rng.normal(size=(rows, 18)).astype(np.float32)
    u = rng.random((rows, 5), dtype=np.float32)
    ref_out = np.zeros((rows, 5), np.float32)
    logits = net.forward(x).copy()  # 1 row: one part (effective_parts), the old acting path
    BP.forward(x, net.params, net.seg_start, net.WT, net.workspace(rows).acts, 1, 64, 0, 0, net.lanes)
    np.testing.assert_array_equal(net.workspace(rows).acts[-1], logits)
    K.gumbel_softmax(logits, u, ref_out, 1.0, 1)
    out = np.zeros((rows, 5), np.float32)
    act_rows(x, net.params, net.seg_start, net.WT, net.workspace(rows).acts, u, out, 1.0, 64, 0, 0, net.lanes)
    np.testing.assert_array_equal(out, ref_out)
    # and against numpy: softmax(logits - log(-log u)) to float32 accuracy
    h = x.astype(np.float64)
    for layer, (w, b) in enumerate(zip(net.W, net.b)):
        h = h @ w.astype(np.float64) + b
        if layer < len(net.W) - 1:
            h = np.maximum(h, 0)
    z = h - np.log(-np.log(np.clip(u.astype(np.float64), K.U_MIN, K.U_MAX)))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, p / p.sum(axis=1, keepdims=True), rtol=0, atol=2e-5)


_PROBE = """
    import os, time
    import numba
    from maddpg import trainer as T
    def started():
        try:
            return numba.threading_layer()
        except ValueError:
            return "none"
    if os.environ.get("PROBE_ACTING"):
        for n_envs in (1, 8):
            t = T.MADDPG(T.make_config(env="simple_spread", n_agents=3, n_envs=n_envs, batch_size=512,
                                       learning_starts=10**6))
            t.train(16)
            print(n_envs, t.env_steps, t.updates, started())
    t = T.MADDPG(T.make_config(env="simple", n_agents=1, batch_size=1024, hidden_units=64, learning_starts=1024,
                               update_every_steps=25, buffer_size=5000), threads=2)
    t.train(44)  # 1100 steps: updates at 1025, 1050, 1075, 1100, on 2 threads
    assert t.updates == 4 and t.update_threads() == 2, (t.updates, t.update_threads())
    c0 = time.process_time()
    time.sleep(0.5)
    print("update", started(), os.environ.get("OMP_WAIT_POLICY"), T.PASSIVE_WAIT, time.process_time() - c0)
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs 2 cores to run 2 threads")
def test_acting_never_starts_the_pool_and_idle_threads_sleep():
    """In a fresh process: training runs (1 env and 8 envs) that never reach an update leave
    Numba's threading layer unstarted; updates on 2 threads start it (the probe works), and
    afterwards the idle process burns no CPU: the trainer set OMP_WAIT_POLICY=PASSIVE before
    the pool started (test_spinning_threads_are_visible shows that spinning would show)."""
    out = _python(_PROBE, {"OMP_WAIT_POLICY": None, "NUMBA_NUM_THREADS": "2", "PROBE_ACTING": "1"})
    lines = out.split("\n")
    assert lines[0] == "1 400 0 none" and lines[1] == "8 400 0 none", out
    _, layer, policy, passive, cpu = lines[2].split()
    assert layer != "none" and policy == "PASSIVE" and passive == "True", out
    assert float(cpu) < 0.05, out


@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs 2 cores to see a spinning thread")
def test_spinning_threads_are_visible():
    """The control of the idle-CPU probe: with OMP_WAIT_POLICY=ACTIVE the idle worker spins
    and the process burns CPU while the trainer sleeps (on a machine with a free core)."""
    out = _python(_PROBE, {"OMP_WAIT_POLICY": "ACTIVE", "NUMBA_NUM_THREADS": "2"})
    _, layer, policy, passive, cpu = out.split()
    assert policy == "ACTIVE" and passive == "False"
    assert float(cpu) > 0.1, out


def test_same_bits_with_one_thread_in_another_process(tmp_path):
    """A run with batch 512 (parallel parts on 2 threads here) and the same run in a process
    with NUMBA_NUM_THREADS=1: every checkpoint array identical."""
    cfg = dict(env="simple", n_agents=2, seed=4, batch_size=512, hidden_units=16, learning_starts=512,
               update_every_steps=25, buffer_size=2000, max_cycles=25, n_envs=4)
    _python(f"""
        from maddpg.trainer import MADDPG, make_config
        import numba
        from maddpg_standin_env import make_standin
        t = MADDPG(make_config(**{cfg!r}), make_standin)
        assert t.update_threads() == 1
        t.train(40, checkpoint_path={str(tmp_path / 'one.npz')!r}, checkpoint_every=40)
    """, {"NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "tests" / "maddpg")})
    from maddpg_standin_env import make_standin

    t = MADDPG(make_config(**cfg), make_standin)
    import numba

    assert t.update_threads() == min(2, numba.config.NUMBA_NUM_THREADS)
    t.train(40, checkpoint_path=tmp_path / "many.npz", checkpoint_every=40)
    assert t.updates > 10
    a, b = np.load(tmp_path / "one.npz"), np.load(tmp_path / "many.npz")
    assert sorted(a.files) == sorted(b.files)
    for k in a.files:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
