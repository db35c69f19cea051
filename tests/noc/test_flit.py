"""noc.flit and noc.flit_traffic: exact zero-load latency, conservation, invariants,
saturation against the bisection bound, deadlock detection, priorities, determinism, and
round-robin over input ports with FIFO VCs against a fluid model (the parking-lot effect)."""

from __future__ import annotations

import numpy as np
import pytest

from noc.base.errors import ConfigError, DeadlockError
from noc.base.config import validate
from noc.flit import C_ERR, FlitNetworkConfig, build_network, new_state, run_packets, seed_arbiters, step
from noc.flit_traffic import TrafficConfig, destinations, run_traffic
from noc.routing import route
from noc.topology import parse_spec

from flit_load import run_conserving, uniform_packets


def zero_load_cycles(topology, cfg: FlitNetworkConfig, src: int, dst: int, flits: int) -> int:
    """Head: injection link, then per router the pipeline plus the next link; tail: + flits - 1."""
    path = route(topology, cfg.routing, dateline=cfg.dateline).path(src, dst)
    lat = topology.link_latency_cycles[path]
    per_router = cfg.routing_delay_cycles + cfg.vc_alloc_delay_cycles + cfg.sw_alloc_delay_cycles + cfg.st_delay_cycles
    return int(lat.sum()) + (len(path) - 1) * per_router + flits - 1


PIPELINES = [
    dict(),
    dict(routing_delay_cycles=1, vc_alloc_delay_cycles=1, sw_alloc_delay_cycles=1, st_delay_cycles=1),
    dict(routing_delay_cycles=0, vc_alloc_delay_cycles=0, sw_alloc_delay_cycles=0, st_delay_cycles=0),
    dict(routing_delay_cycles=2, vc_alloc_delay_cycles=0, sw_alloc_delay_cycles=2, credit_delay_cycles=3, num_vcs=4),
]


@pytest.mark.parametrize("spec", ["torus:4x4", "mesh:3x3", "fattree:k4:l2", "bigraph:2x4", "ring:6:c2", "hypercube:d3"])
@pytest.mark.parametrize("pipe", range(len(PIPELINES)))
def test_zero_load_latency_is_exact(spec, pipe):
    t = parse_spec(spec)
    if spec == "ring:6:c2":
        t = t.with_links(latency_cycles=3)
    cfg = FlitNetworkConfig(vc_depth_flits=32, debug=True, **PIPELINES[pipe])
    rng = np.random.default_rng(pipe)
    e = t.num_endpoints
    for _ in range(6):  # one packet at a time: nothing else in the network
        s, d = rng.choice(e, size=2, replace=False)
        flits = int(rng.integers(1, 20))
        inj, ej, _ = run_packets(t, cfg, np.array([[0, s, d, flits]]))
        assert ej[0] - inj[0] == zero_load_cycles(t, cfg, int(s), int(d), flits)


def test_conservation_and_order_under_load():
    t = parse_spec("torus:4x4")
    cfg = FlitNetworkConfig(num_vcs=4, vc_depth_flits=4, debug=True)
    run_conserving(t, cfg, uniform_packets(np.random.default_rng(7), 3000, horizon=1500, nodes=16, max_flits=12))


def test_debug_mode_catches_a_credit_out_of_range():
    t = parse_spec("mesh:2x2")
    cfg = FlitNetworkConfig(debug=True)
    net = build_network(t, cfg)
    st = new_state(net, 4)
    link = int(np.nonzero(t.is_router_link)[0][0])
    st.credit[link, 0] = cfg.vc_depth_flits + 1  # corrupt one credit counter
    step(net, st, 0)
    assert st.counters[C_ERR] > 0


def test_debug_mode_catches_a_vc_bit_set_out_of_step():
    t = parse_spec("mesh:2x2")
    net = build_network(t, FlitNetworkConfig(debug=True))
    st = new_state(net, 4)
    link = int(np.nonzero(t.is_router_link)[0][0])
    st.ovc_free[link] &= ~1  # output VC 0 looks owned, but owner says it is free
    step(net, st, 0)
    assert st.counters[C_ERR] > 0


@pytest.mark.parametrize("spec,bound", [("mesh:8x8", 4 / 8), ("torus:8x8", 8 / 8)])
def test_saturation_throughput_is_below_the_bisection_bound(spec, bound):
    t = parse_spec(spec)
    cfg = FlitNetworkConfig(num_vcs=4, vc_depth_flits=8)
    r = run_traffic(t, cfg, TrafficConfig(rate_packets=1.0, packet_flits=[1], warmup_cycles=500, measure_cycles=1500,
                                          drain_limit_cycles=500))
    assert not r.stable  # offered 1 flit/NI/cycle is past saturation
    assert r.accepted_flits <= bound
    assert r.accepted_flits >= 0.35 * bound  # documented in docs/validation.md


