"""Chakra execution traces (ETs) in and out, with the ``protobuf`` package.

A Chakra ET is one file per rank, ``PREFIX.RANK.et``. Its wire format, from the published
schema (``ChakraProtoMsg``, proto3): a sequence of length-delimited protobuf messages, each
a base-128 varint byte count followed by that many bytes; the first message is a
``GlobalMetadata`` (``version`` = 1: string; ``attr`` = 2: repeated AttributeProto), every
later one a ``Node``:

=====  ================  =========================================================
field  name              type
=====  ================  =========================================================
1      id                uint64
2      name              string
3      type              enum NodeType (COMP_NODE 4, COMM_COLL_NODE 7, ...)
4      ctrl_deps         repeated uint64 (ids of nodes this one waits for: control)
5      data_deps         repeated uint64 (ids of nodes this one waits for: data)
6      start_time_micros uint64
7      duration_micros   uint64 (a compute node's run time, whole microseconds)
10     attr              repeated AttributeProto
=====  ================  =========================================================

``AttributeProto``: ``name`` = 1 (string) and one value of a oneof; used here are
``int64_val`` = 9, ``uint64_val`` = 13, ``bool_val`` = 27 and ``string_val`` = 29. A
collective node carries ``comm_type`` (int64: ALL_REDUCE 0, ALL_GATHER 2, REDUCE_SCATTER 7)
and ``comm_size`` (int64 bytes); every node ``is_cpu_op`` (bool, false for device work).

The message classes are built here from a descriptor of our own (the subset above), not
generated from a ``.proto`` file. Fields we do not declare are kept by protobuf as unknown
fields and ignored, so traces from other writers load.

* :func:`write_et` / :func:`read_et` -- one rank's nodes;
* :func:`export_workload` -- a data-parallel training iteration of a workload (forward
  compute, then per layer in reverse the backward compute and its gradient all-reduce,
  WFBP) as ``N`` per-rank ETs that ASTRA-sim 2 runs unchanged;
* :func:`load_trace` -- per-rank ETs back into compute durations and collective sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from hw_models.training.costs import whole
from noc.base.errors import ConfigError

ET_VERSION = "0.0.4"
NODE_TYPES = {"COMP_NODE": 4, "COMM_COLL_NODE": 7}
COMM_TYPES = {"allreduce": 0, "all_gather": 2, "reduce_scatter": 7}
_COMM_NAMES = {v: k for k, v in COMM_TYPES.items()}
# bounds past any real trace, so that damage to a value's high bits is named (a low bit flipped is not seen)
MAX_DURATION_US = 86_400_000_000  # one compute node: a day
MAX_COMM_BYTES = 1 << 44  # one collective: 16 TiB

_CLASSES: dict[str, type] | None = None


def _classes() -> dict[str, type]:
    """``AttributeProto``, ``GlobalMetadata`` and ``Node`` message classes (built once)."""
    global _CLASSES
    if _CLASSES is not None:
        return _CLASSES
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: PLC0415

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="hw_models_chakra_et.proto", package="ChakraProtoMsg",
                                             syntax="proto3")

    def message(name: str, fields: Sequence[tuple]) -> None:
        m = fdp.message_type.add(name=name)
        for fname, number, ftype, label, *rest in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if rest and rest[0] == "oneof":
                f.oneof_index = 0
            elif rest:
                f.type_name = rest[0]
        if any(r[4:5] == ("oneof",) for r in fields):
            m.oneof_decl.add(name="value")

    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message("AttributeProto", [
        ("name", 1, F.TYPE_STRING, opt),
        ("int64_val", 9, F.TYPE_INT64, opt, "oneof"),
        ("uint64_val", 13, F.TYPE_UINT64, opt, "oneof"),
        ("bool_val", 27, F.TYPE_BOOL, opt, "oneof"),
        ("string_val", 29, F.TYPE_STRING, opt, "oneof"),
    ])
    message("GlobalMetadata", [
        ("version", 1, F.TYPE_STRING, opt),
        ("attr", 2, F.TYPE_MESSAGE, rep, ".ChakraProtoMsg.AttributeProto"),
    ])
    message("Node", [
        ("id", 1, F.TYPE_UINT64, opt),
        ("name", 2, F.TYPE_STRING, opt),
        ("type", 3, F.TYPE_INT32, opt),  # an enum on the wire is a varint: int32 reads and writes it alike
        ("ctrl_deps", 4, F.TYPE_UINT64, rep),
        ("data_deps", 5, F.TYPE_UINT64, rep),
        ("start_time_micros", 6, F.TYPE_UINT64, opt),
        ("duration_micros", 7, F.TYPE_UINT64, opt),
        ("attr", 10, F.TYPE_MESSAGE, rep, ".ChakraProtoMsg.AttributeProto"),
    ])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    _CLASSES = {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ChakraProtoMsg.{n}"))
                for n in ("AttributeProto", "GlobalMetadata", "Node")}
    return _CLASSES


@dataclass(frozen=True)
class EtNode:
    """One node of a rank's ET: ``kind`` ``"compute"`` (``duration_us``, whole µs) or a
    collective (``"allreduce"``, ``"reduce_scatter"``, ``"all_gather"``; ``comm_bytes``);
    ``deps``: ids of the nodes it waits for. Written as Chakra's ``data_deps``, the field
    ASTRA-sim's ET feeder resolves (it does not wait for ``ctrl_deps``); read from both."""

    id: int
    name: str
    kind: str
    deps: tuple[int, ...] = ()
    duration_us: int = 0
    comm_bytes: int = 0


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_varint(buf: bytes, pos: int, path) -> tuple[int, int]:
    shift = value = 0
    while True:
        if pos >= len(buf):
            raise ConfigError(f"chakra trace {path}: truncated length prefix at byte {pos}")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def write_et(path: str | Path, nodes: Iterable[EtNode]) -> None:
    """Write one rank's ET (metadata, then the nodes in order)."""
    c = _classes()
    out = bytearray()

    def put(msg) -> None:
        data = msg.SerializeToString()
        out.extend(_varint(len(data)))
        out.extend(data)

    put(c["GlobalMetadata"](version=ET_VERSION))
    A = c["AttributeProto"]
    for n in nodes:
        msg = c["Node"](id=n.id, name=n.name)
        msg.data_deps.extend(n.deps)
        msg.attr.append(A(name="is_cpu_op", bool_val=False))
        if n.kind == "compute":
            msg.type = NODE_TYPES["COMP_NODE"]
            msg.duration_micros = int(n.duration_us)
        elif n.kind in COMM_TYPES:
            msg.type = NODE_TYPES["COMM_COLL_NODE"]
            msg.attr.append(A(name="comm_type", int64_val=COMM_TYPES[n.kind]))
            msg.attr.append(A(name="comm_size", int64_val=int(n.comm_bytes)))
        else:
            raise ConfigError(f"EtNode.kind = {n.kind!r}: must be one of compute, {', '.join(COMM_TYPES)}")
        put(msg)
    Path(path).write_bytes(bytes(out))


