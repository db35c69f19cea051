"""The EASGD family with unequal worker speeds: the event simulation against hand-worked
event orders and the closed forms, the replay against the lockstep arithmetic (bit for bit
with equal speeds) and against the simulation's own record of what each read saw."""

from __future__ import annotations

import pytest

from hw_models.training.systems.easgd import easgd
from hw_models.training.systems.hogwild import replay_easgd, simulate_easgd
from hw_models.training.systems.ps import Stragglers
from hw_models.training.systems.tasks import Task
from noc.base.errors import ConfigError

KW = dict(exchange_s=0.01, update_s=0.003, allreduce_s=0.02)


@pytest.fixture(scope="module")
def task():
    return Task("logreg", workers=4, batch=8, seed=4)


@pytest.mark.parametrize("tau", [1, 3])
def test_equal_speeds_hogwild_is_sync_bit_for_bit(task, tau):
    run = simulate_easgd("hogwild", tau, 4, 0.1, iterations=45, **KW)
    assert {e.staleness for e in run.exchanges} == {3}  # all four read one centre, write at one instant
    a = replay_easgd(task, run, 0.2, alpha=0.1, target=0.999, eval_every=5)
    b = easgd(task, "sync", 0.2, alpha=0.1, tau=tau, target=0.999, max_iterations=45, eval_every=5)
    assert a.curve == b.curve and len(a.curve) == 9


@pytest.mark.parametrize("variant", ["async", "measgd", "sync"])
def test_equal_speeds_replay_is_the_lockstep_arithmetic(task, variant):
    run = simulate_easgd(variant, 2, 4, 0.1, iterations=30, **KW)
    a = replay_easgd(task, run, 0.2, alpha=0.1, target=0.999, eval_every=5)
    b = easgd(task, variant, 0.2, alpha=0.1, tau=2, target=0.999, max_iterations=30, eval_every=5)
    assert a.curve == b.curve


@pytest.mark.parametrize("variant", ["sync", "async", "hogwild"])
@pytest.mark.parametrize("tau", [1, 4])
def test_equal_speed_rates_against_the_blocking_closed_form(variant, tau):
    # a worker waits for its own exchange: a round is tau steps plus the exchange's latency
    n, c = 4, 0.1
    run = simulate_easgd(variant, tau, n, c, iterations=80, **KW)
    ex = {"sync": KW["allreduce_s"] + KW["update_s"], "hogwild": n * max(KW["exchange_s"], KW["update_s"]),
          "async": None}[variant]
    if variant == "async":  # staggered after the first round: only its own exchange
        ex = KW["exchange_s"] + KW["update_s"]
    assert run.time_per_iteration_s() == pytest.approx((tau * c + ex) / tau, rel=1e-9)


def test_hogwild_event_order_by_hand():
    # 3 workers, compute 1 s, worker 2 is 1.5x slower; an exchange alone takes 0.5 s on the master,
    # concurrent exchanges share it equally
    run = simulate_easgd("hogwild", 1, 3, 1.0, exchange_s=0.5, update_s=0.0, allreduce_s=0.0,
                         stragglers=Stragglers.parse("slow:1:1.5", 3), iterations=4)
    ex = {(e.worker, e.after_steps): e for e in run.exchanges}
    # t=1: workers 0 and 1 read version 0 and share the master; t=1.5 (0.25 s left each) worker 2
    # reads version 0 and joins; 0 and 1 write at 1.5 + 3 * 0.25 = 2.25, worker 2 alone at 2.5
    for w in (0, 1):
        assert (ex[(w, 1)].read_s, ex[(w, 1)].read_version) == (1.0, 0)
        assert ex[(w, 1)].write_s == pytest.approx(2.25) and ex[(w, 1)].staleness == 1
    assert (ex[(2, 1)].read_s, ex[(2, 1)].read_version) == (1.5, 0)
    assert ex[(2, 1)].write_s == pytest.approx(2.5) and ex[(2, 1)].staleness == 2
    # t=3.25: workers 0 and 1 read version 3 (all three writes landed); t=4.0: 0.125 s left each,
    # worker 2 reads version 3 and joins; 0 and 1 write at 4.0 + 3 * 0.125, worker 2 at 4.75
    assert ex[(0, 2)].read_s == pytest.approx(3.25) and ex[(0, 2)].read_version == 3
    assert ex[(2, 2)].read_s == pytest.approx(4.0) and ex[(2, 2)].read_version == 3
    assert ex[(0, 2)].write_s == pytest.approx(4.375) and ex[(0, 2)].staleness == 1
    assert ex[(2, 2)].write_s == pytest.approx(4.75) and ex[(2, 2)].staleness == 2


def test_stragglers_make_hogwild_differ_and_the_replay_reads_what_the_events_say(task):
    strag = Stragglers.parse("slow:1:3+lognormal:0.5", 4)
    kw = dict(exchange_s=0.05, update_s=0.003, allreduce_s=0.02)
    run = simulate_easgd("hogwild", 1, 4, 0.1, stragglers=strag, iterations=60, seed=3, **kw)
    stale = [e.staleness for e in run.exchanges]
    assert min(stale) < max(stale) and 0 < sum(stale) / len(stale) < 3  # not the lockstep N - 1
    a = replay_easgd(task, run, 0.2, alpha=0.1, target=0.999, eval_every=5)
    # the replay's count of writes applied before each read, in event order, is the simulation's
    reads = sorted(run.exchanges, key=lambda e: (e.read_s, e.read_version))
    n_reads = len(a.extra["read_versions"])
    assert n_reads > 30 and list(a.extra["read_versions"]) == [e.read_version for e in reads][:n_reads]
    sync = replay_easgd(task, simulate_easgd("sync", 1, 4, 0.1, stragglers=strag, iterations=60, seed=3, **kw),
                        0.2, alpha=0.1, target=0.999, eval_every=5)
    assert a.curve != sync.curve
    # same seed, same run; another seed, another
    again = simulate_easgd("hogwild", 1, 4, 0.1, stragglers=strag, iterations=60, seed=3, **kw)
    assert again == run
    assert simulate_easgd("hogwild", 1, 4, 0.1, stragglers=strag, iterations=60, seed=4, **kw) != run


def test_bad_input(task):
    with pytest.raises(ConfigError, match="exchange_s = -1"):
        simulate_easgd("hogwild", 1, 4, 0.1, exchange_s=-1, update_s=0.0, allreduce_s=0.0)
    with pytest.raises(ConfigError, match="variant = 'downpour'"):
        simulate_easgd("downpour", 1, 4, 0.1, **KW)
    run = simulate_easgd("hogwild", 1, 4, 0.1, iterations=10, **KW)
    with pytest.raises(ConfigError, match="task has 3 workers"):
        replay_easgd(Task("logreg", workers=3, batch=8, seed=0), run, 0.1, alpha=0.1, target=0.9)
