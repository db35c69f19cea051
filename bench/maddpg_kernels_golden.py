"""Stored outputs of the dense kernels and of a few MADDPG updates, for refactors to reproduce.

Writes bench/data/maddpg_kernels_golden.npz: for every shape below (each path of
``dense_forward``, ``dense_backward_weights`` and ``dense_backward_input``: narrow, middle,
register-blocked with row and column tails, chunked inputs) the kernels' outputs on
seeded inputs, and the sha256 of every network's parameters after a short seeded
simple_spread run with updates at batch 1024. tests/maddpg/test_kernel_blocking.py checks
that every register blocking reproduces them bit for bit.

    .venv/bin/python bench/maddpg_kernels_golden.py            # writes the file
    .venv/bin/python bench/maddpg_kernels_golden.py --check    # compares, exit 1 on a difference
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "data" / "maddpg_kernels_golden.npz"

# (batch, tile_b, n_in, n_out)
SHAPES = [(1, 64, 18, 64), (7, 3, 69, 64), (70, 8, 64, 5), (133, 64, 64, 1), (64, 1, 64, 128), (133, 64, 70, 80),
          (70, 8, 66, 16), (130, 64, 128, 64), (37, 64, 300, 64), (1024, 64, 69, 64), (1024, 64, 64, 64),
          (1024, 64, 64, 5), (512, 64, 780, 64), (130, 7, 64, 200)]

RUN = dict(env="simple_spread", n_agents=3, seed=3, batch_size=1024, learning_starts=1024, n_envs=8)
RUN_EPISODES = 64  # 1,600 env steps: 6 updates at batch 1024


def kernel_outputs(lanes: int | None = None) -> dict[str, np.ndarray]:
    from maddpg import kernels as K

    kw = {} if lanes is None else {"lanes": lanes}
    out: dict[str, np.ndarray] = {}
    for batch, tile_b, n_in, n_out in SHAPES:
        key = f"{batch}x{n_in}x{n_out}t{tile_b}"
        rng = np.random.default_rng(batch * 10_000 + n_in * 100 + n_out)
        x = rng.normal(size=(batch, n_in)).astype(np.float32)
        w = rng.normal(size=(n_in, n_out)).astype(np.float32)
        b = rng.normal(size=n_out).astype(np.float32)
        dy = rng.normal(size=(batch, n_out)).astype(np.float32)
        h = np.maximum(rng.normal(size=(batch, n_in)), 0).astype(np.float32)
        wt = np.zeros((n_out, n_in), np.float32)
        y = np.zeros((batch, n_out), np.float32)
        K.dense_forward(x, w, wt, b, y, True, tile_b, 0, 0, **kw)
        out[f"fwd_relu/{key}"] = y.copy()
        K.dense_forward(x, w, wt, b, y, False, tile_b, 0, 0, **kw)
        out[f"fwd/{key}"] = y.copy()
        dw = np.zeros_like(w)
        db = np.zeros_like(b)
        K.dense_backward_weights(x, dy, dw, db, 0, 0, **kw)
        out[f"dw/{key}"] = dw.copy()
        out[f"db/{key}"] = db.copy()
        dx = np.zeros((batch, n_in), np.float32)
        K.dense_backward_input(dy, w, wt, dx, 0, h, tile_b, 0, 0, **kw)
        out[f"dx_mask/{key}"] = dx.copy()
        K.dense_backward_input(dy, w, wt, dx, 0, None, tile_b, 0, 0, **kw)
        out[f"dx/{key}"] = dx.copy()
        if n_in >= 65:
            part = np.zeros((batch, 64), np.float32)
            K.dense_backward_input(dy, w, wt, part, 1, h, tile_b, 0, 0, **kw)
            out[f"dx_cols1_64/{key}"] = part.copy()
        y = np.zeros((batch, n_out), np.float32)  # fixed point Q6.10 in 16 bits
        K.dense_forward(x, w, wt, b, y, True, tile_b, 10, 16, **kw)
        out[f"fwd_q/{key}"] = y.copy()
    return out


def run_hashes(lanes: int | None = None) -> dict[str, str]:
    from maddpg.trainer import MADDPG, make_config

    kw = {} if lanes is None else {"lanes": lanes}
    t = MADDPG(make_config(**RUN), **kw)
    t.train(RUN_EPISODES)
    assert t.updates > 0
    h = {f"{i}/{name}": hashlib.sha256(net.params.tobytes()).hexdigest()
         for i, ag in enumerate(t.agents) for name, net in ag.nets().items()}
    h["rewards"] = hashlib.sha256(np.asarray(t.rewards, np.float64).tobytes()).hexdigest()
    h["updates"] = str(t.updates)
    return h


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the stored file instead of writing it")
    ap.add_argument("--lanes", type=int, nargs="+", choices=(8, 16), default=None,
                    help="register blockings to check (default: the host's)")
    args = ap.parse_args()
    if args.check:
        ref = np.load(OUT)
        failed = 0
        for lanes in args.lanes or [None]:
            outs = kernel_outputs(lanes)
            hashes = run_hashes(lanes)
            bad = [k for k in outs if not np.array_equal(outs[k], ref[k])]
            bad += [k for k in hashes if str(ref["run/" + k]) != hashes[k]]
            print(f"lanes {lanes or 'host'}: {len(outs)} kernel outputs, {len(hashes)} run hashes; {len(bad)} differ: "
                  f"{bad[:10]}", flush=True)
            failed |= bool(bad)
        return 1 if failed else 0
    outs = kernel_outputs(None)
    hashes = run_hashes(None)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    meta = {"command": "bench/maddpg_kernels_golden.py", "commit": commit, "run": repr(RUN),
            "run_episodes": str(RUN_EPISODES)}
    np.savez_compressed(OUT, **outs, **{f"run/{k}": np.asarray(v) for k, v in hashes.items()},
                        **{f"meta/{k}": np.asarray(v) for k, v in meta.items()})
    print(f"wrote {OUT}: {len(outs)} kernel outputs, run hashes {hashes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
