"""Flit-level all-reduce co-simulation: checked results, NIC behaviour, and the calibration
of the message-level model against it (docs/message_model_validation.md)."""

from __future__ import annotations

import pytest

from nic import calibration
from nic.allreduce import NicConfig, simulate_allreduce
from nic.collectives import Schedule, build
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.base.errors import ConfigError
from noc.flit import FlitNetworkConfig
from noc.topology import parse_spec

NET = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32)


class CalibrationMiss(AssertionError):
    """The message model misses the calibration criterion (or, in the other checks, is more
    than 5 % off the flit level): the only failure a known residual's expected failure
    accepts (a broken bound or verification still fails it)."""


SIZE = 256 * 1024

# The calibration matrix (nic.calibration: 4 topologies x 6 algorithms x 2 NICs, 46 cases) at
# six sizes; 32 KiB, 64 KiB, 256 KiB and 1 MiB run with the suite, 128 KiB and 4 MiB are
# marked slow. The criterion (nic.calibration.check, docs/message_model_validation.md): a
# co-designed (bulk) case within 5 % of the flit level's total with the arbiters' reset
# state; a per-packet (baseline NIC) case within 5 % of the range of the flit totals with
# the reset state, virtual cut-through and arbiter_seed 1..4. check() runs those other
# routers one at a time, only while the message total is outside the range of the totals
# run so far (another total only widens the range), so a case within 5 % of the reset
# state costs one flit run, as before.
MATRIX_SIZES = (32 << 10, 64 << 10, 128 << 10, SIZE, 1 << 20, 4 << 20)
SLOW_SIZES = {128 << 10, 4 << 20}

# The cases that miss the criterion (measured with bench/message_calibration.py --size S
# --arbiter-seeds 4 --vct, message MODEL_VERSION 9), each with its mechanism and its
# deviation from the nearest end of the range. Four are per-packet (baseline NIC) runs; one
# co-designed case (its deviation from the reset state's total) misses since the scheduler's
# send request is registered (message MODEL_VERSION 12, bench/message_calibration.py --only
# codesigned).
_PORT_ROUND_ROBIN = (
    "input-port round-robin with FIFO VCs chained around the ring: in the distance-2 exchange each router's "
    "output to the next is shared round-robin among its four NIs and the ring input, whose FIFO VCs hold the "
    "flow in transit behind the flow ejecting there, so the routers upstream get 1/5, 1/20, 1/80 of a link in "
    "turn (a fluid model of these rules is within 2.4 % of the flit level on a static row), where the message "
    "model's max-min sharing per flow gives every router the same rate; neither a tie nor a wormhole effect")
_RINGS_OUT_OF_STEP = (
    "the two rings fall out of step at flit level: a transfer across the spines still has flits on its way when "
    "the next transfer into the same node, over a shorter route, reaches the ejection link, both arrive late, "
    "and the lag grows step by step (the NI's next transfer also shares the injection input with the previous "
    "one's waiting packets under separable input-first allocation); the model's per-packet flows take their "
    "links at the source's clock, so a long route's tail never meets a short route's head (from 128 KiB on the "
    "model is within 3.7 % of the cut-through flit level, which keeps the case inside the range)")
_PORT_SHARES_DBTREE = (
    "the routers share a link round-robin among their input ports (4:1 for four flows from their own NIs "
    "against four through one ring input), where max-min per flow makes all eight arrive together, and the "
    "next step's transfers then share their routes where at flit level they forward one after another "
    "(sharing per input port in the model fixes 32 KiB and breaks 256 KiB)")
_LATE_STEPS_FT_DBTREE = (
    "co-designed double binary tree on the fat-tree, one cycle later per send since the scheduler's request is "
    "registered: the flit level falls behind the model step by step (the first steps' transfers arrive 9-12 "
    "cycles later than in the model), and transfer 10 -> 9 then starts 24 cycles late and arrives 75 late "
    "while it shares node 9's ejection link with 8 -> 9 (13,019 flit against 12,273 message cycles); the "
    "mechanism behind the first steps' lag is not analysed yet (-4.5 % at 256 KiB, -3.5 % at 32 KiB)")
