"""Chakra execution traces: the wire format against a hand encoder of the published schema,
the round trip, ``hw-models train --export-chakra`` and ``-w trace:PREFIX`` against the
layer costs computed by another path, and bad input refused on one line."""

from __future__ import annotations

import pytest

from hw_models.cli import main
from hw_models.training.chakra import EtNode, export_workload, iteration_nodes, layer_nodes, load_trace, read_et, write_et
from hw_models.training.compute import get_device, layer_costs
from hw_models.training.policies import WaitFreeBackprop
from hw_models.training.timeline import simulate
from hw_models.training.workloads import load_workload_file
from noc.base.errors import ConfigError

from tiny_workload import NET


def _varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _field(num, wire, payload):
    return _varint(num << 3 | wire) + payload


def _ld(num, data):
    return _field(num, 2, _varint(len(data)) + data)


def test_wire_format_matches_a_hand_encoding_of_the_schema(tmp_path):
    """A collective node written by write_et equals the bytes encoded by hand from the schema's
    field numbers (Node: id 1, name 2, type 3, data_deps 5, attr 10; AttributeProto: name 1,
    int64_val 9, bool_val 27), each message prefixed by its varint length."""
    p = tmp_path / "x.0.et"
    write_et(p, [EtNode(5, "ar", "allreduce", (3,), comm_bytes=300)])
    meta = _ld(1, b"0.0.4")
    attr = [_ld(1, b"is_cpu_op") + _field(27, 0, b"\x00"),
            _ld(1, b"comm_type") + _field(9, 0, _varint(0)),
            _ld(1, b"comm_size") + _field(9, 0, _varint(300))]
    node = (_field(1, 0, _varint(5)) + _ld(2, b"ar") + _field(3, 0, _varint(7)) + _ld(5, _varint(3))
            + b"".join(_ld(10, a) for a in attr))
    assert p.read_bytes() == _varint(len(meta)) + meta + _varint(len(node)) + node


def test_round_trip_and_ranks(tmp_path):
    nodes = iteration_nodes([3, 1], [5, 7], [4096, 0], ["a", "b"])
    prefix = export_workload(tmp_path, "w", nodes, 4)
    assert sorted(f.name for f in tmp_path.iterdir()) == [f"w.{r}.et" for r in range(4)]
    t = load_trace(prefix)
    assert t.ranks == 4 and list(t.nodes) == nodes == read_et(tmp_path / "w.3.et")
    # WFBP: forward a, b; backward b then a; a's all-reduce after a's backward; b has no gradient
    assert [(n.name, n.deps) for n in nodes] == [("fwd.a", ()), ("fwd.b", (0,)), ("bwd.b", (1,)), ("bwd.a", (2,)),
                                                  ("allreduce.a", (3,))]


def test_a_trace_with_control_dependencies_reads_them(tmp_path):
    """Another writer's ctrl_deps (field 4) are dependencies too, read beside data_deps (5)."""
    meta = _ld(1, b"0.0.4")
    attr = _ld(1, b"is_cpu_op") + _field(27, 0, b"\x00")
    a = _field(1, 0, _varint(0)) + _ld(2, b"a") + _field(3, 0, _varint(4)) + _field(7, 0, _varint(2)) + _ld(10, attr)
    b = (_field(1, 0, _varint(1)) + _ld(2, b"b") + _field(3, 0, _varint(4)) + _ld(4, _varint(0)) + _ld(5, _varint(0))
         + _field(7, 0, _varint(3)) + _ld(10, attr))
    (tmp_path / "c.0.et").write_bytes(b"".join(_varint(len(m)) + m for m in (meta, a, b)))
    assert read_et(tmp_path / "c.0.et") == [EtNode(0, "a", "compute", (), duration_us=2),
                                           EtNode(1, "b", "compute", (0,), duration_us=3)]


def test_bad_traces_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="no files"):
        load_trace(tmp_path / "none")
    (tmp_path / "bad.0.et").write_bytes(b"\x05ab")
    with pytest.raises(ConfigError, match="truncated"):
        read_et(tmp_path / "bad.0.et")
    write_et(tmp_path / "d.0.et", [EtNode(0, "c", "compute", duration_us=3)])
    write_et(tmp_path / "d.1.et", [EtNode(0, "c", "compute", duration_us=4)])
    with pytest.raises(ConfigError, match="differs from rank 0"):
        load_trace(tmp_path / "d")


def _node(id_, type_=4, deps=(), us=2, attrs=()):
    """A Node message encoded by hand (schema field numbers), with extra attributes as bytes."""
    attr = [_ld(1, b"is_cpu_op") + _field(27, 0, b"\x00"), *attrs]
    return (_field(1, 0, _varint(id_)) + _ld(2, b"n") + _field(3, 0, _varint(type_))
            + (_ld(5, b"".join(_varint(d) for d in deps)) if deps else b"") + _field(7, 0, _varint(us))
            + b"".join(_ld(10, a) for a in attr))


def _et(tmp_path, *nodes):
    f = tmp_path / "g.0.et"
    f.write_bytes(b"".join(_varint(len(m)) + m for m in (_ld(1, b"0.0.4"), *nodes)))
    return f