def read_et(path: str | Path) -> list[EtNode]:
    """One rank's ET as :class:`EtNode` s (compute and collective nodes; others are an error)."""
    from google.protobuf.message import DecodeError  # noqa: PLC0415

    c = _classes()
    p = Path(path)
    try:
        buf = p.read_bytes()
    except OSError as e:
        raise ConfigError(f"chakra trace {p}: cannot be read ({e.strerror})") from None
    pos, first, nodes = 0, True, []
    while pos < len(buf):
        size, pos = _read_varint(buf, pos, p)
        chunk = buf[pos:pos + size]
        if len(chunk) != size:
            raise ConfigError(f"chakra trace {p}: truncated message at byte {pos}")
        pos += size
        try:
            if first:
                c["GlobalMetadata"].FromString(chunk)
                first = False
                continue
            msg = c["Node"].FromString(chunk)
        except DecodeError as e:
            raise ConfigError(f"chakra trace {p}: not a Chakra ET ({e})") from None
        attrs = {a.name: a for a in msg.attr}
        deps = tuple(dict.fromkeys([int(d) for d in msg.data_deps] + [int(d) for d in msg.ctrl_deps]))
        if msg.type == NODE_TYPES["COMP_NODE"]:
            us = int(msg.duration_micros)
            if us > MAX_DURATION_US:
                raise ConfigError(f"chakra trace {p}: node {msg.id} duration_micros = {us}: more than "
                                  f"{MAX_DURATION_US:,} µs (a day) for one compute node; a damaged trace?")
            nodes.append(EtNode(int(msg.id), msg.name, "compute", deps, duration_us=us))
        elif msg.type == NODE_TYPES["COMM_COLL_NODE"]:
            ct = _int_attr(p, msg.id, attrs, "comm_type", -1)
            if ct not in _COMM_NAMES:
                raise ConfigError(f"chakra trace {p}: node {msg.id} comm_type = {ct}: must be one of "
                                  + ", ".join(f"{v} ({k})" for k, v in COMM_TYPES.items()))
            nbytes = _int_attr(p, msg.id, attrs, "comm_size", 0)
            if not 0 <= nbytes <= MAX_COMM_BYTES:
                raise ConfigError(f"chakra trace {p}: node {msg.id} comm_size = {nbytes}: must be bytes in "
                                  f"0..{MAX_COMM_BYTES:,} (16 TiB)")
            nodes.append(EtNode(int(msg.id), msg.name, _COMM_NAMES[ct], deps, comm_bytes=nbytes))
        else:
            raise ConfigError(f"chakra trace {p}: node {msg.id} type = {msg.type}: must be one of "
                              + ", ".join(f"{v} ({k})" for k, v in NODE_TYPES.items()))
    if first:
        raise ConfigError(f"chakra trace {p}: empty (no GlobalMetadata)")
    check_graph(p, nodes)
    return nodes