_START_ORDER_MULTITREE = (
    "as-soon-as-ready start order: the model frees a per-packet NI early (it counts every VC of the injection "
    "hop at full depth, where the flit NI fills one VC at a time), so the NIs start ready transfers in another "
    "order and a cycle either way reorders them (an injection hop of one VC's depth brings this case to +8.2 % "
    "but moves others across the line)")
_C4_HD = ("torus:4x4:c4", "halving_doubling", "baseline")
_FT_BIDIR = ("fattree:k4:l2", "bidir_ring", "baseline")
_FT_DBTREE_CO = ("fattree:k4:l2", "dbtree", "codesigned")
RESIDUALS = {
    32 << 10: {
        _C4_HD: (_PORT_ROUND_ROBIN, -7.7),
        _FT_BIDIR: (_RINGS_OUT_OF_STEP, -19.8),
        ("torus:4x4:c4", "dbtree", "baseline"): (_PORT_SHARES_DBTREE, +6.1),
        ("torus:4x4:c4", "multitree", "baseline"): (_START_ORDER_MULTITREE, +21.8),
    },
    64 << 10: {_C4_HD: (_PORT_ROUND_ROBIN, -11.2), _FT_BIDIR: (_RINGS_OUT_OF_STEP, -7.2),
               _FT_DBTREE_CO: (_LATE_STEPS_FT_DBTREE, -5.7)},
    128 << 10: {_C4_HD: (_PORT_ROUND_ROBIN, -16.1)},
    SIZE: {_C4_HD: (_PORT_ROUND_ROBIN, -16.2)},
    1 << 20: {_C4_HD: (_PORT_ROUND_ROBIN, -15.3)},
    4 << 20: {_C4_HD: (_PORT_ROUND_ROBIN, -16.0)},
}


def _size_id(size):
    return f"{size >> 20}MiB" if size >= 1 << 20 else f"{size >> 10}KiB"


def _matrix_case(size, spec, algorithm, design):
    marks = [pytest.mark.slow] if size in SLOW_SIZES else []
    if (spec, algorithm, design) in RESIDUALS[size]:
        mechanism, miss = RESIDUALS[size][spec, algorithm, design]
        against = "the range" if design == "baseline" else "the reset state's total"
        marks.append(pytest.mark.xfail(strict=True, raises=CalibrationMiss, reason=(
            f"known residual, {miss:+.1f} % from {against} at {_size_id(size)}: {mechanism}")))
    return pytest.param(size, spec, algorithm, design, id=f"{spec}-{algorithm}-{design}-{_size_id(size)}",
                        marks=marks)


MATRIX_CASES = [_matrix_case(size, *case) for size in MATRIX_SIZES for case in calibration.cases()]


def test_the_calibration_matrix_has_its_46_cases_and_the_residuals_are_among_them():
    assert len(set(calibration.cases())) == 46 and len(MATRIX_CASES) == 46 * len(MATRIX_SIZES)
    assert set(RESIDUALS) == set(MATRIX_SIZES)
    for residuals in RESIDUALS.values():
        assert set(residuals) <= set(calibration.cases())
        # the co-designed cases miss only where a residual names it (one: the fat-tree's double binary tree)
        assert all(case[2] == "baseline" or case == _FT_DBTREE_CO for case in residuals)


def _flit_total_checked(spec, algorithm, design, net, size):
    """The flit level's total (``nic.calibration.flit_total``), checked against the bound."""
    t = parse_spec(spec)
    flit = simulate_allreduce(t, build(t, algorithm), NicConfig(design=design), net, size, model="flit")
    assert flit.total_cycles >= flit.bound_cycles  # no run beats the bandwidth bound
    return flit.total_cycles


