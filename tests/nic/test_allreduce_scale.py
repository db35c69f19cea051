"""The message model's large-scale path against second implementations.

* the event loop fed routes (``simulate_routes``: state only for the transfers under way,
  derived from each route as the transfer starts) against the same loop fed every
  transfer's arrays (``simulate_transfers`` with ``message_flow_control``'s wormhole and
  private injection links, the way runs were set up before);
* its slot pool, grown from a single slot, against the default pool;
* the dependency lists, NI slots, pair routes, canonical transfer order and the timed
  verifier's event order against plain or sorting implementations;
* the memory estimate against a measured run (slow).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nic.allreduce as ar
import nic.message_sim as ms
import nic.preparation as preparation
from nic.allreduce import NicConfig, run_message
from nic.flow_control import message_flow_control
from nic.preparation import prepare, transfer_routes
from nic.collectives import Schedule, build, builder
from noc.flit import FlitNetworkConfig
from noc.message import path_latency_cycles
from noc.topology import parse_spec

verify_mod = importlib.import_module("nic.collectives.verify")

NICS = {
    "codesigned": NicConfig(),
    "baseline": NicConfig(design="baseline"),
    "packet": NicConfig(flow_control="packet"),
    "chunk-reduction": NicConfig(reduction="chunk", reduce_elements_per_cycle=8.0, reduce_latency_cycles=3),
    "stream-reduction": NicConfig(design="baseline", reduction="stream", reduce_elements_per_cycle=4.0),
    "tx-queue": NicConfig(tx_buffer_flits=64),
}
NETWORKS = {
    "fluid": None,
    "default": FlitNetworkConfig(),  # one VC per dateline class: VC holding, shared classes, head-of-line rule
    "4vcs": FlitNetworkConfig(num_vcs=4, vc_depth_flits=32),
    "islip": FlitNetworkConfig(num_vcs=4, sw_allocator="islip", routing_delay_cycles=1),
}


def _transfer_arrays_run(t, prep, nic, network, paths, not_before=None):
    """The run as it was set up before routes were given to the loop: every transfer's
    arrays, with a private injection link per transfer."""
    links = np.asarray(paths.links, np.int64)
    wormhole, ni_bw, shared = message_flow_control(t, paths, prep, nic, network)
    private = links.copy()
    private[:, 0] = t.num_links + np.arange(len(links))
    free = nic.reduction == "free"
    return ms.simulate_transfers(
        src_node=prep.src_node, step=prep.step, wire_bytes=prep.wire_bytes, dep_ptr=prep.dep_ptr,
        dep_idx=prep.dep_idx, path_links=private, path_len=np.asarray(paths.length, np.int64),
        path_latency_cycles=path_latency_cycles(t, paths, 0 if network is None else network.router_delay_cycles),
        link_bytes_per_cycle=np.concatenate([t.link_bytes_per_cycle, ni_bw]), num_nodes=t.num_nodes,
        nis_per_node=t.nis_per_node, policy=nic.policy, **ar.nic_delays(nic), wormhole=wormhole,
        shared_resources=None if shared is None else shared[0], shared_capacity=None if shared is None else shared[1],
        not_before=not_before, step_priority=nic.prioritised and ar.honours_priority(network), dst_node=prep.dst_node,
        reduce_work_cycles=None if free else prep.reduce_work, reduce_last_cycles=None if free else prep.reduce_last,
        reduce_latency_cycles=nic.reduce_latency_cycles, reduce_mode=ar.REDUCTION_MODES[nic.reduction],
        tx_buffer_bytes=float(nic.tx_buffer_flits * nic.flit_bytes))


def _same_times(a, b):
    for name in ("start_cycles", "sent_cycles", "arrive_cycles", "usable_cycles"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("spec,algorithm", [("torus:4x4:c4", "multitree"), ("mesh:4x4", "dbtree"),
                                            ("fattree:k4:l2", "halving_doubling"), ("torus:4x4", "ring2d")])
@pytest.mark.parametrize("nic_name", list(NICS))
@pytest.mark.parametrize("net_name", list(NETWORKS))
def test_routes_give_the_times_of_every_transfers_arrays(spec, algorithm, nic_name, net_name):
    t = parse_spec(spec)
    s = build(t, algorithm)
    nic, network = NICS[nic_name], NETWORKS[net_name]
    prep = prepare(t, s, nic, 256 << 10)
    paths = transfer_routes(t, prep, network)
    got, link_bytes = run_message(t, prep, nic, network, routes=paths)
    _same_times(got, _transfer_arrays_run(t, prep, nic, network, paths))
    # the routes of the distinct endpoint pairs, a row per transfer (run_message's own)
    shared, shared_bytes = run_message(t, prep, nic, network)
    _same_times(shared, got)
    np.testing.assert_array_equal(shared_bytes, link_bytes)


def test_routes_honour_not_before_like_every_transfers_arrays():
    t = parse_spec("torus:4x4:c4")
    s = build(t, "multitree")
    nic, network = NicConfig(design="baseline"), NETWORKS["4vcs"]
    prep = prepare(t, s, nic, 1 << 20)
    paths = transfer_routes(t, prep, network)
    not_before = np.random.default_rng(3).uniform(0, 5000, s.num_transfers).round()
    got, _ = run_message(t, prep, nic, network, routes=paths, not_before=not_before)
    _same_times(got, _transfer_arrays_run(t, prep, nic, network, paths, not_before))
    assert (got.start_cycles >= not_before).all()


@pytest.mark.parametrize("nic_name,net_name", [("codesigned", "default"), ("baseline", "fluid"), ("packet", "default"),
                                               ("tx-queue", "4vcs")])
def test_a_pool_grown_from_one_slot_gives_the_same_times(monkeypatch, nic_name, net_name):
    """The loop keeps transfer i's state in slot i mod the pool's size; when two transfers
    under way want one slot it runs again with twice as many. Starting from one slot it
    must double many times and still time every transfer as the default pool does."""
    t = parse_spec("torus:4x4:c4")
    s = build(t, "multitree")
    nic, network = NICS[nic_name], NETWORKS[net_name]
    prep = prepare(t, s, nic, 1 << 20)
    want, want_bytes = run_message(t, prep, nic, network)
    pools = []
    real_run = ms.loop.run

    def counting_run(*args):
        pools.append(int(args[6]))  # pool size (the argument after the output)
        return real_run(*args)

    monkeypatch.setattr(ms, "POOL_MIN", 1)
    monkeypatch.setattr(ms, "POOL_PER_NI", 0)
    monkeypatch.setattr(ms.loop, "run", counting_run)
    got, got_bytes = run_message(t, prep, nic, network)
    _same_times(got, want)
    np.testing.assert_array_equal(got_bytes, want_bytes)
    assert pools[0] == 1 and len(pools) > 3 and pools == [1 << k for k in range(len(pools))]


_DEP_CASES = [(spec, algorithm) for spec in ("torus:4x4", "mesh:3x5:c2", "torus:8x8:c4", "ring:9", "fattree:k4:l2")
              for algorithm in ("ring", "dbtree", "halving_doubling", "multitree", "ring2d")
              if algorithm != "ring2d" or spec.startswith(("torus", "mesh"))]  # ring2d needs a 2D grid


@pytest.mark.parametrize("spec,algorithm", _DEP_CASES)
def test_dependency_counting_and_sorting_agree(spec, algorithm):
    s = build(parse_spec(spec), algorithm)
    ptr, idx = preparation._dependencies_dense(s.src, s.dst, s.flow, s.op, s.num_nodes, s.num_flows,
                                               preparation.OP_GATHER)
    ref_ptr, ref_idx = preparation._dependencies_sorted(s)
    assert (ptr == ref_ptr).all() and (idx == ref_idx).all()
    assert ptr.dtype == np.int32 and idx.dtype == np.int32


def _ranks_by_dict(step, node, nis, within=None):
    seen: dict = {}
    order = range(len(step)) if within is None else sorted(range(len(step)), key=lambda i: (within[i], i))
    out = np.empty(len(step), np.int64)
    for i in order:
        k = (int(step[i]), int(node[i]))
        out[i] = seen.get(k, 0) % nis
        seen[k] = seen.get(k, 0) + 1
    return out


@pytest.mark.parametrize("spec,algorithm", [("torus:4x4:c4", "multitree"), ("torus:4x4:c4", "ring2d_4dir"),
                                            ("mesh:3x5:c2", "halving_doubling"), ("torus:8x8:c4", "dbtree")])
def test_ni_slots_are_ranks_within_step_and_node(spec, algorithm):
    s = build(parse_spec(spec), algorithm)
    for nis in (1, 2, 4):
        for node in (s.src, s.dst):
            assert (preparation._ni_slots(s.step, node, nis) == _ranks_by_dict(s.step, node, nis)).all()
            assert (preparation._ni_slots(s.step, node, nis, s.flow) == _ranks_by_dict(s.step, node, nis, s.flow)).all()
    shuffled = np.random.default_rng(1).permutation(s.num_transfers)  # steps out of order: the sorting path
    st, nd = s.step[shuffled], s.src[shuffled]
    assert (preparation._ni_slots(st, nd, 4) == _ranks_by_dict(st, nd, 4)).all()


@pytest.mark.parametrize("spec", ["torus:4x4:c4", "torus:6x4:c4", "mesh:5x3", "ring:7", "torus:3x4x2"])
def test_pair_routes_by_table_and_by_sorting_agree(monkeypatch, spec):
    import noc.routing as routing

    t = parse_spec(spec)
    rng = np.random.default_rng(2)
    e = t.num_endpoints
    src = np.concatenate([np.arange(e), rng.integers(0, e, 500)])
    dst = np.concatenate([np.arange(e), rng.integers(0, e, 500)])
    by_table = routing.route_pairs(t, src, dst)
    monkeypatch.setattr(routing, "PAIR_TABLE_SLACK", -(1 << 62))
    by_sort = routing.route_pairs(t, src, dst)
    for name in ("links", "vc_class", "length"):
        a, b = getattr(by_table, name), getattr(by_sort, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name


def _canonical_by_lexsort(cols):
    step, src, dst, flow, op = cols
    order = np.lexsort((dst, op, flow, src, step))
    return [c[order] for c in cols]


@pytest.mark.parametrize("seed", range(6))
def test_canonical_order_is_the_five_column_sort(monkeypatch, seed):
    """Random transfers (repeats included; small groups sorted by insertion, large ones by
    a merge sort; and the combined-key sort when the (step, src) groups are too many)."""
    import nic.collectives.schedule as sched

    rng = np.random.default_rng(seed)
    n, nf, t = 9, 7, 3000
    cols = [rng.integers(0, 6, t), rng.integers(0, n, t), rng.integers(0, n, t), rng.integers(0, nf, t),
            rng.integers(0, 2, t)]
    cols[2] = np.where(cols[1] == cols[2], (cols[2] + 1) % n, cols[2])
    if seed % 2:  # one node sends many flows in one step: a group of hundreds
        cols[0][:600] = 2
        cols[1][:600] = 4
        cols[2][:600] = np.where(cols[2][:600] == 4, 5, cols[2][:600])
    want = _canonical_by_lexsort(cols)
    for slack in (True, False):
        if not slack:
            monkeypatch.setattr(sched, "_COUNTING_SLACK", -(1 << 62))
        s = Schedule.from_columns("x", "torus:3x3", n, 1, nf, *cols)
        for got, w in zip((s.step, s.src, s.dst, s.flow, s.op), want):
            assert np.array_equal(got, w)
        again = Schedule.from_columns("x", "torus:3x3", n, 1, nf, s.step, s.src, s.dst, s.flow, s.op)
        assert again == s and hash(again) == hash(s)  # in order already: kept as it is


def test_schedules_are_equal_by_their_transfers():
    t = parse_spec("torus:4x4:c4")
    a = build(t, "multitree")
    b = builder("multitree")(parse_spec("torus:4x4:c4"))  # built again, from scratch
    assert a == b and hash(a) == hash(b) and a is not b
    c = Schedule.from_columns(a.algorithm, a.topology, a.num_nodes, a.nis_per_node, a.num_flows, a.step, a.src,
                              a.dst, a.flow, 1 - a.op)
    assert c != a
    assert build(t, "ring") != a


def test_arrival_kinds_sort_like_lexsort():
    rng = np.random.default_rng(0)
    for _ in range(300):
        t = int(rng.integers(1, 200))
        at = rng.integers(0, 15, t).astype(float) / 4
        late = rng.random(t) < 0.4
        order = np.argsort(at, kind="stable").astype(np.int32)
        verify_mod._kinds_in_order(order, at, late)
        assert (order == np.lexsort((late, at))).all()


@pytest.mark.parametrize("spec,algorithm", [("torus:4x4", "multitree"), ("torus:4x4", "ring"), ("mesh:3x3", "dbtree"),
                                            ("torus:4x4:c2", "halving_doubling")])
def test_merged_timed_replay_agrees_with_the_sorted_events(spec, algorithm):
    """The timed replay merges the sorted starts and arrivals; sorting all events at once
    (``_event_order``) must give the same verdict, on correct and on jittered times."""
    s = build(parse_spec(spec), algorithm)
    m = 2 * s.num_flows + 1
    start = s.step.astype(float)
    rng = np.random.default_rng(5)
    verdicts = set()
    for k in range(40):
        st = start + (rng.normal(0, 0.6, start.shape) if k % 2 else 0.0)
        ar_ = st + (rng.uniform(-0.2, 1.0, start.shape) if k % 2 else 0.5)
        st = np.round(st * 4) / 4  # ties, so instants and kinds matter
        ar_ = np.round(ar_ * 4) / 4
        merged = verify_mod._fast_fault_timed(s, m, 3, (st, ar_)) < 0
        ordered = verify_mod._fast_fault(s, m, 3, verify_mod._event_order(s, (st, ar_))) < 0
        assert merged == ordered
        verdicts.add(merged)
    assert verdicts == {True, False}


def test_a_big_schedule_is_refused_with_the_estimate_before_it_runs(monkeypatch):
    from noc.base.errors import ConfigError

    t = parse_spec("torus:8x8:c4")
    s = build(t, "multitree")
    prep = prepare(t, s, NicConfig(), 1 << 20)
    need = ar.message_run_bytes(s, transfer_routes(t, prep, None))
    monkeypatch.setattr(ar, "MAX_RUN_BYTES", need - 1)
    with pytest.raises(ConfigError, match=r"8,064 transfers; the message-level run would hold about"):
        ar.simulate_allreduce(t, s, NicConfig(), None, 1 << 20)


_MEASURE = textwrap.dedent("""
    import json, sys
    from nic.allreduce import NicConfig, message_run_bytes, simulate_allreduce
    from nic.preparation import prepare, transfer_routes
    from nic.collectives import build
    from noc.flit import FlitNetworkConfig
    from noc.topology import parse_spec

    def status(key):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))

    warm = parse_spec("torus:4x4:c4")
    simulate_allreduce(warm, build(warm, "multitree"), NicConfig(), FlitNetworkConfig(), 1 << 16)
    t = parse_spec(sys.argv[1])
    s = build(t, "multitree")
    need = message_run_bytes(s, transfer_routes(t, prepare(t, s, NicConfig(), 64 << 20), FlitNetworkConfig()))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets the peak (VmHWM) to the present resident set
    base = status("VmRSS")
    simulate_allreduce(t, s, NicConfig(), FlitNetworkConfig(), 64 << 20)
    print(json.dumps({"need": need, "used": status("VmHWM") - base}))
""")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads and resets the peak in /proc/self")
def test_the_memory_estimate_is_within_a_quarter_of_a_measured_run():
    """A 24x24 torus with 4 NIs (662,400 transfers) in a fresh process: the peak memory the
    run adds over the resident set just before it, against message_run_bytes. The peak is
    reset (``/proc/self/clear_refs``) after a warm-up run and the preparation, so neither
    the compiler's peak (a cold Numba cache) nor the build counts, however the cache stands."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, "torus:24x24:c4"], capture_output=True, text=True,
                         check=True, timeout=900)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert 0.75 <= r["used"] / r["need"] <= 1.25, r
