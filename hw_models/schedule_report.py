"""What ``hw-models schedule`` shows of all-reduce schedules on a topology: per algorithm its
steps, transfers, messages, link contention, busiest link and ideal (lockstep, zero-latency)
time, next to the injection and bisection bounds and the exact optimum
(:func:`nic.collectives.optimal_bound`) with the cut that attains it; each node's schedule
table; the schedule as JSON.

* :func:`build_rows` — the schedules built (and verified) with their figures, plain values;
* :func:`print_summary` — the summary table and the lines under it;
* :func:`print_node_tables` — the tables the NIC loads, per node.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from nic.collectives import Schedule
from noc.topology import Topology

SUMMARY_COLUMNS = ("algorithm", "steps", "transfers", "messages", "link/step", "link bytes", "ideal cycles", "time",
                   "/bound",
                   "% of optimum")
TABLE_COLUMNS = ("step", "op", "flow", "peer", "waits for", "offset", "length")


@dataclass(frozen=True)
class ScheduleRow:
    """One algorithm's schedule and its figures for an all-reduce of ``size_bytes``."""

    schedule: Schedule
    messages: int  # transfers of one step with the same sender and receiver travel together
    max_messages_per_link_step: int  # 1 = contention-free
    busiest_link_bytes: int
    ideal_cycles: float