@pytest.mark.parametrize("size,spec,algorithm,design", MATRIX_CASES)
def test_message_model_meets_the_calibration_criterion(size, spec, algorithm, design):
    result = calibration.check(spec, algorithm, design, NET, size, run_flit=_flit_total_checked)
    if not result.ok:
        raise CalibrationMiss(result.describe())


def test_the_criterion_runs_the_other_routers_only_while_a_per_packet_case_is_outside_the_range():
    # a stand-in flit level, slower than the message model by a factor per router
    message = {design: calibration.compare("torus:4x4", "ring", design, NET, 32 << 10, flit_cycles=1.0).message_cycles
               for design in ("baseline", "codesigned")}
    runs = []

    def stand_in(reset, vct, seeds):
        def run(spec, algorithm, design, net, size):
            runs.append((net.arbiter_seed, net.flow_control))
            return message[design] * (vct if net.flow_control == "vct" else seeds if net.arbiter_seed else reset)
        return run

    every_router = [(None, "wormhole"), (None, "vct"), (1, "wormhole"), (2, "wormhole"), (3, "wormhole"),
                    (4, "wormhole")]
    miss = calibration.check("torus:4x4", "ring", "baseline", NET, 32 << 10, run_flit=stand_in(1.1, 1.08, 1.2))
    assert runs == every_router and not miss.ok and len(miss.flit_totals) == 6
    assert miss.error_percent == pytest.approx(100 * (1 / 1.08 - 1)) and "(6 runs)" in miss.describe()
    runs.clear()
    near_vct = calibration.check("torus:4x4", "ring", "baseline", NET, 32 << 10, run_flit=stand_in(1.1, 1.04, 1.2))
    assert runs == every_router[:2] and near_vct.ok  # 3.8 % below cut-through: the seeds cannot change that
    assert near_vct.error_percent == pytest.approx(100 * (1 / 1.04 - 1))
    runs.clear()
    near_seed = calibration.check("torus:4x4", "ring", "baseline", NET, 32 << 10, run_flit=stand_in(0.9, 0.92, 1.03))
    assert runs == every_router[:3] and near_seed.ok and near_seed.error_percent == 0.0  # inside [0.9, 1.03]
    runs.clear()
    near_reset = calibration.check("torus:4x4", "ring", "baseline", NET, 32 << 10, run_flit=stand_in(1.03, 1.5, 1.5))
    assert runs == every_router[:1] and near_reset.ok and near_reset.flit_totals == (message["baseline"] * 1.03,)
    runs.clear()
    bulk = calibration.check("torus:4x4", "ring", "codesigned", NET, 32 << 10, run_flit=stand_in(1.1, 1.0, 1.0))
    assert runs == every_router[:1] and not bulk.ok  # the reset state alone: 9.1 % below it
    assert bulk.error_percent == pytest.approx(100 * (1 / 1.1 - 1)) and bulk.describe().endswith(": -9.1 %")


def test_the_criterion_is_5_percent_outside_the_range_of_the_flit_totals():
    assert calibration.within(95.0, [100.0]) and calibration.within(105.0, [100.0])
    assert not calibration.within(94.9, [100.0]) and not calibration.within(105.1, [100.0])
    assert calibration.within(126.0, [100.0, 120.0, 110.0]) and not calibration.within(126.1, [120.0, 100.0])
    assert calibration.within(95.0, [120.0, 100.0]) and not calibration.within(94.9, [100.0, 120.0])
    assert calibration.range_error_percent(110.0, [100.0, 120.0]) == 0.0
    assert calibration.range_error_percent(90.0, [120.0, 100.0]) == pytest.approx(-10.0)
    assert calibration.range_error_percent(132.0, [100.0, 120.0]) == pytest.approx(10.0)
    with pytest.raises(ValueError, match="reset state"):
        calibration.reference_routers(NET.model_copy(update={"arbiter_seed": 1}), "baseline")


