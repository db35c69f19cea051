"""Communication-scheduling policies for the training timeline: which collective the network
runs next.

A policy is a small strategy object with one job: whenever the network is idle and some
gradient bytes wait for it, the timeline (:func:`hw_models.training.timeline.simulate`)
shows it a :class:`NetworkView` -- the time, the waiting parts of gradients in the order they
became ready, whether the backward pass is over, when the next gradient will appear -- and
the policy answers with one :class:`Collective` to start now, or ``None`` to leave the
network idle until something changes (a gradient appears or a collective ends). A
collective is never interrupted; a policy that wants preemption cuts gradients into slices
(each its own collective) and chooses again between slices. A policy may also compute a
plan once per run from the layer costs and the communication model (:meth:`Policy.plan`),
e.g. buckets; the timeline hands it back in the view.

A :class:`Collective` takes parts of waiting gradients from their front: ``Piece(layer,
offset_bytes, nbytes)``. ``allreduce`` and ``reduce_scatter`` take gradient parts;
a reduce-scatter's parts then wait again, as ``gather`` parts, for an ``all_gather``. A layer's
gradient is synchronised when all-reduces and all-gathers have covered all its bytes.

The policies are :data:`POLICIES`; docs/training_timeline.md, "Policies", gives each one's
rule and source (each class's ``source`` names it too).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Sequence

from hw_models.training.comm import KINDS, CommModel
from hw_models.training.costs import LayerCost
from noc.base.errors import ConfigError, HwModelsError

MIB = 1 << 20
STAGES = ("reduce", "gather")


class PolicyError(HwModelsError):
    """A policy asked for something the timeline cannot do (bytes that are not waiting, an
    unknown kind), or left gradients waiting with nothing else to happen."""


@dataclass(frozen=True)
class Piece:
    """``nbytes`` of layer ``layer``'s gradient from byte ``offset_bytes`` on."""

    layer: int
    offset_bytes: int
    nbytes: int


@dataclass(frozen=True)
class Collective:
    """One collective the network runs: ``kind`` (``allreduce``, ``reduce_scatter`` or
    ``all_gather``) over the concatenation of ``pieces`` (one piece: no fusion)."""

    kind: str
    pieces: tuple[Piece, ...]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise PolicyError(f"Collective.kind = {self.kind!r}: must be one of {', '.join(KINDS)}")
        object.__setattr__(self, "pieces", tuple(self.pieces))
        if not self.pieces:
            raise PolicyError("Collective.pieces = (): a collective needs at least one piece")
        for p in self.pieces:
            if not isinstance(p, Piece) or p.nbytes <= 0 or p.offset_bytes < 0:
                raise PolicyError(f"Collective piece {p!r}: must be a Piece with nbytes > 0 and offset_bytes >= 0")

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.pieces)

    @property
    def layers(self) -> tuple[int, ...]:
        return tuple(p.layer for p in self.pieces)


@dataclass(frozen=True)
class Pending:
    """A part of one layer's gradient waiting for the network: ``stage`` ``reduce`` (to be
    all-reduced or reduce-scattered) or ``gather`` (reduce-scattered, waiting for its
    all-gather), ready since ``ready_s``."""

    layer: int
    offset_bytes: int
    nbytes: int
    ready_s: float
    stage: str

    def piece(self, nbytes: int | None = None) -> Piece:
        """The front ``nbytes`` (default: all) of this part."""
        return Piece(self.layer, self.offset_bytes, self.nbytes if nbytes is None else int(nbytes))


@dataclass(frozen=True)
class NetworkView:
    """What a policy sees when the network is idle.

    ``pending``: the waiting parts, in the order they became ready (first in, first out);
    ``backward_done``: the backward pass of ``iteration`` has produced every gradient;
    ``next_gradient_s``: when the next gradient (of a layer with ``grad_bytes > 0``) of this
    backward pass will appear, ``math.inf`` if none will (the backward times are the
    profile, so this is exact); ``plan``: what :meth:`Policy.plan` returned."""

    now_s: float
    iteration: int
    pending: tuple[Pending, ...]
    backward_done: bool
    next_gradient_s: float
    layers: tuple[LayerCost, ...]
    comm: CommModel
    plan: Any = None

    def waiting(self, stage: str) -> tuple[Pending, ...]:
        return tuple(p for p in self.pending if p.stage == stage)


