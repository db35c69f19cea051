"""nic.collectives.forest: four trees per root on a 2D torus, at the throughput optimum.

Checked on exact sums (the verifier), against the link loads the construction promises
(N-1 chunks per directed link and phase), against optimal_bound (lockstep ideal time and the
message-level NIC model) and against MultiTree on the main job's network.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from nic.collectives import ScheduleError, build, contention, ideal_cycles, optimal_bound, transfer_paths, verify
from nic.collectives.forest import forest, torus_forest
from nic.nic_table import check_representable
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.topology import parse_spec


def test_the_registered_forest_is_the_torus_construction_on_square_tori_only():
    square, oblong = parse_spec("torus:4x4:c4"), parse_spec("torus:4x6")
    assert build(square, "forest") == torus_forest(square)
    assert build(oblong, "forest").params["construction"] == "packing"


def whole_chunks(t) -> int:
    """A size of whole number of 4-byte elements per flow (4N flows), so chunks are equal."""
    return 4 * (4 * t.num_nodes) * 1024  # 4 bytes x 4N flows x 1024 elements


@pytest.mark.parametrize("spec", ["torus:3x3", "torus:4x4", "torus:4x4:c4", "torus:3x5", "torus:5x4:c2", "torus:8x8:c4"])
def test_forest_is_a_correct_allreduce(spec):
    s = torus_forest(parse_spec(spec))
    verify(s, seed=1)
    verify(s, num_elements=s.num_flows, seed=2)
    check_representable(s)


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:4x4:c4", "torus:5x5:c2", "torus:8x8:c4"])
def test_square_torus_every_link_carries_n_minus_1_chunks_per_phase_one_per_step(spec):
    t = parse_spec(spec)
    s = forest(t)
    off, flat = transfer_paths(s, t)
    assert np.all(np.diff(off) == 1)  # neighbours only: one hop each
    n = t.num_nodes
    for op in (OP_REDUCE, OP_GATHER):
        uses = np.bincount(flat[s.op == op], minlength=t.num_links)
        assert set(uses[t.is_router_link].tolist()) == {n - 1}
    assert contention(s, t).max_messages_per_link_step == 1
    # a node sends at most one chunk to each neighbour per step, and no more chunks than it has NIs
    key = np.stack([s.step, s.src, s.dst], axis=1)
    assert len(np.unique(key, axis=0)) == s.num_transfers
    per_step = np.bincount(s.step.astype(np.int64) * n + s.src)
    assert per_step.max() == min(4, t.nis_per_node)


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:4x4:c4", "torus:5x5:c2", "torus:8x8:c4"])
def test_square_torus_lockstep_ideal_time_is_the_optimum(spec):
    t = parse_spec(spec)
    size = whole_chunks(t)
    opt = optimal_bound(t).all_reduce_cycles(size)
    assert ideal_cycles(forest(t), t, size) == pytest.approx(float(opt), rel=1e-12)


@pytest.mark.parametrize("k1,k2", [(3, 5), (4, 6)])
def test_non_square_torus_is_off_the_optimum_by_its_busier_direction(k1, k2):
    t = parse_spec(f"torus:{k1}x{k2}:c4")
    n = k1 * k2
    factor = Fraction(max((k1 - 1) * (k2 + 1), (k2 - 1) * (k1 + 1)), n - 1)
    size = whole_chunks(t)
    opt = optimal_bound(t).all_reduce_cycles(size)
    assert ideal_cycles(torus_forest(t), t, size) == pytest.approx(float(opt * factor), rel=1e-12)


@pytest.mark.parametrize("spec", ["mesh:4x4", "torus:4x4x4", "ring:8", "torus:2x4", "fattree:k4:l2"])
def test_the_torus_construction_refuses_other_networks(spec):
    with pytest.raises(ScheduleError, match="2D torus"):
        torus_forest(parse_spec(spec))


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:4x4:c2", "torus:4x4:c4"])
def test_message_level_reaches_the_optimum(spec):
    from nic.allreduce import simulate_allreduce

    t = parse_spec(spec)
    size = 8 << 20
    opt = float(optimal_bound(t).all_reduce_cycles(size))
    ours = simulate_allreduce(t, forest(t), size_bytes=size, model="message")
    assert ours.verified
    assert opt <= ours.total_cycles <= opt / 0.99


def test_message_level_beats_multitree_by_a_quarter_on_the_main_network():
    from nic.allreduce import simulate_allreduce

    t = parse_spec("torus:4x4:c4")
    size = 8 << 20
    ours = simulate_allreduce(t, forest(t), size_bytes=size, model="message")
    mt = simulate_allreduce(t, build(t, "multitree"), size_bytes=size, model="message")
    assert mt.total_cycles / ours.total_cycles >= 1.25


def test_msccl_xml_round_trip_is_the_same_schedule():
    from nic.collectives.msccl import from_msccl_xml, to_msccl_xml

    t = parse_spec("torus:4x4:c4")
    s = forest(t)
    back = from_msccl_xml(to_msccl_xml(s), topology=t.name, nis_per_node=4, algorithm="forest")
    assert back == s


@pytest.mark.slow
@pytest.mark.parametrize("kib", [256, 1024])
def test_flit_level_agrees_with_the_message_level_on_the_main_network(kib):
    """The registered forest on torus:4x4:c4 run by the co-designed NIC at both levels:
    both verified, neither below the exact optimum, within 2 % of each other."""
    from nic.allreduce import simulate_allreduce

    t = parse_spec("torus:4x4:c4")
    s = build(t, "forest")
    size = kib << 10
    opt = float(optimal_bound(t).all_reduce_cycles(size))
    msg = simulate_allreduce(t, s, size_bytes=size, model="message")
    flit = simulate_allreduce(t, s, size_bytes=size, model="flit")
    assert msg.verified and flit.verified
    assert opt <= msg.total_cycles and opt <= flit.total_cycles
    assert abs(msg.total_cycles / flit.total_cycles - 1) < 0.02


@pytest.mark.parametrize("spec", ["mesh:4x4:c4", "fattree:k4:l2"])
def test_the_packing_runs_at_the_optimum_at_message_level(spec):
    from nic.allreduce import simulate_allreduce

    t = parse_spec(spec)
    size = 8 << 20
    opt = float(optimal_bound(t).all_reduce_cycles(size))
    ours = simulate_allreduce(t, build(t, "forest"), size_bytes=size, model="message")
    assert ours.verified
    assert opt <= ours.total_cycles <= opt / 0.97


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:4x4:c4", "torus:8x8:c4"])
def test_given_a_small_size_forest_is_no_slower_than_ring_dbtree_or_multitree(spec):
    """At 32 KiB the size-aware forest, run by the full (verifying) message model, takes no
    more cycles than the fastest of the three baselines run the same way, and never fewer
    than the exact optimum."""
    from nic.allreduce import simulate_allreduce

    t = parse_spec(spec)
    size = 32 << 10
    ours = simulate_allreduce(t, build(t, "forest", size_bytes=size), size_bytes=size, seed=1)
    best = min(simulate_allreduce(t, build(t, a), size_bytes=size, seed=1).total_cycles
               for a in ("ring", "dbtree", "multitree"))
    assert ours.verified
    assert float(optimal_bound(t).all_reduce_cycles(size)) <= ours.total_cycles <= best


def test_from_the_selection_size_on_forest_is_the_optimum_forest():
    from nic.collectives import SIZED, size_options
    from nic.forest_select import SELECT_BELOW_BYTES

    t = parse_spec("torus:8x8:c4")
    assert "forest" in SIZED and size_options("tree_packing", 1024) == {"size_bytes": 1024}
    assert size_options("multitree", 1024) == {}
    large = forest(t)
    assert build(t, "forest", size_bytes=SELECT_BELOW_BYTES) == large
    assert build(t, "forest", size_bytes=64 << 20) == large
    small = build(t, "forest", size_bytes=32 << 10)  # 32 KiB: MultiTree's fewer steps win (docs' table)
    assert small.algorithm == "forest" and small.params["construction"] == "multitree"
    assert small.num_steps < large.num_steps


def test_a_sweep_point_of_forest_is_built_for_its_size():
    from hw_models.sweep.kinds import allreduce as kind

    point = {"network": {"topology": "torus:4x4"}, "allreduce": {"algorithm": "forest", "size": "32KiB"}}
    resolved = kind.validate(point)
    assert resolved["schedule_options"] == {"size_bytes": 32 << 10}
    _, schedule, _, _ = kind.objects(resolved)
    assert schedule.params["construction"] == "multitree"
    big = kind.validate({**point, "allreduce": {"algorithm": "forest", "size": "8MiB"}})
    assert kind.objects(big)[1].params["construction"] == "torus"


@pytest.mark.parametrize("design,expected", [("codesigned", "multitree"), ("baseline", "torus")])
def test_the_small_size_choice_is_timed_with_the_runs_nic(design, expected):
    """On torus:8x8:c4 at 32 KiB the co-designed NIC runs MultiTree's trees fastest and the
    baseline NIC the optimum forest: given the NIC, forest picks the candidate that the full
    (verifying) message model with that NIC finds fastest, so the choice changes with it."""
    from nic.allreduce import simulate_allreduce
    from nic.forest_select import SMALL_CANDIDATES
    from nic.nic_config import NicConfig

    t = parse_spec("torus:8x8:c4")
    size = 32 << 10
    nic = NicConfig(design=design)
    chosen = build(t, "forest", size_bytes=size, nic=nic)
    assert chosen.params["construction"] == expected
    timed = {a: simulate_allreduce(t, build(t, a), nic, size_bytes=size, seed=1).total_cycles
             for a in ("forest", *SMALL_CANDIDATES)}
    name = "forest" if expected == "torus" else expected  # the optimum forest: forest without a size
    assert timed[name] == min(timed.values())
    ours = simulate_allreduce(t, chosen, nic, size_bytes=size, seed=1)
    assert ours.verified and ours.total_cycles == timed[name]


def test_a_sweep_point_times_forests_choice_with_its_own_nic_and_routers():
    """A point's NIC design and router keys reach the selection: the schedule it runs is the
    one forest chooses given that NIC and those routers, and the baseline NIC's choice
    differs from the co-designed one's (test above)."""
    from hw_models.sweep.kinds import allreduce as kind

    point = {"network": {"topology": "torus:8x8:c4"}, "allreduce": {"algorithm": "forest", "size": "32KiB"}}
    for design, expected in (("codesigned", "multitree"), ("baseline", "torus")):
        resolved = kind.validate({**point, "nic": {"design": design}})
        t, schedule, nic, router = kind.objects(resolved)
        assert nic.design == design and router.router_delay_cycles > 0  # not the defaults of nic.forest_select
        assert schedule == build(t, "forest", size_bytes=32 << 10, nic=nic, network=router)
        assert schedule.params["construction"] == expected


def test_stored_results_of_other_algorithms_outlive_forests_schedule_change():
    """SCHEDULE_VERSION 2 changed forest's schedules only (its small-size choice is timed with
    the run's NIC and routers): an imported version-1 record is still valid for ring or
    MultiTree, not for forest."""
    from nic.collectives import SCHEDULE_CHANGES, SCHEDULE_VERSION, schedule_versions

    assert SCHEDULE_VERSION == 2 and SCHEDULE_CHANGES[2] == ("forest",)
    assert schedule_versions("ring") == schedule_versions("multitree") == [2, 1]
    assert schedule_versions("tree_packing") == schedule_versions("forest") == [2]
