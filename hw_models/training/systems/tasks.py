"""Small deterministic training tasks for convergence checks: scikit-learn's digits (the
8x8 images shipped inside the package, no download) with softmax (multinomial logistic)
regression or a one-hidden-layer MLP, on simulated data-parallel workers with data shards.

A :class:`Task` holds the data, the model and the seed; its parameters are one flat float64
vector with per-layer views (:meth:`Task.layer_slices`), so systems that act per tensor
(compression, K-FAC) see the layers. ``grad`` and ``loss`` are exact (checked against finite
differences in the tests). :func:`run_until` is the common loop: it evaluates test accuracy
every ``eval_every`` iterations and reports the first iteration reaching a target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np

from hw_models.training.costs import whole
from noc.base.errors import ConfigError

MODELS = ("logreg", "mlp")
DEFAULT_TARGET = {"logreg": 0.95, "mlp": 0.95}
DEFAULT_LR = {"logreg": 0.1, "mlp": 0.2}


@lru_cache(maxsize=1)
def _digits():
    try:
        from sklearn.datasets import load_digits  # noqa: PLC0415
    except ImportError as exc:  # pragma: no cover
        raise ConfigError("the convergence tasks need scikit-learn (pip install -e '.[dev]' or "
                          "pip install scikit-learn)") from exc
    d = load_digits()
    X, y = d.data.astype(np.float64), d.target.astype(np.int64)
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


@lru_cache(maxsize=16)
def load_digits_split(seed: int, test_fraction: float = 0.2):
    """Digits standardised with the training split's statistics: ``(Xtr, ytr, Xte, yte)``,
    read-only arrays. The images are parsed once per process (a sweep validates thousands of
    points, and scikit-learn parses its CSV each time it is asked), the split once per
    (seed, fraction)."""
    X, y = _digits()
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    te, tr = order[:n_test], order[n_test:]
    mu = X[tr].mean(axis=0)
    sd = X[tr].std(axis=0)
    sd[sd == 0] = 1.0
    X = (X - mu) / sd
    out = X[tr], y[tr], X[te], y[te]
    for a in out:
        a.setflags(write=False)
    return out


def _softmax_xent_grad(logits: np.ndarray, y: np.ndarray):
    """Mean cross-entropy and its gradient with respect to the logits."""
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    n = len(y)
    loss = -np.log(p[np.arange(n), y] + 1e-300).mean()
    p[np.arange(n), y] -= 1.0
    return loss, p / n


@dataclass
class Task:
    """A model on digits split across ``workers`` shards (contiguous pieces of a seeded
    permutation of the training set). ``hidden``: the MLP's hidden units (tanh)."""

    model: str = "logreg"
    workers: int = 8
    batch: int = 16
    hidden: int = 32
    seed: int = 0
    Xtr: np.ndarray = field(init=False, repr=False)
    ytr: np.ndarray = field(init=False, repr=False)
    Xte: np.ndarray = field(init=False, repr=False)
    yte: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if self.model not in MODELS:
            raise ConfigError(f"model = {self.model!r}: must be one of {', '.join(MODELS)}")
        for key, lo in (("workers", 1), ("batch", 1), ("hidden", 1)):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ConfigError(f"{key} = {v!r}: must be an integer >= {lo}")
        self.Xtr, self.ytr, self.Xte, self.yte = load_digits_split(self.seed)
        if self.workers > len(self.ytr):
            raise ConfigError(f"workers = {self.workers}: at most {len(self.ytr)} (one sample each)")
        self.shards = np.array_split(np.arange(len(self.ytr)), self.workers)
        d, c = self.Xtr.shape[1], 10
        if self.model == "logreg":
            self.shapes = (("W", (d, c)), ("b", (c,)))
        else:
            self.shapes = (("W1", (d, self.hidden)), ("b1", (self.hidden,)), ("W2", (self.hidden, c)), ("b2", (c,)))
        self._slices = []
        off = 0
        for name, shp in self.shapes:
            n = int(np.prod(shp))
            self._slices.append((name, slice(off, off + n), shp))
            off += n
        self.num_params = off

    # ---- parameters --------------------------------------------------------------------
    def layer_slices(self) -> list[tuple[str, slice]]:
        """Each parameter tensor's name and its slice of the flat vector."""
        return [(name, s) for name, s, _ in self._slices]

    def init_params(self) -> np.ndarray:
        rng = np.random.default_rng([self.seed, 1])
        w = np.zeros(self.num_params)
        for name, s, shp in self._slices:
            if name.startswith("W") and self.model == "mlp":
                w[s] = rng.normal(0.0, 1.0 / np.sqrt(shp[0]), size=shp).ravel()
        return w

    def _unpack(self, w):
        return [w[s].reshape(shp) for _, s, shp in self._slices]

    # ---- loss and gradient --------------------------------------------------------------
    def _backward(self, w: np.ndarray, X: np.ndarray, y: np.ndarray):
        """(mean cross-entropy over ``(X, y)``, per weight matrix in order: its input
        activations and the loss gradient with respect to its pre-activations)."""
        if self.model == "logreg":
            W, b = self._unpack(w)
            loss, dz = _softmax_xent_grad(X @ W + b, y)
            return loss, [(X, dz)]
        W1, b1, W2, b2 = self._unpack(w)
        h = np.tanh(X @ W1 + b1)
        loss, dz = _softmax_xent_grad(h @ W2 + b2, y)
        return loss, [(X, (dz @ W2.T) * (1.0 - h * h)), (h, dz)]

    def loss_grad(self, w: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean cross-entropy over ``(X, y)`` and its exact gradient (flat)."""
        g = np.empty_like(w)
        loss, io = self._backward(w, X, y)
        parts = [p for a, d in io for p in (a.T @ d, d.sum(axis=0))]  # each matrix's, then its bias's
        for (_, s, _), p in zip(self._slices, parts):
            g[s] = p.ravel()
        return float(loss), g

    def layer_io(self, w: np.ndarray, X: np.ndarray, y: np.ndarray):
        """Per weight matrix: its input activations (with a column of ones for the bias) and
        the loss gradient with respect to its pre-activations (K-FAC's ``a`` and ``g``)."""
        ones = np.ones((len(y), 1))
        return [(np.hstack([a, ones]), d * len(y)) for a, d in self._backward(w, X, y)[1]]

    def accuracy(self, w: np.ndarray, test: bool = True) -> float:
        X, y = (self.Xte, self.yte) if test else (self.Xtr, self.ytr)
        if self.model == "logreg":
            W, b = self._unpack(w)
            z = X @ W + b
        else:
            W1, b1, W2, b2 = self._unpack(w)
            z = np.tanh(X @ W1 + b1) @ W2 + b2
        return float((z.argmax(axis=1) == y).mean())

    # ---- sampling -------------------------------------------------------------------------
    def samplers(self, stream: int = 0) -> list["ShardSampler"]:
        """One minibatch sampler per worker, seeded by (task seed, stream, worker)."""
        return [ShardSampler(self, i, np.random.default_rng([self.seed, 2, stream, i])) for i in range(self.workers)]


class ShardSampler:
    """Minibatches of one worker's shard, drawn without replacement within an epoch."""

    def __init__(self, task: Task, worker: int, rng: np.random.Generator):
        self.task, self.idx, self.rng = task, task.shards[worker], rng
        self._order = np.empty(0, dtype=np.int64)
        self._pos = 0

    def next(self, size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The next minibatch (``size`` samples, default the task's batch; at most the shard)."""
        b = min(self.task.batch if size is None else size, len(self.idx))
        if self._pos + b > len(self._order):
            self._order = self.rng.permutation(self.idx)
            self._pos = 0
        sel = self._order[self._pos:self._pos + b]
        self._pos += b
        return self.task.Xtr[sel], self.task.ytr[sel]

    def grad(self, w: np.ndarray) -> np.ndarray:
        X, y = self.next()
        return self.task.loss_grad(w, X, y)[1]


@dataclass(frozen=True)
class Convergence:
    """A run's test accuracy every ``eval_every`` iterations and the first iteration at
    which it reached ``target`` (``None``: never within ``max_iterations``)."""

    label: str
    target: float
    iterations_to_target: int | None
    curve: tuple[tuple[int, float], ...]
    final_accuracy: float
    extra: dict = field(default_factory=dict)

    def time_at(self, times) -> float:
        """Seconds to the target from ``times``, each iteration's end (NaN: never reached)."""
        return times[self.iterations_to_target - 1] if self.iterations_to_target else math.nan


def run_until(label: str, task: Task, step: Callable[[int], np.ndarray], *, target: float,
              max_iterations: int = 2000, eval_every: int = 5, stop_at_target: bool = True,
              extra: Callable[[], dict] | None = None) -> Convergence:
    """Call ``step(t)`` for t = 0, 1, ...; it does one iteration of the system and returns
    the parameters to evaluate (the model a user would read out after iteration ``t``)."""
    if not 0.0 < target <= 1.0:
        raise ConfigError(f"target = {target!r}: must be an accuracy in (0, 1]")
    whole("max_iterations", max_iterations)
    curve = []
    hit = None
    acc = float("nan")
    for t in range(max_iterations):
        w = step(t)
        if not np.all(np.isfinite(w)):
            curve.append((t + 1, float("nan")))
            acc = float("nan")
            break
        if (t + 1) % eval_every == 0 or t + 1 == max_iterations:
            acc = task.accuracy(w)
            curve.append((t + 1, acc))
            if hit is None and acc >= target:
                hit = t + 1
                if stop_at_target:
                    break
    return Convergence(label, target, hit, tuple(curve), acc, extra() if extra else {})


def sync_sgd(task: Task, lr: float, *, target: float, max_iterations: int = 2000, eval_every: int = 5,
             label: str = "sync SGD (all-reduce)") -> Convergence:
    """The reference: synchronous data-parallel SGD, gradients averaged over the workers
    (what an all-reduce computes), one model."""
    w = task.init_params()
    samplers = task.samplers()

    def step(t):
        g = np.mean([s.grad(w) for s in samplers], axis=0)
        w[:] -= lr * g
        return w

    return run_until(label, task, step, target=target, max_iterations=max_iterations, eval_every=eval_every)


__all__ = ["Convergence", "DEFAULT_LR", "DEFAULT_TARGET", "MODELS", "ShardSampler", "Task", "load_digits_split",
           "run_until", "sync_sgd"]
