"""run_traffic in two steps (noc.flit_traffic.PreparedTraffic): set up, then simulate. Points
prepared together and run in any order give what run_traffic gives each on its own."""

from __future__ import annotations

import numpy as np
import pytest

from noc.base.errors import ConfigError
from noc.flit import FlitNetworkConfig
from noc.flit_traffic import PreparedTraffic, TrafficConfig, run_traffic
from noc.topology import parse_spec

BOOKSIM_ROUTER = dict(vc_allocator="islip", sw_allocator="islip", vc_class_rule="booksim", tie_break="random",
                      credit_adds_link_latency=True)


def _same(a, b) -> bool:
    return a.row() == b.row() and np.array_equal(a.link_utilisation, b.link_utilisation) and a.verdict == b.verdict


@pytest.mark.parametrize("methodology", ["window", "booksim"])
def test_points_prepared_together_run_as_each_alone(methodology):
    t = parse_spec("torus:4x4")
    router = FlitNetworkConfig(**BOOKSIM_ROUTER)
    extra = dict(warmup_periods=1, max_samples=3, sample_period_cycles=500) if methodology == "booksim" else \
        dict(warmup_cycles=200, measure_cycles=1000)
    a, b = (TrafficConfig(rate_packets=0.1, seed=s, methodology=methodology, **extra) for s in (1, 2))
    alone_a, alone_b = run_traffic(t, router, a), run_traffic(t, router, b)
    assert not _same(alone_a, alone_b)  # the seeds matter, so a run drawing from the other's would show
    first, second = PreparedTraffic(t, router, a), PreparedTraffic(t, router, b)
    got_b = second.run()  # the other order, and b prepared after a
    got_a = first.run()
    assert _same(got_a, alone_a) and _same(got_b, alone_b)


def test_a_prepared_point_runs_once():
    p = PreparedTraffic(parse_spec("mesh:3x3"), None, TrafficConfig(warmup_cycles=10, measure_cycles=50))
    p.run()
    with pytest.raises(RuntimeError, match="runs once"):
        p.run()


def test_preparing_checks_the_configuration():
    with pytest.raises(ConfigError, match="vc_depth_flits = 4"):
        PreparedTraffic(parse_spec("mesh:3x3"), FlitNetworkConfig(flow_control="vct", vc_depth_flits=4),
                        TrafficConfig(packet_flits=[8]))