def test_a_torus_without_dateline_deadlocks_and_the_watchdog_says_where():
    t = parse_spec("torus:4x4")
    cfg = FlitNetworkConfig(dateline=False, num_vcs=1, vc_depth_flits=2, watchdog_cycles=300)
    heavy = TrafficConfig(rate_packets=0.5, packet_flits=[8], warmup_cycles=100, measure_cycles=1000,
                          drain_limit_cycles=200000)
    with pytest.raises(DeadlockError, match=r"no flit moved for 300 cycles.*stuck: link (1[6-9]|2\d|3[01])->\d+ VC 0"):
        run_traffic(t, cfg, heavy)  # the report starts with router-to-router links (vertices 16..31)
    # the same load with the dateline VC classes drains completely
    r = run_traffic(t, cfg.model_copy(update={"dateline": True, "num_vcs": 2}), heavy)
    assert r.packets > 0 and not np.isnan(r.latency_avg)


def test_urgent_packets_win_the_switch():
    t = parse_spec("torus:4x4")
    cfg = FlitNetworkConfig(num_vcs=4, vc_depth_flits=8)  # 2 VCs per dateline class
    # NI 1 and NI 4 both send 40 flits to NI 5 (they share only the ejection link)
    pk = np.array([[0, 1, 5, 40, 5], [0, 4, 5, 40, 0]])
    inj, ej, _ = run_packets(t, cfg, pk)
    assert ej[1] - inj[1] == zero_load_cycles(t, cfg, 4, 5, 40)  # the urgent one is never delayed
    assert ej[0] >= ej[1] + 40 - 1
    same = run_packets(t, cfg, pk * np.array([1, 1, 1, 1, 0]))[1]  # equal priority: they share the link
    assert min(same) > ej[1] + 30 and max(same) <= ej[0]


def test_vc_allocation_is_round_robin_per_output_vc_class():
    # Router 0 of a concentrated torus: its 4 NIs each send 60 packets to the NI of the same
    # index at the next router, all in class 0 of link router 0 -> router 1 (2 VCs), while a
    # flow from node 3 crosses the dateline and takes class 1 of the same link. Round robin
    # among the 4 NIs' heads gives each the same share of the class-0 VCs, so they finish
    # together. (With one pointer per link, the class-1 grants reset it to just past the
    # transit input, and the class-0 VCs went to NI 0 first: it finished at 2619, NI 3 at 5121.)
    t = parse_spec("torus:4x4:c4")
    eps = t.node_endpoints
    rows = []
    for _ in range(60):
        rows += [(0, eps[0, p], eps[1, p], 17) for p in range(4)] + [(0, eps[3, 0], eps[1, 0], 17)]
    pk = np.array(rows)
    assert route(t, "dor", dateline=True).vc_class[eps[3, 0], eps[1, 0], 2] == 1  # transit: class 1 from router 0
    _, ej, _ = run_packets(t, FlitNetworkConfig(num_vcs=4, vc_depth_flits=32), pk)
    last = [ej[pk[:, 1] == eps[0, p]].max() for p in range(4)]
    assert max(last) - min(last) < 0.05 * max(last)


def test_same_seed_same_result():
    t = parse_spec("mesh:4x4")
    tr = TrafficConfig(rate_packets=0.2, packet_flits=[1, 4], warmup_cycles=200, measure_cycles=800, seed=3)
    a, b = run_traffic(t, None, tr), run_traffic(t, None, tr)
    assert a.row() == b.row()
    c = run_traffic(t, None, tr.model_copy(update={"seed": 4}))
    assert c.row() != a.row()


def _contention(seed):
    """NI 1 and NI 4 of ``torus:4x4`` each send one 40-flit packet to NI 5 at cycle 0 (they
    share only the ejection link); NI 8 sends one to NI 10 on links of its own."""
    cfg = FlitNetworkConfig(num_vcs=4, vc_depth_flits=8, arbiter_seed=seed)
    _, ej, _ = run_packets(parse_spec("torus:4x4"), cfg, np.array([[0, 1, 5, 40], [0, 4, 5, 40], [0, 8, 10, 40]]))
    return ej


def test_the_arbiter_seed_decides_ties_and_nothing_else():
    t = parse_spec("torus:4x4")
    reset = _contention(None)
    runs = {seed: _contention(seed) for seed in range(1, 9)}
    assert (runs[3] == _contention(3)).all()  # same seed, same result
    # who wins the ejection link first changes with the pointers' starting positions...
    assert len({tuple(ej[:2].argsort()) for ej in [reset, *runs.values()]}) == 2
    cfg = FlitNetworkConfig(num_vcs=4, vc_depth_flits=8)
    for ej in runs.values():
        # ...but the link never idles while both wait: the last tail leaves 80 flits after the first head
        assert ej[:2].max() == zero_load_cycles(t, cfg, 4, 5, 1) + 80 - 1
        # and the uncontended packet has its zero-load latency whatever the pointers
        assert ej[2] == zero_load_cycles(t, cfg, 8, 10, 40)


