"""Shared by the flit-level tests: a random uniform packet load, and the conservation checks
every debug-mode run of one must pass."""

from __future__ import annotations

import numpy as np

from noc.flit import C_ERR, run_packets


def uniform_packets(rng: np.random.Generator, n: int, horizon: int, nodes: int, max_flits: int) -> np.ndarray:
    """``n`` packets ``[time, src, dst, flits]``: creation times in ``0 .. horizon - 1`` (sorted),
    uniform sources, uniform other destinations, 1 .. ``max_flits - 1`` flits."""
    times = np.sort(rng.integers(0, horizon, n))
    src = rng.integers(0, nodes, n)
    dst = (src + rng.integers(1, nodes, n)) % nodes
    flits = rng.integers(1, max_flits, n)
    return np.stack([times, src, dst, flits], axis=1)


def run_conserving(topology, cfg, packets: np.ndarray):
    """Run ``packets`` (``cfg`` in debug mode) and check that every packet was injected after
    its creation and ejected after its injection, that debug mode counted no error (a flit
    out of order, a credit out of range, a flit sent onto a busy link), and that every flit
    was injected and ejected exactly once. Returns what :func:`noc.flit.run_packets` does."""
    inj, ej, st = run_packets(topology, cfg, packets)
    times, flits = packets[:, 0], packets[:, 3]
    assert (ej >= 0).all() and (ej >= inj).all() and (inj >= times).all()
    assert int(st.counters[C_ERR]) == 0
    assert int(st.counters[4]) == int(flits.sum())  # every flit ejected exactly once
    assert int(st.link_flits[topology.inject_link].sum()) == int(flits.sum())
    return inj, ej, st