class Policy(ABC):
    """A communication-scheduling policy (see the module docstring)."""

    name: str = ""
    source: str = ""

    def plan(self, layers: tuple[LayerCost, ...], comm: CommModel) -> Any:
        """Computed once per run, before the first iteration; handed back as ``view.plan``."""
        return None

    @abstractmethod
    def next_collective(self, view: NetworkView) -> Collective | None:
        """The collective to start now, or ``None`` to wait for the next event."""

    @property
    def label(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label})"


def _bytes_option(owner: str, key: str, value, allow_zero: bool = False) -> int:
    lo = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise ConfigError(f"{owner}.{key} = {value!r}: must be an integer number of bytes >= {lo}")
    return int(value)


def _size(nbytes: int) -> str:
    for unit, m in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if nbytes >= m:
            v = nbytes / m
            return f"{v:g} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{nbytes} B"


# --------------------------------------------------------------------------------------
# Plans: buckets of layers, in the order the backward pass produces their gradients
# --------------------------------------------------------------------------------------


def fusion_buckets(layers: Sequence[LayerCost], threshold_bytes: int) -> tuple[tuple[int, ...], ...]:
    """Layers with a gradient, last to first, cut into buckets: a bucket closes as soon as
    its bytes reach ``threshold_bytes``; what is left at the end is the last bucket. 0 gives
    one bucket per layer."""
    buckets, cur, size = [], [], 0
    for i in reversed(range(len(layers))):
        if layers[i].grad_bytes == 0:
            continue
        cur.append(i)
        size += layers[i].grad_bytes
        if size >= threshold_bytes:
            buckets.append(tuple(cur))
            cur, size = [], 0
    if cur:
        buckets.append(tuple(cur))
    return tuple(buckets)


def gradient_ready_s(layers: Sequence[LayerCost]) -> list[float]:
    """Per layer, when its gradient appears, counted from the start of the backward pass
    (which runs from the last layer to the first)."""
    ready = [0.0] * len(layers)
    t = 0.0
    for i in reversed(range(len(layers))):
        t += layers[i].bwd_s
        ready[i] = t
    return ready


def mgwfbp_groups(layers: Sequence[LayerCost], comm: CommModel) -> tuple[tuple[int, ...], ...]:
    """MG-WFBP's buckets (the merge rule of Shi, Chu and Li, INFOCOM 2019).

    Walk the gradients in the order the backward pass produces them, with the network idle
    when the backward pass starts. Let the current group's all-reduce start at ``start``
    (the previous group's end, or its last gradient's arrival, whichever is later) and last
    ``t_c``; the next gradient arrives at ``r``. If ``r < start + t_c`` (it arrives before
    the group's all-reduce would be over), merge it into the group when the group's
    all-reduce would not have started yet (``start > r``), or when the wait
    ``r - start`` is shorter than what merging saves, ``t_c + t(next) - t(merged)`` (the
    all-reduce start-up cost alpha of the paper's linear model ``alpha + beta * bytes``).
    Otherwise the group closes and the next gradient starts a new one."""
    order = [i for i in reversed(range(len(layers))) if layers[i].grad_bytes > 0]
    if not order:
        return ()
    ready = gradient_ready_s(layers)
    groups: list[tuple[int, ...]] = []
    cur, cur_bytes, prev_end = [order[0]], layers[order[0]].grad_bytes, 0.0
    for nxt in order[1:]:
        t_c = comm.allreduce_s(cur_bytes)
        start = max(prev_end, ready[cur[-1]])
        r = ready[nxt]
        nb = layers[nxt].grad_bytes
        merge = False
        if r < start + t_c:
            if start > r:
                merge = True
            else:
                saved = t_c + comm.allreduce_s(nb) - comm.allreduce_s(cur_bytes + nb)
                merge = (r - start) < saved
        if merge:
            cur.append(nxt)
            cur_bytes += nb
        else:
            groups.append(tuple(cur))
            prev_end = start + t_c
            cur, cur_bytes = [nxt], nb
    groups.append(tuple(cur))
    return tuple(groups)


