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
    dimension 4 lines of 4 NPUs, 2 x 3 steps. Besides, a mark of no bytes per NPU, chunk and
    dimension (the stage's start)."""
    def count(topos, npus, alg):
        run = message_run(_model(topos, npus, alg), "allreduce", 1 << 20)
        marks = int((run.wire_bytes == 0).sum())
        assert marks == 4 * len(npus) * (8 if len(npus) == 1 else 16)
        return len(run.src_node) - marks
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


def test_binary_tree_is_astrasims():
    """ASTRA-sim's BinaryTree for 8 NPUs, from its construction: the root with one child
    over a complete tree of depth 3, ids given in order; RootMax puts the root last."""
    from hw_models.training.astrasim import binary_tree
    root, kids = binary_tree(8, root_max=True)
    assert root == 7 and kids[7] == [3] and kids[3] == [1, 5] and kids[1] == [0, 2] and kids[5] == [4, 6]
    assert all(kids[v] == [] for v in (0, 2, 4, 6))
    root, kids = binary_tree(8, root_max=False)
    assert root == 0 and kids[0] == [4] and kids[4] == [2, 6] and kids[2] == [1, 3] and kids[6] == [5, 7]
    root, kids = binary_tree(2, root_max=True)
    assert root == 1 and kids == {0: [], 1: [0]}
    with pytest.raises(ConfigError, match="power of two"):
        binary_tree(6, root_max=True)


def test_one_chunk_up_and_down_the_tree():
    """One chunk on FullyConnected(8): three messages up (leaf, inner, its parent, root) and
    three down, the five receivers that sum charge a local reduction, and seven endpoint
    delays (the leaf's start, five sums, the leaf's end)."""
    m = _model(("FullyConnected",), (8,), "doubleBinaryTree", splits=1)
    size = 1 << 20
    hop = int(500 + size / m.bytes_per_ns)
    expect = 6 * hop + 5 * m.reduce_ns(size) + 7 * m.endpoint_delay_ns
    assert m.collective_ns("allreduce", size) == expect
    assert message_collective_ns(m, "allreduce", size) == pytest.approx(expect, rel=1e-4)


def test_tree_messages():
    """Per chunk and line 2 (N-1) messages of the whole chunk; a mark per NPU and stage after
    the first, and one per NPU at the end."""
    m = _model(("Ring", "Ring"), (4, 4), "doubleBinaryTree")
    run = message_run(m, "allreduce", 1 << 20)
    stages = m.splits * 2
    assert len(run.src_node) == stages * 4 * 2 * 3 + (stages - 1) * 16 + 16
    assert (run.wire_bytes > 0).sum() == stages * 4 * 2 * 3
    with pytest.raises(ConfigError, match="all-reduce only"):
        message_run(m, "reduce_scatter", 1 << 20)
    with pytest.raises(ConfigError, match="all-reduce only"):
        m.collective_ns("all_gather", 1 << 20)
