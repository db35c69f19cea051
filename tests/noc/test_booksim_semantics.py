"""The flit level's BookSim2 options, each against a rule read from BookSim2's source
(docs/validation.md): its zero-load latency formula, its torus VC classes and tie
direction, packets to their own source, its run methodology; and the invariants under its
allocators. The point-by-point comparison with BookSim2's own output is
tests/noc/test_booksim_reference.py."""

from __future__ import annotations

import numpy as np
import pytest

from noc.booksim_config import from_booksim, parse_booksim
from noc.base.config import validate
from noc.base.errors import ConfigError
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
        // BookSim2's syntax: line comments, brace lists without spaces, later keys win
        topology = mesh; k = 4; // a trailing comment
        n = 2; routing_function = dor;
        packet_size = {{1,5}}; packet_size_rate = {{3,1}};
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
    ("injection_process = on_off({0.5,0.5,-1,1});", "initial on/off state"),
    ("injection_process = on_off(0.1,0.2);", "parameters are written in braces"),
    ("injection_process = on_off; burst_r1 = 0.5;", "exactly one must be negative"),
    ("injection_process = poisson;", "injection_process = 'poisson'"),
    ("traffic = hotspot({-1});", "drawn at random"),
    ("topology = cmesh; k = 4; c = 4; xr = 2; yr = 2; routing_function = dor;", "express channels"),
    ("topology = cmesh; k = 4; c = 4; xr = 2; yr = 2; routing_function = xy_yx_no_express;", "XY or YX"),
    ("topology = cmesh; k = 4; c = 2; xr = 2; yr = 1; routing_function = dor_no_express;", "c = 2"),
    ("topology = cmesh; k = 4; c = 4; xr = 2; yr = 2; routing_function = dor_no_express; traffic = transpose;",
     "allowed on a cmesh here: uniform, hotspot"),
    ("topology = fattree; k = 4; n = 2; routing_function = anca;", "adaptive"),
    ("topology = fattree; k = 4; n = 2; routing_function = nca; traffic = tornado;", "allowed on a fattree"),
    ("no_such_key = 1;", "'no_such_key' is not a BookSim2 key"),
    ("topology = mesh; routing_function = min_adapt;", "routing_function = 'min_adapt'"),
    ("k = ;", "expected a value for 'k'"),
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


def _cmesh(extra: str = ""):
    return _booksim("topology = cmesh; k = 4; n = 2; c = 4; x = 4; y = 4; xr = 2; yr = 2; "
                    "routing_function = dor_no_express; num_vcs = 4; " + extra)