def _complete(view: NetworkView, bucket: tuple[int, ...], stage: str) -> tuple[Pending, ...] | None:
    """The waiting parts of ``bucket`` in ``stage`` when every layer of it waits whole, else None."""
    by_layer = {p.layer: p for p in view.pending if p.stage == stage}
    parts = []
    for i in bucket:
        p = by_layer.get(i)
        if p is None or p.offset_bytes != 0 or p.nbytes != view.layers[i].grad_bytes:
            return None
        parts.append(p)
    return tuple(parts)


def _first_complete_bucket(view: NetworkView, stage: str) -> tuple[Pending, ...] | None:
    for bucket in view.plan:
        parts = _complete(view, bucket, stage)
        if parts is not None:
            return parts
    return None


# --------------------------------------------------------------------------------------
# The policies
# --------------------------------------------------------------------------------------


class Sequential(Policy):
    """No overlap of communication with the backward pass: after the backward pass, one
    all-reduce per layer in the order the gradients appeared (``fused=False``) or one
    all-reduce of all gradients (``fused=True``). (The next forward pass still starts a
    layer as soon as that layer is synchronised, but the first layer's gradient is the last
    one sent.)"""

    name = "sequential"
    source = "the no-overlap baseline the other policies' papers compare with"

    def __init__(self, fused: bool = False):
        if not isinstance(fused, bool):
            raise ConfigError(f"Sequential.fused = {fused!r}: must be true or false")
        self.fused = fused

    @property
    def label(self) -> str:
        return "sequential (fused)" if self.fused else "sequential"

    def next_collective(self, view: NetworkView) -> Collective | None:
        grads = view.waiting("reduce")
        if not view.backward_done or not grads:
            return None
        if self.fused:
            return Collective("allreduce", tuple(p.piece() for p in grads))
        return Collective("allreduce", (grads[0].piece(),))


class WaitFreeBackprop(Policy):
    """Wait-free backpropagation: each layer's gradient is all-reduced on its own as soon as
    it appears, first come first served."""

    name = "wfbp"
    source = ("Poseidon: An Efficient Communication Architecture for Distributed Deep Learning on GPU Clusters; "
              "H. Zhang, Z. Zheng, S. Xu, W. Dai, Q. Ho, X. Liang, Z. Hu, J. Wei, P. Xie, E. P. Xing; "
              "USENIX ATC 2017")

    def next_collective(self, view: NetworkView) -> Collective | None:
        grads = view.waiting("reduce")
        return Collective("allreduce", (grads[0].piece(),)) if grads else None


class _Buckets(Policy):
    """A policy over fusion buckets of at least ``threshold_bytes`` (:func:`fusion_buckets`;
    ``default_bytes`` when not given)."""

    default_bytes = 0

    def __init__(self, threshold_bytes: int | None = None):
        threshold_bytes = self.default_bytes if threshold_bytes is None else threshold_bytes
        self.threshold_bytes = _bytes_option(type(self).__name__, "threshold_bytes", threshold_bytes, allow_zero=True)

    @property
    def label(self) -> str:
        return f"{self.name} ({_size(self.threshold_bytes)})"

    def plan(self, layers, comm):
        return fusion_buckets(layers, self.threshold_bytes)

    reduce_collective = "allreduce"  # what a complete bucket's reduction starts as

    def next_collective(self, view: NetworkView) -> Collective | None:
        parts = _first_complete_bucket(view, "reduce")
        return Collective(self.reduce_collective, tuple(p.piece() for p in parts)) if parts else None