def _assert_models_agree(t, s, nic, size=SIZE, net=NET):
    """The message model is within 5 % of the flit level with router ``net`` as given (each
    run raises if its times break a dependency of the verified schedule); returns the
    flit-level result. The checks outside the calibration matrix use this plain criterion."""
    flit = simulate_allreduce(t, s, nic, net, size, model="flit")
    assert flit.total_cycles >= flit.bound_cycles  # no run beats the bandwidth bound
    msg = simulate_allreduce(t, s, nic, net, size, model="message")
    if msg.total_cycles != pytest.approx(flit.total_cycles, rel=0.05):
        raise CalibrationMiss(f"message {msg.total_cycles:.0f} vs flit {flit.total_cycles:.0f} cycles: "
                              f"{100 * (msg.total_cycles / flit.total_cycles - 1):+.1f} %")
    return flit


# The main job's own runs (hw-models demo: torus:4x4:c4, 4 NIs, the CLI's default router of
# 2 VCs x 8 flits, 32 KiB..64 MiB; docs/allreduce.md "The main job's own runs"). Up to 4 MiB
# they run with the suite (about 15 s); 8-64 MiB are marked slow (about 4 minutes). They keep
# the plain criterion, within 5 % of the reset state's flit total: this router's 8-flit VCs
# cannot hold a 17-flit packet, so it has no cut-through counterpart.
DEMO_NET = FlitNetworkConfig()
_DEMO_DBTREE_BASE = ("the flit level itself does not scale smoothly with size (per-packet allocation races); the "
                     "message model, which does, is -4.5 to +20.8 % off it")
DEMO_MISSES = {
    ("dbtree", "baseline"): ({32 << 10, 64 << 10, 128 << 10, 512 << 10, 8 << 20, 32 << 20, 64 << 20}, _DEMO_DBTREE_BASE),
    ("multitree", "baseline"): ({64 << 10}, "small-size start-order residual of the as-soon-as-ready NICs (+8.0 %)"),
}
DEMO_CASES = [
    pytest.param(size, algorithm, design, id=f"{algorithm}-{design}-{_size_id(size)}", marks=[
        *([pytest.mark.slow] if size > 4 << 20 else []),
        *([pytest.mark.xfail(strict=True, raises=CalibrationMiss, reason=f"known residual > 5 %: "
                             f"{DEMO_MISSES[algorithm, design][1]}")]
          if size in DEMO_MISSES.get((algorithm, design), ((), ""))[0] else [])])
    for size in [(32 << 10) << i for i in range(12)]
    for algorithm in ("ring", "ring2d", "dbtree", "multitree") for design in ("codesigned", "baseline")
]


@pytest.mark.parametrize("size,algorithm,design", DEMO_CASES)
def test_the_main_jobs_runs_agree_with_the_flit_level(size, algorithm, design):
    t = parse_spec("torus:4x4:c4")
    _assert_models_agree(t, build(t, algorithm), NicConfig(design=design), size, net=DEMO_NET)


def test_single_transfer_times_are_exact():
    t = parse_spec("ring:4")
    s = Schedule.from_transfers("one", "ring:4", 4, 1, 1, [(0, 0, 1, 0, OP_REDUCE)])
    from nic.preparation import prepare
    from nic.flit_cosim import run_flit

    for design, bulk_flits, start in (("codesigned", 1 + 4096, 2), ("baseline", 256 * 17, 0)):
        nic = NicConfig(design=design)
        timing = run_flit(t, s, prepare(t, s, nic, 1 << 16), nic, NET)
        # the co-designed scheduler offers its first send two cycles after start (its
        # request register takes the entry in the first cycle of RUN); the NI
        # then injects one flit per cycle; the tail arrives after 1 + 2 x 3 cycles (1 hop)
        assert timing.start_cycles[0] == start
        assert timing.arrive_cycles[0] == start + bulk_flits - 1 + 1 + 2 * 3