@pytest.mark.parametrize("spec", ["torus:4x4:c4", "fattree:k4:l2", "mesh:3x3"])
def test_seeded_arbiter_pointers_stay_in_range(spec):
    """Each pointer within what its arbiter chooses among, counted from the topology's links:
    an output's VC pointer over its router's input VCs and its switch pointer over the input
    ports; an injection link's over the VCs of a class; an input's over its VCs."""
    t = parse_spec(spec)
    cfg = FlitNetworkConfig(num_vcs=4, vc_depth_flits=8, arbiter_seed=11)
    net = build_network(t, cfg)
    st = new_state(net, 4)
    seed_arbiters(net, st, cfg.arbiter_seed)
    e = t.num_endpoints
    ports = np.bincount(t.link_dst[t.link_dst >= e] - e, minlength=t.num_routers)  # inputs per router
    from_router = t.link_src >= e
    va = st.va_ptr.reshape(t.num_links, 4)
    limit = np.where(from_router, ports[np.maximum(t.link_src - e, 0)] * 4, net.vcs_per_class)
    assert (va >= 0).all() and (va < limit[:, None]).all() and va.any()
    assert (st.sa_out_ptr[from_router] < ports[t.link_src[from_router] - e]).all() and (st.sa_out_ptr >= 0).all()
    assert ((st.sa_in_ptr >= 0) & (st.sa_in_ptr < 4)).all() and st.sa_in_ptr.any()
    # and a saturated run with them keeps every invariant (debug mode counts violations)
    run_conserving(t, cfg.model_copy(update={"debug": True}),
                   uniform_packets(np.random.default_rng(2), 600, 300, t.num_endpoints, 12))


def test_low_load_latency_and_hops_match_the_zero_load_average():
    t = parse_spec("torus:4x4")
    cfg = FlitNetworkConfig()
    r = run_traffic(t, cfg, TrafficConfig(rate_packets=0.01, warmup_cycles=200, measure_cycles=4000))
    assert r.stable and r.accepted_flits == pytest.approx(0.01, rel=0.15)
    # 1-flit packets: 1 (injection link) + (hops + 1) routers x (VA + SA + link) = 1 + 3 (hops + 1)
    assert r.latency_avg == pytest.approx(1 + 3 * (r.hops_avg + 1), rel=0.02)


def test_patterns():
    t = parse_spec("torus:4x4")
    assert destinations("bitcomp", t).tolist() == [15 - i for i in range(16)]
    assert destinations("transpose", t)[1] == 4  # (x=1, y=0) -> (x=0, y=1)
    assert destinations("tornado", t)[0] == 1 + 4  # +1 in each dimension of a 4-ary torus
    assert sorted(destinations("bitrev", t).tolist()) == list(range(16))
    with pytest.raises(ConfigError, match="power-of-two"):
        destinations("bitcomp", parse_spec("mesh:3x3"))


def test_bad_configs_are_clear_errors():
    with pytest.raises(ConfigError, match="num_vcs must be a multiple of 2"):
        build_network(parse_spec("torus:4x4"), FlitNetworkConfig(num_vcs=1))
    with pytest.raises(ConfigError, match="fit a VC"):
        run_traffic(parse_spec("mesh:2x2"), FlitNetworkConfig(flow_control="vct", vc_depth_flits=4),
                    TrafficConfig(packet_flits=[8]))
    with pytest.raises(ConfigError, match="arbiter_seed"):
        validate({"arbiter_seed": -1}, FlitNetworkConfig, source="[router]")
    with pytest.raises(ConfigError, match="sorted by injection cycle"):
        run_packets(parse_spec("mesh:2x2"), None, np.array([[5, 0, 1, 1], [0, 1, 0, 1]]))


PACKETS, PACKET_FLITS = 64, 17  # per flow, all injected at cycle 0


def _static_ejections(spec: str, num_vcs: int, flows: list[tuple[int, int]]) -> np.ndarray:
    """Tail ejection cycle of every packet of ``flows`` (src NI, dst NI), all started at
    cycle 0 with PACKETS packets each: int[packet, flow], flows in the given order."""
    cfg = FlitNetworkConfig(num_vcs=num_vcs, vc_depth_flits=32)
    pk = np.array([(0, s, d, PACKET_FLITS) for _ in range(PACKETS) for s, d in flows], dtype=np.int64)
    _, ej, _ = run_packets(parse_spec(spec), cfg, pk)
    return np.asarray(ej).reshape(PACKETS, len(flows))


