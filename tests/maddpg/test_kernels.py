"""maddpg.kernels: gradients vs finite differences and vs plain numpy, Adam vs closed form,
fixed-point rounding and saturation, loop nests."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maddpg import kernels as K
from maddpg.kernels_mlp import MLP


# ---- an independent plain-numpy reference (float64) --------------------------------------


def ref_forward(params_w, params_b, x):
    hs = [x]
    for layer, (w, b) in enumerate(zip(params_w, params_b)):
        z = hs[-1] @ w + b
        if layer < len(params_w) - 1:
            z = np.maximum(z, 0.0)
        hs.append(z)
    return hs


def ref_backward(params_w, hs, dout):
    dws, dbs = [None] * len(params_w), [None] * len(params_w)
    g = dout
    for layer in range(len(params_w) - 1, -1, -1):
        dws[layer] = hs[layer].T @ g
        dbs[layer] = g.sum(axis=0)
        g = g @ params_w[layer].T
        if layer > 0:
            g = g * (hs[layer] > 0)
    return dws, dbs, g


def _net(rng, sizes, tile_b=4):
    net = MLP(sizes, K.Tiling(tile_b=tile_b))
    net.init_glorot(rng)
    for b in net.b:
        b[...] = rng.normal(0, 0.3, b.shape)
    return net


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 17),
    sizes=st.lists(st.integers(1, 9), min_size=2, max_size=4),
    tile_b=st.integers(1, 8),
    seed=st.integers(0, 2**31 - 1),
)
def test_mlp_matches_numpy_reference(batch, sizes, tile_b, seed):
    rng = np.random.default_rng(seed)
    net = _net(rng, sizes, tile_b)
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    dout = rng.normal(size=(batch, sizes[-1])).astype(np.float32)
    y = net.forward(x).copy()
    dx = net.backward(dout, weights=True, inputs=True).copy()
    w64 = [w.astype(np.float64) for w in net.W]
    b64 = [b.astype(np.float64) for b in net.b]
    hs = ref_forward(w64, b64, x.astype(np.float64))
    np.testing.assert_allclose(y, hs[-1], rtol=1e-4, atol=1e-4)
    dws, dbs, dx_ref = ref_backward(w64, hs, dout.astype(np.float64))
    for layer in range(len(net.W)):
        np.testing.assert_allclose(net.dW[layer], dws[layer], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(net.db[layer], dbs[layer], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-4, atol=1e-4)


def _loss64(net_w, net_b, x, c):
    return float((ref_forward(net_w, net_b, x)[-1] * c).sum())


@settings(max_examples=10, deadline=None)
@given(batch=st.integers(1, 6), sizes=st.lists(st.integers(1, 6), min_size=2, max_size=4), seed=st.integers(0, 2**31 - 1))
def test_gradients_match_central_differences(batch, sizes, seed):
    """Kernel gradients of L = sum(c * net(x)) vs central differences of the float64 loss."""
    rng = np.random.default_rng(seed)
    net = _net(rng, sizes)
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    c = rng.normal(size=(batch, sizes[-1])).astype(np.float32)
    net.forward(x)
    dx = net.backward(c, weights=True, inputs=True).copy()
    w64 = [w.astype(np.float64) for w in net.W]
    b64 = [b.astype(np.float64) for b in net.b]
    x64, c64 = x.astype(np.float64), c.astype(np.float64)
    h = 1e-6

    def check(arr, grad):
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + h
            up = _loss64(w64, b64, x64, c64)
            arr[idx] = old - h
            dn = _loss64(w64, b64, x64, c64)
            arr[idx] = old
            fd = (up - dn) / (2 * h)
            # a ReLU kink inside +-h makes the difference meaningless; skip those points
            assert abs(grad[idx] - fd) < 1e-3 * (1 + abs(fd)) or _near_kink(w64, b64, x64, h), (idx, grad[idx], fd)

    for layer in range(len(net.W)):
        check(w64[layer], net.dW[layer])
        check(b64[layer], net.db[layer])
    check(x64, dx)


def _near_kink(w64, b64, x64, h):
    hs = ref_forward(w64, b64, x64)
    pre = [hs[i] @ w64[i] + b64[i] for i in range(len(w64) - 1)]
    return any((np.abs(p) < 1e-4).any() for p in pre)


def test_relu_forward_backward():
    x = np.array([[-1.0, 0.0, 2.0], [3.0, -0.5, 0.25]], np.float32)
    y = np.empty_like(x)
    K.relu_forward(x, y, 1)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    dy = np.ones_like(x) * 7
    dx = np.empty_like(x)
    K.relu_backward(y, dy, dx, 2)
    np.testing.assert_array_equal(dx, np.where(x > 0, 7.0, 0.0))


# ---- Adam, clipping, soft update -------------------------------------------------------


def test_adam_matches_closed_form_for_a_few_steps():
    rng = np.random.default_rng(0)
    n = 11
    p = rng.normal(size=n).astype(np.float32)
    m = np.zeros(n, np.float32)
    v = np.zeros(n, np.float32)
    seg = np.array([0, 4, n], np.int64)
    grads = [rng.normal(size=n).astype(np.float32) * 0.1 for _ in range(4)]
    lr, b1, b2, eps = 1e-2, 0.9, 0.999, 1e-8
    p_ref = p.astype(np.float64).copy()
    for t, g in enumerate(grads, start=1):
        K.adam_clip(p, g.copy(), m, v, seg, t, lr, b1, b2, eps, 0.0, 0, 0)
        # closed form: m_t and v_t as explicit sums over the history
        m_t = sum((1 - b1) * b1 ** (t - k) * grads[k - 1].astype(np.float64) for k in range(1, t + 1))
        v_t = sum((1 - b2) * b2 ** (t - k) * grads[k - 1].astype(np.float64) ** 2 for k in range(1, t + 1))
        p_ref -= lr * (m_t / (1 - b1**t)) / (np.sqrt(v_t / (1 - b2**t)) + eps)
        np.testing.assert_allclose(m, m_t, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(v, v_t, rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(p, p_ref, rtol=1e-5, atol=1e-6)
    # the first Adam step moves every parameter by lr * sign(g) (|m_hat| / sqrt(v_hat) = 1)
    p0 = np.zeros(3, np.float32)
    K.adam_clip(p0, np.array([0.5, -2.0, 3.0], np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32),
                np.array([0, 3], np.int64), 1, 0.01, 0.9, 0.999, 0.0, 0.0, 0, 0)
    np.testing.assert_allclose(p0, [-0.01, 0.01, -0.01], rtol=1e-5)


def test_gradient_clipping_is_per_tensor():
    g = np.array([3.0, 4.0, 0.1, 0.1], np.float32)  # tensor 0 has norm 5, tensor 1 norm 0.14
    seg = np.array([0, 2, 4], np.int64)
    n = 4
    K.adam_clip(np.zeros(n, np.float32), g, np.zeros(n, np.float32), np.zeros(n, np.float32), seg, 1,
                1e-2, 0.9, 0.999, 1e-8, 0.5, 0, 0)
    np.testing.assert_allclose(g[:2], [0.3, 0.4], rtol=1e-6)
    np.testing.assert_array_equal(g[2:], np.float32([0.1, 0.1]))


def test_soft_update():
    t = np.array([1.0, 2.0], np.float32)
    s = np.array([3.0, -2.0], np.float32)
    K.soft_update(t, s, 0.01)
    np.testing.assert_allclose(t, [1.02, 1.96], rtol=1e-6)


# ---- Gumbel-softmax ----------------------------------------------------------------------


def test_gumbel_softmax_value_and_gradient():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(5, 4)).astype(np.float32)
    u = rng.uniform(0.01, 0.99, size=(5, 4)).astype(np.float32)
    out = np.empty_like(logits)
    K.gumbel_softmax(logits, u, out, 1.0, 2)
    z = logits.astype(np.float64) - np.log(-np.log(u.astype(np.float64)))
    ref = np.exp(z - z.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    # noise 0 (u = e^-1) is a plain softmax
    K.gumbel_softmax(logits, np.full_like(u, math.exp(-1)), out, 1.0, 2)
    sm = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(out, sm / sm.sum(1, keepdims=True), rtol=1e-5)
    # backward vs central differences of sum(c * gumbel_softmax(logits))
    K.gumbel_softmax(logits, u, out, 0.7, 2)
    c = rng.normal(size=out.shape).astype(np.float32)
    dl = np.empty_like(out)
    K.gumbel_softmax_backward(out, c, dl, 0.7, 2)

    def f(lg):
        zz = (lg - np.log(-np.log(u.astype(np.float64)))) / 0.7
        e = np.exp(zz - zz.max(1, keepdims=True))
        return float((c * e / e.sum(1, keepdims=True)).sum())

    l64 = logits.astype(np.float64)
    for idx in np.ndindex(l64.shape):
        old = l64[idx]
        l64[idx] = old + 1e-6
        up = f(l64)
        l64[idx] = old - 1e-6
        dn = f(l64)
        l64[idx] = old
        assert abs(dl[idx] - (up - dn) / 2e-6) < 1e-4


def test_float32_log_and_exp_are_within_two_ulp():
    """The Gumbel-softmax's vectorisable log and exp against float64 numpy (~1 ulp; fastmath
    may reassociate the ln 2 split, hence the bound of 2)."""
    from numba import njit

    @njit(fastmath=True)  # as in the kernels (the functions are inlined into their caller)
    def apply(f, x, out):
        for i in range(x.shape[0]):
            out[i] = f(x[i])

    x = np.concatenate([np.geomspace(1e-37, 3e38, 100_001), np.linspace(0.5, 2.0, 10_001), [1.0, 1 - 2**-24, 1e-10]])
    x = x.astype(np.float32)
    out = np.empty_like(x)
    apply(K.log_f32, x, out)
    ref = np.log(x.astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(out - ref) <= 2 * ulp)
    assert out[-3] == 0.0
    z = np.linspace(-87.0, 88.0, 200_001).astype(np.float32)
    out = np.empty_like(z)
    apply(K.exp_f32, z, out)
    ref = np.exp(z.astype(np.float64))
    assert np.all(np.abs(out - ref) <= 2 * np.spacing(ref.astype(np.float32)))
    apply(K.exp_f32, np.float32([-1000.0, 1000.0]), out[:2])  # clamped, finite
    assert np.all(np.isfinite(out[:2])) and 0 < out[0] < 1e-37


# ---- fixed point -----------------------------------------------------------------------


def test_fixed_point_rounding_and_saturation_exact():
    # Q3.4 in 8 bits: step 1/16, range [-128/16, 127/16] = [-8, 7.9375]
    x = np.array([0.03125, 0.09375, -0.03125, 1.0 / 3.0, 100.0, -100.0, 7.9375, -8.0, 0.0], np.float32)
    out = np.empty_like(x)
    K.quantize(x, out, 4, 8)
    # ties to even: 0.5 -> 0, 1.5 -> 2, -0.5 -> -0; 1/3*16 = 5.33 -> 5
    np.testing.assert_array_equal(out, np.float32([0.0, 0.125, -0.0, 5 / 16, 7.9375, -8.0, 7.9375, -8.0, 0.0]))
    # q_bits = 0 is float: unchanged
    K.quantize(x, out, 4, 0)
    np.testing.assert_array_equal(out, x)


def test_fixed_point_forward_is_quantised_and_saturates():
    x = np.array([[1.0, 2.0]], np.float32)
    w = np.array([[3.0], [0.3]], np.float32)
    b = np.array([0.01], np.float32)
    y = np.empty((1, 1), np.float32)
    wt = np.empty((1, 2), np.float32)
    K.dense_forward(x, w, wt, b, y, False, 1, 2, 6)  # Q3.2: step 0.25, max 31/4 = 7.75
    assert y[0, 0] == np.float32(3.5)  # 3.61 -> 3.5
    w[0, 0] = 10.0
    K.dense_forward(x, w, wt, b, y, False, 1, 2, 6)
    assert y[0, 0] == np.float32(7.75)  # saturated
    net = MLP([3, 4, 2], q_frac=8, q_bits=16)
    net.init_glorot(np.random.default_rng(0))
    assert np.all(net.params * 256 == np.rint(net.params * 256))


# ---- batch parts -------------------------------------------------------------------------


def _mlp_pair(sizes, parts, seed, q=(0, 0)):
    rng = np.random.default_rng(seed)
    nets = [MLP(sizes, K.Tiling(tile_b=8), *q, parts=p) for p in (1, parts)]
    nets[0].init_glorot(rng)
    nets[0].b[0][...] = rng.normal(0, 0.3, nets[0].b[0].shape)
    if q[1]:
        K.quantize(nets[0].params, nets[0].params, *q)
    nets[1].params[:] = nets[0].params
    return nets


@pytest.mark.parametrize("parts", [2, 3, 7])
@pytest.mark.parametrize("batch", [1, 5, 130])
def test_batch_parts_equal_the_whole_batch_but_for_gradient_rounding(parts, batch):
    """A pass split into row ranges: forward outputs, Gumbel samples and input gradients are
    the unsplit pass's bit for bit (rows are independent); weight gradients are the same sum
    grouped by part (float32 rounding apart), and against float64 numpy."""
    sizes = [69, 64, 64, 5]
    whole, split = _mlp_pair(sizes, parts, seed=parts * 1000 + batch)
    rng = np.random.default_rng(batch)
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    u = rng.random((batch, sizes[-1])).astype(np.float32)
    dout = rng.normal(size=(batch, sizes[-1])).astype(np.float32)
    outs = []
    for net in (whole, split):
        sample = np.zeros((batch, sizes[-1]), np.float32)
        dst = np.full((batch, 9), 7.0, np.float32)
        net.forward_sample(x, u, sample, 1.0, into=(dst, 2))
        logits = net.workspace(batch).acts[-1].copy()
        dx = net.backward(dout, weights=True, inputs=(60, 9)).copy()
        outs.append((logits, sample, dst, dx, net.grad.copy()))
    (l0, s0, d0, dx0, g0), (l1, s1, d1, dx1, g1) = outs
    np.testing.assert_array_equal(l1, l0)
    np.testing.assert_array_equal(s1, s0)
    np.testing.assert_array_equal(d1, d0)
    np.testing.assert_array_equal(d1[:, 2:7], s1)
    assert np.all(d1[:, [0, 1, 7, 8]] == 7.0)
    np.testing.assert_array_equal(dx1, dx0)
    np.testing.assert_allclose(g1, g0, rtol=1e-5, atol=1e-5)
    hs = ref_forward([w.astype(np.float64) for w in whole.W], [b.astype(np.float64) for b in whole.b], x.astype(np.float64))
    dws, dbs, _ = ref_backward([w.astype(np.float64) for w in whole.W], hs, dout.astype(np.float64))
    np.testing.assert_allclose(np.concatenate([np.concatenate([w.ravel(), b]) for w, b in zip(dws, dbs)]), g1,
                               rtol=1e-4, atol=1e-4)


def test_batch_parts_in_fixed_point_sum_to_the_grid():
    """Fixed point: the parts' weight gradients are wide partial sums, reduced, then rounded
    to the Q grid and saturated once: the unsplit kernel's gradient up to float32 rounding."""
    q = (6, 10)  # Q4.6: step 1/64, max 511/64
    whole, split = _mlp_pair([12, 16, 3], 2, seed=3, q=q)
    rng = np.random.default_rng(4)
    x = K.aligned_zeros((200, 12))
    x[:] = rng.normal(0, 3, size=x.shape)
    K.quantize_rows(x, *q)
    dout = np.full((200, 3), 0.5, np.float32)
    for net in (whole, split):
        net.forward(x)
        net.backward(dout)
    g = split.grad
    assert np.all(g * 64 == np.rint(g * 64)) and g.min() >= -8 and g.max() <= 511 / 64  # Q4.6's range
    assert g.max() == 511 / 64 and g.min() == -8  # some entries saturated (sums over 200 rows)
    np.testing.assert_allclose(g, whole.grad, atol=1 / 64)  # at most one step where a sum ties


