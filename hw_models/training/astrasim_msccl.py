"""An MSCCL XML program run the way ASTRA-sim 2 runs it as a custom collective.

ASTRA-sim takes a custom collective as per-rank Chakra ETs made from MSCCL XML by
``astra-sim/collectiveapi``'s converter (``chakra_converter/et_converter.py --coll_size S
--collective allreduce``). :func:`msccl_run` builds the same program as a run of our
message-level simulator (:mod:`nic.message_sim`) with the semantics the converter and
ASTRA-sim give it, so that its time can be set beside ASTRA-sim's (bench/astrasim_msccl.py,
docs/validation.md "Against ASTRA-sim 2"):

* every ``<step>`` of a ``<tb>`` is a node: ``s`` a send to the tb's ``send`` peer, ``r``
  a receive from its ``recv`` peer, ``rrc`` a receive and then a reduction (a compute node);
  ``nop`` is no node (its dependency passes to the step after it);
* a step waits for the step before it in its tb and for its ``depid``/``deps`` step (the
  converter's data dependencies; a step that waits for an ``rrc`` waits for its reduction);
* a chunk is ``S / i_chunks`` bytes (``o_chunks`` when there are no input chunks), a step
  moves ``cnt`` chunks;
* a send is done when its message has arrived (``hops * latency + bytes / bandwidth`` of
  the network's dimension, every message on a link of its own, as the congestion-unaware
  backend has it); a receive is done when it has been issued and the k-th message from
  its peer has arrived (matched in order); a reduction takes the converter's compute time,
  ``3 * (bytes // 50)`` ns truncated to whole µs (its hard-coded 50 GB/s local bandwidth;
  1 ns when that is 0 µs, as ASTRA-sim runs a node of no duration);
* the collective is done when every node is.

ASTRA-sim's system layer adds nothing around it here (``preferred-dataset-splits`` 1).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from hw_models.training.astrasim import AstraAnalytical, _Messages
from noc.base.errors import ConfigError

CONVERTER_LOCAL_GBPS = 50  # collectiveapi's chakra_converter: HARDCODE_LOCAL_BW


def converter_reduce_ns(nbytes: int) -> float:
    """The compute time the converter gives a reduction of ``nbytes``, as ASTRA-sim runs it."""
    us = int(3 * int(nbytes / CONVERTER_LOCAL_GBPS) / 1000)
    return float(us * 1000 if us else 1)


def _steps(xml_text: str, nbytes: int) -> dict[tuple[int, int, int], dict]:
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ConfigError(f"MSCCL XML: {exc}") from None
    steps = {}
    for g in root.findall("gpu"):
        gpu = int(g.get("id"))
        chunks = int(g.get("i_chunks", "0")) or int(g.get("o_chunks", "0"))
        if chunks < 1:
            raise ConfigError(f"MSCCL XML gpu {gpu}: i_chunks and o_chunks are 0; one must be >= 1")
        for tb in g.findall("tb"):
            for st in tb.findall("step"):
                kind = st.get("type")
                if kind not in ("s", "r", "rrc", "nop"):
                    raise ConfigError(f"MSCCL XML gpu {gpu} tb {tb.get('id')} step {st.get('s')}: type {kind!r}; "
                                      "the converter's are s, r, rrc and nop")
                steps[(gpu, int(tb.get("id")), int(st.get("s")))] = {
                    "type": kind, "send": int(tb.get("send")), "recv": int(tb.get("recv")),
                    "dep": (gpu, int(st.get("depid")), int(st.get("deps"))) if int(st.get("depid")) != -1 else None,
                    "bytes": int(nbytes / chunks) * int(st.get("cnt", "1"))}
    return steps


def _parents(steps: dict, key: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """The steps ``key`` waits for, as the converter writes them (nops passed through)."""
    gpu, tb, s = key
    out = [steps[key]["dep"]] if steps[key]["dep"] else []
    p = s - 1
    while p >= 0 and steps[(gpu, tb, p)]["type"] == "nop":
        if steps[(gpu, tb, p)]["dep"]:
            out.append(steps[(gpu, tb, p)]["dep"])
        p -= 1
    if p >= 0:
        out.append((gpu, tb, p))
    return out


def msccl_run(xml_text: str, model: AstraAnalytical, nbytes: int, reduce_ns=converter_reduce_ns):
    """The :class:`nic.message_sim.TransferRun` of the MSCCL program ``xml_text`` moving
    ``nbytes`` on ``model``'s one-dimensional network (module docstring). ``reduce_ns(bytes)``:
    the time of an ``rrc`` step's reduction."""
    if len(model.npus) != 1:
        raise ConfigError(f"npus = {model.npus}: a custom collective here runs on one dimension")
    steps = _steps(xml_text, nbytes)
    order = sorted(steps)
    sends, recvs = defaultdict(list), defaultdict(list)
    for k in order:
        st = steps[k]
        if st["type"] == "s":
            sends[(k[0], st["send"])].append(k)
        elif st["type"] in ("r", "rrc"):
            recvs[(st["recv"], k[0])].append(k)
    for pair in set(sends) | set(recvs):
        if len(sends[pair]) != len(recvs[pair]):
            raise ConfigError(f"MSCCL XML: {len(sends[pair])} sends from {pair[0]} to {pair[1]} but "
                              f"{len(recvs[pair])} receives")
    match = {r: s for pair in recvs for s, r in zip(sends[pair], recvs[pair])}
    msgs = _Messages(model, "unaware")  # every message on a link of its own
    rank = list(range(model.npus[0]))
    done: dict[tuple, int] = {}  # step -> the transfer (or mark) that is its completion
    send_of: dict[tuple, int] = {}
    active: set = set()

    def visit(k):  # in dependency order; the converter's dependencies point to earlier steps
        if k in done:
            return done[k]
        if k in active:
            raise ConfigError(f"MSCCL XML step {k} (gpu, tb, step): its dependencies lead back to it")
        active.add(k)
        st = steps[k]
        if st["type"] == "nop":
            raise ConfigError(f"MSCCL XML step {k}: a step waits for a nop")
        wait = [visit(p) for p in _parents(steps, k) if steps[p]["type"] != "nop"]
        if st["type"] == "s":
            i = msgs.add(0, rank, k[0], st["send"], float(st["bytes"]), False, wait)
            send_of[k] = i
        else:
            msg = match[k]
            visit(msg)
            i = msgs.mark(k[0], 0.0, wait + [send_of[msg]])  # the receive: issued and arrived
            if st["type"] == "rrc":
                i = msgs.mark(k[0], float(reduce_ns(st["bytes"])), [i])
        done[k] = i
        active.discard(k)
        return i

    for k in order:
        if steps[k]["type"] != "nop":
            visit(k)
    return msgs.run(issue_delay_cycles=0.0, nis_per_node=len(msgs.src))


def msccl_ns(xml_text: str, model: AstraAnalytical, nbytes: int, reduce_ns=converter_reduce_ns) -> float:
    """Nanoseconds of :func:`msccl_run` on our message-level simulator."""
    from nic.message_sim import simulate

    return float(simulate(msccl_run(xml_text, model, nbytes, reduce_ns)).total_cycles)
