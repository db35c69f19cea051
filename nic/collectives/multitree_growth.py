"""The MultiTree kernels: grow the N trees together (:func:`build_trees`) and lay their
edges out as a schedule's columns in canonical order (:func:`schedule_columns`).

The rules of the growth are in :mod:`nic.collectives.multitree`'s docstring; the kernel takes
them as values: the candidate children per node (:class:`Candidates`, CSR), the turn order and
step rule (:class:`Rules`) and two scratch arrays (:class:`Scratch`). Its state
(:class:`Growth`) is a namedtuple of arrays; each stage below does one part of a step.

What makes it fast without changing its result: within a step a parent that cannot add a
child never can again (send slots, receive slots and links are only consumed, trees only
grow), so each tree keeps a scan pointer per step; a parent whose candidates are all in the
tree is dropped from the tree's frontier for good.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from nic.scheduler import OP_GATHER, OP_REDUCE

# Candidate children per node, CSR: node p's candidates are node[off[p]:off[p+1]]; candidate
# j reserves links fwd_links[fwd_off[j]:fwd_off[j+1]] and rev_links[rev_off[j]:rev_off[j+1]].
Candidates = namedtuple("Candidates", ("off", "node", "fwd_off", "fwd_links", "rev_off", "rev_links"))
# The construction's rules: N, links, k (a node sends and receives at most k-1 per step), the
# step limit, the roots' turn order in the very first round and in every later one, and
# whether a step ends when the last root of a round adds nothing (the public implementation).
Rules = namedtuple("Rules", ("n", "num_links", "kary", "max_steps", "first_order", "order", "last_root_ends_step"))
# int[N, N] scratch (any integer types that hold their values; int16 halves the memory while
# the nodes fit): per tree, the parents that may still have children and this step's new nodes.
Scratch = namedtuple("Scratch", ("front", "new_nodes"))
# The trees' edges in the order they were added: tree (= root = flow), child, parent, step.
Edges = namedtuple("Edges", ("tree", "child", "parent", "step"))
# The growth's state. ``in_tree``: per tree, a bit per node;
# ``front``/``front_len``, ``new_nodes``/``new_len``, ``size``, ``ptr`` (scan pointer) per tree;
# ``send_cnt``/``recv_cnt`` per node this step; ``used``: a link's last step; ``edges`` and
# ``count`` = [edges so far, complete trees].
Growth = namedtuple("Growth", ("in_tree", "front", "front_len", "new_nodes", "new_len", "size", "ptr", "send_cnt",
                               "recv_cnt", "used", "edges", "count"))

# the growth's stages and loop run without reference counting, as noc/flit.py's kernel (its
# arrays are allocated before, by _new_growth): with it, every use of an array of the state
# updates its count, and the loop ran 2.4 times slower on a 32x32 torus
_stage = njit(cache=True, error_model="numpy", _nrt=False, inline="always")
_kernel = njit(cache=True, error_model="numpy", _nrt=False)


@_stage
def _links_free(links, lo, hi, used, stamp):
    for k in range(lo, hi):
        if used[links[k]] == stamp:
            return False
    return True


@_stage
def _mark(links, lo, hi, used, stamp):
    for k in range(lo, hi):
        used[links[k]] = stamp


@_stage
def _in_tree(g, t, c):
    return g.in_tree[t, c >> 3] & (1 << (c & 7)) != 0


@njit(cache=True)
def _new_growth(cand, rules, scratch):
    """Every tree holds its root only; its frontier is the root."""
    n = rules.n
    total = n * (n - 1)
    edges = Edges(np.empty(total, np.int32), np.empty(total, np.int32), np.empty(total, np.int32),
                  np.empty(total, np.int32))
    g = Growth(np.zeros((n, (n + 7) >> 3), np.uint8), scratch.front, np.zeros(n, np.int32), scratch.new_nodes,
               np.zeros(n, np.int32), np.ones(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32),
               np.zeros(n, np.int32), np.full(rules.num_links, -1, np.int32), edges, np.zeros(2, np.int64))
    for t in range(n):
        g.in_tree[t, t >> 3] |= 1 << (t & 7)
        g.front[t, 0] = t
        g.front_len[t] = 1 if n > 1 else 0
    g.count[1] = 1 if n == 1 else 0
    return g


@_stage
def _has_outside_candidate(g, cand, t, p):
    for j in range(cand.off[p], cand.off[p + 1]):
        if not _in_tree(g, t, cand.node[j]):
            return True
    return False


@_stage
def _start_step(g, cand, n):
    """The frontier at the start of a step: the old parents that still have a candidate
    outside the tree, then last step's new nodes that do; scan pointers and this step's
    send and receive counts back to zero."""
    for t in range(n):
        if g.size[t] == n:
            g.front_len[t] = 0
            continue
        k = 0
        for i in range(g.front_len[t]):
            p = g.front[t, i]
            if _has_outside_candidate(g, cand, t, p):
                g.front[t, k] = p
                k += 1
        for i in range(g.new_len[t]):
            p = g.new_nodes[t, i]
            if _has_outside_candidate(g, cand, t, p):
                g.front[t, k] = p
                k += 1
        g.front_len[t] = k
        g.new_len[t] = 0
        g.ptr[t] = 0
    g.send_cnt[:] = 0
    g.recv_cnt[:] = 0


@_stage
def _join(g, cand, t, c, p, j, step):
    """Node ``c`` joins tree ``t`` as ``p``'s child over candidate ``j`` in ``step``."""
    _mark(cand.fwd_links, cand.fwd_off[j], cand.fwd_off[j + 1], g.used, step)
    _mark(cand.rev_links, cand.rev_off[j], cand.rev_off[j + 1], g.used, step)
    g.send_cnt[p] += 1
    g.recv_cnt[c] += 1
    g.in_tree[t, c >> 3] |= 1 << (c & 7)
    g.size[t] += 1
    g.new_nodes[t, g.new_len[t]] = c
    g.new_len[t] += 1
    ne = g.count[0]
    g.edges.tree[ne] = t
    g.edges.child[ne] = c
    g.edges.parent[ne] = p
    g.edges.step[ne] = step
    g.count[0] = ne + 1