def _parking_lot_finish(work_flits: float) -> list[float]:
    """When each router of the ``torus:4x4:c4`` row test below finishes, by the fluid
    rules of round-robin over input ports with FIFO VCs and credit backpressure: the
    router whose ejecting flow meets the continuing one in another VC class (the dateline)
    sends at 4/5 of its output (four NIs and the ring input, one turn each), the router
    feeding it gets the ring input's 1/5, and each router further back a quarter of the
    one after it (its flow ejects behind the next router's continuing flow, which its own
    output lets through 1 : 4 against its four NIs). A router alone gets its whole link."""
    left = [float(work_flits)] * 4  # in the order the routers finish: 3, 2, 1, 0
    now, finish = 0.0, []
    for k in range(4):
        rates = [(0.8 if k < 3 else 1.0) / 4 ** j for j in range(4 - k)]
        dt = left[k] / rates[0]
        now += dt
        finish.append(now)
        for j in range(1, 4 - k):
            left[k + j] -= rates[j] * dt
    return finish


def test_input_port_round_robin_with_fifo_vcs_starves_the_routers_upstream_in_turn():
    """The parking-lot effect at flit level, against the fluid rules above (an independent
    model): on one row of ``torus:4x4:c4`` every NI sends to the same NI two routers on
    (+x, through the next router). Max-min fairness would give every router half a link
    and finish all four together; the routers instead finish one after another, at the
    fluid rules' times (docs/message_model_validation.md, "Residuals": the message model has no such
    rule, which is what its halving-doubling baseline on this topology misses)."""
    flows = [(4 * x + j, 4 * ((x + 2) % 4) + j) for x in range(4) for j in range(4)]
    ej = _static_ejections("torus:4x4:c4", 4, flows)
    finish = [ej[:, 4 * x : 4 * x + 4].max() for x in (3, 2, 1, 0)]
    want = _parking_lot_finish(4 * PACKETS * PACKET_FLITS)
    assert finish == pytest.approx(want, rel=0.03)
    assert want[0] < 0.35 * want[3]  # far from max-min's all-together finish


@pytest.mark.parametrize("vcs", [2, 4, 8])
def test_the_fifo_coupling_holds_with_more_vcs_per_class(vcs):
    """The same rules on an open chain of a ``mesh:4x4:c4`` row (one VC class): the NIs of
    router 0 send to router 2's, router 1's to router 3's, router 2's to router 3's. While
    router 2 sends, the fluid rules give routers 2, 1 and 0 a share 4/5, 1/5 and 1/20 of a
    link, however many VCs the class has: a VC freed by the blocked flow goes to the next
    packet in line, so a full buffer stays a FIFO."""
    flows = [(j, 8 + j) for j in range(4)] + [(4 + j, 12 + j) for j in range(4)] + [(8 + j, 12 + j) for j in range(4)]
    ej = _static_ejections("mesh:4x4:c4", vcs, flows)
    end = ej[:, 8:12].max()  # router 2 is done
    rates = [(ej[:, 4 * x : 4 * x + 4] <= end).sum() * PACKET_FLITS / end for x in (2, 1, 0)]
    assert rates == pytest.approx([0.8, 0.2, 0.05], rel=0.06)


_COMPILE_CHECK = """
import numpy as np
from numba.core import types
from noc.flit import FlitNetworkConfig, enqueue_packet, run_packets, step
from noc.flit_traffic import TrafficConfig, run_traffic
from noc.topology import parse_spec
t = parse_spec("mesh:3x3")
cfg = FlitNetworkConfig()
run_packets(t, cfg, np.array([[0, 0, 8, 3], [2, 4, 1, 1]]))
run_traffic(t, cfg, TrafficConfig(rate_packets=0.1, packet_flits=[2], warmup_cycles=20, measure_cycles=50, seed=1))
for kernel in (step, enqueue_packet):
    print(kernel.__name__, len(kernel.signatures),
          sum(any(isinstance(a, types.Literal) for a in sig) for sig in kernel.signatures))
"""


@pytest.mark.slow  # compiles the flit kernels from nothing (1-2 minutes)
def test_the_kernels_compile_once_per_network_type(tmp_path):
    # a literal argument (a counter starting at 0, a constant priority) would compile step and
    # enqueue_packet once more for that literal. With an empty Numba cache (kernels called
    # from other kernels are listed only when compiled, not when loaded from the cache),
    # packets and synthetic traffic on one network leave one signature each, without literals.
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", _COMPILE_CHECK], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["step", "1", "0", "enqueue_packet", "1", "0"], out.stdout
