"""Compression, SSD-SGD and K-FAC on worker and link profiles
(:mod:`hw_models.training.systems.profiled`): iteration times against hand computation on two
workers with a known straggler and a slow link, a profile of ones equal to no profile
exactly, a constant compute factor scaling compute exactly, a slow link equal to a slower
network, and the convergence rows' time to the target the sum of the iterations to it."""

from __future__ import annotations

import pytest

from hw_models.training.comm import AlphaBeta
from hw_models.training.costs import LayerCost
from hw_models.training.layers import Gemm, gemm_layer
from hw_models.training.systems.compression import Compressor
from hw_models.training.systems.kfac import factors, place
from hw_models.training.systems.profiled import Profiles, ProfiledRun, shifted_mean
from hw_models.training.systems.runner import Setting, run_compression, run_kfac, run_ssd
from hw_models.training.workloads import Workload

MEM = 1e11
G = 4_000_000  # one layer of 1M fp32 parameters
FWD, BWD = 1e-3, 2e-3
C = FWD + BWD
BW = 1e9
AR = G / BW  # a ring all-reduce on 2 workers, no latency: 2 * (1/2) * G / BW
LAYERS = (LayerCost("l", FWD, BWD, G),)
# worker 1 three times slower from iteration 2 on; node 0's links twice slower from iteration 3 on
WORKERS, LINKS = "at:2:1:3", "at:3:0:2"


def setting(layers=LAYERS, comm=None, workload=None, task=None, max_iterations=10, peak=1e12):
    comm = comm or AlphaBeta(0.0, BW, 2)
    return Setting(workload, 16, tuple(layers), comm, "ring", peak, MEM, task, 0.1, 0.95, max_iterations,
                   lambda s: comm)


def profiled(rows):
    return [r for r in rows if "stragglers" in r]


def nominal(rows):
    return [r for r in rows if "stragglers" not in r]


def bsp_hand(per_iteration):
    """Iteration t's seconds on WORKERS and LINKS from ``per_iteration(compute factor, link factor)``."""
    return lambda t: per_iteration(3.0 if t >= 2 else 1.0, 2.0 if t >= 3 else 1.0)


def test_the_draws_by_hand():
    p = Profiles(WORKERS, LINKS, 2)
    assert [p.workers_at(t) for t in range(4)] == [(1.0, 1.0), (1.0, 1.0), (1.0, 3.0), (1.0, 3.0)]
    assert [p.slowest_link_at(t) for t in range(5)] == [1.0, 1.0, 1.0, 2.0, 2.0]
    # SSD-SGD's period: the slowest worker's mean over the period, the slowest link at its start
    q = Profiles("at:0:0:2+at:1:0:0.5+at:1:1:2+at:2:1:0.5", "at:1:0:5", 2)
    key = q.period_key(2)
    assert [q.workers_at(t) for t in range(3)] == [(2.0, 1.0), (1.0, 2.0), (1.0, 1.0)]
    assert [key(t) for t in range(4)] == [(1.5, 1.0), (1.5, 1.0), (1.0, 5.0), (1.0, 5.0)]
    assert [q.bsp_key(t) for t in range(2)] == [(2.0, 1.0), (2.0, 5.0)]  # what a synchronous step waits for


def test_sync_sgd_and_compression_iterations_by_hand():
    """One layer on 2 workers: SGD's iteration is ``(fwd + bwd) c + allreduce x``; 8-bit
    compression's ``(fwd + bwd + 3 reads + decompress) c + allgather(2 wire) x``."""
    st = setting()
    timing, _ = run_compression(st, [Compressor("eightbit")], profiles=Profiles(WORKERS, LINKS, 2))
    wire = G // 4 + 4
    sgd = bsp_hand(lambda c, x: C * c + AR * x)
    comp = bsp_hand(lambda c, x: (C + 3 * G / MEM + (2 * wire + 2 * G) / MEM) * c + wire / BW * x)
    rows = profiled(timing)
    assert [r["run"] for r in rows] == ["full precision (ring all-reduce), stragglers at:2:1:3, links at:3:0:2",
                                        "eightbit, stragglers at:2:1:3, links at:3:0:2"]
    for row, hand in zip(rows, (sgd, comp)):
        assert row["profile_iterations"] == 10
        assert row["iteration_s"] == pytest.approx(sum(hand(t) for t in range(10)) / 10, rel=1e-9)
        assert row["nominal_iteration_s"] == pytest.approx(hand(0), rel=1e-9)
    assert nominal(timing)[0]["iteration_s"] == pytest.approx(sgd(0), rel=1e-9)
    assert rows[1]["reduction_percent"] == pytest.approx(100 * (1 - rows[1]["iteration_s"] / rows[0]["iteration_s"]))