@pytest.mark.parametrize("spec,algorithm", [("ring:8", "ring"), ("torus:4x4", "ring"), ("mesh:4x4", "bidir_ring")])
@pytest.mark.parametrize("design", ["codesigned", "baseline"])
def test_without_contention_the_message_model_has_the_flit_levels_times_to_the_cycle(spec, algorithm, design):
    # no two transfers share a link, so only the NICs' own cycle delays (the scheduler
    # contract's, or the baseline NI's) and the tail flit's latency set the times: every
    # transfer's start, NI release and arrival must be the flit level's, to the cycle
    # (message MODEL_VERSION 9; before it, 1 cycle per dependency off)
    from nic.allreduce import run_message
    from nic.preparation import prepare
    from nic.flit_cosim import run_flit

    t = parse_spec(spec)
    s = build(t, algorithm)
    nic = NicConfig(design=design)
    prep = prepare(t, s, nic, 64 << 10)
    flit = run_flit(t, s, prep, nic, NET)
    msg, _ = run_message(t, prep, nic, NET)
    for name in ("start_cycles", "sent_cycles", "arrive_cycles"):
        assert getattr(msg, name).tolist() == getattr(flit, name).tolist(), name


def test_the_arbiter_seed_moves_only_runs_with_contention():
    # the routers' round-robin pointers only break ties: without contention every seed gives
    # the reset state's times to the cycle; with it, the totals move (by tie-breaking alone)
    # and every run still performs the verified reduction (simulate_allreduce checks it)
    from nic.preparation import prepare
    from nic.flit_cosim import run_flit

    t = parse_spec("mesh:4x4")
    s = build(t, "bidir_ring")
    nic = NicConfig(design="baseline")
    prep = prepare(t, s, nic, 64 << 10)
    reset = run_flit(t, s, prep, nic, NET)
    for seed in (1, 2):
        seeded = run_flit(t, s, prep, nic, NET.model_copy(update={"arbiter_seed": seed}))
        assert seeded.arrive_cycles.tolist() == reset.arrive_cycles.tolist()
    tree = build(t, "dbtree")
    totals = {simulate_allreduce(t, tree, NicConfig(), NET.model_copy(update={"arbiter_seed": seed}), 64 << 10,
                                 model="flit").total_cycles for seed in (None, 1, 2, 3)}
    assert len(totals) > 1


_DOUBLE_COUNT = ("a transfer queued behind its NI's draining predecessor starts with the bytes it injected behind "
                 "it counted as already in the network and, on top of that, the buffers before its bottleneck as "
                 "slack: the same buffers twice, so its NI frees up to 23 % early (counting them once fixes this "
                 "check but, on message MODEL_VERSION 7, leaves 39 instead of 41 matrix cases within 5 % at 64 KiB, "
                 "through the as-soon-as-ready NIs' start order, which the per-flow link sharing decides; "
                 "docs/message_model_validation.md, 'Other known gaps')")


@pytest.mark.xfail(strict=True, raises=CalibrationMiss, reason=_DOUBLE_COUNT)
def test_queued_transfers_free_their_ni_when_the_flit_level_does():
    # nodes 0 and 1 each send three 8 KiB transfers (per-packet) to node 2 over the link
    # into it: their next transfers queue behind the draining ones in each NI
    t = parse_spec("torus:4x4")
    s = Schedule.from_transfers("queued", "torus:4x4", 16, 1, 6,
                                [(k, a, 2, 3 * a + k, OP_REDUCE) for a in (0, 1) for k in range(3)])
    from nic.allreduce import run_message
    from nic.preparation import prepare
    from nic.flit_cosim import run_flit

    nic = NicConfig(design="baseline")
    prep = prepare(t, s, nic, 6 * 8192)
    assert (prep.payload_bytes == 8192).all()
    flit = run_flit(t, s, prep, nic, NET)
    msg, _ = run_message(t, prep, nic, NET)
    # arrivals agree within 3 % already; the NIs' free times are what this checks
    assert msg.arrive_cycles == pytest.approx(flit.arrive_cycles, rel=0.03)
    queued = prep.step > 0  # each node's second and third transfers
    busy_flit = (flit.sent_cycles - flit.start_cycles)[queued]
    busy_msg = (msg.sent_cycles - msg.start_cycles)[queued]
    worst = float(abs(busy_msg / busy_flit - 1).max())
    if worst > 0.05:  # 1087 flit cycles each; 832 and 960 in the model; 1088 counting the buffers once
        raise CalibrationMiss(f"a queued transfer's NI busy time is {100 * worst:.1f} % off the flit level "
                              f"(message {busy_msg.round().tolist()} vs flit {busy_flit.tolist()} cycles)")