def _int_attr(p: Path, node_id: int, attrs: dict, name: str, default: int) -> int:
    """The integer attribute ``name`` of a node (``default`` when absent); one of another type
    (a string, a bool, a float) is an error, not read as 0."""
    a = attrs.get(name)
    if a is None:
        return default
    which = a.WhichOneof("value")
    if which not in ("int64_val", "uint64_val"):
        raise ConfigError(f"chakra trace {p}: node {node_id} attribute {name} holds "
                          f"{which or 'no value read here'}: must be an integer (int64_val or uint64_val)")
    return int(getattr(a, which))


def check_graph(p, nodes: Sequence[EtNode]) -> None:
    """A rank's node graph is one: ids unique, every dependency a node of the trace, no
    node waiting (through others) for itself. A :class:`ConfigError` naming the file and
    the node otherwise."""
    ids: dict[int, int] = {}
    for k, n in enumerate(nodes):
        if n.id in ids:
            raise ConfigError(f"chakra trace {p}: node id {n.id} appears twice (messages {ids[n.id] + 1} and "
                              f"{k + 1} after the metadata); ids must be unique")
        ids[n.id] = k
    for n in nodes:
        for d in n.deps:
            if d not in ids:
                raise ConfigError(f"chakra trace {p}: node {n.id} depends on node {d}, which is not in the trace")
            if d == n.id:
                raise ConfigError(f"chakra trace {p}: node {n.id} depends on itself")
    # Kahn's algorithm: what is never freed waits on a cycle
    waiting = {n.id: len(n.deps) for n in nodes}
    users: dict[int, list[int]] = {}
    for n in nodes:
        for d in n.deps:
            users.setdefault(d, []).append(n.id)
    ready = [i for i, w in waiting.items() if w == 0]
    freed = 0
    while ready:
        i = ready.pop()
        freed += 1
        for u in users.get(i, ()):
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    if freed < len(nodes):
        stuck = sorted(i for i, w in waiting.items() if w > 0)
        raise ConfigError(f"chakra trace {p}: the dependencies form a cycle (nodes {', '.join(map(str, stuck[:6]))}"
                          f"{', ...' if len(stuck) > 6 else ''} wait for each other)")


def iteration_nodes(fwd_us: Sequence[int], bwd_us: Sequence[int], grad_bytes: Sequence[int],
                    names: Sequence[str]) -> list[EtNode]:
    """One data-parallel iteration as a node graph: forward compute of every layer in order,
    then per layer in reverse its backward compute followed (not blocking the next layer's
    backward) by its gradient all-reduce -- wait-free back-propagation. Layers with no
    gradient get no all-reduce; a zero duration is written as 1 µs (ASTRA-sim skips a
    compute node of 0)."""
    nodes: list[EtNode] = []
    prev: int | None = None
    for i, name in enumerate(names):
        nodes.append(EtNode(len(nodes), f"fwd.{name}", "compute", () if prev is None else (prev,),
                            duration_us=max(1, int(fwd_us[i]))))
        prev = nodes[-1].id
    for i in reversed(range(len(names))):
        nodes.append(EtNode(len(nodes), f"bwd.{names[i]}", "compute", (prev,), duration_us=max(1, int(bwd_us[i]))))
        prev = nodes[-1].id
        if grad_bytes[i] > 0:
            nodes.append(EtNode(len(nodes), f"allreduce.{names[i]}", "allreduce", (prev,),
                                comm_bytes=int(grad_bytes[i])))
    return nodes


def export_workload(directory: str | Path, name: str, nodes: Sequence[EtNode], ranks: int) -> Path:
    """Write ``nodes`` as the ET of each of ``ranks`` data-parallel ranks; return the prefix."""
    whole("ranks", ranks)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        write_et(d / f"{name}.{r}.et", nodes)
    return d / name