def test_ssd_steps_wait_for_the_periods_slowest_worker_by_hand():
    """SSD-SGD k=2, one layer: a step is ``max((compute + update) c_p, allreduce x_p / k)``
    with ``c_p`` the slowest worker's mean over the period (1.5 here, where a synchronous step
    would wait for 2 twice) and ``x_p`` the slowest link at the period's start."""
    st = setting(max_iterations=6)
    prof = Profiles("at:0:0:2+at:1:0:0.5+at:1:1:2+at:2:1:0.5", "at:2:0:4", 2)
    timing, _ = run_ssd(st, [2], profiles=prof)
    step = C + 3 * G / MEM
    assert AR / 2 < step < 4 * AR / 2  # compute-bound at nominal links, network-bound at 4x
    hand = [1.5 * step, 1.5 * step, 4 * AR / 2, 4 * AR / 2, 4 * AR / 2, 4 * AR / 2]
    sgd = [2 * C + AR, 2 * C + AR, C + 4 * AR, C + 4 * AR, C + 4 * AR, C + 4 * AR]  # SSGD waits every step
    base, ssd = profiled(timing)
    assert ssd["run"].startswith("SSD-SGD k=2, stragglers ") and ssd["profile_iterations"] == 6
    assert ssd["iteration_s"] == pytest.approx(sum(hand) / 6, rel=1e-9)
    assert base["iteration_s"] == pytest.approx(sum(sgd) / 6, rel=1e-9)
    assert ssd["speedup"] == pytest.approx(base["iteration_s"] / ssd["iteration_s"])


def small_workload():
    conv = gemm_layer("conv", "conv", (Gemm(m=16, n=8, k=27),), 27 * 8 + 8, 8 * 16, 3 * 36)
    fc = gemm_layer("fc", "linear", (Gemm(m=1, n=10, k=128),), 128 * 10, 10, 128)  # no bias
    return Workload("tiny", (conv, fc))


KFAC_LAYERS = (LayerCost("conv", 1e-3, 2e-3, (27 * 8 + 8) * 4), LayerCost("fc", 5e-4, 1e-3, 1280 * 4))


@pytest.mark.parametrize("slow_worker", [0, 1])
def test_kfac_inversions_at_their_owners_speed_by_hand(slow_worker):
    """On a free network an iteration is ``(passes + factor compute + preconditioning) c +
    max_w load_w f_w``: balanced on 2 workers worker 0 owns the 128x128 inverse, worker 1 the
    three small ones; worker ``slow_worker`` three times slower from iteration 1 on."""
    peak = 1e9
    w = small_workload()
    st = setting(KFAC_LAYERS, AlphaBeta(0.0, float("inf"), 2), w, max_iterations=4, peak=peak)
    st.batch = 4
    fs = factors(w, 4)
    inv = [f.inverse_flops / (peak * 0.1) for f in fs]
    owner = place(inv, 2, "balanced")
    load = [sum(c for c, o in zip(inv, owner) if o == k) for k in range(2)]
    assert owner == (1, 1, 0, 1)
    fcomp = sum(f.compute_flops for f in fs) / peak
    pre = 2 * (28 * 28 * 8 + 28 * 8 * 8 + 128 * 128 * 10 + 128 * 10 * 10) / peak

    def hand(t):
        f = [1.0, 1.0]
        if t >= 1:
            f[slow_worker] = 3.0
        return (4.5e-3 + fcomp + pre) * max(f) + max(load[0] * f[0], load[1] * f[1])

    timing, _ = run_kfac(st, 0.1, profiles=Profiles(f"at:1:{slow_worker}:3", "none", 2))
    rows = {r["run"].split(",")[0]: r for r in profiled(timing)}
    spd = rows["SPD-KFAC (pipelined"]
    assert spd["iteration_s"] == pytest.approx(sum(hand(t) for t in range(4)) / 4, rel=1e-9)
    assert spd["nominal_iteration_s"] == pytest.approx(hand(0), rel=1e-9)
    assert rows["SGD (ring"]["iteration_s"] == pytest.approx(4.5e-3 * (1 + 3 * 3) / 4, rel=1e-9)


