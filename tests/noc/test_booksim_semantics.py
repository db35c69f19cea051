"""The flit level's BookSim2 options, each against a rule read from BookSim2's source
(docs/validation.md): its zero-load latency formula, its torus VC classes and tie
direction, packets to their own source, its run methodology; and the invariants under its
allocators. The point-by-point comparison with BookSim2's own output is
tests/noc/test_booksim_reference.py."""

from __future__ import annotations

import numpy as np
import pytest

from noc.booksim_config import from_booksim, parse_booksim
from noc.errors import ConfigError
from noc.flit import FlitNetworkConfig, build_network, run_packets
from noc.flit_traffic import TrafficConfig, run_traffic
from noc.routing import RouteTable, check_deadlock_free, route, tie_variants
from noc.topology import parse_spec

BOOKSIM_ROUTER = dict(vc_allocator="islip", sw_allocator="islip", vc_class_rule="booksim", tie_break="random",
                      credit_adds_link_latency=True, routing_delay_cycles=1, st_delay_cycles=1)


def _booksim(text: str):
    return from_booksim(parse_booksim(text), "test")


@pytest.mark.parametrize("topo,links", [("mesh", 1), ("torus", 2)])
@pytest.mark.parametrize("flits", [1, 4])
def test_zero_load_latency_is_booksims_formula(topo, links, flits):
    """BookSim2's head latency over H channels is (H + 1) P + H L + 3 (P: the router's
    pipeline, L: the channel latency; router.cpp / channel.hpp), the tail F - 1 later."""
    run = _booksim(f"topology = {topo}; k = 8; n = 2; routing_function = {'dor' if topo == 'mesh' else 'dim_order'};"
                   "num_vcs = 4;")
    t = run.topology
    p = 1 + 1 + 1 + 1  # routing, VC allocation, switch allocation, crossbar (BookSim2's defaults)
    rng = np.random.default_rng(3)
    pairs = [(int(a), int(b)) for a, b in rng.integers(0, 64, size=(12, 2))] + [(5, 5)]
    hops = np.maximum(route(t, "dor").length - 2, 0)
    for s, d in pairs:
        inj, ej, _ = run_packets(t, run.network, np.array([[0, s, d, flits]]))
        h = int(hops[s, d]) if s != d else 0
        assert ej[0] - inj[0] == (h + 1) * p + h * links + 3 + flits - 1, (s, d)


def test_booksim_torus_classes_and_ties():
    """dim_order_torus: the class is fixed on entering a ring, 1 when the destination's
    coordinate is below the source's (both directions), and half-way packets go either way."""
    t = parse_spec("torus:8x8")
    variants = tie_variants(t)
    assert len(variants) == 4  # two even rings
    tables = [route(t, "dor", vc_rule="booksim", tie_signs=v) for v in variants]
    coords = t.router_coords
    for tb in tables:
        for s, d in [(0, 3), (3, 0), (1, 6), (6, 1), (0, 4), (12, 9), (9, 12)]:
            x0, x1 = coords[s, 0], coords[d, 0]
            path = tb.path(s, d)
            cls = tb.vcs(s, d)
            ring = path[1:-1][t.link_dim[path[1:-1]] == 0]
            assert set(cls[1:-1][t.link_dim[path[1:-1]] == 0]) <= {1 if x1 < x0 else 0}
            assert len(ring) == min((x1 - x0) % 8, (x0 - x1) % 8)
    # the four variants differ only on half-way pairs, which take both directions
    first_hop = {tb.path(0, 4)[1] for tb in tables}
    assert len(first_hop) == 2
    assert all((tb.links[0, 3] == tables[0].links[0, 3]).all() for tb in tables)
    union = RouteTable("union", np.concatenate([tb.links for tb in tables]),
                       np.concatenate([tb.vc_class for tb in tables]), np.concatenate([tb.length for tb in tables]), 2)
    assert check_deadlock_free(t, union, 2).deadlock_free