class TensorFusion(_Buckets):
    """Tensor fusion: gradients, in the order they appear, fill buckets of at least
    ``threshold_bytes`` (:func:`fusion_buckets`); a bucket is one all-reduce, started once
    all its gradients are there, buckets first come first served. Default 64 MiB,
    Horovod's default fusion buffer."""

    name = "fusion"
    source = ("Horovod: fast and easy distributed deep learning in TensorFlow; A. Sergeev, M. Del Balso; "
              "arXiv 2018")
    default_bytes = 64 * MIB


class MGWFBP(TensorFusion):
    """MG-WFBP: tensor fusion whose buckets come from the merge rule of
    :func:`mgwfbp_groups`, computed from the layers' backward times and the communication
    model's all-reduce times (the paper's profile)."""

    name = "mgwfbp"
    source = ("MG-WFBP: Efficient Data Communication for Distributed Synchronous SGD Algorithms; "
              "S. Shi, X. Chu, B. Li; IEEE INFOCOM 2019")

    def __init__(self):
        self.threshold_bytes = 0

    @property
    def label(self) -> str:
        return "mgwfbp"

    def plan(self, layers, comm):
        return mgwfbp_groups(layers, comm)


class PriorityPartition(Policy):
    """P3 / ByteScheduler: gradients cut into slices of ``slice_bytes``; whenever the network
    is free it all-reduces the waiting slice of the front-most layer (the one the next
    forward pass needs first), so a front layer's gradient overtakes a back layer's at the
    next slice boundary. Default slice 1 MiB (a choice here, not the papers')."""

    name = "p3"
    source = ("Priority-based Parameter Propagation for Distributed DNN Training; A. Jayarajan, J. Wei, G. Gibson, "
              "A. Fedorova, G. Pekhimenko; SysML 2019. A Generic Communication Scheduler for Distributed DNN "
              "Training Acceleration; Y. Peng, Y. Zhu, Y. Chen, Y. Bao, B. Yi, C. Lan, C. Wu, C. Guo; SOSP 2019")

    def __init__(self, slice_bytes: int = MIB):
        self.slice_bytes = _bytes_option("PriorityPartition", "slice_bytes", slice_bytes)

    @property
    def label(self) -> str:
        return f"p3 ({_size(self.slice_bytes)} slices)"

    def next_collective(self, view: NetworkView) -> Collective | None:
        grads = view.waiting("reduce")
        if not grads:
            return None
        p = min(grads, key=lambda q: (q.layer, q.offset_bytes))
        return Collective("allreduce", (p.piece(min(self.slice_bytes, p.nbytes)),))


class Prophet(Policy):
    """Prophet: while the backward pass runs, the waiting gradients, front-most layer first
    (optionally cut into partitions of ``partition_bytes``, as the BytePS tensors Prophet
    schedules are), are grouped into one block as long as the block's all-reduce fits in the
    time until the next gradient appears (the profiled interval; the bandwidth and start-up
    cost are the communication model's); the block goes as one all-reduce, never preempted.
    If not even the first fits, it goes alone (the network would otherwise idle while
    gradients wait); ``strict=True`` instead leaves the network idle until the next gradient
    appears, as the BytePS implementation of the paper does. Once the last
    gradient has appeared, the rest go one gradient (or partition) at a time, front-most
    layer first, so the next forward pass can start as early as possible."""

    name = "prophet"
    source = ("Prophet: Speeding up Distributed DNN Training with Predictable Communication Scheduling; "
              "Z. Zhang, Q. Qi, R. Shang, L. Chen, F. Xu; ICPP 2021")

    def __init__(self, partition_bytes: int | None = None, strict: bool = False):
        self.partition_bytes = None if partition_bytes is None else _bytes_option(
            "Prophet", "partition_bytes", partition_bytes)
        if not isinstance(strict, bool):
            raise ConfigError(f"Prophet.strict = {strict!r}: must be true or false")
        self.strict = strict

    @property
    def label(self) -> str:
        parts = ([f"{_size(self.partition_bytes)} partitions"] if self.partition_bytes is not None else []) + (
            ["strict"] if self.strict else [])
        return f"prophet ({', '.join(parts)})" if parts else "prophet"

    def _units(self, grads: Sequence[Pending]) -> list[tuple[int, int]]:
        """(index into ``grads``, bytes) units in priority order: whole parts, or partitions."""
        out = []
        for k in sorted(range(len(grads)), key=lambda j: (grads[j].layer, grads[j].offset_bytes)):
            left = grads[k].nbytes
            step = left if self.partition_bytes is None else self.partition_bytes
            while left > 0:
                n = min(step, left)
                out.append((k, n))
                left -= n
        return out

    def next_collective(self, view: NetworkView) -> Collective | None:
        grads = view.waiting("reduce")
        if not grads:
            return None
        units = self._units(grads)
        if not math.isinf(view.next_gradient_s):
            budget = view.next_gradient_s - view.now_s
            taken: dict[int, int] = {}  # index of the part -> bytes taken from its front (priority order)
            total = 0
            for k, n in units:
                if view.comm.allreduce_s(total + n) > budget:
                    break
                taken[k] = taken.get(k, 0) + n
                total += n
            if taken:
                return Collective("allreduce", tuple(grads[k].piece(n) for k, n in taken.items()))
            if self.strict:
                return None
        k, n = units[0]  # the last gradient has appeared, or not even the first unit fits
        return Collective("allreduce", (grads[k].piece(n),))


