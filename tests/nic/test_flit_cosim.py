"""Flit-level all-reduce co-simulation: checked results, NIC behaviour, and the calibration
of the message-level model against it (docs/allreduce.md, "Calibration")."""

from __future__ import annotations

import pytest

from nic import calibration
from nic.allreduce import NicConfig, simulate_allreduce
from nic.collectives import Schedule, build
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.errors import ConfigError
from noc.flit import FlitNetworkConfig
from noc.topology import parse_spec

NET = FlitNetworkConfig(num_vcs=4, vc_depth_flits=32)


class CalibrationMiss(AssertionError):
    """The message model is more than 5 % off the flit level: the only failure a known
    residual's expected failure accepts (a broken bound or verification still fails it)."""


SIZE = 256 * 1024

# (topology, algorithm, NIC) -> the mechanism, where the message model is known to miss
# the flit level by more than 5 % (measured residuals and evidence in docs/allreduce.md,
# "Calibration"). All three are per-packet (baseline NIC) runs losing throughput in the
# routers' FIFO VCs and switch allocation beyond what the message model represents.
_HOL = ("head-of-line blocking in the per-packet network: the distance-2 exchanges of a 4-node torus ring "
        "put a flow that ejects and a flow that continues to a contended output in the same router input; "
        "the message model caps such inputs at 0.75 of their link where they form a loop (MODEL_VERSION 8: "
        "-18.7 -> -5.2 % at 256 KiB, -20.0 -> -6.7 % at 1 MiB, within 5 % at 32-128 KiB); the rest is not established")
KNOWN_RESIDUALS = {
    ("torus:4x4", "halving_doubling", "baseline"): _HOL + "; a wormhole effect: with virtual cut-through on the "
    "same router the flit level takes 5.7-6.8 % fewer cycles from 256 KiB on and the model is within 0.6 % of it "
    "(bench/message_calibration.py --vct)",
    ("torus:4x4:c4", "halving_doubling", "baseline"): _HOL + "; with 4 NIs (-23.4 -> -16.5 % at 256 KiB) the "
    "step-0 transfers to a neighbour also wait behind the step-1 transfers to the node beyond it in the shared "
    "class-0 VCs (up to 2670 cycles after their NI finished); not a wormhole effect: -11.6 to -18.9 % against "
    "virtual cut-through too (the routers' round-robin over input ports with FIFO VCs)",
    ("fattree:k4:l2", "bidir_ring", "baseline"): "separable input-first switch allocation: an NI's next transfer "
    "shares the injection input with the previous one's waiting packets, the input sends one flit per cycle and "
    "loses cycles to a contended output, the rings fall out of step and transfers collide "
    "(chaotic: within 4 % with 28- or 36-flit VCs or iSLIP, and within 0.1-3.7 % of virtual cut-through from "
    "128 KiB on; -16 to -23 % with 30-34 flits; "
    "not a tie-breaking accident: -21.7 to -22.9 % with arbiter_seed 1-4). The drift starts from a long route's "
    "tail meeting a short route's head on a shared ejection link, which the model's per-packet flows, timed at "
    "the source, never do",
}

# At 1 MiB and 4 MiB the same three miss (message MODEL_VERSION 9).
LARGER_SIZE_RESIDUALS = dict(KNOWN_RESIDUALS)

