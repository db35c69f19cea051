"""hw_models.training.astrasim.message_run: collectives as a message-level simulator run with
ASTRA-sim's analytical semantics. Congestion-unaware against the closed form; congestion-aware
against the link loads counted by hand (max-min fair sharing of the most loaded link)."""

from __future__ import annotations

import pytest

from hw_models.training.astrasim import AstraAnalytical, message_collective_ns, message_run
from noc.base.errors import ConfigError

GIB = 1 << 30
NETS = [(("Ring",), (8,)), (("FullyConnected",), (8,)), (("Switch",), (8,)), (("Ring", "Ring"), (4, 4))]


def _model(topos, npus, alg, **kw):
    return AstraAnalytical(topos, npus, 50.0, 500.0, algorithm=alg, **kw)


@pytest.mark.parametrize("topos,npus", NETS)
@pytest.mark.parametrize("kind", ["allreduce", "reduce_scatter", "all_gather"])
def test_ring_shares_no_link(topos, npus, kind):
    """A ring step sends to the next NPU only: every directed link carries one message, so
    sharing the links changes nothing."""
    m = _model(topos, npus, "ring")
    assert message_collective_ns(m, kind, 1 << 24, "aware") == message_collective_ns(m, kind, 1 << 24)


@pytest.mark.parametrize("topos,npus,load", [(("Ring",), (8,), 10), (("Switch",), (8,), 7),
                                             (("FullyConnected",), (8,), 1)])
@pytest.mark.parametrize("kind,phases", [("allreduce", 2), ("reduce_scatter", 1)])
def test_direct_congestion_is_the_most_loaded_link(topos, npus, load, kind, phases):
    """Direct on one dimension of 8: each NPU sends c/8 to all 7 others at once. The most
    loaded directed link carries ``load`` messages (a ring's link: 1+2+3+4 of the clockwise
    distances 1..4; a switch's up link: 7; a fully connected pair link: 1), so each phase's
    messages take ``load`` times a message's serialisation instead of once."""
    m = _model(topos, npus, "direct")
    msg_ns = GIB / m.splits / 8 / m.bytes_per_ns
    extra = message_collective_ns(m, kind, GIB, "aware") - message_collective_ns(m, kind, GIB)
    assert extra == pytest.approx(m.splits * phases * (load - 1) * msg_ns, rel=1e-9)


def test_the_run_has_the_algorithms_message_count():
    """Ring all-reduce on Ring(8): 4 chunks x 2 phases x 7 steps x 8 messages; direct:
    4 x 2 x 56; halving-doubling 4 x 2 x 3 x 8. Ring(4) x Ring(4) ring: per chunk and
    dimension 4 lines of 4 NPUs, 2 x 3 steps."""
    def count(topos, npus, alg):
        return len(message_run(_model(topos, npus, alg), "allreduce", 1 << 20).src_node)
    assert count(("Ring",), (8,), "ring") == 4 * 2 * 7 * 8
    assert count(("Ring",), (8,), "direct") == 4 * 2 * 56
    assert count(("Ring",), (8,), "halvingDoubling") == 4 * 2 * 3 * 8
    assert count(("Ring", "Ring"), (4, 4), "ring") == 4 * 2 * (4 * 2 * 3 * 4)


def test_bad_input_is_refused():
    m = _model(("Ring",), (8,), "ring")
    with pytest.raises(ConfigError, match="congestion"):
        message_run(m, "allreduce", 1024, "partly")
    with pytest.raises(ConfigError, match="collective kind"):
        message_run(m, "all_to_all", 1024)