def _coll(id_, deps, type_attr, size_attr):
    return _node(id_, 7, deps, 0, [_ld(1, b"comm_type") + type_attr, _ld(1, b"comm_size") + size_attr])


@pytest.mark.parametrize("nodes, says", [
    ([_node(0), _node(0, deps=(0,))], "node id 0 appears twice (messages 1 and 2 after the metadata)"),
    ([_node(0), _node(1, deps=(7,))], "node 1 depends on node 7, which is not in the trace"),
    ([_node(0, deps=(0,))], "node 0 depends on itself"),
    ([_node(0), _node(1, deps=(0, 3)), _node(2, deps=(1,)), _node(3, deps=(2,))],
     "the dependencies form a cycle (nodes 1, 2, 3 wait for each other)"),
    ([_node(0, us=(1 << 63) + 5)], f"node 0 duration_micros = {(1 << 63) + 5}: more than 86,400,000,000 µs"),
    ([_node(0), _coll(1, (0,), _field(9, 0, _varint(0)), _field(9, 0, _varint((1 << 64) - 1)))],
     "node 1 comm_size = -1: must be bytes in 0..17,592,186,044,416"),
    ([_node(0), _coll(1, (0,), _field(9, 0, _varint(0)), _field(9, 0, _varint(1 << 50)))],
     f"node 1 comm_size = {1 << 50}: must be bytes"),
    ([_node(0), _coll(1, (0,), _ld(29, b"ALL_REDUCE"), _field(9, 0, _varint(64)))],
     "node 1 attribute comm_type holds string_val: must be an integer"),
    ([_node(0), _coll(1, (0,), _field(9, 0, _varint(0)), _ld(29, b"64"))],
     "node 1 attribute comm_size holds string_val: must be an integer"),
    ([_node(0), _coll(1, (0,), _field(9, 0, _varint(0)), _field(8, 0, _varint(64)))],  # int32_val: not ours
     "node 1 attribute comm_size holds no value read here"),
])
def test_a_trace_whose_graph_or_values_are_invalid_is_named(tmp_path, capsys, nodes, says):
    """Damage that makes a trace invalid (ids, dependencies, cycles, values out of range or of
    the wrong type) is named with the file and node, from read_et and from ``train``."""
    f = _et(tmp_path, *nodes)
    with pytest.raises(ConfigError) as info:
        read_et(f)
    assert str(info.value).startswith(f"chakra trace {f}: ") and says in str(info.value), str(info.value)
    code, _out, err = run(["train", "-t", "torus:2x2", "-w", f"trace:{tmp_path / 'g'}", "-o", str(tmp_path / "o")],
                          capsys)
    assert code == 2 and err.count("\n") == 1 and says in err, err


def test_a_plausible_changed_duration_is_not_detected(tmp_path):
    """The format has no checksum: a duration changed to another plausible value reads as a
    valid (different) trace; docs/validation.md says so."""
    a = read_et(_et(tmp_path, _node(0, us=2), _node(1, deps=(0,), us=3)))
    b = read_et(_et(tmp_path, _node(0, us=2), _node(1, deps=(0,), us=30)))
    assert a != b and [n.duration_us for n in b] == [2, 30]


def run(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


@pytest.mark.slow
def test_train_export_and_trace_workload(tmp_path, capsys):
    (tmp_path / "tiny.toml").write_text(NET)
    et = tmp_path / "et"
    code, out, err = run(["train", "-w", str(tmp_path / "tiny.toml"), "--topology", "torus:2x2", "--batch", "4",
                          "--export-chakra", str(et), "--out", str(tmp_path / "o1")], capsys)
    assert code == 0, err
    costs = layer_costs(load_workload_file(tmp_path / "tiny.toml"), 4, get_device("multitree-node"))
    trace = load_trace(et / "tiny")
    assert trace.ranks == 4 and list(trace.nodes) == layer_nodes(costs)
    # the trace as a workload: the timeline on the trace's (µs-rounded) costs, as another path computes them
    code, out, err = run(["train", "-w", f"trace:{et / 'tiny'}", "--topology", "torus:2x2", "--algorithms", "ring",
                          "--out", str(tmp_path / "o2")], capsys)
    assert code == 0, err
    import csv

    from hw_models.training.chakra import trace_workload
    from hw_models.training.comm import NicComm

    (tmp_path / "torus22.toml").write_text('[network]\ntopology = "torus:2x2"\n')
    tc = trace_workload(f"trace:{et / 'tiny'}").layer_costs()
    assert [round(c.fwd_s * 1e6) for c in tc] == [max(1, round(c.fwd_s * 1e6)) for c in costs]
    assert [c.grad_bytes for c in tc] == [c.grad_bytes for c in costs]
    want = simulate(tc, NicComm.from_config(tmp_path / "torus22.toml", algorithm="ring"), WaitFreeBackprop())
    rows = list(csv.DictReader((tmp_path / "o2" / "train_torus_2x2_message_wfbp.csv").open()))
    assert [r["workload"] for r in rows] == ["tiny"] and float(rows[0]["iteration_s"]) == want.iteration_s
    # a missing trace: one line, exit 2
    code, out, err = run(["train", "-w", f"trace:{tmp_path / 'missing'}", "--out", str(tmp_path / "o3")], capsys)
    assert code == 2 and err.count("\n") == 1 and "trace:" in err, err