def test_cmesh_is_a_concentrated_mesh_numbered_as_booksims():
    """BookSim2's CMesh: node (X, Y) of the 2k x 2k node grid (node = X + 2k Y) sits on router
    (X // 2, Y // 2) at port 2 (Y % 2) + X % 2 (cmesh.cpp NodeToRouter / NodeToPort, and its
    _BuildNet's channel loop); its neighbour channels are c/n = 2 cycles, 1 without
    use_noc_latency."""
    from noc.booksim_config import cmesh_node

    run = _cmesh()
    t = run.topology
    assert t.family == "mesh" and t.dims == (4, 4) and t.num_endpoints == 64 and t.concentration == 4
    assert set(t.link_latency_cycles[t.is_router_link].tolist()) == {2}
    assert set(_cmesh("use_noc_latency = 0;").topology.link_latency_cycles[t.is_router_link].tolist()) == {1}
    ours = [cmesh_node(b, 4) for b in range(64)]
    assert sorted(ours) == list(range(64))
    for b in range(64):
        x, y = b % 8, b // 8
        router = (y // 2) * 4 + x // 2  # BookSim2 router id = y * k + x of the router grid
        assert t.endpoint_router[ours[b]] == router and ours[b] % 4 == 2 * (y % 2) + x % 2
        assert t.router_coords[router].tolist() == [x // 2, y // 2]  # DOR here goes x first, as dor_no_express


def test_cmesh_zero_load_latency_is_booksims_formula():
    """(H + 1) P + H L + 3 with P = 4 and L = 2 on BookSim2's cmesh, between routers H apart."""
    run = _cmesh()
    t = run.topology
    hops = np.maximum(route(t, "dor").length - 2, 0)
    for s, d in [(0, 63), (0, 1), (5, 40), (17, 18), (33, 2)]:
        inj, ej, _ = run_packets(t, run.network, np.array([[0, s, d, 1]]))
        h = int(hops[s, d])
        assert ej[0] - inj[0] == (h + 1) * 4 + h * 2 + 3, (s, d)


def test_fattree_is_booksims_k_ary_n_tree_with_random_up_ports():
    """BookSim2's fattree k, n: k**n nodes, n levels of k**(n-1) routers, node i on leaf i // k,
    1-cycle channels; nca_fattree goes up a uniformly random port at each level below the
    nearest common ancestor and down deterministically."""
    from noc.routing import nca_up_variants

    run = _booksim("topology = fattree; k = 4; n = 3; routing_function = nca; num_vcs = 4;")
    t = run.topology
    assert t.num_endpoints == 64 and t.num_routers == 3 * 16 and (t.endpoint_router == np.arange(64) // 4).all()
    assert set(t.link_latency_cycles[t.is_router_link].tolist()) == {1}
    assert run.network.routing == "nca" and run.network.tie_break == "random"
    net = build_network(t, run.network)
    assert net.n_rows == nca_up_variants(t) == 16  # one route table per up-port choice
    # 0 -> 63 crosses the top: 4 x 4 equally likely up paths, each a valid up/down path
    paths = {tuple(route(t, "nca", up_variant=v).path(0, 63)) for v in range(16)}
    assert len(paths) == 16 and all(len(p) == 6 for p in paths)
    n = 1600
    _, _, st = run_packets(t, run.network, np.array([[i * 10, 0, 63, 1] for i in range(n)]))
    first_up = [p[1] for p in paths]  # leaf 0's four up links, each taken by a quarter of the packets
    counts = np.array([int(st.link_flits[lk]) for lk in sorted(set(first_up))])
    assert len(counts) == 4 and counts.sum() == n
    assert (abs(counts - n / 4) < 4 * np.sqrt(n * 3 / 16)).all(), counts  # binomial, 4 sigma
    det = FlitNetworkConfig(**{**run.network.model_dump(), "tie_break": "plus"})
    assert build_network(t, det).n_rows == 1  # plus: the destination's digits, one table


def test_on_off_injection_is_booksims_markov_source():
    """OnOffInjectionProcess::test: the state moves (off -> on with alpha, on -> off with
    beta), then an on NI creates a packet with r1 = rate (alpha + beta) / alpha. The long-run
    rate is the rate; bursts make the runs of consecutive packets longer than Bernoulli's."""
    run = _booksim("topology = mesh; k = 4; n = 2; routing_function = dor; injection_process = on_off; "
                   "burst_alpha = 0.1; burst_beta = 0.3; injection_rate = 0.05;")
    tr = run.traffic
    assert tr.injection_process == "on_off" and tr.burst_r1 == pytest.approx(0.05 * 0.4 / 0.1)
    # the derived forms give the same source: r1 given, alpha or beta derived
    a = _booksim("topology = mesh; k = 4; n = 2; routing_function = dor; injection_rate = 0.05; "
                 "injection_process = on_off({-1,0.3,0.2});").traffic
    b = _booksim("topology = mesh; k = 4; n = 2; routing_function = dor; injection_rate = 0.05; "
                 "burst_alpha = 0.1; burst_beta = -1.0; burst_r1 = 0.2; injection_process = on_off;").traffic
    assert a.burst_alpha == pytest.approx(0.1) and b.burst_beta == pytest.approx(0.3)
    from noc.flit_traffic import _TrafficRun

    t = run.topology
    window = TrafficConfig(**{**tr.model_dump(), "methodology": "window"})
    tr_run = _TrafficRun(t, run.network, window, build_network(t, run.network), 1 << 16, 1 << 16)
    assert 2 <= int(tr_run.on.sum()) <= 14  # every NI starts on or off, 1/2 each
    stats = run_traffic(t, run.network, window.model_copy(update={"warmup_cycles": 2000, "measure_cycles": 40000}))
    assert stats.accepted_flits == pytest.approx(0.05, rel=0.08)
    bern = run_traffic(t, run.network, window.model_copy(update={"injection_process": "bernoulli", "warmup_cycles": 2000,
                                                                  "measure_cycles": 40000}))
    assert stats.latency_avg > bern.latency_avg  # bursts queue at the source
    same = run_traffic(t, run.network, window.model_copy(update={"warmup_cycles": 2000, "measure_cycles": 40000}))
    assert same.row() == stats.row()  # same seed, same output
    with pytest.raises(ConfigError, match="exceeds 1 packet per cycle"):  # r1 = 0.2 x 1.0 / 0.1 = 2
        validate({**tr.model_dump(), "burst_beta": 0.9, "rate_packets": 0.2}, TrafficConfig)
    # BookSim2 derives r1 = 2 unchecked, and its on NIs then send every cycle: a long-run rate
    # of alpha / (alpha + beta) (its fattree k = 4, n = 2 at 0.7 with the default 0.5 / 0.5
    # accepts 0.4985-0.5025 flits/node/cycle over seeds 0-2, bench/data/booksim_reference_trees.csv)
    over = _booksim("topology = mesh; k = 4; n = 2; routing_function = dor; injection_process = on_off; "
                    "burst_alpha = 0.1; burst_beta = 0.9; injection_rate = 0.2;")
    assert over.traffic.rate_packets == pytest.approx(0.1) and over.traffic.burst_r1 == pytest.approx(1.0)
    assert any("sends every cycle while on" in n for n in over.notes)


def test_hotspot_sends_to_its_nodes_by_their_rates():
    """HotSpotTrafficPattern::dest: every packet goes to a hotspot (a hotspot node to itself
    too), chosen with probability rate / sum of rates; one hotspot takes them all."""
    from noc.booksim_config import cmesh_node

    run = _booksim("topology = mesh; k = 4; n = 2; routing_function = dor; injection_rate = 0.02; "
                   "traffic = hotspot({{3,12},{3,1}});")
    tr = run.traffic
    assert tr.pattern == "hotspot" and tr.hotspot_fraction == 1.0
    assert tr.hotspot_nodes == [3, 12] and tr.hotspot_weights == [3, 1]
    t = run.topology
    window = TrafficConfig(**{**tr.model_dump(), "methodology": "window", "warmup_cycles": 500, "measure_cycles": 20000})
    stats = run_traffic(t, run.network, window)
    ej = {3: t.eject_link[3], 12: t.eject_link[12]}
    util = stats.link_utilisation
    total = 16 * 0.02
    assert util[ej[3]] == pytest.approx(0.75 * total, rel=0.1) and util[ej[12]] == pytest.approx(0.25 * total, rel=0.15)
    others = [util[t.eject_link[i]] for i in range(16) if i not in ej]
    assert max(others) == 0.0
    # BookSim2's cmesh numbering: hotspot 5 is node (5, 0) of the 8 x 8 node grid
    cm = _cmesh("traffic = hotspot({{5,10}});")
    assert cm.traffic.hotspot_nodes == [cmesh_node(5, 4), cmesh_node(10, 4)] == [2 * 4 + 1, 1 * 4 + 2]
    assert cm.traffic.hotspot_weights is None


def test_booksim_parameters_are_split_as_booksim_splits_them():
    """BookSim2's tokenize_str: a parameter string not starting with a brace is one element;
    otherwise its top-level elements up to the first closing brace. So hotspot({0,5,10})
    is node 0 with rate 5 (checked on the binary: the same latency as hotspot(0), 16.3544
    cycles on fattree k = 4, n = 2 at 0.05), and several nodes need hotspot({{...},{...}})."""
    from noc.booksim_config import tokenize

    assert tokenize("{0,5,10},{2,1}") == ["0", "5", "10"]
    assert tokenize("{{0,5,10},{2,1}}") == ["{0,5,10}", "{2,1}"]
    assert tokenize("0.1,0.2") == ["0.1,0.2"] and tokenize("{3}") == ["3"] and tokenize("") == []
    base = "topology = fattree; k = 4; n = 2; routing_function = nca; "
    one = _booksim(base + "traffic = hotspot({0,5,10});")
    assert one.traffic.hotspot_nodes == [0] and any("hotspot nodes [0]" in n for n in one.notes)
    assert _booksim(base + "traffic = hotspot(7);").traffic.hotspot_nodes == [7]
