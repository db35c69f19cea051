"""The agent interconnect: never below its bandwidth bound, the bound's closed form, and the
crossbar reaching it."""

from __future__ import annotations

import numpy as np
import pytest

from maddpg.accel import interconnect as X
from maddpg.accel.config import AccelConfig, Workload, spread_workload
from noc.base.errors import ConfigError


@pytest.mark.parametrize("kind", ["ring", "mesh", "crossbar", "torus:2x3", "fattree:k2:l3", "full:6"])
@pytest.mark.parametrize("n", [2, 3, 5, 6])
def test_message_level_never_beats_the_bound(kind, n):
    cfg = AccelConfig(interconnect=kind, link_bytes_per_cycle=8.0)
    w = spread_workload(n, batch=32)
    topo = X.build_topology(kind, n, cfg)
    for part in ("inputs", "targets"):
        m = X.exchange_messages(w, 4, part)
        # equal agents: an all-gather, bound (N - 1) / N x bytes / bandwidth, bytes = the N pieces
        piece = m.nbytes[0]
        assert np.all(m.nbytes == piece) and m.src.size == n * (n - 1)
        bound = (n - 1) / n * (n * piece) / 8.0
        assert X.bound_cycles(m, topo) == pytest.approx(bound, rel=1e-12)
        assert X.message_level_cycles(m, topo, cfg.router_delay_cycles) >= bound


def test_uneven_agents_bound_is_the_busiest_port():
    w = Workload((3, 11, 7), (3, 5, 2), batch=10)
    cfg = AccelConfig(interconnect="crossbar", link_bytes_per_cycle=4.0)
    topo = X.build_topology("crossbar", 3, cfg)
    m = X.exchange_messages(w, 4, "inputs")
    piece = [10 * (2 * w.obs_dims[j] + w.act_dims[j]) * 4 for j in range(3)]
    into = [sum(piece[j] for j in range(3) if j != i) for i in range(3)]  # through each ejection link
    out = [2 * piece[j] for j in range(3)]  # through each injection link
    assert X.bound_cycles(m, topo) == pytest.approx(max(into + out) / 4.0)
    assert max(out) > max(into)  # here the biggest sender, not a receiver, sets it
    assert X.message_level_cycles(m, topo, 2) >= max(into + out) / 4.0


@pytest.mark.parametrize("n", [2, 4, 7])
def test_crossbar_reaches_the_bound_plus_one_path(n):
    """On one switch every port carries N - 1 equal flows at equal shares: all end together at
    the bound, then the path's latency (3 links of 1 cycle, one switch of 2)."""
    cfg = AccelConfig(interconnect="crossbar")
    topo = X.build_topology("crossbar", n, cfg)
    m = X.exchange_messages(spread_workload(n, batch=16), 4, "targets")
    assert X.message_level_cycles(m, topo, 2) == pytest.approx(X.bound_cycles(m, topo) + 2 + 2)


def test_flit_level_never_beats_the_bound():
    w = spread_workload(3, batch=8)
    for kind in ("ring", "crossbar"):
        cfg = AccelConfig(interconnect=kind, level="flit", packet_bytes=64)
        t = X.exchange_times(w, cfg)
        assert t["inputs"] >= t["inputs_bound"] and t["targets"] >= t["targets_bound"]
        msg = X.exchange_times(w, cfg.model_copy(update={"level": "message"}))
        assert t["inputs"] >= msg["inputs"] - 8  # the flit level is the finer (slower or equal) model, up to latency


def test_ring_of_twelve_is_bisection_bound():
    """All-to-all on a bidirectional ring: N^2/4 pieces cross each half of the bisection
    (4 links: two each way) — ~N/8 x piece / bw — above the ejection bound for N = 12."""
    n = 12
    cfg = AccelConfig()
    w = spread_workload(n, batch=64)
    m = X.exchange_messages(w, 4, "inputs")
    topo = X.build_topology("ring", n, cfg)
    piece = m.nbytes[0]
    bisection = (n // 2) * (n // 2) * piece / (2 * cfg.link_bytes_per_cycle)
    got = X.message_level_cycles(m, topo, 2)
    assert got >= bisection > X.bound_cycles(m, topo)


def test_bad_interconnects():
    cfg = AccelConfig()
    with pytest.raises(ConfigError, match="at least 9 endpoints"):
        X.build_topology("torus:2x2", 9, cfg)
    with pytest.raises(ConfigError, match="ring, mesh, crossbar"):
        X.build_topology("donut", 3, cfg)
    assert X.mesh_dims(3) == (2, 2) and X.mesh_dims(6) == (3, 2) and X.mesh_dims(12) == (4, 3) and X.mesh_dims(2) == (2,)