# At 32, 64 and 128 KiB (transfers of a few packets) more per-packet cases miss, but not the
# halving-doubling on torus:4x4 (-2.8, -2.2, -3.4 %); measured with
# bench/message_calibration.py (message MODEL_VERSION 6; re-measured with 7, 8 and 9);
# mechanisms not established except where said.
_SMALL = "small-size residual (transfers of a few packets; mechanism not established): "
_LARGE_ONLY = {("torus:4x4", "halving_doubling", "baseline")}
_ALL_SIZES = {k: v for k, v in KNOWN_RESIDUALS.items() if k not in _LARGE_ONLY}
SMALLER_SIZE_RESIDUALS = {
    32 << 10: {
        **_ALL_SIZES,
        ("torus:4x4:c4", "dbtree", "baseline"): "small-size residual: the routers share a link round-robin among "
        "their input ports (4:1 for four flows on their own NIs' inputs against four through one input), max-min "
        "per flow makes them arrive together, and the next step's transfers then share their routes where at flit "
        "level they forward one after another (+13.2 % at 32 KiB, +6.2 % at 64 KiB, -0.0 % at 256 KiB; sharing "
        "per input port in the model fixes 32 KiB and breaks 256 KiB)",
        ("torus:4x4:c4", "multitree", "baseline"): _SMALL + "+31.0 % at 32 KiB (+12.2 % before the NIs' own cycle "
        "delays, MODEL_VERSION 9: a cycle either way reorders its as-soon-as-ready starts), -10.4 % at 128 KiB, "
        "+3.7 % at 256 KiB",
        ("fattree:k4:l2", "dbtree", "baseline"): _SMALL + "+5.5 % at 32 KiB (+3.5 % before MODEL_VERSION 9), within "
        "5 % from 64 KiB",
        ("fattree:k4:l2", "multitree", "baseline"): "small-size residual: the message model is fast (-14.7 % at "
        "32 KiB, -10.4 % at 64 KiB, within 5 % from 128 KiB); flows converging on an ejection link back up into "
        "shared spine buffers and the NIs' injection VCs (modelled since MODEL_VERSION 7, was -27.0 %), and "
        "flows to other nodes wait behind those packets in the same FIFO VCs (head-of-line blocking outside the loops "
        "of inputs the model caps)",
    },
}
SMALLER_SIZE_RESIDUALS[64 << 10] = {k: v for k, v in SMALLER_SIZE_RESIDUALS[32 << 10].items()
                                    if k[:2] not in {("fattree:k4:l2", "dbtree"), ("torus:4x4:c4", "multitree")}}
SMALLER_SIZE_RESIDUALS[128 << 10] = {
    **_ALL_SIZES,
    ("torus:4x4:c4", "multitree", "baseline"): SMALLER_SIZE_RESIDUALS[32 << 10][("torus:4x4:c4", "multitree", "baseline")],
}


def _size_id(size):
    return f"{size >> 20}MiB" if size >= 1 << 20 else f"{size >> 10}KiB"


def _cases(residuals, *extra_marks, size=None):
    return [
        pytest.param(*(() if size is None else (size,)), spec, algorithm, design,
                     id=f"{spec}-{algorithm}-{design}" + ("" if size is None else f"-{_size_id(size)}"),
                     marks=[*extra_marks, *([pytest.mark.xfail(strict=True, raises=CalibrationMiss,
                                                               reason=f"known residual > 5 %: "
                                                               f"{residuals[spec, algorithm, design]}")]
                                            if (spec, algorithm, design) in residuals else [])])
        for spec, algorithm, design in calibration.cases()
    ]


CASES = _cases(KNOWN_RESIDUALS)
LARGER_CASES = _cases(LARGER_SIZE_RESIDUALS, size=1 << 20) + _cases(LARGER_SIZE_RESIDUALS, pytest.mark.slow, size=4 << 20)
SMALLER_CASES = (_cases(SMALLER_SIZE_RESIDUALS[32 << 10], size=32 << 10)
                 + _cases(SMALLER_SIZE_RESIDUALS[64 << 10], size=64 << 10)
                 + _cases(SMALLER_SIZE_RESIDUALS[128 << 10], pytest.mark.slow, size=128 << 10))


def test_the_calibration_matrix_has_its_46_cases_and_the_residuals_are_among_them():
    assert len(CASES) == 46 == len(set(calibration.cases()))
    assert set(LARGER_SIZE_RESIDUALS) <= set(calibration.cases())
    for residuals in SMALLER_SIZE_RESIDUALS.values():
        assert set(residuals) <= set(calibration.cases())


@pytest.mark.parametrize("spec,algorithm,design", CASES)
def test_message_model_is_within_5_percent_of_flit_level(spec, algorithm, design):
    t = parse_spec(spec)
    _assert_models_agree(t, build(t, algorithm), NicConfig(design=design))