class DeAR(_Buckets):
    """DeAR: gradients fused into buckets of at least ``threshold_bytes``
    (:func:`fusion_buckets`); each bucket's all-reduce is decoupled into a reduce-scatter,
    started as soon as the bucket is complete (first come first served, overlapping the
    backward pass), and an all-gather, started once the backward pass is over (overlapping
    the next forward pass), front-most bucket first. Reduce-scatters go before all-gathers
    (DeAR queues both on one communication stream, the reduce-scatters during the backward
    pass). A layer is synchronised (and may run its next forward pass) once its bucket's
    all-gather is over. Default 25 MiB (PyTorch DDP's default bucket; DeAR tunes its own)."""

    name = "dear"
    source = ("DeAR: Accelerating Distributed Deep Learning with Fine-Grained All-Reduce Pipelining; L. Zhang, "
              "S. Shi, X. Chu, W. Wang, B. Li, C. Liu; IEEE ICDCS 2023")
    default_bytes = 25 * MIB
    reduce_collective = "reduce_scatter"

    def next_collective(self, view: NetworkView) -> Collective | None:
        first = super().next_collective(view)
        if first is not None or not view.backward_done:
            return first
        ready = [b for b in view.plan if _complete(view, b, "gather") is not None]
        if not ready:
            return None
        bucket = min(ready, key=min)
        return Collective("all_gather", tuple(p.piece() for p in _complete(view, bucket, "gather")))


POLICIES: dict[str, type[Policy]] = {
    "sequential": Sequential, "wfbp": WaitFreeBackprop, "fusion": TensorFusion, "mgwfbp": MGWFBP,
    "p3": PriorityPartition, "prophet": Prophet, "dear": DeAR,
}


def make_policy(name: str, **options) -> Policy:
    """The policy called ``name`` (one of :data:`POLICIES`) with ``options`` (its keyword
    arguments, e.g. ``threshold_bytes``)."""
    key = str(name).strip().lower().replace("-", "_")
    if key not in POLICIES:
        raise ConfigError(f"policy {name!r} is unknown (allowed: {', '.join(POLICIES)})")
    try:
        return POLICIES[key](**options)
    except TypeError as exc:
        raise ConfigError(f"policy {key}: bad option ({exc})") from None


__all__ = ["DeAR", "MGWFBP", "MIB", "POLICIES", "Collective", "NetworkView", "Pending", "Piece", "Policy",
           "PolicyError", "PriorityPartition", "Prophet", "STAGES", "Sequential", "TensorFusion", "WaitFreeBackprop",
           "fusion_buckets", "gradient_ready_s", "make_policy", "mgwfbp_groups"]
