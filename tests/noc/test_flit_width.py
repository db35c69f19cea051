"""noc.flit link width (FlitNetworkConfig.flit_bytes): exact zero-load latency with narrow
links against the analytic value, exact stream cadence (1/2, 1/3 and 3/4 flits/cycle),
conservation and credit invariants with mixed widths, identity with the one-flit-per-cycle
model when no link is narrower than a flit, and clear errors."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest

from noc.base.config import validate
from noc.base.errors import ConfigError
from noc.flit import FlitNetworkConfig, build_network, run_packets
from noc.flit_traffic import TrafficConfig, destinations, run_traffic
from noc.flitsim_sweep import bisection_bound_flits
from noc.flitsim_sweep import zero_load_latency_cycles as analytic_zero_load
from noc.routing import route
from noc.topology import parse_spec

from flit_load import run_conserving, uniform_packets

FLIT = 16


def with_widths(topology, widths):
    """A copy of ``topology`` with per-link bytes/cycle (array, one per directed link)."""
    return dataclasses.replace(topology, link_bytes_per_cycle=np.asarray(widths, dtype=np.float64))


def ratio(width: float) -> int:
    """Whole cycles a 16-byte flit takes on a link of ``width`` B/cycle (the tests use integer ratios)."""
    r = max(Fraction(1), Fraction(FLIT) / Fraction(width).limit_denominator(1000))
    assert r.denominator == 1
    return int(r)


def zero_load_cycles(topology, cfg: FlitNetworkConfig, src: int, dst: int, flits: int) -> int:
    """Analytic zero-load latency (first flit injected -> tail ejected) with integer
    serialisation ratios r_i = flit_bytes / width_i (1 on links at least a flit wide).

    A flit granted onto link i arrives ``x_i + latency_i + r_i - 1`` cycles later (x_i: the
    switch allocation and traversal delays, 0 on the injection link), the head then spends
    routing + VC allocation in the next router, a body flit is forwarded in the cycle it
    arrives, and link i takes one flit every r_i cycles. The tail is the longest of: the head
    reaching link j, the packet's F - 1 remaining flits serialised on link j behind it, and
    the tail's own way from link j to the sink — over every link j of the path (pipelined
    serialisation over the narrowest link; with equal widths the latest such link counts,
    since the head lost routing + VC allocation cycles in every router before it)."""
    path = route(topology, cfg.routing, dateline=cfg.dateline).path(src, dst)
    r = [ratio(topology.link_bytes_per_cycle[l]) for l in path]
    x = [0] + [cfg.sw_alloc_delay_cycles + cfg.st_delay_cycles] * (len(path) - 1)
    d = [x[i] + int(topology.link_latency_cycles[l]) + r[i] - 1 for i, l in enumerate(path)]
    head_grant = [0]
    for i in range(1, len(path)):
        head_grant.append(head_grant[-1] + d[i - 1] + cfg.routing_delay_cycles + cfg.vc_alloc_delay_cycles)
    return max(head_grant[j] + (flits - 1) * r[j] + sum(d[j:]) for j in range(len(path)))


PIPELINES = [
    dict(),
    dict(routing_delay_cycles=1, vc_alloc_delay_cycles=1, sw_alloc_delay_cycles=1, st_delay_cycles=1),
    dict(routing_delay_cycles=0, vc_alloc_delay_cycles=0, sw_alloc_delay_cycles=0, st_delay_cycles=0),
    dict(routing_delay_cycles=2, vc_alloc_delay_cycles=0, sw_alloc_delay_cycles=2, credit_delay_cycles=3, num_vcs=4),
]

# widths in B/cycle for 16-byte flits: ratios 1 (32 B/cycle is wider than a flit: still one per cycle), 1, 2, 3, 4
WIDTHS = [32.0, 16.0, 8.0, 16 / 3, 4.0]


def width_variant(t, kind: str, rng):
    nl = t.num_links
    inj = np.asarray(t.link_src < t.num_endpoints)
    ej = np.asarray(t.link_dst < t.num_endpoints)
    if kind == "half":  # every link half a flit wide
        w = np.full(nl, 8.0)
    elif kind == "narrow_inject":  # NIs inject at a third, the network is full width
        w = np.where(inj, 16 / 3, 16.0)
    elif kind == "narrow_eject":  # quarter-width ejection, half-width elsewhere
        w = np.where(ej, 4.0, 8.0)
    else:  # "mixed": every link a random width
        w = rng.choice(WIDTHS, size=nl)
    return with_widths(t, w)


@pytest.mark.parametrize("spec", ["torus:4x4", "mesh:3x3", "fattree:k4:l2", "ring:6:c2", "hypercube:d3"])
@pytest.mark.parametrize("kind", ["half", "narrow_inject", "narrow_eject", "mixed"])
def test_zero_load_latency_with_narrow_links_is_exact(spec, kind):
    base = parse_spec(spec)
    if spec == "ring:6:c2":
        base = base.with_links(latency_cycles=3)
    rng = np.random.default_rng(hash((spec, kind)) % 2**32)
    t = width_variant(base, kind, rng)
    e = t.num_endpoints
    for pipe in range(len(PIPELINES)):
        cfg = FlitNetworkConfig(vc_depth_flits=32, debug=True, flit_bytes=FLIT, **PIPELINES[pipe])
        net = build_network(t, cfg)
        for _ in range(3):  # one packet at a time: nothing else in the network
            s, d = (int(v) for v in rng.choice(e, size=2, replace=False))
            flits = int(rng.integers(1, 20))
            inj, ej, _ = run_packets(t, cfg, np.array([[0, s, d, flits]]), net=net)
            assert ej[0] - inj[0] == zero_load_cycles(t, cfg, s, d, flits), (pipe, s, d, flits)


@pytest.mark.parametrize("kind", ["half", "narrow_inject", "narrow_eject", "mixed"])
def test_the_sweeps_analytic_zero_load_latency_follows_the_link_widths(kind):
    # noc.flitsim_sweep's vectorised formula, against the simulator one packet at a time
    t = width_variant(parse_spec("torus:4x4"), kind, np.random.default_rng(3))
    cfg = FlitNetworkConfig(vc_depth_flits=16, flit_bytes=FLIT, routing_delay_cycles=1)
    tr = TrafficConfig(pattern="bitcomp", packet_flits=[1, 6], packet_weights=[1, 3])
    lat = []
    for s, d in enumerate(destinations("bitcomp", t)):
        for f, w in ((1, 1), (6, 3)):
            inj, ej, _ = run_packets(t, cfg, np.array([[0, s, int(d), f]]))
            lat += [int(ej[0])] * w  # created at cycle 0, injected at once
    assert float(np.mean(lat)) == pytest.approx(analytic_zero_load(t, cfg, tr), abs=1e-9)


def test_a_later_narrow_link_of_equal_width_sets_the_tail():
    # ring:4, 0 -> 2: injection, two router links, ejection; every link half wide. The head
    # loses routing + VC allocation in each router, so the last link's serialisation counts.
    t = parse_spec("ring:4").with_links(bytes_per_cycle=8)
    cfg = FlitNetworkConfig(flit_bytes=16, vc_depth_flits=16, debug=True)
    inj, ej, _ = run_packets(t, cfg, np.array([[0, 0, 2, 10]]))
    # head: 4 links of latency 1 + 1 extra serialisation cycle each, 3 routers of VA 1 + SA 1
    head = 4 * (1 + 1) + 3 * 2
    assert ej[0] - inj[0] == head + 9 * 2 == zero_load_cycles(t, cfg, 0, 2, 10)


@pytest.mark.parametrize("width,cycles_per_flit", [(8.0, 2), (16 / 3, 3)])
@pytest.mark.parametrize("where", ["inject", "router", "eject"])
def test_a_long_stream_over_a_narrow_link_gets_exactly_its_share(width, cycles_per_flit, where):
    # torus:4x4, NI 0 -> NI 2 (two hops along x): one link of the path is narrow
    t = parse_spec("torus:4x4")
    path = route(t, "auto").path(0, 2)
    narrow = {"inject": path[0], "router": path[1], "eject": path[-1]}[where]
    w = np.full(t.num_links, 16.0)
    w[narrow] = width
    t = with_widths(t, w)
    cfg = FlitNetworkConfig(flit_bytes=16, debug=True)
    n = 2000
    inj, ej, st = run_packets(t, cfg, np.array([[0, 0, 2, n]]))
    zero = zero_load_cycles(t, cfg, 0, 2, n)
    assert ej[0] - inj[0] == zero
    # every flit more costs exactly cycles_per_flit cycles: the stream gets exactly
    # 1 / cycles_per_flit flits per cycle
    inj2, ej2, _ = run_packets(t, cfg, np.array([[0, 0, 2, n // 2]]))
    assert Fraction(n - n // 2, int((ej[0] - inj[0]) - (ej2[0] - inj2[0]))) == Fraction(1, cycles_per_flit)
    # and a train of 200 five-flit packets keeps the link exactly that busy
    pk = np.array([[0, 0, 2, 5]] * 200)
    inj, ej, _ = run_packets(t, cfg, pk)
    assert np.all(np.diff(ej) == 5 * cycles_per_flit)
    assert Fraction(5 * 199, int(ej[-1] - ej[0])) == Fraction(1, cycles_per_flit)


def test_a_fractional_width_keeps_the_exact_byte_rate():
    # 16-byte flits over a 12 B/cycle injection link: flit k finishes serialising at
    # (k + 1) x 4/3 cycles, so 3 flits every 4 cycles (not 1 every ceil(4/3) = 2)
    t = parse_spec("mesh:2x2")
    w = np.full(t.num_links, 16.0)
    w[t.inject_link[0]] = 12.0
    t = with_widths(t, w)
    cfg = FlitNetworkConfig(flit_bytes=16, debug=True)
    n = 3000
    inj, ej, _ = run_packets(t, cfg, np.array([[0, 0, 1, n]]))
    path = route(t, "auto").path(0, 1)
    lat = t.link_latency_cycles[path]
    # the tail arrives at the first router in the cycle after its serialisation ends (+ latency - 1),
    # then crosses the routers as a body flit: switch allocation + traversal + link latency per hop
    expected = math.ceil(Fraction(n * 16, 12)) + int(lat[0]) - 1 + sum(cfg.sw_alloc_delay_cycles + cfg.st_delay_cycles
                                                                       + int(x) for x in lat[1:])
    assert ej[0] - inj[0] == expected
    pk = np.array([[0, 0, 1, 1]] * 3001)  # one-flit packets: 3 every 4 cycles, exactly
    _, ej, _ = run_packets(t, cfg, pk)
    assert int(ej[-1] - ej[0]) == 4000


def test_conservation_and_credits_with_mixed_widths_under_load():
    rng = np.random.default_rng(11)
    base = parse_spec("torus:4x4")
    t = with_widths(base, rng.choice([32.0, 16.0, 12.0, 8.0, 16 / 3, 4.0], size=base.num_links))
    cfg = FlitNetworkConfig(num_vcs=4, vc_depth_flits=4, debug=True, flit_bytes=16)
    # debug mode: credits within 0..depth, no buffer overflow, in-order ejection, and no
    # flit sent onto a link still serialising the previous one
    _, ej, st = run_conserving(t, cfg, uniform_packets(rng, 2000, horizon=3000, nodes=16, max_flits=12))
    # no link carried more than its byte rate allows over the run
    cycles = int(ej.max()) + 1
    cap = np.minimum(1.0, t.link_bytes_per_cycle / 16)
    assert np.all(st.link_flits <= np.floor(cycles * cap) + 1)


@pytest.mark.parametrize("width", [16.0, 64.0])
def test_links_a_flit_wide_or_wider_give_the_one_flit_per_cycle_model(width):
    t = parse_spec("mesh:4x4").with_links(bytes_per_cycle=width)
    tr = TrafficConfig(rate_packets=0.3, packet_flits=[1, 4], warmup_cycles=200, measure_cycles=1000, seed=5)
    plain = run_traffic(t, FlitNetworkConfig(), tr)
    wide = run_traffic(t, FlitNetworkConfig(flit_bytes=16), tr)
    assert build_network(t, FlitNetworkConfig(flit_bytes=16)).ser is None  # the one-flit-per-cycle kernel
    assert wide.row() == plain.row()
    assert np.array_equal(wide.link_utilisation, plain.link_utilisation)


def test_narrow_links_lower_saturation_throughput():
    # half-width links everywhere halve what the network can carry: offered 1 flit/NI/cycle,
    # a 4x4 mesh accepts at most its bisection bound (1 flit/NI/cycle) x 1/2 (and at least
    # the fraction of the bound test_flit.py asks of full-width links)
    t = parse_spec("mesh:4x4").with_links(bytes_per_cycle=8)
    r = run_traffic(t, FlitNetworkConfig(flit_bytes=16, num_vcs=4),
                    TrafficConfig(rate_packets=1.0, warmup_cycles=300, measure_cycles=1000, drain_limit_cycles=300))
    assert not r.stable
    assert bisection_bound_flits(t, 16) == pytest.approx(0.5)
    assert 0.35 * 0.5 <= r.accepted_flits <= 0.5


def test_bad_flit_bytes_are_clear_errors():
    with pytest.raises(ConfigError, match="flit_bytes"):
        validate({"flit_bytes": 0}, FlitNetworkConfig)
    with pytest.raises(ConfigError, match="flit_bytes"):
        validate({"flit_bytes": 2.5}, FlitNetworkConfig)
    t = parse_spec("mesh:2x2")
    with pytest.raises(ConfigError, match=r"not a fraction with a denominator up to 65536"):
        build_network(t.with_links(bytes_per_cycle=16 / math.sqrt(2)), FlitNetworkConfig(flit_bytes=16))
    with pytest.raises(ConfigError, match=r"watchdog_cycles = 10: a flit takes up to 16 cycles"):
        build_network(t.with_links(bytes_per_cycle=1), FlitNetworkConfig(flit_bytes=16, watchdog_cycles=10))


def test_the_noc_cli_takes_flit_bytes_from_the_router_section(tmp_path):
    from typer.testing import CliRunner

    from hw_models.cli import app
    from hw_models.noc_experiment import load_noc_experiment as load_experiment

    cfg = tmp_path / "noc.toml"
    cfg.write_text('[network]\ntopology = "mesh:3x3"\nlink_bytes_per_cycle = 8.0\n[router]\nflit_bytes = 16\n'
                   '[traffic]\nwarmup_cycles = 200\nmeasure_cycles = 800\ndrain_limit_cycles = 2000\n')
    c, t = load_experiment(cfg)
    assert c.router.flit_bytes == 16 and build_network(t, c.router).ser is not None
    r = CliRunner().invoke(app, ["noc", "run", str(cfg), "--rate", "0.05", "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    # 1-flit packets on half-width links: one more cycle per link than at full width
    length = route(t, "auto").length
    mean_links = length[~np.eye(t.num_endpoints, dtype=bool)].mean()
    full = c.router.model_copy(update={"flit_bytes": None})
    assert analytic_zero_load(t, c.router, c.traffic) == pytest.approx(analytic_zero_load(t, full, c.traffic) + mean_links,
                                                                      abs=1e-9)


@pytest.mark.parametrize("body,message", [
    ('[router]\nflit_bytes = 0\n', "key 'router.flit_bytes' = 0"),
    ('[network]\nlink_bytes_per_cycle = 0.1\n[router]\nflit_bytes = 16\nwatchdog_cycles = 100\n',
     "watchdog_cycles = 100: a flit takes up to 160 cycles"),
])
def test_bad_flit_bytes_in_a_noc_config_is_one_line_and_exit_2(tmp_path, capsys, body, message):
    from hw_models.cli import main

    cfg = tmp_path / "bad.toml"
    cfg.write_text(body)
    with pytest.raises(SystemExit) as exc:
        main(["noc", "run", str(cfg), "--out", str(tmp_path / "out")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_bisection_bound_counts_link_width():
    # flits per cycle per link: min(1, bytes_per_cycle / flit_bytes); default links are 16 B/cycle
    t8 = parse_spec("torus:8x8")
    assert bisection_bound_flits(t8, 16) == pytest.approx(1.0)  # full width: as without flit_bytes
    assert bisection_bound_flits(t8.with_links(bytes_per_cycle=8), 16) == pytest.approx(8 / 8 * 0.5)
    assert bisection_bound_flits(parse_spec("mesh:8x8").with_links(bytes_per_cycle=4), 16) == pytest.approx(4 / 8 * 0.25)
    # 4x4 torus at half width: bisection 8/4 x 1/2 = 1, capped by the half-width NI links' 1/2
    assert bisection_bound_flits(parse_spec("torus:4x4").with_links(bytes_per_cycle=8), 16) == pytest.approx(0.5)
    # only the inject links narrow: the NI rate (1/4) is below the bisection term (1.0 on torus:8x8)
    w = t8.link_bytes_per_cycle.copy()
    w[t8.inject_link] = 4.0
    assert bisection_bound_flits(with_widths(t8, w), 16) == pytest.approx(0.25)
    # router links of mixed width: counted at the widest (an upper bound), here full width
    w = t8.link_bytes_per_cycle.copy()
    w[np.nonzero(t8.is_router_link)[0][::2]] = 8.0
    assert bisection_bound_flits(with_widths(t8, w), 16) == pytest.approx(1.0)
    w[np.nonzero(t8.is_router_link)[0]] = 8.0  # all of them half width: exact again
    assert bisection_bound_flits(with_widths(t8, w), 16) == pytest.approx(0.5)