def _systems(st, prof):
    """Every profiled timing row of the three systems on ``st`` under ``prof``, and the nominal rows."""
    out = []
    for rows in (run_compression(st, [Compressor("topk", 0.01), Compressor("onebit")], "both", profiles=prof)[0],
                 run_ssd(st, [1, 3], profiles=prof)[0], run_kfac(st, 0.05, profiles=prof)[0]):
        out.append((nominal(rows), profiled(rows)))
    return out


@pytest.fixture(scope="module")
def tiny():
    """The tiny three-layer network on the 2x2 torus's message-level network, as the command resolves it."""
    import tempfile
    from pathlib import Path

    from hw_models.training.systems.setup import resolve_setting
    from tiny_workload import NET

    d = Path(tempfile.mkdtemp())
    (d / "tiny.toml").write_text(NET)
    st, _, _ = resolve_setting("kfac", str(d / "tiny.toml"), 4, "multitree-node", "torus:2x2", None, "ring", None,
                               None, "none", None, None, 12, 0)
    return st


def test_a_profile_of_ones_is_no_profile_exactly(tiny):
    """Through the profiled code path, every iteration of a profile of ones is the nominal
    iteration exactly (the commands then print no profiled rows: a profile of ones is their
    default run, byte for byte)."""
    for nom, prof in _systems(tiny, Profiles("const:1", "const:1/1/1/1", 4)):
        assert len(prof) == len(nom)
        for n, p in zip(nom, prof):
            assert p["iteration_s"] == n["iteration_s"] == p["nominal_iteration_s"] and p["slowdown"] == 1.0


def test_a_constant_compute_factor_scales_compute_exactly(tiny):
    """On a free network (only compute), workers all 2.5 times slower: every iteration 2.5
    times the nominal one; and a constant link factor on a latency-free alpha-beta network
    equals that network with the bandwidth divided by it."""
    st = setting(tiny.layers, AlphaBeta(0.0, float("inf"), 4), tiny.workload, max_iterations=12)
    st.batch = tiny.batch
    for nom, prof in _systems(st, Profiles("const:2.5", "none", 4)):
        for n, p in zip(nom, prof):
            assert p["iteration_s"] == pytest.approx(2.5 * n["iteration_s"], rel=1e-12)
    slow = setting(tiny.layers, AlphaBeta(0.0, 1e8, 4), tiny.workload, max_iterations=12)
    slower = setting(tiny.layers, AlphaBeta(0.0, 1e8 / 3, 4), tiny.workload, max_iterations=12)
    slow.batch = slower.batch = tiny.batch
    got = _systems(slow, Profiles("none", "const:3", 4))
    want = _systems(slower, None)
    for (_, prof), (nom, _) in zip(got, want):
        assert [p["iteration_s"] for p in prof] == pytest.approx([n["iteration_s"] for n in nom], rel=1e-9)