def test_batch_parts_do_not_depend_on_the_thread_count():
    import numba

    sizes = [18, 64, 64, 5]
    _, net = _mlp_pair(sizes, 4, seed=9)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1024, sizes[0])).astype(np.float32)
    dout = rng.normal(size=(1024, sizes[-1])).astype(np.float32)
    results = []
    threads = numba.get_num_threads()
    for n in sorted({1, threads}):
        numba.set_num_threads(n)
        try:
            y = net.forward(x).copy()
            net.backward(dout)
            results.append((y, net.grad.copy()))
        finally:
            numba.set_num_threads(threads)
    for y, g in results[1:]:
        np.testing.assert_array_equal(y, results[0][0])
        np.testing.assert_array_equal(g, results[0][1])
    with pytest.raises(ValueError, match="parts"):
        MLP(sizes, parts=0)


# ---- register-blocked paths -------------------------------------------------------------


@pytest.mark.parametrize("batch,tile_b", [(1, 64), (7, 3), (70, 8), (133, 64), (64, 1)])
@pytest.mark.parametrize("n_in,n_out", [(18, 64), (69, 64), (64, 5), (64, 1), (64, 128), (70, 80), (66, 16), (128, 64),
                                         (300, 64)])
def test_dense_kernels_match_numpy_on_every_path(batch, tile_b, n_in, n_out):
    """Shapes that hit the register blocks (full and partial, row and column tails), the
    narrow forms and the unblocked middle; batches and tiles that do not fill a block."""
    rng = np.random.default_rng(batch * 10_000 + n_in * 100 + n_out)
    x = rng.normal(size=(batch, n_in)).astype(np.float32)
    w = rng.normal(size=(n_in, n_out)).astype(np.float32)
    b = rng.normal(size=n_out).astype(np.float32)
    dy = rng.normal(size=(batch, n_out)).astype(np.float32)
    h = np.maximum(rng.normal(size=(batch, n_in)), 0).astype(np.float32)  # a ReLU output
    wt = np.full((n_out, n_in), np.nan, np.float32)  # scratch: the kernels must not read stale values
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    tol = dict(rtol=1e-4, atol=1e-4 * math.sqrt(max(n_in, n_out, batch)))

    y = np.full((batch, n_out), np.nan, np.float32)
    K.dense_forward(x, w, wt, b, y, True, tile_b, 0, 0)
    np.testing.assert_allclose(y, np.maximum(x64 @ w64 + b, 0), **tol)
    K.dense_forward(x, w, wt, b, y, False, tile_b, 0, 0)
    np.testing.assert_allclose(y, x64 @ w64 + b, **tol)

    dw = np.full_like(w, np.nan)
    db = np.full_like(b, np.nan)
    K.dense_backward_weights(x, dy, dw, db, 0, 0)
    np.testing.assert_allclose(dw, x64.T @ dy64, **tol)
    np.testing.assert_allclose(db, dy64.sum(0), **tol)

    full = dy64 @ w64.T
    dx = np.full((batch, n_in), np.nan, np.float32)
    K.dense_backward_input(dy, w, wt, dx, 0, None, tile_b, 0, 0)
    np.testing.assert_allclose(dx, full, **tol)
    K.dense_backward_input(dy, w, wt, dx, 0, h, tile_b, 0, 0)  # fused ReLU gradient
    np.testing.assert_allclose(dx, full * (h > 0), **tol)
    assert np.all(dx[h <= 0] == 0)
    for col0, width in ((n_in - 5, 5), (1, 64), (n_in - 64, 64)):
        if col0 < 0 or col0 + width > n_in:
            continue
        part = np.full((batch, width), np.nan, np.float32)
        K.dense_backward_input(dy, w, wt, part, col0, h, tile_b, 0, 0)
        np.testing.assert_allclose(part, (full * (h > 0))[:, col0 : col0 + width], **tol)


