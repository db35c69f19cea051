"""Parameter server, layer by layer, with stragglers and asynchrony: an event simulation in
which each worker's pushes overlap its backward pass and its pulls its next forward pass.

Every worker runs the workload's forward pass (layer 0 to L-1) and backward pass (L-1 to 0),
each op taking the layer's seconds times the worker's straggler factor for that iteration
(:class:`~hw_models.training.systems.ps.Stragglers`). The servers' links are one shared
resource, as the iteration timeline's network: it serves one request at a time, never
interrupted, and whenever it is free it picks the next one as
:class:`~hw_models.training.systems.ps.PushPull` picks collectives:

* a **push** of layer ``l`` by one worker is requested when the worker's backward op of ``l``
  ends and takes ``1/N`` of the network model's all-worker push of ``l`` (its
  ``reduce_scatter``); pushes are served first come first served (ties: worker index);
* a **pull** of layer ``l`` takes ``1/N`` of the all-worker pull (``all_gather``) of ``l`` for one
  worker (``async``, ``ssp``), or the whole all-worker pull for the servers' broadcast of a
  synchronous round (``sync``: every worker receives it at once);
* with **eager** pull a layer's pull is requested as soon as it can be (``async``: the
  worker's own push of the layer is done; ``sync``: every worker's push of it) and goes ahead
  of any push, front-most layer first; with **coupled** pull, once the worker's whole
  gradient is pushed (``sync``: every worker's), in the order the pushes ended, after the
  waiting pushes.

A worker's forward op of layer ``l`` waits for its pull of ``l`` from the previous iteration,
so pulls overlap the next forward pass; in ``ssp:B`` a worker also waits before starting an
iteration more than ``B`` ahead of the slowest worker's applied gradients.

**Updates** (:class:`~hw_models.training.systems.ps.Update`, replayed on the task by
:func:`~hw_models.training.systems.ps.ps_convergence`): ``async``/``ssp``: a worker's gradient
is applied when its last layer's push ends; the version it was computed on is the oldest
version any of its layers was pulled at (a pull reads the model as it stands when the pull
starts). ``sync``: one update of all ``N`` gradients when the round's last push ends.

**Checks** (tests): with equally fast workers, ``sync`` is the synchronous layer-by-layer
timeline (:class:`~hw_models.training.systems.ps.PushPull` on
:func:`~hw_models.training.timeline.simulate`), coupled and eager. ``async`` with equally fast
workers staggers them so that no request waits for another's: each worker then runs the
timeline of a lone worker whose pushes and pulls take ``1/N`` of the all-worker times, and
the staleness is ``N - 1`` as in round robin.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from hw_models.training.costs import as_layer_costs, whole
from hw_models.training.systems.ps import PSRun, Stragglers, Update, parse_mode
from noc.base.errors import ConfigError

_DONE, _PUSH, _PULL = 0, 1, 2  # event kinds: a compute op ended; the resource finished a push / a pull


def simulate_ps_layers(layers, push_s, pull_s, num_workers: int, *, mode: str = "sync", eager: bool = False,
                       stragglers: Stragglers | None = None, gradients: int = 800, seed: int = 0,
                       links: Stragglers | None = None, servers: tuple[int, ...] = (0,)) -> PSRun:
    """The event simulation (module docstring) until ``gradients`` gradients are applied.
    ``push_s[l]``/``pull_s[l]``: the network model's all-worker push and pull of layer ``l``.
    ``links``: a profile of the nodes' links; with it a worker's push or pull of its
    iteration ``k`` takes ``max_s link_factor(worker, s, k)`` over the ``servers`` times as
    long (its slowest link to a server), a synchronous broadcast the slowest over every
    worker."""
    layers = as_layer_costs(layers)
    kind, bound = parse_mode(mode)
    n = whole("num_workers", num_workers)
    L = len(layers)
    if len(push_s) != L or len(pull_s) != L:
        raise ConfigError(f"push_s and pull_s need one value per layer ({L})")
    for key, vals in (("push_s", push_s), ("pull_s", pull_s)):
        for v in vals:
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ConfigError(f"{key} value {v!r}: must be a finite number of seconds >= 0")
    grads = [l for l in range(L) if layers[l].grad_bytes > 0]
    if not grads:
        raise ConfigError("the model has no gradient to push")
    strag = stragglers or Stragglers()
    rngs = [np.random.default_rng([seed, 7, i]) for i in range(n)]
    limit = bound if kind == "ssp" else math.inf
    fwd = [x.fwd_s for x in layers]
    bwd = [x.bwd_s for x in layers]
    has_grad = [x.grad_bytes > 0 for x in layers]

    heap: list = []
    seq = [0]

    def event(t, what, data):
        seq[0] += 1
        heapq.heappush(heap, (t, seq[0], what, data))

    # workers
    it = [0] * n  # current iteration
    pos = [0] * n  # next op: 0..L-1 forward of layer pos, L..2L-1 backward of layer 2L-1-pos
    factor = [1.0] * n
    busy = [False] * n
    pulled = [[-1] * L for _ in range(n)]  # iteration whose pull of the layer is done
    applied = [0] * n
    blocked: set[int] = set()
    read_min: dict[tuple[int, int], int] = {}  # (worker, iteration) -> oldest version pulled for it
    pushed_left: dict[tuple[int, int], int] = {}  # async: layers of (worker, iteration) still to push
    round_left: dict[tuple[int, int], int] = {}  # sync: workers still to push (layer, round)
    round_layers_left: dict[int, int] = {}  # sync: layers of the round not yet pushed by every worker
    round_order: dict[int, list[int]] = {}  # sync: layers in the order their pushes completed
    # the servers' links
    res_busy = [False]
    pushes: list = []  # (ready, seq, worker, layer, iteration)
    pulls: list = []  # eager: (layer, ready, seq, worker|-1, iteration); coupled: (ready, seq, ...)
    version = [0]
    updates: list[Update] = []
    total = [0]

    def want_pull(t, worker, layer, k):
        seq[0] += 1
        key = (layer, t, seq[0]) if eager else (t, seq[0], layer)
        heapq.heappush(pulls, (*key, worker, k))

    def slowest(worker, k):
        ws = range(n) if worker < 0 else (worker,)
        return max(links.link_factor(i, s, n, k) for i in ws for s in servers)

    def try_serve(t):
        if res_busy[0]:
            return
        take_pull = pulls and (eager or not pushes)
        if take_pull:
            item = heapq.heappop(pulls)
            layer = item[0] if eager else item[2]
            worker, k = item[3], item[4]
            cost = pull_s[layer] if worker < 0 else pull_s[layer] / n
            if links is not None:
                cost *= slowest(worker, k)
            if worker >= 0:
                key = (worker, k + 1)
                read_min[key] = min(read_min.get(key, version[0]), version[0])
            res_busy[0] = True
            event(t + cost, _PULL, (worker, layer, k))
        elif pushes:
            _, _, worker, layer, k = heapq.heappop(pushes)
            res_busy[0] = True
            cost = push_s[layer] / n
            if links is not None:
                cost *= slowest(worker, k)
            event(t + cost, _PUSH, (worker, layer, k))

    def start_iteration(i, t):
        if it[i] - min(applied) > limit:
            blocked.add(i)
            return False
        factor[i] = strag.sample(rngs[i], i, n, it[i])
        return True

    def advance(i, t):
        """Start worker i's next op if it can."""
        if busy[i] or i in blocked:
            return
        if pos[i] == 2 * L:
            it[i] += 1
            pos[i] = 0
            if not start_iteration(i, t):
                return
        p = pos[i]
        if p < L:
            if it[i] >= 1 and has_grad[p] and pulled[i][p] < it[i] - 1:
                return  # waits for its pull of the layer
            dur = fwd[p] * factor[i]
        else:
            dur = bwd[2 * L - 1 - p] * factor[i]
        busy[i] = True
        event(t + dur, _DONE, i)

    for i in range(n):
        start_iteration(i, 0.0)
        advance(i, 0.0)

    while heap and total[0] < gradients:
        t, _, what, data = heapq.heappop(heap)
        if what == _DONE:
            i = data
            busy[i] = False
            p = pos[i]
            pos[i] += 1
            if p >= L:
                layer = 2 * L - 1 - p
                if has_grad[layer]:
                    seq[0] += 1
                    heapq.heappush(pushes, (t, seq[0], i, layer, it[i]))
            advance(i, t)
            try_serve(t)
            continue
        res_busy[0] = False
        worker, layer, k = data
        if what == _PUSH:
            if kind == "sync":
                key = (layer, k)
                round_left[key] = round_left.get(key, n) - 1
                if round_left[key] == 0:
                    del round_left[key]
                    round_order.setdefault(k, []).append(layer)
                    if eager:
                        want_pull(t, -1, layer, k)
                    left = round_layers_left.get(k, len(grads)) - 1
                    round_layers_left[k] = left
                    if left == 0:
                        del round_layers_left[k]
                        version[0] += 1
                        updates.append(Update(tuple(range(n)), (k,) * n, version[0], t))
                        total[0] += n
                        if not eager:
                            for lay in round_order[k]:
                                want_pull(t, -1, lay, k)
                        del round_order[k]
            else:
                key = (worker, k)
                left = pushed_left.get(key, len(grads)) - 1
                pushed_left[key] = left
                if eager:
                    want_pull(t, worker, layer, k)
                if left == 0:
                    del pushed_left[key]
                    version[0] += 1
                    applied[worker] += 1
                    total[0] += 1
                    updates.append(Update((worker,), (read_min.pop((worker, k), 0),), version[0], t))
                    if not eager:
                        # coupled: the pulls in the order the pushes ended (backward order)
                        for lay in reversed(grads):
                            want_pull(t, worker, lay, k)
                    for j in sorted(blocked):
                        blocked.discard(j)
                        if start_iteration(j, t):
                            advance(j, t)
        else:  # a pull ended
            for i in (range(n) if worker < 0 else (worker,)):
                pulled[i][layer] = k
                advance(i, t)
        try_serve(t)
    return PSRun(kind, bound, eager, n, tuple(updates), sum(fwd) + sum(bwd), float(sum(push_s)),
                 float(sum(pull_s)))


__all__ = ["simulate_ps_layers"]