@pytest.mark.parametrize("size,spec,algorithm,design", LARGER_CASES)
def test_message_model_is_within_5_percent_of_flit_level_at_larger_sizes(size, spec, algorithm, design):
    # 1 MiB runs with the suite (about 30 s for the matrix); 4 MiB is marked slow (about 2 min)
    t = parse_spec(spec)
    _assert_models_agree(t, build(t, algorithm), NicConfig(design=design), size)


@pytest.mark.parametrize("size,spec,algorithm,design", SMALLER_CASES)
def test_message_model_is_within_5_percent_of_flit_level_at_smaller_sizes(size, spec, algorithm, design):
    # 32 and 64 KiB run with the suite; 128 KiB is marked slow
    t = parse_spec(spec)
    _assert_models_agree(t, build(t, algorithm), NicConfig(design=design), size)


def _assert_models_agree(t, s, nic, size=SIZE, net=NET):
    """The message model is within 5 % of the flit level (each run raises if its times
    break a dependency of the verified schedule); returns the flit-level result."""
    flit = simulate_allreduce(t, s, nic, net, size, model="flit")
    assert flit.total_cycles >= flit.bound_cycles  # no run beats the bandwidth bound
    msg = simulate_allreduce(t, s, nic, net, size, model="message")
    if msg.total_cycles != pytest.approx(flit.total_cycles, rel=0.05):
        raise CalibrationMiss(f"message {msg.total_cycles:.0f} vs flit {flit.total_cycles:.0f} cycles: "
                              f"{100 * (msg.total_cycles / flit.total_cycles - 1):+.1f} %")
    return flit


# The main job's own runs (hw-models demo: torus:4x4:c4, 4 NIs, the CLI's default router of
# 2 VCs x 8 flits, 32 KiB..64 MiB; docs/allreduce.md "The main job's own runs"). Up to 4 MiB
# they run with the suite (about 15 s); 8-64 MiB are marked slow (about 4 minutes).
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
    from nic.allreduce import prepare
    from nic.flit_cosim import run_flit

    for design, bulk_flits, start in (("codesigned", 1 + 4096, 1), ("baseline", 256 * 17, 0)):
        nic = NicConfig(design=design)
        timing = run_flit(t, s, prepare(t, s, nic, 1 << 16), nic, NET)
        # the co-designed scheduler offers its first send one cycle after start; the NI
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
    from nic.allreduce import prepare, run_message
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
    from nic.allreduce import prepare
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
                 "docs/allreduce.md 'At smaller sizes')")


@pytest.mark.xfail(strict=True, raises=CalibrationMiss, reason=_DOUBLE_COUNT)
def test_queued_transfers_free_their_ni_when_the_flit_level_does():
    # nodes 0 and 1 each send three 8 KiB transfers (per-packet) to node 2 over the link
    # into it: their next transfers queue behind the draining ones in each NI
    t = parse_spec("torus:4x4")
    s = Schedule.from_transfers("queued", "torus:4x4", 16, 1, 6,
                                [(k, a, 2, 3 * a + k, OP_REDUCE) for a in (0, 1) for k in range(3)])
    from nic.allreduce import prepare, run_message
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
    from nic.allreduce import prepare
    from nic.flit_cosim import run_flit

    nic = NicConfig(design="codesigned")
    timing = run_flit(t, s, prepare(t, s, nic, 1 << 16), nic, NET)
    flits = 1 + 4096
    # links: injection, ring, ejection; a flit takes 1 cycle of latency + 1 more of
    # serialisation on each, and SA 1 cycle before the ring and ejection links. The head is
    # granted the ejection link 2 + VA 1 + 3 + VA 1 = 7 cycles after it was injected, the
    # other flits follow on it one every 2 cycles, and the tail arrives 1 + 1 + 1 later.
    # (Full width, as above: 1 + 1 + 2 + 1 = 5, then 1 per flit, then 2.)
    assert timing.start_cycles[0] == 1
    assert timing.arrive_cycles[0] == 1 + 7 + 2 * (flits - 1) + 3


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
    from nic.allreduce import prepare
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