@dataclass(frozen=True)
class Trace:
    """A data-parallel Chakra workload: rank 0's nodes and the rank count."""

    prefix: str
    ranks: int
    nodes: tuple[EtNode, ...]


def load_trace(prefix: str | Path) -> Trace:
    """Read ``PREFIX.0.et``, ``PREFIX.1.et``, ...; the ranks must hold the same compute
    durations and collective sizes (a data-parallel workload)."""
    prefix = Path(prefix)
    rank_of = {f: f.name[len(prefix.name) + 1:-3] for f in prefix.parent.glob(prefix.name + ".*.et")}
    files = sorted((f for f, r in rank_of.items() if r.isdigit()), key=lambda f: int(rank_of[f]))
    if not files:
        raise ConfigError(f"trace prefix {str(prefix)!r}: no files {prefix.name}.RANK.et in {prefix.parent}")
    ranks = [int(rank_of[f]) for f in files]
    if ranks != list(range(len(ranks))):
        raise ConfigError(f"trace prefix {str(prefix)!r}: ranks {ranks} are not 0..{len(ranks) - 1}")
    first = read_et(files[0])
    key = [(n.kind, n.duration_us, n.comm_bytes) for n in first]
    for f in files[1:]:
        if [(n.kind, n.duration_us, n.comm_bytes) for n in read_et(f)] != key:
            raise ConfigError(f"trace {f}: differs from rank 0 (only data-parallel traces are supported)")
    return Trace(str(prefix), len(files), tuple(first))


def layer_nodes(costs) -> list[EtNode]:
    """The ET nodes of one iteration of per-layer costs (:class:`~hw_models.training.costs.LayerCost`,
    forward order): durations rounded to whole µs, as a Chakra compute node holds them."""
    return iteration_nodes([round(c.fwd_s * 1e6) for c in costs], [round(c.bwd_s * 1e6) for c in costs],
                           [c.grad_bytes for c in costs], [c.name for c in costs])


@dataclass(frozen=True)
class TraceWorkload:
    """A Chakra trace as a training workload: its per-layer costs are read from the trace,
    not computed from layers (batch and device do not apply).

    Nodes named ``fwd.L`` / ``bwd.L`` (as :func:`export_workload` writes them) give layer
    ``L`` its forward and backward seconds, and a collective depending on ``bwd.L`` its
    gradient bytes. Any other trace is read as a chain: every compute node in order is a
    backward step (forward 0 s) whose gradient is the sum of the all-reduces that depend on
    it -- the order and overlap ASTRA-sim gives the same graph."""

    name: str
    trace: Trace

    def layer_costs(self):
        from hw_models.training.costs import LayerCost  # noqa: PLC0415

        nodes = self.trace.nodes
        by_id = {n.id: n for n in nodes}
        grads: dict[int, int] = {}
        for n in nodes:
            if n.kind != "compute":
                if n.kind != "allreduce":
                    raise ConfigError(f"trace {self.trace.prefix}: node {n.id} is a {n.kind}; a training trace's "
                                      "collectives must be all-reduces")
                dep = next((d for d in n.deps if d in by_id and by_id[d].kind == "compute"), None)
                if dep is None:
                    raise ConfigError(f"trace {self.trace.prefix}: all-reduce node {n.id} depends on no compute node")
                grads[dep] = grads.get(dep, 0) + n.comm_bytes
        comp = [n for n in nodes if n.kind == "compute"]
        fwd = {n.name[4:]: n for n in comp if n.name.startswith("fwd.")}
        bwd = {n.name[4:]: n for n in comp if n.name.startswith("bwd.")}
        if fwd and set(fwd) == set(bwd) and len(fwd) + len(bwd) == len(comp):
            return tuple(LayerCost(k, fwd[k].duration_us * 1e-6, bwd[k].duration_us * 1e-6, grads.get(bwd[k].id, 0))
                         for k in fwd)
        # a chain: the timeline runs backward steps last layer first, so the trace order is reversed
        return tuple(LayerCost(f"{i}.{n.name or n.id}", 0.0, n.duration_us * 1e-6, grads.get(n.id, 0))
                     for i, n in reversed(list(enumerate(comp))))


def trace_workload(spec: str) -> TraceWorkload:
    """``trace:PATH_PREFIX`` -> the workload of the per-rank ETs ``PATH_PREFIX.RANK.et``."""
    prefix = spec[len("trace:"):] if spec.startswith("trace:") else spec
    if not prefix:
        raise ConfigError(f"workload {spec!r}: trace: needs a path prefix (trace:DIR/NAME for DIR/NAME.0.et, ...)")
    t = load_trace(prefix)
    return TraceWorkload(Path(prefix).name, t)