def test_random_ties_split_half_way_packets_evenly():
    t = parse_spec("torus:8x8")
    cfg = FlitNetworkConfig(num_vcs=2, tie_break="random", vc_class_rule="booksim")
    net = build_network(t, cfg)
    assert net.n_rows == 4
    n = 400
    pk = np.array([[i * 20, 0, 4, 1] for i in range(n)])  # 4 hops either way round the x ring
    _, _, st = run_packets(t, cfg, pk)
    plus = int(st.link_flits[route(t, "dor").path(0, 4)[1]])
    assert abs(plus - n / 2) < 4 * np.sqrt(n / 4)  # binomial, 4 sigma
    assert plus + int(st.link_flits[route(t, "dor", tie_signs=(-1, 1)).path(0, 4)[1]]) == n


def test_self_packets_cross_the_router():
    """BookSim2 sends a packet to its own source through its router (inject, switch, eject)."""
    run = _booksim("topology = mesh; k = 4; n = 2; routing_function = dor; num_vcs = 2;")
    inj, ej, st = run_packets(run.topology, run.network, np.array([[0, 6, 6, 3]]))
    assert ej[0] - inj[0] == 4 + 3 + 2  # P + 3 + F - 1, no channel
    assert st.link_flits[run.topology.inject_link[6]] == 3 and st.link_flits[run.topology.eject_link[6]] == 3
    tr = run.traffic.model_copy(update={"rate_packets": 0.05})
    stats = run_traffic(run.topology, run.network, tr)
    assert stats.latency_min == 4 + 3  # uniform's zero-hop packets: P + 3 (BookSim2's minimum on torus88 too)


@pytest.mark.parametrize("va,sa", [("islip", "islip"), ("separable_input_first", "separable_input_first"),
                                   ("islip", "vc_first"), ("lowest_free", "islip")])
@pytest.mark.parametrize("spec", ["torus:4x4", "mesh:4x4"])
def test_booksim_allocators_keep_every_invariant(va, sa, spec):
    """Credits within 0..depth, flits in order, every packet delivered once, under load."""
    t = parse_spec(spec)
    cfg = FlitNetworkConfig(**{**BOOKSIM_ROUTER, "vc_allocator": va, "sw_allocator": sa}, num_vcs=4,
                            vc_depth_flits=4, debug=True)
    rng = np.random.default_rng(7)
    n = 1500
    src = rng.integers(0, 16, n)
    pk = np.stack([np.sort(rng.integers(0, 1500, n)), src, rng.integers(0, 16, n), rng.integers(1, 9, n)], axis=1)
    inj, ej, st = run_packets(t, cfg, pk)
    assert (ej >= 0).all() and (ej > inj).all()
    assert int(st.counters[3]) == int(st.counters[4]) == int(pk[:, 3].sum())


def test_rotating_vc_allocation_spreads_back_to_back_packets():
    """One source streaming 1-flit packets two routers away. Through one VC, heads go one
    per routing + VC + switch allocation, as BookSim2 measures on its 2-node test (0.333
    packets/cycle with routing delay 1, 0.5 with lookahead routing). With 4 VCs, lowest_free
    piles the packets into few downstream VCs; BookSim2's allocators rotate the VC per input
    VC and keep the stream near one packet per cycle."""
    t = parse_spec("mesh:3x2")
    n = 300
    pk = np.array([[i, 0, 2, 1] for i in range(n)])

    def span(**kw):
        inj, ej, _ = run_packets(t, FlitNetworkConfig(**kw), pk)
        return int(ej.max() - ej.min())

    for va in ("lowest_free", "islip", "separable_input_first"):
        assert span(num_vcs=1, routing_delay_cycles=1, vc_allocator=va) == 3 * (n - 1)
        assert span(num_vcs=1, routing_delay_cycles=0, vc_allocator=va) == 2 * (n - 1)
    lowest = span(num_vcs=4, routing_delay_cycles=1, vc_allocator="lowest_free")
    for va in ("islip", "separable_input_first"):
        assert span(num_vcs=4, routing_delay_cycles=1, vc_allocator=va) < min(lowest / 1.15, 1.05 * n)