@pytest.mark.parametrize("n_in,n_out", [(69, 64), (64, 5), (70, 80)])
def test_fixed_point_dense_kernels_round_the_float_result(n_in, n_out):
    """In fixed-point mode each kernel's output is exactly the float result, rounded."""
    rng = np.random.default_rng(n_in + n_out)
    batch, qf, qb = 37, 6, 12
    x = rng.normal(size=(batch, n_in)).astype(np.float32)
    w = (rng.normal(size=(n_in, n_out)) * 0.1).astype(np.float32)
    b = rng.normal(size=n_out).astype(np.float32)
    dy = rng.normal(size=(batch, n_out)).astype(np.float32)
    h = np.maximum(rng.normal(size=(batch, n_in)), 0).astype(np.float32)
    wt = np.empty((n_out, n_in), np.float32)

    def rounded(a):
        out = np.empty(a.size, np.float32)
        K.quantize(a.reshape(-1), out, qf, qb)
        return out.reshape(a.shape)

    y_f, y_q = np.empty((batch, n_out), np.float32), np.empty((batch, n_out), np.float32)
    K.dense_forward(x, w, wt, b, y_f, True, 8, 0, 0)
    K.dense_forward(x, w, wt, b, y_q, True, 8, qf, qb)
    np.testing.assert_array_equal(y_q, rounded(y_f))
    assert np.abs(y_q).max() <= 2 ** (qb - 1 - qf)  # some saturate
    dw_f, db_f, dw_q, db_q = (np.empty_like(a) for a in (w, b, w, b))
    K.dense_backward_weights(x, dy, dw_f, db_f, 0, 0)
    K.dense_backward_weights(x, dy, dw_q, db_q, qf, qb)
    np.testing.assert_array_equal(dw_q, rounded(dw_f))
    np.testing.assert_array_equal(db_q, rounded(db_f))
    dx_f, dx_q = np.empty_like(x), np.empty_like(x)
    K.dense_backward_input(dy, w, wt, dx_f, 0, h, 8, 0, 0)
    K.dense_backward_input(dy, w, wt, dx_q, 0, h, 8, qf, qb)
    np.testing.assert_array_equal(dx_q, rounded(dx_f))