def test_time_to_target_is_the_sum_of_the_iterations_to_it():
    from hw_models.training.systems.tasks import Task

    st = setting(task=Task("logreg", workers=2, batch=16, seed=0), max_iterations=300)
    timing, conv = run_compression(st, [Compressor("eightbit")], profiles=Profiles(WORKERS, LINKS, 2))
    wire = G // 4 + 4
    per = {"sgd": bsp_hand(lambda c, x: C * c + AR * x),
           "eightbit": bsp_hand(lambda c, x: (C + 3 * G / MEM + (2 * wire + 2 * G) / MEM) * c + wire / BW * x)}
    ref, _, ef = conv
    assert ref["iterations_to_target"] > 3 and ef["iterations_to_target"] != ""
    for row, hand in ((ref, per["sgd"]), (ef, per["eightbit"])):
        assert row["time_to_target_s"] == pytest.approx(sum(hand(t) for t in range(row["iterations_to_target"])),
                                                        rel=1e-9)
        assert (row["stragglers"], row["links"]) == ("at:2:1:3", "at:3:0:2")
    assert ef["time_to_target_vs_reference"] == round(ef["time_to_target_s"] / ref["time_to_target_s"], 4)
    assert conv[1]["time_to_target_s"] == "" or conv[1]["iterations_to_target"] != ""
    means = {r["run"].split(",")[0]: r["iteration_s"] for r in profiled(timing)}
    assert ef["iteration_time_vs_reference"] == round(means["eightbit"] / means["full precision (ring all-reduce)"], 4)


def test_profiled_run_and_mean():
    calls = []
    run = ProfiledRun(lambda t: (t % 2,), lambda k: calls.append(k) or 1.0 + k)
    assert [run.seconds(t) for t in range(5)] == [1.0, 2.0, 1.0, 2.0, 1.0]
    assert calls == [0, 1]  # each key once
    assert run.total_s(5) == 7.0 and run.mean_s(4) == 1.5
    assert shifted_mean([0.1] * 7) == 0.1 and shifted_mean([1.0, 2.0, 4.0]) == pytest.approx(7 / 3)


def test_the_parameter_servers_links_slow_its_pushes_and_pulls():
    """Every node's links twice slower is every push and pull twice as long: the same
    updates, each at the time of the run with doubled push and pull costs."""
    from hw_models.training.hetero import Profile
    from hw_models.training.systems.ps_layers import simulate_ps_layers

    layers = [LayerCost("a", 1e-3, 2e-3, 4000), LayerCost("b", 2e-3, 1e-3, 8000)]
    push, pull = [1e-3, 3e-3], [2e-3, 1e-3]
    for mode, eager in (("sync", False), ("async", True), ("ssp:1", False)):
        kw = dict(mode=mode, eager=eager, stragglers=Profile.parse("slow:1:2", 3), gradients=30, seed=2)
        got = simulate_ps_layers(layers, push, pull, 3, links=Profile.parse("const:2", 3), servers=(0, 1), **kw)
        want = simulate_ps_layers(layers, [2 * x for x in push], [2 * x for x in pull], 3, **kw)
        assert [(u.workers, u.read_versions) for u in got.updates] == [(u.workers, u.read_versions)
                                                                        for u in want.updates]
        assert [u.time_s for u in got.updates] == pytest.approx([u.time_s for u in want.updates], rel=1e-12)
    # one slow node: only its own requests (and the synchronous broadcast) slow down
    one = simulate_ps_layers(layers, push, pull, 3, mode="async", links=Profile.parse("at:0:2:4", 3),
                             servers=(0,), gradients=30)
    base = simulate_ps_layers(layers, push, pull, 3, mode="async", gradients=30)
    assert one.time_per_iteration_s() > base.time_per_iteration_s()


def test_easgd_links_slow_its_exchanges():
    """Links three times slower: the synchronous round's all-reduce three times as long; an
    asynchronous exchange with the master on node 0 as slow as the worker's link to it (worker
    0 is the master's node: no link); hogwild's demands between the two."""
    from hw_models.training.hetero import Profile
    from hw_models.training.systems.hogwild import simulate_easgd

    kw = dict(update_s=1e-4, stragglers=Profile.parse("slow:1:2", 4), iterations=20, seed=1)
    three = Profile.parse("const:3", 4)
    got = simulate_easgd("sync", 2, 4, 3e-3, exchange_s=1e-3, allreduce_s=2e-3, links=three, **kw)
    want = simulate_easgd("sync", 2, 4, 3e-3, exchange_s=1e-3, allreduce_s=6e-3, **kw)
    assert got.time_per_iteration_s() == pytest.approx(want.time_per_iteration_s(), rel=1e-12)
    run = simulate_easgd("async", 2, 4, 3e-3, exchange_s=1e-3, allreduce_s=2e-3, links=three, **kw)
    assert {e.worker for e in run.exchanges} == {0, 1, 2, 3}
    for e in run.exchanges:  # the round-robin master: read at the start, write after exchange and update
        assert e.write_s - e.read_s == pytest.approx((1e-3 if e.worker == 0 else 3e-3) + 1e-4, rel=1e-9)
    hog = [simulate_easgd("hogwild", 2, 4, 3e-3, exchange_s=x, allreduce_s=2e-3, links=lk, **kw).time_per_iteration_s()
           for x, lk in ((1e-3, None), (1e-3, three), (3e-3, None))]
    assert hog[0] < hog[1] <= hog[2]