@pytest.mark.parametrize("extra,period", [("num_vcs = 1;", 9), ("num_vcs = 1; credit_delay = 0;", 7),
                                          ("num_vcs = 2;", 4.5), ("num_vcs = 1; wait_for_tail_credit = 0;", 2)])
def test_wait_for_tail_credit_holds_a_vc_for_the_credit_round_trip(extra, period):
    """BookSim2's wait_for_tail_credit = 1 frees an output VC when the tail's credit is back:
    with its lookahead routing, per 1-flit packet T = routing + VA + 2 SA + ST + L + Lc +
    credit_delay + 1 cycles (iq_router.cpp, buffer_state.cpp) = 9 here (7 with credit delay 0),
    so one VC carries a packet every T cycles and two every T / 2 (BookSim2 measures 1/9,
    1/7 and 2/9 packets/cycle); without it, one every routing + VA + SA = 2 cycles."""
    run = _booksim("topology = mesh; k = 2; n = 1; routing_function = dor; routing_delay = 0; credit_delay = 2; "
                   "wait_for_tail_credit = 1; " + extra)
    n = 400
    inj, ej, _ = run_packets(run.topology, run.network, np.array([[i, 0, 1, 1] for i in range(n)]))
    assert (ej.max() - ej.min()) == pytest.approx(period * (n - 1), abs=period)


def test_booksim_meshconfig_settings_match_booksims_result():
    """BookSim2's runfiles/meshconfig settings (8x8 mesh, 16 x 8 flits, wait_for_tail_credit,
    credit delay 2, lookahead routing, uniform 0.2): BookSim2 prints a packet latency of
    27.7941 cycles and accepts 0.200172 flits/node/cycle (bench/data/booksim_examples.txt)."""
    run = _booksim("num_vcs = 16; vc_buf_size = 8; wait_for_tail_credit = 1; vc_allocator = islip; "
                   "sw_allocator = islip; alloc_iters = 2; credit_delay = 2; routing_delay = 0; vc_alloc_delay = 1; "
                   "sw_alloc_delay = 1; st_final_delay = 1; input_speedup = 1; output_speedup = 1; "
                   "internal_speedup = 1.0; sim_type = latency; warmup_periods = 3; sample_period = 1000; "
                   "sim_count = 1; topology = mesh; k = 8; n = 2; routing_function = dor; packet_size = 1; "
                   "use_read_write = 0; traffic = uniform; injection_rate = 0.2;")
    stats = run_traffic(run.topology, run.network, run.traffic)
    assert stats.latency_avg == pytest.approx(27.7941, rel=0.02)
    assert stats.accepted_flits == pytest.approx(0.200172, rel=0.02)


def test_booksim_methodology_unstable_past_saturation_and_deterministic():
    run = _booksim("topology = mesh; k = 4; n = 2; routing_function = dor; num_vcs = 2; injection_rate = 0.9;")
    over = run_traffic(run.topology, run.network, run.traffic)
    assert not over.stable and "latency_thres" in over.verdict
    ok = run.traffic.model_copy(update={"rate_packets": 0.1})
    a = run_traffic(run.topology, run.network, ok)
    b = run_traffic(run.topology, run.network, ok)
    assert a.stable and a.row() == b.row() and a.latency_max == b.latency_max
    # measurement from the end of 3 warm-up periods to the drain, 3..7 periods of 1000 cycles
    assert 6000 <= a.cycles <= 10000 + 1000
    assert abs(a.accepted_flits - 0.1) < 0.01 and abs(a.injected_flits - 0.1) < 0.01


