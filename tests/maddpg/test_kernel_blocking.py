"""The dense kernels' two CPU register blockings (8-lane AVX2, 16-lane AVX-512): both run on any
host, reproduce the stored outputs of the original kernels bit for bit, and give one
training run the same bits; the loop nests do not depend on the blocking; the vector width
is detected and overridable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from maddpg import kernels as K
from maddpg.kernels_mlp import MLP
from maddpg.trainer import MADDPG, make_config
from noc.base.errors import ConfigError

from maddpg_standin_env import make_standin

GOLDEN = Path(__file__).resolve().parents[2] / "bench" / "data" / "maddpg_kernels_golden.npz"


def _golden_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("maddpg_kernels_golden", GOLDEN.parents[1] / "maddpg_kernels_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_both_blockings_give_the_same_bits_and_the_stored_outputs_to_rounding():
    """Outputs of every dense-kernel path (narrow, middle, blocked with row and column tails,
    chunked inputs, column ranges, fixed point): the 8- and 16-lane blockings give the same
    bits as each other on any host and compiler. Against the outputs stored from the kernels
    before the second blocking existed (bench/maddpg_kernels_golden.py) they are bit-exact
    with the Numba/LLVM that recorded them; another LLVM vectorises the unblocked paths'
    fast-math sums in another order (numba 0.68.1: 21 of 105 outputs differ, by at most
    1.6e-7 of the array's largest value), so the stored ones are held to 4 float32 epsilons
    of the largest value, integers exactly."""
    ref = np.load(GOLDEN)
    outs8, outs16 = (_golden_module().kernel_outputs(lanes) for lanes in (8, 16))
    assert len(outs8) > 100 and outs8.keys() == outs16.keys()
    for k, v in outs8.items():
        assert np.array_equal(v, outs16[k]), k
        if v.dtype.kind == "f":
            scale = float(np.abs(ref[k]).max())
            assert np.abs(v.astype(np.float64) - ref[k]).max() <= 4 * np.finfo(np.float32).eps * scale, k
        else:
            assert np.array_equal(v, ref[k]), k


def _fma(acc, a, b):
    """float32 ``fma(a, b, acc)``: the product of two float32 values is exact in float64, and
    the sum is rounded once to float64, then to float32 (double rounding differs from one
    rounding only when the float64 sum lies within 2^-29 ulp of a float32 tie: never here)."""
    return (acc.astype(np.float64) + a.astype(np.float64) * b.astype(np.float64)).astype(np.float32)


@pytest.mark.parametrize("lanes", [8, 16])
@pytest.mark.parametrize("batch,tile_b,n_in,n_out", [(7, 3, 69, 64), (133, 64, 70, 128), (64, 8, 200, 64)])
def test_blocked_outputs_are_in_order_fma_sums(lanes, batch, tile_b, n_in, n_out):
    """Every output of a register-blocked pass is the sum over its reduction index in order,
    one FMA per term, from the bias (forward) or from zero (gradients), on either blocking."""
    rng = np.random.default_rng(batch + n_in + n_out)
    x = rng.normal(size=(batch, n_in)).astype(np.float32)
    w = rng.normal(size=(n_in, n_out)).astype(np.float32)
    b = rng.normal(size=n_out).astype(np.float32)
    dy = rng.normal(size=(batch, n_out)).astype(np.float32)
    wt = np.zeros((n_out, n_in), np.float32)
    y = np.zeros((batch, n_out), np.float32)
    K.dense_forward(x, w, wt, b, y, False, tile_b, 0, 0, lanes)
    ref = np.tile(b, (batch, 1))
    for i in range(n_in):
        ref = _fma(ref, x[:, i : i + 1], w[i])
    assert np.array_equal(y, ref)
    dw, db = np.zeros_like(w), np.zeros_like(b)
    K.dense_backward_weights(x, dy, dw, db, 0, 0, lanes)
    ref = np.zeros((n_in, n_out), np.float32)
    for r in range(batch):
        ref = _fma(ref, x[r][:, None], dy[r][None, :])
    assert np.array_equal(dw, ref)
    dx = np.zeros((batch, 64), np.float32)
    K.dense_backward_input(dy, w, wt, dx, 1, None, tile_b, 0, 0, lanes)  # columns 1 .. 64: the blocked form
    ref = np.zeros((batch, 64), np.float32)
    for o in range(n_out):
        ref = _fma(ref, dy[:, o : o + 1], w[1:65, o][None, :])
    assert np.array_equal(dx, ref)


@pytest.mark.parametrize("lanes", [8, 16])
@pytest.mark.parametrize("batch,n_in,n_out", [(133, 64, 4), (70, 128, 5), (37, 64, 6), (130, 70, 7)])
def test_narrow_weight_gradients_are_in_order_sums(lanes, batch, n_in, n_out):
    """A layer with 4 to 7 outputs (its outputs as the block's rows, one or two blocks of them):
    each weight gradient is its in-order FMA sum over the batch and each bias gradient its
    in-order float32 sum, on either blocking."""
    rng = np.random.default_rng(batch * n_out + n_in)
    x = rng.normal(size=(batch, n_in)).astype(np.float32)
    dy = rng.normal(size=(batch, n_out)).astype(np.float32)
    dw, db = np.zeros((n_in, n_out), np.float32), np.zeros(n_out, np.float32)
    K.dense_backward_weights(x, dy, dw, db, 0, 0, lanes)
    ref_w = np.zeros((n_in, n_out), np.float32)
    ref_b = np.zeros(n_out, np.float32)
    for r in range(batch):
        ref_w = _fma(ref_w, x[r][:, None], dy[r][None, :])
        ref_b = ref_b + dy[r]  # float32 + float32: one rounding per term
    assert np.array_equal(dw, ref_w)
    assert np.array_equal(db, ref_b)


def test_a_training_run_is_the_same_on_both_blockings():
    """64-unit layers (the blocked paths) through whole updates: weights and Adam moments equal."""
    cfg = make_config(env="simple", n_agents=3, seed=2, batch_size=64, hidden_units=64, learning_starts=64,
                      update_every_steps=10, buffer_size=400, max_cycles=10)
    runs = []
    for lanes in (8, 16):
        t = MADDPG(cfg, make_standin, lanes=lanes)
        t.train(20)
        assert t.updates > 5
        runs.append(t)
    a, b = runs
    for ga, gb in zip(a.agents, b.agents):
        for name, net in ga.nets().items():
            np.testing.assert_array_equal(net.params, gb.nets()[name].params)
        np.testing.assert_array_equal(ga.opt["critic"][1], gb.opt["critic"][1])
    assert a.rewards == b.rewards


def test_loop_nests_do_not_depend_on_the_blocking():
    sizes = [69, 64, 64, 1]
    n8, n16 = MLP(sizes, lanes=8), MLP(sizes, lanes=16)
    for kw in ({}, {"weights": False, "inputs": (64, 5)}):
        assert [n.as_dict() for n in n8.loop_nests(1024, **kw)] == [n.as_dict() for n in n16.loop_nests(1024, **kw)]
    blocked = K.dense_forward_nest(1024, 69, 64)
    assert blocked.loops[0].block == K.RB and blocked.loops[1].block == K.VW  # the datapath's block, not the CPU's


def test_vector_width_is_detected_and_overridable(monkeypatch):
    import llvmlite.binding as llvm

    monkeypatch.delenv(K.LANES_ENV, raising=False)
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    host = "+avx512f" in llvm.get_host_cpu_features().flatten().split(",")
    assert K.vector_width() == (16 if host else 8)
    assert K.host_lanes() == K.BLOCK_FOR_WIDTH[K.vector_width()]
    monkeypatch.setenv("NUMBA_CPU_FEATURES", "+avx,+avx2,+fma,-avx512f")
    assert K.vector_width() == 8 and K.host_lanes() == K.BLOCK_FOR_WIDTH[8]
    monkeypatch.setenv("NUMBA_CPU_FEATURES", "+avx2,+fma,+avx512f")
    assert K.vector_width() == 16 and K.host_lanes() == K.BLOCK_FOR_WIDTH[16]
    monkeypatch.setenv(K.LANES_ENV, "8")
    assert K.host_lanes() == 8 and MLP([4, 64, 5]).lanes == 8
    monkeypatch.setenv(K.LANES_ENV, "12")
    with pytest.raises(ConfigError, match=r"MADDPG_VECTOR_LANES: '12' .* allowed: 8 \(AVX2\) or 16 \(AVX-512\)"):
        K.host_lanes()
    with pytest.raises(ValueError, match="lanes: 4"):
        MLP([4, 64, 5], lanes=4)