@_stage
def _turn(g, cand, t, step, cap):
    """Root ``t``'s turn: the first parent from the scan pointer on with a free send slot
    that reaches, over links free this step, a node outside the tree with a free receive
    slot gets it as a child. Returns whether an edge was added."""
    i = g.ptr[t]
    while i < g.front_len[t]:
        p = g.front[t, i]
        if g.send_cnt[p] < cap:
            for j in range(cand.off[p], cand.off[p + 1]):
                c = cand.node[j]
                if _in_tree(g, t, c) or g.recv_cnt[c] >= cap:
                    continue
                if not _links_free(cand.fwd_links, cand.fwd_off[j], cand.fwd_off[j + 1], g.used, step):
                    continue
                if not _links_free(cand.rev_links, cand.rev_off[j], cand.rev_off[j + 1], g.used, step):
                    continue
                _join(g, cand, t, c, p, j, step)
                g.ptr[t] = i
                return True
        i += 1
    g.ptr[t] = i
    return False


@_kernel
def _grow(cand, rules, g):
    """The construction loop over the state ``g``; returns the steps (< 0: stalled or
    ``rules.max_steps`` reached)."""
    n = rules.n
    if n == 1:
        return 0
    step = 0
    cap = rules.kary - 1
    round_order = rules.first_order
    while g.count[1] < n:
        if step >= rules.max_steps:
            return -1
        _start_step(g, cand, n)
        added_in_step = 0
        while True:
            added_in_pass = 0
            last_added = False
            for k in range(n):
                t = round_order[k]
                last_added = False
                if g.size[t] == n:
                    continue
                if _turn(g, cand, t, step, cap):
                    added_in_pass += 1
                    last_added = True
                    if g.size[t] == n:
                        g.count[1] += 1
            round_order = rules.order
            added_in_step += added_in_pass
            if g.count[1] == n or added_in_pass == 0 or (rules.last_root_ends_step and not last_added):
                break
        if added_in_step == 0:
            return -1
        step += 1
    return step


def build_trees(cand: Candidates, rules: Rules, scratch: Scratch) -> tuple[Edges, int]:
    """Grow the N trees. Returns (Edges in the order they were added, steps); ``steps`` < 0
    means the construction stalled (a step added nothing: the topology is disconnected) or
    hit ``rules.max_steps``. A step is rounds of turns (``rules.first_order`` in the very
    first round, ``rules.order`` after it) until a round adds nothing, or, with
    ``rules.last_root_ends_step``, until the last root of a round adds nothing."""
    g = _new_growth(cand, rules, scratch)
    steps = int(_grow(cand, rules, g))
    ne = int(g.count[0])
    return Edges(*(a[:ne] for a in g.edges)), steps


@_stage
def _place(start, fill, grp, flow, dst, f, b):
    """The position of a transfer of flow ``f`` to ``b`` in group ``grp``: after the
    group's filled ones, moved down past those with a larger (flow, dst)."""
    k = fill[grp]
    fill[grp] += 1
    n_key = np.int64(f) * (1 << 31) + b
    while k > start[grp] and np.int64(flow[k - 1]) * (1 << 31) + dst[k - 1] > n_key:
        k -= 1
    return k


@njit(cache=True)
def schedule_columns(edges, steps, n):
    """The all-reduce's (step, src, dst, flow, op) columns in canonical order (step, src,
    flow, op, dst): each edge added in construction step ``t`` of ``steps`` is a REDUCE child
    -> parent at step ``steps-1-t`` and a GATHER parent -> child at ``steps+t``, of the
    edge's tree. A counting sort by (step, src); within a group (a node's sends in a step,
    at most k-1 of one op) an insertion by (flow, dst)."""
    e = edges.tree.shape[0]
    groups = 2 * steps * n
    start = np.zeros(groups + 1, np.int64)
    for i in range(e):
        start[(steps - 1 - edges.step[i]) * n + edges.child[i] + 1] += 1
        start[(steps + edges.step[i]) * n + edges.parent[i] + 1] += 1
    for g in range(groups):
        start[g + 1] += start[g]
    fill = start[:-1].copy()
    step = np.empty(2 * e, np.int32)
    src = np.empty(2 * e, np.int32)
    dst = np.empty(2 * e, np.int32)
    flow = np.empty(2 * e, np.int32)
    op = np.empty(2 * e, np.int8)
    for i in range(e):
        for gather in range(2):
            s = steps + edges.step[i] if gather else steps - 1 - edges.step[i]
            a = edges.parent[i] if gather else edges.child[i]
            b = edges.child[i] if gather else edges.parent[i]
            f = edges.tree[i]
            grp = s * n + a
            k = _place(start, fill, grp, flow, dst, f, b)
            for m in range(fill[grp] - 1, k, -1):  # make room at k
                step[m] = step[m - 1]
                src[m] = src[m - 1]
                dst[m] = dst[m - 1]
                flow[m] = flow[m - 1]
                op[m] = op[m - 1]
            step[k] = s
            src[k] = a
            dst[k] = b
            flow[k] = f
            op[k] = OP_GATHER if gather else OP_REDUCE
    return step, src, dst, flow, op