def test_booksim_files_parse_like_booksim():
    values = parse_booksim("""
        // BookSim2's syntax: comments, braces, later keys win
        topology = mesh; /* a block
        comment */ k = 4;
        n = 2; routing_function = dor;
        packet_size = {{1, 5}}; packet_size_rate = {{3, 1}};
        injection_rate = 0.2; injection_rate_uses_flits = 1;
        k = 8;
    """)
    assert values["k"] == 8 and values["packet_size"] == [[1, 5]]
    run = from_booksim(values, "test")
    assert run.topology.name == "mesh:8x8"
    assert run.traffic.packet_flits == [1, 5] and run.traffic.packet_weights == [3.0, 1.0]
    assert run.traffic.rate_packets == pytest.approx(0.2 / 2.0)  # flits -> packets: mean size (3*1 + 5) / 4
    assert run.traffic.self_packets and run.traffic.inject_during_drain and run.traffic.methodology == "booksim"
    assert run.network.vc_allocator == "islip" and run.network.num_vcs == 16  # BookSim2's defaults


@pytest.mark.parametrize("text,needle", [
    ("input_speedup = 2;", "input_speedup = 2"),
    ("wait_for_tail_credit = 2;", "wait_for_tail_credit = 2: must be 0 or 1"),
    ("topology = fly;", "topology = 'fly'"),
    ("vc_allocator = wavefront;", "vc_allocator = 'wavefront'"),
    ("vc_allocator = islip(4);", "islip(4)"),
    ("traffic = hotspot;", "traffic = 'hotspot'"),
    ("injection_process = on_off;", "injection_process"),
    ("no_such_key = 1;", "'no_such_key' is not a BookSim2 key"),
    ("topology = mesh; routing_function = min_adapt;", "routing_function = 'min_adapt'"),
    ("k = ;", "unexpected"),
])
def test_unmodelled_booksim_keys_are_refused_by_name(text, needle):
    with pytest.raises(ConfigError, match=None) as err:
        from_booksim(parse_booksim("topology = mesh; routing_function = dor; " + text, "cfg"), "cfg")
    assert needle in str(err.value)


def test_keys_booksim_itself_ignores_are_noted():
    run = _booksim("topology = mesh; routing_function = dor; alloc_iters = 2; arb_type = matrix;")
    assert any("alloc_iters" in n for n in run.notes) and any("arb_type" in n for n in run.notes)


def test_default_router_is_unchanged_by_the_new_options():
    """Stored results stay valid: default values of the new keys are left out of keys."""
    fields = FlitNetworkConfig().key_fields()
    for k in ("vc_allocator", "sw_allocator", "vc_class_rule", "tie_break", "credit_adds_link_latency"):
        assert k not in fields
    assert FlitNetworkConfig(vc_allocator="islip").key_fields()["vc_allocator"] == "islip"


def test_self_packets_and_drain_injection_in_the_window_method():
    t = parse_spec("mesh:4x4")
    base = TrafficConfig(rate_packets=0.1, warmup_cycles=200, measure_cycles=2000, seed=4)
    a = run_traffic(t, None, base)
    b = run_traffic(t, None, base.model_copy(update={"self_packets": True}))
    assert a.latency_min > 6 and b.latency_min < a.latency_min  # zero-hop packets only with self_packets
    c = run_traffic(t, None, base.model_copy(update={"inject_during_drain": True}))
    assert c.packets == a.packets and c.cycles >= a.cycles  # the same measured packets, drained under load


def test_randperm_is_a_fixed_permutation_from_its_seed():
    from noc.flit_traffic import destinations

    t = parse_spec("mesh:4x4")
    a, b = destinations("randperm", t, 0), destinations("randperm", t, 1)
    assert sorted(a.tolist()) == list(range(16)) and a.tolist() == destinations("randperm", t, 0).tolist()
    assert a.tolist() != b.tolist()
    run = _booksim("topology = mesh; k = 4; n = 2; routing_function = dor; traffic = randperm; perm_seed = 1;")
    assert run.traffic.pattern == "randperm" and run.traffic.perm_seed == 1