def test_rows_do_not_depend_on_the_tiling():
    """A row's result does not depend on the tile it falls in or whether it fills a register
    block (what keeps results independent of how tiles are scheduled)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(203, 69)).astype(np.float32)
    w = rng.normal(size=(69, 64)).astype(np.float32)
    w2 = rng.normal(size=(64, 64)).astype(np.float32)
    b = rng.normal(size=64).astype(np.float32)
    dy = rng.normal(size=(203, 64)).astype(np.float32)
    wt, wt2 = np.empty((64, 69), np.float32), np.empty((64, 64), np.float32)
    ys, dxs = [], []
    for tile_b in (1, 3, 8, 64, 203):
        y = np.empty((203, 64), np.float32)
        K.dense_forward(x, w, wt, b, y, True, tile_b, 0, 0)
        ys.append(y)
        dx = np.empty((203, 64), np.float32)
        K.dense_backward_input(dy, w2, wt2, dx, 0, y, tile_b, 0, 0)
        dxs.append(dx)
    for y, dx in zip(ys[1:], dxs[1:]):
        np.testing.assert_array_equal(y, ys[0])
        np.testing.assert_array_equal(dx, dxs[0])


def test_strided_inputs_equal_contiguous_ones():
    """The actors read their observations as column views of the critic input (strided rows)."""
    rng = np.random.default_rng(6)
    c_in = rng.normal(size=(77, 69)).astype(np.float32)
    view = c_in[:, 18:36]
    dense = np.ascontiguousarray(view)
    for x in (view, dense):
        net = _net(np.random.default_rng(1), [18, 64, 64, 5], tile_b=16)
        y = net.forward(x).copy()
        net.backward(np.ones_like(y), weights=True)
        if x is view:
            y_v, g_v = y, net.grad.copy()
        else:
            np.testing.assert_array_equal(y, y_v)
            np.testing.assert_array_equal(net.grad, g_v)


def test_mlp_input_gradient_columns():
    rng = np.random.default_rng(2)
    net = _net(rng, [69, 64, 64, 1], tile_b=64)
    x = rng.normal(size=(130, 69)).astype(np.float32)
    dout = rng.normal(size=(130, 1)).astype(np.float32)
    net.forward(x)
    full = net.backward(dout, weights=False, inputs=True).copy()
    part = net.backward(dout, weights=False, inputs=(59, 5))
    assert part.shape == (130, 5)
    np.testing.assert_array_equal(part, full[:, 59:64])
    with pytest.raises(ValueError, match="outside"):
        net.backward(dout, weights=False, inputs=(66, 5))


# ---- loop nests ------------------------------------------------------------------------


def test_loop_nests_describe_the_kernels():
    t = K.Tiling(tile_b=32, unroll=4)
    # wide forward: batch tiles of RB-row blocks x VW-output blocks, reduction over `in` inside
    nest = K.dense_forward_nest(100, 18, 64, t)
    assert [lp.name for lp in nest.loops] == ["batch", "out", "in"]
    bl, ol, il = nest.loops
    assert bl.tiles == 4 and bl.parallel and bl.block == K.RB and bl.blocks == 32 // K.RB
    assert ol.block == K.VW and ol.unroll == 4 and il.block == 1 and nest.extra["out_tail"] == 0
    assert il.tile == 1 and not nest.extra["in_chunk_outermost"]
    wide_in = K.dense_forward_nest(1024, 924, 64, t)  # a 12-agent critic's first layer
    assert wide_in.loops[2].tile == K.IN_CHUNK and wide_in.loops[2].tiles == 8 and wide_in.extra["in_chunk_outermost"]
    assert nest.macs == nest.iterations == 100 * 18 * 64
    # narrow forward: dot products over `in` of the transposed weights
    narrow = K.dense_forward_nest(100, 64, 5, t)
    assert [(lp.name, lp.block) for lp in narrow.loops] == [("batch", 1), ("out", 1), ("in", 1)]
    assert narrow.extra["transpose"] == 64 * 5 and narrow.loops[2].unroll == 4
    # between NARROW_OUT and VW: the plain axpy order
    assert [lp.name for lp in K.dense_forward_nest(100, 64, 16, t).loops] == ["batch", "in", "out"]
    wg = K.dense_backward_weights_nest(1024, 69, 64, t)  # rows of [W; b]: 69 + the bias
    assert [(lp.name, lp.trip, lp.block) for lp in wg.loops] == [("out", 64, K.VW), ("in", 70, K.RB), ("batch", 1024, 1)]
    assert wg.macs == wg.iterations and wg.extra["padding_rows"] == -70 % K.RB
    wg5 = K.dense_backward_weights_nest(1024, 64, 5, t)
    assert [(lp.name, lp.block) for lp in wg5.loops] == [("out", 1), ("in", K.VW), ("batch", 1)]
    bi = K.dense_backward_input_nest(1024, 64, 64, t, relu_mask=True)
    assert [(lp.name, lp.block) for lp in bi.loops] == [("batch", K.RB), ("in", K.VW), ("out", 1)]
    assert bi.extra == {"relu_mask": True, "transpose": 64 * 64} and bi.words_in == 2 * 1024 * 64 + 64 * 64
    cols = K.dense_backward_input_nest(1024, 69, 64, t, width=5)
    assert cols.macs == cols.iterations == 1024 * 5 * 64 and all(lp.block == 1 for lp in cols.loops)
    net = MLP([18, 64, 64, 5], t)
    nests = net.loop_nests(1024)
    fwd = sum(n.macs for n in nests if n.kernel == "dense_forward")
    assert fwd == 1024 * (18 * 64 + 64 * 64 + 64 * 5)
    assert [n.kernel for n in nests].count("dense_backward_input") == 2  # hidden layers, ReLU fused
    assert all(n.extra["relu_mask"] for n in nests if n.kernel == "dense_backward_input")
    assert nests[0].as_dict()["loops"][0]["trip"] == 1024
    assert [n.kernel for n in net.loop_nests(8, forward=False, weights=False, inputs=(3, 5))] == ["dense_backward_input"] * 3
    with pytest.raises(ValueError):
        K.Tiling(tile_b=0)


# ---- buffers ---------------------------------------------------------------------------


def test_buffers_start_on_a_cache_line():
    for shape in [(7,), (1024, 69), (3, 5)]:
        a = K.aligned_zeros(shape)
        assert a.shape == shape and a.dtype == np.float32 and a.ctypes.data % 64 == 0 and not a.any()
    net = MLP([18, 64, 64, 5])
    ws = net.workspace(1024)
    views = [net.params, net.grad, *net.W, *net.b, *net.dW, *net.WT, *ws.acts, *ws.grads]
    assert all(v.ctypes.data % 64 == 0 for v in views)  # every layer's W and b too: widths are multiples of 16


# ---- counter-based random numbers ------------------------------------------------------


def test_counter_rng_is_a_pure_function_of_key_and_index_and_uniform():
    u = np.zeros(200_000, np.float32)
    K.uniform_fill(np.uint64(2024), u)
    again = np.zeros(1000, np.float32)
    K.uniform_fill(np.uint64(2024), again)
    np.testing.assert_array_equal(again, u[:1000])  # a prefix of the stream is the same stream
    other = np.zeros(1000, np.float32)
    K.uniform_fill(np.uint64(2025), other)
    assert not np.array_equal(other, again)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert np.all(u * 2**24 == np.rint(u * 2**24))  # on the 24-bit grid
    counts = np.histogram(u, bins=20, range=(0, 1))[0]
    expected = u.size / 20
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 43.8  # 19 degrees of freedom, p = 0.001
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01  # neighbours uncorrelated
    idx = np.zeros(100_000, np.int64)
    K.randint_fill(np.uint64(7), 37, idx)
    assert idx.min() == 0 and idx.max() == 36
    counts = np.bincount(idx, minlength=37)
    expected = idx.size / 37
    assert float(((counts - expected) ** 2 / expected).sum()) < 73.4  # 36 dof, p = 0.001
    nest = K.counter_rng_nest(1024)
    assert nest.iterations == 1024 and nest.words_out == 1024