def build_rows(t: Topology, names: list[str], size_bytes: int, verify_: bool) -> list[ScheduleRow]:
    """Build each algorithm's schedule on ``t`` (each routes only its own pairs), check it holds
    ``size_bytes``, verify it on exact integers when asked, and measure it."""
    import numpy as np

    from nic.collectives import build, contention, ideal_cycles, verify
    from nic.collectives.analysis import message_starts, transfer_paths
    from nic.nic_config import NicConfig
    from nic.preparation import check_size

    rows = []
    for name in names:
        s = build(t, name)
        check_size(s, NicConfig(), size_bytes)
        if verify_:
            verify(s)
        off, flat = transfer_paths(s, t, None)
        tb = s.transfer_elements(max(1, size_bytes // 4)) * 4
        link_bytes = np.bincount(flat, weights=np.repeat(tb, np.diff(off)), minlength=t.num_links)
        rows.append(ScheduleRow(s, int(message_starts(s).sum()), contention(s, t, None).max_messages_per_link_step,
                                int(link_bytes.max()), ideal_cycles(s, t, size_bytes, routes=None)))
    return rows


def node_ranges(nodes) -> str:
    """``0-3,5,7-9``: sorted node numbers as runs."""
    runs: list[list[int]] = []
    for v in sorted(nodes):
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def describe_cut(cut, t: Topology) -> str:
    """The vertex set S of a cut, briefly: its compute nodes (or the ones outside it, when
    fewer), its routers/switches, and the bandwidth across it."""
    n, e = t.num_nodes, t.num_endpoints
    inside = set(cut.nodes)
    if len(inside) > n / 2:
        nodes = f"every node but {node_ranges(set(range(n)) - inside)}"
    else:
        nodes = f"node{'s' if len(inside) > 1 else ''} {node_ranges(inside)}"
    routers = sum(1 for v in cut.vertices if v >= e)
    return f"{nodes} ({len(inside)} of {n}) with {routers} of {t.num_routers} routers/switches"


def optimum_line(t: Topology, size_bytes: int, opt) -> str:
    """The exact optimum of the all-reduce (reduce-scatter then all-gather, no in-network
    reduction) and the cuts that attain it."""
    ar, rs, ag = (opt.all_reduce_cycles(size_bytes), opt.reduce_scatter_cycles(size_bytes),
                  opt.all_gather_cycles(size_bytes))
    text = (f"optimum (exact): {_cycles(ar)} cycles = reduce-scatter {_cycles(rs)} + all-gather {_cycles(ag)}")
    if opt.all_gather_cut is None:
        return text + " (one node: nothing to send)"
    agc, rsc = opt.all_gather_cut, opt.reduce_scatter_cut
    text += (f"; all-gather cut: {describe_cut(agc, t)}, {float(agc.bytes_per_cycle):g} B/cycle "
             "leaving it")
    if (rsc.nodes, rsc.vertices) == (agc.nodes, agc.vertices) and rsc.bytes_per_cycle == agc.bytes_per_cycle:
        return text + "; reduce-scatter cut: the same, entering it"
    return text + (f"; reduce-scatter cut: {describe_cut(rsc, t)}, {float(rsc.bytes_per_cycle):g} "
                   "B/cycle entering it")


def _cycles(value: Fraction) -> str:
    """A cycle count: an integer with thousands separators, else to one decimal."""
    return f"{int(value):,}" if value.denominator == 1 else f"{float(value):,.1f}"


def print_summary(console, t: Topology, size_bytes: int, rows: list[ScheduleRow], verified: bool,
                  clock_ghz: float = 1.0) -> None:
    """The summary table (each schedule's figures, its ideal time in cycles and in seconds at
    ``clock_ghz``, over the injection bound and as a share of the optimum) and the bounds and
    optimum under it."""
    from hw_models.console import table
    from nic.collectives import bounds, optimal_bound
    from noc.base.units import cycles_to_seconds, format_seconds, format_size_bytes

    b = bounds(t, size_bytes)
    opt = optimal_bound(t)
    best = float(opt.all_reduce_cycles(size_bytes))
    console.print(table(f"all-reduce of {format_size_bytes(size_bytes)} on {t.name} ({t.num_nodes} nodes, "
                        f"{t.nis_per_node} NI(s) per node), clock {clock_ghz:g} GHz", SUMMARY_COLUMNS,
                        [(r.schedule.algorithm, str(r.schedule.num_steps), str(r.schedule.num_transfers),
                          str(r.messages), str(r.max_messages_per_link_step), format_size_bytes(r.busiest_link_bytes),
                          f"{r.ideal_cycles:,.0f}", format_seconds(cycles_to_seconds(r.ideal_cycles, clock_ghz)),
                          f"{r.ideal_cycles / b.injection_cycles:.2f}" if b.injection_cycles else "-",
                          f"{100 * best / r.ideal_cycles:.1f}" if r.ideal_cycles else "-") for r in rows],
                        ("algorithm",)))
    console.print("link/step: most messages on one directed link in a step (1 = contention-free); "
                  "link bytes: busiest link over the run; /bound: ideal time over the injection bound; "
                  "% of optimum: the optimum over the ideal time")
    console.print(f"bounds: injection {b.injection_cycles:,.0f} cycles ({b.node_bytes_per_cycle:g} B/cycle per node), "
                  f"bisection {b.bisection_cycles:,.0f} cycles ({b.bisection_bytes_per_cycle:g} B/cycle), "
                  f"tree construction >= {b.min_tree_steps} steps"
                  + ("" if not verified else "; every schedule verified on exact integers"))
    console.print(optimum_line(t, size_bytes, opt))
    for r in rows:
        s = r.schedule
        if s.algorithm == "multitree":
            console.print(f"multitree: {s.params['construction_steps']} construction steps, edges per step "
                          f"{s.params['edges_per_step']}")


def print_node_tables(console, rows: list[ScheduleRow], size_bytes: int, node: int | None) -> None:
    """Each schedule's table of every node (or of ``node``), as the NIC scheduler loads it."""
    from hw_models.console import table

    for r in rows:
        s = r.schedule
        for v in range(s.num_nodes) if node is None else [node]:
            console.print(table(f"{s.algorithm}: node {v}", TABLE_COLUMNS, [
                (str(e.step), e.op_name, str(e.flow), str(e.peer), f"{','.join(map(str, e.children)) or '-'} "
                 f"({'reduce' if e.dep_op == 0 else 'gather'})", str(e.offset), str(e.length))
                for e in s.node_table(v, max(1, size_bytes // 4))], TABLE_COLUMNS))