@pytest.mark.parametrize("spec,size", [("torus:4x4:c4", SIZE), ("torus:8x8:c4", 1 << 20)])
def test_codesigned_multitree_beats_ring_and_the_baseline_at_flit_level(spec, size):
    t = parse_spec(spec)
    ring = simulate_allreduce(t, build(t, "ring"), NicConfig(), NET, size, model="flit")
    mt = build(t, "multitree")
    co = simulate_allreduce(t, mt, NicConfig(), NET, size, model="flit")
    base = simulate_allreduce(t, mt, NicConfig(design="baseline"), NET, size, model="flit")
    assert co.total_cycles < ring.total_cycles / 2.5  # 4 NIs: about 3x
    assert co.total_cycles < base.total_cycles
    assert co.total_cycles >= co.bound_cycles
    assert 0 < co.link_utilisation_mean <= co.link_utilisation_max <= 1


NARROW_CASES = [pytest.param(algorithm, design, id=f"{algorithm}-{design}")
                for algorithm in ("ring", "multitree") for design in ("codesigned", "baseline")]


@pytest.mark.parametrize("algorithm,design", NARROW_CASES)
def test_message_model_is_within_5_percent_of_flit_level_on_half_width_links(algorithm, design):
    # 8 B/cycle links, 16-byte flits: the flit level sends one flit every 2 cycles per link,
    # the message model moves 8 bytes per cycle per link
    t = parse_spec("torus:4x4").with_links(bytes_per_cycle=8)
    s = build(t, algorithm)
    nic = NicConfig(design=design)
    flit = _assert_models_agree(t, s, nic)
    full = simulate_allreduce(parse_spec("torus:4x4"), s, nic, NET, SIZE, model="flit")
    assert flit.total_cycles == pytest.approx(2 * full.total_cycles, rel=0.05)  # bandwidth-bound: twice as long


def test_single_transfer_time_over_half_width_links_is_exact():
    t = parse_spec("ring:4").with_links(bytes_per_cycle=8)
    s = Schedule.from_transfers("one", "ring:4", 4, 1, 1, [(0, 0, 1, 0, OP_REDUCE)])
    from nic.preparation import prepare
    from nic.flit_cosim import run_flit

    nic = NicConfig(design="codesigned")
    timing = run_flit(t, s, prepare(t, s, nic, 1 << 16), nic, NET)
    flits = 1 + 4096
    # links: injection, ring, ejection; a flit takes 1 cycle of latency + 1 more of
    # serialisation on each, and SA 1 cycle before the ring and ejection links. The head is
    # granted the ejection link 2 + VA 1 + 3 + VA 1 = 7 cycles after it was injected, the
    # other flits follow on it one every 2 cycles, and the tail arrives 1 + 1 + 1 later.
    # (Full width, as above: 1 + 1 + 2 + 1 = 5, then 1 per flit, then 2.)
    assert timing.start_cycles[0] == 2
    assert timing.arrive_cycles[0] == 2 + 7 + 2 * (flits - 1) + 3


