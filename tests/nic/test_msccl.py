"""MSCCL XML export and import: every algorithm round-trips exactly and re-verifies on exact
sums; the exported program, run by an independent MSCCL-semantics interpreter under random
interleavings, leaves every GPU with the sum; a hand-written program imports as the schedule
it performs; bad programs are refused with what is wrong."""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET
from collections import deque

import numpy as np
import pytest

from nic.preparation import dependencies
from nic.collectives import VerificationError, build, verify
from nic.collectives.msccl import MscclError, from_msccl_xml, to_msccl_xml
from nic.scheduler import OP_GATHER, OP_REDUCE
from noc.topology import torus

ALGORITHMS = ("ring", "ring2d", "dbtree", "halving_doubling", "multitree")


@pytest.fixture(scope="module", params=[1, 4], ids=["1ni", "4ni"])
def schedules(request):
    t = torus((4, 4), request.param)
    return {a: build(t, a) for a in ALGORITHMS}


def _strip_steps(xml: str) -> str:
    return re.sub(r' hwm_step="\d+"', "", xml)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_round_trip_is_exact_and_verifies(schedules, algorithm):
    s = schedules[algorithm]
    back = from_msccl_xml(to_msccl_xml(s), topology=s.topology, nis_per_node=s.nis_per_node, algorithm=s.algorithm)
    assert back == s  # same transfers, steps, flows and ops
    report = verify(back, seed=11)
    assert report.transfers == s.num_transfers


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_without_step_attributes_the_dependencies_give_a_valid_earliest_schedule(schedules, algorithm):
    s = schedules[algorithm]
    back = from_msccl_xml(_strip_steps(to_msccl_xml(s)), topology=s.topology, nis_per_node=s.nis_per_node)
    key = lambda q: sorted(zip(q.src.tolist(), q.dst.tolist(), q.flow.tolist(), q.op.tolist()))  # noqa: E731
    assert key(back) == key(s)
    verify(back, seed=12)
    ptr, idx = dependencies(back)  # the simulator's own reading of the dependency rule
    for i in range(back.num_transfers):
        for j in idx[ptr[i]:ptr[i + 1]]:
            assert back.step[i] > back.step[j]
    assert back.num_steps <= s.num_steps


def _run_msccl(xml: str, rng: random.Random) -> list[list[int]]:
    """Execute an MSCCL all-reduce program as MSCCL would: each tb runs its steps in order,
    a step waits for its depid/deps step, a receive for the next message on its connection;
    which ready tb moves next is random. Returns each GPU's chunks."""
    algo = ET.fromstring(xml)
    n, c = int(algo.get("ngpus")), int(algo.get("nchunksperloop"))
    init = [[rng.randrange(1 << 30) for _ in range(c)] for _ in range(n)]
    buf = [list(row) for row in init]
    tbs = {}
    for gpu in algo.findall("gpu"):
        g = int(gpu.get("id"))
        for tb in gpu.findall("tb"):
            tbs[(g, int(tb.get("id")))] = (int(tb.get("send")), int(tb.get("recv")), [st.attrib for st in tb])
    pc = {k: 0 for k in tbs}
    fifo: dict[tuple[int, int], deque] = {}
    while any(pc[k] < len(v[2]) for k, v in tbs.items()):
        ready = []
        for (g, t), (send, recv, steps) in tbs.items():
            if pc[(g, t)] >= len(steps):
                continue
            st = steps[pc[(g, t)]]
            dep = int(st["depid"])
            if dep >= 0 and pc[(g, dep)] <= int(st["deps"]):
                continue
            if st["type"] in ("r", "rrc") and not fifo.get((recv, g)):
                continue
            ready.append((g, t))
        assert ready, "the program deadlocked"
        g, t = rng.choice(ready)
        send, recv, steps = tbs[(g, t)]
        st = steps[pc[(g, t)]]
        if st["type"] == "s":
            fifo.setdefault((g, send), deque()).append(buf[g][int(st["srcoff"])])
        elif st["type"] == "r":
            buf[g][int(st["dstoff"])] = fifo[(recv, g)].popleft()
        elif st["type"] == "rrc":
            buf[g][int(st["dstoff"])] += fifo[(recv, g)].popleft()
        pc[(g, t)] += 1
    assert not any(fifo.values()), "messages left unreceived"
    total = [sum(init[g][k] for g in range(n)) for k in range(c)]
    return buf, total


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_exported_program_all_reduces_under_random_interleavings(schedules, algorithm):
    xml = to_msccl_xml(schedules[algorithm])
    for seed in range(3):
        buf, total = _run_msccl(xml, random.Random(seed))
        assert all(row == total for row in buf)


HAND_WRITTEN = """<algo name="two" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce"
      inplace="1" outofplace="0" minBytes="0" maxBytes="0">
  <gpu id="0" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="r" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="0" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="r" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""


def test_a_hand_written_program_imports_as_the_schedule_it_performs():
    s = from_msccl_xml(HAND_WRITTEN, topology="ring:2")
    got = sorted(zip(s.step.tolist(), s.src.tolist(), s.dst.tolist(), s.flow.tolist(), s.op.tolist()))
    assert got == [(0, 0, 1, 1, OP_REDUCE), (0, 1, 0, 0, OP_REDUCE), (1, 0, 1, 0, OP_GATHER), (1, 1, 0, 1, OP_GATHER)]
    verify(s, seed=1)
    buf, total = _run_msccl(HAND_WRITTEN, random.Random(0))
    assert buf == [total, total]


def test_bad_programs_are_refused_with_what_is_wrong():
    no_gather = re.sub(r'\n\s*<step s="3" type="r"[^>]*/>', "", HAND_WRITTEN)
    no_gather = re.sub(r'\n\s*<step s="2" type="s"[^>]*/>', "", no_gather)
    with pytest.raises(VerificationError):  # reads fine, but is a reduce-scatter, not an all-reduce
        verify(from_msccl_xml(no_gather, topology="ring:2"), seed=1)
    lost = HAND_WRITTEN.replace('<step s="3" type="r" srcbuf="i" srcoff="1"', '<step s="3" type="nop" srcbuf="i" '
                                'srcoff="1"', 1)
    with pytest.raises(MscclError, match="gpu 1 sends chunk 1 to gpu 0 1 time"):
        from_msccl_xml(lost, topology="ring:2")
    stuck = HAND_WRITTEN.replace('type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="-1" deps="-1"',
                                 'type="s" srcbuf="i" srcoff="1" dstbuf="i" dstoff="1" cnt="1" depid="0" deps="3"', 1)
    with pytest.raises(MscclError, match="deadlock"):
        from_msccl_xml(stuck, topology="ring:2")
    with pytest.raises(MscclError, match="type 'copy'"):
        from_msccl_xml(HAND_WRITTEN.replace('type="rrc"', 'type="copy"', 1), topology="ring:2")
    with pytest.raises(MscclError, match="not XML"):
        from_msccl_xml("<algo", topology="ring:2")
    assert np.all(from_msccl_xml(HAND_WRITTEN, topology="ring:2").flow < 2)