def test_dcts_hybrid_rows_on_the_profiles():
    """DCT's hybrid iterations (``--mp-keep``) on the profiles: ones give the nominal rows
    exactly; workers 2.5x slower on a free network, every iteration 2.5x; links 3x slower on a
    latency-free network, the network of a third of the bandwidth."""
    from hw_models.training.systems.runner import run_dct_mp
    from hw_models.training.systems.setup import resolve_setting

    st, _, _ = resolve_setting("compression", "ncf", 64, "multitree-node", "torus:2x2", None, "ring", None, None,
                               "none", None, None, 12, 0)
    timing, _ = run_dct_mp(st, 0.1, profiles=Profiles("const:1", "none", 4))
    nom, prof = nominal(timing), profiled(timing)
    assert [p["run"].split(", stragglers")[0] for p in prof] == [n["run"] for n in nom]
    assert [p["iteration_s"] for p in prof] == [n["iteration_s"] for n in nom]

    def rows(bw, profiles):
        s = setting(st.layers, AlphaBeta(0.0, bw, 4), st.workload, max_iterations=12)
        s.batch = st.batch
        return run_dct_mp(s, 0.1, profiles=profiles)[0]

    free = rows(float("inf"), Profiles("const:2.5", "none", 4))
    assert [p["iteration_s"] for p in profiled(free)] == pytest.approx([2.5 * n["iteration_s"] for n in nominal(free)],
                                                                       rel=1e-12)
    slow = profiled(rows(1e8, Profiles("none", "const:3", 4)))
    assert [p["iteration_s"] for p in slow] == pytest.approx([n["iteration_s"] for n in nominal(rows(1e8 / 3, None))],
                                                             rel=1e-9)


def test_synchronous_sgd_on_the_profiles_is_dlions_all_reduce_baseline():
    """A second path: DLion's synchronous all-reduce baseline draws the same factors and times
    its rounds on the timeline by its own code; round by round it is the profiled SGD."""
    from hw_models.training.systems.dlion import Net, allreduce_baseline
    from hw_models.training.systems.runner import _Profiled
    from hw_models.training.systems.tasks import Task
    from hw_models.training.hetero import Profile

    layers = (LayerCost("a", 0.10, 0.20, 1000), LayerCost("b", 0.05, 0.10, 600), LayerCost("c", 0.05, 0.10, 1000))
    ring = AlphaBeta(latency_s=1e-3, bytes_per_s=2e3, num_workers=4)
    m = sum(x.grad_bytes for x in layers)
    net = Net(sum(x.fwd_s + x.bwd_s for x in layers), ring.all_gather_s(4 * m), ring.allreduce_s(m), m, layers,
              lambda b: ring.all_gather_s(4 * b), ring, "wfbp")
    w, lk = "slow:1:3+walk:0.3+lognormal:0.2", "walk:0.3"
    task = Task("logreg", workers=4, batch=16, seed=3)
    base = allreduce_baseline(task, net, Profile.parse(w, 4, seed=3), Profile.parse(lk, 4, seed=4), 0.1,
                              target=0.99, max_iterations=30, seed=3)
    prof = _Profiled(setting(layers, ring), Profiles(w, lk, 4, seed=3))
    prof.add("base", "sgd", 0.0, prof.sgd())
    run = prof.runs["base"][2]
    assert len(base.extra["round_s"]) == 30
    assert [run.seconds(t) for t in range(30)] == pytest.approx(list(base.extra["round_s"]), rel=1e-9)
