"""Schedules as MSCCL algorithm XML, and back.

MSCCL (Microsoft's collective communication library over NCCL) runs an algorithm given as
XML: ``<algo>`` holds a ``<gpu>`` per rank, each a set of thread blocks ``<tb send=P
recv=Q>`` that execute their ``<step>`` elements in order. A step moves ``cnt`` chunks of a
buffer (``i`` input, ``o`` output, ``s`` scratch; the buffer is cut into ``nchunksperloop``
equal chunks): ``s`` sends to the tb's ``send`` peer, ``r`` receives from its ``recv``
peer, ``rrc`` receives, reduces with the local chunk and keeps the sum, ``rrs``/``rrcs``/
``rcs`` receive and send on in one step, ``nop`` only waits. A step may wait for one step
of another tb of its GPU (``depid`` = that tb, ``deps`` = its step index; ``hasdep`` marks
the steps waited for); a step that waits for several is preceded by ``nop`` steps, one per
extra dependency.

**Export** (:func:`to_msccl_xml`): an in-place all-reduce (``inplace="1"``), one chunk per
flow (``nchunksperloop`` = flows, chunk ``f`` = flow ``f``'s part, as in the schedule). At
each node, one tb per peer it sends to (``s`` steps) and one per peer it receives from
(``rrc`` for a REDUCE, ``r`` for a GATHER), steps in schedule-step order. Dependencies are
the schedule's own (a REDUCE or GATHER send waits for the messages of its flow it depends
on, :mod:`nic.collectives.schedule`) plus what MSCCL's shared buffer needs: two ``rrc`` into
one chunk happen one after the other, and a GATHER's ``r`` into a chunk waits until the
node's own REDUCE send of that chunk has read it. Every dependency points to an earlier
schedule step, so the program cannot deadlock. MSCCL has no NIs: a multi-NI schedule
exports the same way (the NI a transfer uses is the simulator's choice anyway).

**Import** (:func:`from_msccl_xml`): every send step matched with the receive step of its
peer (the k-th send from ``a`` to ``b`` of chunk ``c`` with the k-th receive at ``b`` from
``a`` of chunk ``c``) is a transfer of flow ``c``, a REDUCE when the receive reduces and a
GATHER when it copies. Its step is the earliest its MSCCL dependencies allow: 0 with none,
else one more than the step of the latest transfer it waits for (through its tb's earlier
steps, its ``depid`` and the receives they stand for). The export also writes each send's
schedule step as an extra attribute ``hwm_step`` (MSCCL's runtime reads only the attributes
it knows; not checked against it here); when present it is the transfer's step (checked to
be no earlier than its dependencies allow), so an exported schedule imports unchanged. The result is checked by
:func:`nic.collectives.verify` on exact sums; an XML file that is not an all-reduce fails
there.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from nic.collectives.schedule import Schedule, ScheduleError
from nic.scheduler import OP_GATHER, OP_REDUCE

RECEIVES = {"r": OP_GATHER, "rcs": OP_GATHER, "rrc": OP_REDUCE, "rrs": OP_REDUCE, "rrcs": OP_REDUCE}
SENDS = ("s", "rcs", "rrs", "rrcs")
LOCAL = ("nop", "re", "cpy")
# the schedule step of a send, kept so that an exported schedule imports with its own steps
# (an attribute MSCCL does not read)
STEP_ATTRIBUTE = "hwm_step"


class MscclError(ScheduleError):
    """An MSCCL XML program that cannot be read as a schedule."""


def _dependencies(s: Schedule) -> list[list[int]]:
    """Per transfer, the transfers it waits for (the rule of :mod:`nic.collectives.schedule`)."""
    arriving: dict[tuple[int, int, int], list[int]] = defaultdict(list)  # (node, flow, op) -> transfers
    for i in range(s.num_transfers):
        arriving[(int(s.dst[i]), int(s.flow[i]), int(s.op[i]))].append(i)
    out = []
    for i in range(s.num_transfers):
        v, f = int(s.src[i]), int(s.flow[i])
        if int(s.op[i]) == OP_REDUCE:
            out.append(arriving.get((v, f, OP_REDUCE), []))
        else:
            out.append(arriving.get((v, f, OP_GATHER)) or arriving.get((v, f, OP_REDUCE), []))
    return out


def to_msccl_xml(s: Schedule, *, name: str | None = None, proto: str = "Simple") -> str:
    """The MSCCL XML program of schedule ``s`` (module docstring)."""
    order = sorted(range(s.num_transfers), key=lambda i: (int(s.step[i]), int(s.src[i]), int(s.flow[i]),
                                                          int(s.op[i]), int(s.dst[i])))
    deps = _dependencies(s)
    # tbs per node: ("send", peer) and ("recv", peer); their transfers in schedule order
    tbs: dict[int, dict[tuple[str, int], list[int]]] = {v: {} for v in range(s.num_nodes)}
    for i in order:
        tbs[int(s.src[i])].setdefault(("send", int(s.dst[i])), []).append(i)
        tbs[int(s.dst[i])].setdefault(("recv", int(s.src[i])), []).append(i)
    # extra dependencies of the shared buffer (module docstring), by (node, side, transfer)
    extra: dict[tuple[int, str, int], list[tuple[str, int]]] = defaultdict(list)
    last_rrc: dict[tuple[int, int], int] = {}
    own_reduce_send: dict[tuple[int, int], int] = {}
    for i in order:
        v, f = int(s.src[i]), int(s.flow[i])
        if int(s.op[i]) == OP_REDUCE:
            own_reduce_send[(v, f)] = i
    for i in order:
        d, f = int(s.dst[i]), int(s.flow[i])
        if int(s.op[i]) == OP_REDUCE:
            if (d, f) in last_rrc:
                extra[(d, "recv", i)].append(("recv", last_rrc[(d, f)]))
            last_rrc[(d, f)] = i
        elif (d, f) in own_reduce_send:
            extra[(d, "recv", i)].append(("send", own_reduce_send[(d, f)]))
    algo = ET.Element("algo", {
        "name": name or f"{s.algorithm} on {s.topology}", "proto": proto, "nchannels": "1",
        "nchunksperloop": str(s.num_flows), "ngpus": str(s.num_nodes), "coll": "allreduce", "inplace": "1",
        "outofplace": "0", "minBytes": "0", "maxBytes": "0"})
    for v in range(s.num_nodes):
        gpu = ET.SubElement(algo, "gpu", {"id": str(v), "i_chunks": str(s.num_flows), "o_chunks": "0",
                                          "s_chunks": "0"})
        keys = sorted(tbs[v], key=lambda k: (k[0] != "send", k[1]))
        # first lay out every tb's steps (nops included) to know where each transfer lands
        layout: dict[tuple[str, int], list[tuple[str, int, list]]] = {}
        where: dict[tuple[str, int], tuple[int, int]] = {}  # (side, transfer) -> (tb id, step index)
        for tb_id, key in enumerate(keys):
            side = key[0]
            items = []
            for i in tbs[v][key]:
                waits = [("recv", j) for j in deps[i]] if side == "send" else []
                waits += extra.get((v, side, i), [])
                for w in waits[:-1]:
                    items.append(("nop", i, [w]))
                items.append((side, i, waits[-1:]))
                where[(side, i)] = (tb_id, len(items) - 1)
            layout[key] = items
        waited = {where[w] for items in layout.values() for _, _, ws in items for w in ws}
        for tb_id, key in enumerate(keys):
            side, peer = key
            tb = ET.SubElement(gpu, "tb", {"id": str(tb_id), "send": str(peer if side == "send" else -1),
                                           "recv": str(peer if side == "recv" else -1), "chan": "0"})
            for k, (kind, i, ws) in enumerate(layout[key]):
                f = str(int(s.flow[i]))
                typ = "nop" if kind == "nop" else "s" if kind == "send" else \
                    ("rrc" if int(s.op[i]) == OP_REDUCE else "r")
                dep_tb, dep_step = where[ws[0]] if ws else (-1, -1)
                attrs = {"s": str(k), "type": typ, "srcbuf": "i", "srcoff": f, "dstbuf": "i", "dstoff": f,
                         "cnt": "1", "depid": str(dep_tb), "deps": str(dep_step),
                         "hasdep": "1" if (tb_id, k) in waited else "0"}
                if typ == "s":
                    attrs[STEP_ATTRIBUTE] = str(int(s.step[i]))
                ET.SubElement(tb, "step", attrs)
    ET.indent(algo, space="  ")
    return ET.tostring(algo, encoding="unicode") + "\n"


def _int(el, key: str, what: str) -> int:
    text = el.get(key)
    try:
        return int(text)
    except (TypeError, ValueError):
        raise MscclError(f"{what}: attribute {key}={text!r} is not an integer") from None


def from_msccl_xml(text: str, *, topology: str, nis_per_node: int = 1, algorithm: str | None = None) -> Schedule:
    """The schedule an MSCCL all-reduce XML program performs (module docstring), for a
    topology named ``topology`` with ``nis_per_node`` NIs per node."""
    try:
        algo = ET.fromstring(text)
    except ET.ParseError as exc:
        raise MscclError(f"not XML: {exc}") from None
    if algo.tag != "algo":
        raise MscclError(f"the root element is <{algo.tag}>, not <algo>")
    if algo.get("coll", "allreduce") != "allreduce":
        raise MscclError(f"coll={algo.get('coll')!r}: only allreduce programs import as schedules")
    ngpus = _int(algo, "ngpus", "<algo>")
    nchunks = _int(algo, "nchunksperloop", "<algo>")
    # every step: (gpu, tb, index) -> (type, peer_send, peer_recv, chunk, dep)
    steps: dict[tuple[int, int, int], tuple] = {}
    tb_len: dict[tuple[int, int], int] = {}
    given: dict[tuple[int, int, int], int] = {}  # the STEP_ATTRIBUTE of sends that have it
    for gpu in algo.findall("gpu"):
        g = _int(gpu, "id", "<gpu>")
        if not 0 <= g < ngpus:
            raise MscclError(f"<gpu id={g}>: not in [0, {ngpus})")
        for tb in gpu.findall("tb"):
            t = _int(tb, "id", f"gpu {g} <tb>")
            send, recv = _int(tb, "send", f"gpu {g} tb {t}"), _int(tb, "recv", f"gpu {g} tb {t}")
            for k, st in enumerate(tb.findall("step")):
                what = f"gpu {g} tb {t} step {k}"
                typ = st.get("type")
                if typ not in RECEIVES and typ not in SENDS and typ not in LOCAL:
                    raise MscclError(f"{what}: type {typ!r} is not one of {', '.join((*SENDS, *RECEIVES, *LOCAL))}")
                if _int(st, "cnt", what) != 1:
                    raise MscclError(f"{what}: cnt={st.get('cnt')}; only one chunk per step imports (a chunk is "
                                     "a flow)")
                chunk = _int(st, "srcoff" if typ == "s" else "dstoff", what)
                if typ not in LOCAL and not 0 <= chunk < nchunks:
                    raise MscclError(f"{what}: chunk {chunk} not in [0, {nchunks})")
                if typ in SENDS and not 0 <= send < ngpus:
                    raise MscclError(f"{what}: a {typ!r} step in a tb with send={send}")
                if typ in RECEIVES and not 0 <= recv < ngpus:
                    raise MscclError(f"{what}: a {typ!r} step in a tb with recv={recv}")
                dep = (_int(st, "depid", what), _int(st, "deps", what))
                steps[(g, t, k)] = (typ, send, recv, chunk, dep if dep[0] >= 0 else None)
                if typ in SENDS and st.get(STEP_ATTRIBUTE) is not None:
                    given[(g, t, k)] = _int(st, STEP_ATTRIBUTE, what)
            tb_len[(g, t)] = len(tb.findall("step"))
    # match sends with receives: k-th of each (src, dst, chunk)
    sends, recvs = defaultdict(list), defaultdict(list)
    for key in sorted(steps):
        typ, send, recv, chunk, _ = steps[key]
        if typ in SENDS:
            sends[(key[0], send, chunk)].append(key)
        if typ in RECEIVES:
            recvs[(recv, key[0], chunk)].append(key)
    for pair in set(sends) | set(recvs):
        if len(sends.get(pair, [])) != len(recvs.get(pair, [])):
            raise MscclError(f"gpu {pair[0]} sends chunk {pair[2]} to gpu {pair[1]} {len(sends.get(pair, []))} "
                             f"time(s), which receives it {len(recvs.get(pair, []))} time(s)")
    transfer_of_send, transfer_of_recv, transfers = {}, {}, []
    for pair in sorted(sends):
        for a, b in zip(sends[pair], recvs[pair]):
            transfer_of_send[a], transfer_of_recv[b] = len(transfers), len(transfers)
            transfers.append((pair[0], pair[1], pair[2], RECEIVES[steps[b][0]]))
    # levels: a send's transfer step; "done" of a step = what later steps waiting on it wait for
    step_of = [-1] * len(transfers)
    done: dict[tuple[int, int, int], int] = {}
    pending = sorted(steps)
    while pending:
        left = []
        for key in pending:
            g, t, k = key
            typ, _, _, _, dep = steps[key]
            waits = ([(g, t, k - 1)] if k > 0 else []) + ([(g, dep[0], dep[1])] if dep else [])
            for w in waits:
                if w not in steps:
                    raise MscclError(f"gpu {g} tb {t} step {k}: waits for tb {w[1]} step {w[2]}, which does not exist")
            if any(w not in done for w in waits):
                left.append(key)
                continue
            level = max((done[w] for w in waits), default=0)
            if typ in RECEIVES:
                i = transfer_of_recv[key]
                if step_of[i] < 0:
                    left.append(key)
                    continue
                level = max(level, step_of[i] + 1)
            if typ in SENDS:
                if key in given:
                    if given[key] < level:
                        raise MscclError(f"gpu {g} tb {t} step {k}: {STEP_ATTRIBUTE}={given[key]}, but its "
                                         f"dependencies put it at step {level} at the earliest")
                    level = given[key]
                step_of[transfer_of_send[key]] = level
            done[key] = level
        if len(left) == len(pending):
            g, t, k = left[0]
            raise MscclError(f"the program deadlocks: {len(left)} step(s) wait for each other (e.g. gpu {g} tb {t} "
                             f"step {k})")
        pending = left
    name = algorithm or algo.get("name", "msccl").split(" on ")[0]
    return Schedule.from_transfers(name, topology, ngpus, nis_per_node, nchunks,
                                   [(step_of[i], a, b, c, op) for i, (a, b, c, op) in enumerate(transfers)],
                                   params={"imported_from": "msccl"})