def test_flit_level_refuses_links_wider_than_a_flit():
    t = parse_spec("torus:4x4").with_links(bytes_per_cycle=32)
    with pytest.raises(ConfigError, match=r"flit_bytes = 16: torus.* wider than a flit.*at least 32"):
        simulate_allreduce(t, build(t, "ring"), NicConfig(), NET, SIZE, model="flit")
    for model in ("flit", "message"):  # a mismatch is a config error at both levels
        with pytest.raises(ConfigError, match=r"router flit_bytes = 8 and the NIC's flit_bytes = 16 disagree"):
            simulate_allreduce(parse_spec("torus:4x4"), build(t, "ring"), NicConfig(),
                               NET.model_copy(update={"flit_bytes": 8}), SIZE, model=model)


def test_with_one_vc_per_class_a_bulk_transfer_queues_behind_its_nis_drain():
    # the default router (2 VCs: one per dateline class on a torus): the NI's next bulk
    # packet needs the VC the draining one still holds, so it queues behind it; letting it
    # go at once instead puts this run at +7.4 % (measured with that change, docs/allreduce.md)
    t = parse_spec("torus:4x4")
    _assert_models_agree(t, build(t, "dbtree"), NicConfig(), net=FlitNetworkConfig())


def test_step_priority_lets_the_earlier_step_through_first_at_flit_level():
    """Node 0 (step 0) and node 1 (step 1, its first entry, so it issues at once) both send
    a bulk transfer to node 2 on ring:4: they share link 1->2 and node 2's ejection link. The
    co-designed NIC's packets carry their step as priority, so step 0's flits win every
    switch allocation: it arrives as if alone, and step 1's finishes after it. The baseline
    NIC (priority 0) shares the links: both take about twice as long."""
    from nic.preparation import prepare
    from nic.flit_cosim import run_flit

    t = parse_spec("ring:4")
    # node 2 sends each flow back as its root (a GATHER), so its scheduler expects both messages
    s = Schedule.from_transfers("two", "ring:4", 4, 1, 2, [(0, 0, 2, 0, OP_REDUCE), (1, 1, 2, 1, OP_REDUCE),
                                                           (2, 2, 0, 0, OP_GATHER), (3, 2, 1, 1, OP_GATHER)])
    size = 1 << 17  # 64 KiB per transfer
    flits = 1 + (size // 2) // 16
    arrive = {}
    for design in ("codesigned", "baseline"):
        nic = NicConfig(design=design, flow_control="bulk")
        arrive[design] = run_flit(t, s, prepare(t, s, nic, size), nic, NET).arrive_cycles
    co, base = arrive["codesigned"], arrive["baseline"]
    assert co[0] == pytest.approx(flits, rel=0.01)  # alone on its links
    assert co[1] == pytest.approx(2 * flits, rel=0.01)  # after it
    assert base[0] == pytest.approx(2 * flits, rel=0.02) and base[1] == pytest.approx(2 * flits, rel=0.02)


def test_the_co_simulation_compiles_once_whatever_arrays_prepare_built():
    # int32 or int64 dependencies and read-only broadcast reduction work are one kernel type
    # (run_flit normalises them): the same times, and one signature for this network type
    import dataclasses

    import numpy as np
    from numba.core import types

    from nic.flit_cosim import run_flit
    from nic.flit_cosim_stages import cosim
    from nic.preparation import prepare

    t = parse_spec("torus:4x4")
    s = build(t, "multitree")
    nic = NicConfig(design="codesigned", reduction="chunk")
    prep = prepare(t, s, nic, 16 << 10)
    last = prep.reduce_last.copy()
    last.flags.writeable = False
    other = dataclasses.replace(  # the same values: other integer types, a strided view, a read-only array
        prep, dep_ptr=prep.dep_ptr.astype(np.int64), dep_idx=prep.dep_idx.astype(np.int64),
        reduce_work=np.repeat(prep.reduce_work, 2)[::2], reduce_last=last)
    a = run_flit(t, s, prep, nic, NET)
    b = run_flit(t, s, other, nic, NET)
    assert a.arrive_cycles.tolist() == b.arrive_cycles.tolist()
    wide = [sig for sig in cosim.signatures if isinstance(sig[0].types[sig[0].fields.index("ser")], types.NoneType)]
    assert len(wide) == 1, wide
