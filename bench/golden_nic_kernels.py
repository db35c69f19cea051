"""Store, or check, what three `nic` kernels compute, so that restructuring them shows no change.

* **MultiTree schedules** (``nic.collectives.multitree``): for a fixed list of topologies, NI
  counts and tree orders, a SHA-256 of the trees in the order they were grown
  (``multitree_trees``) and of the Schedule's five columns, with its size and parameters.
* **The scheduler's cycle model** (``nic.scheduler.sched_outputs`` / ``sched_edge``): a
  seeded random stimulus (table loads, starts, receives, NI completions, send back-pressure,
  read-backs, timeouts, clears) for several parameter sets; a SHA-256 of every cycle's
  outputs and of the final state, with counts of what the trace exercised.
* **The compiled verifier** (``nic.collectives.verify``): the index of the event where it
  finds a fault (-1: none) for seeded damaged schedules step by step, and for jittered
  simulated times, from the event order and from the merged sorted streams.

    python bench/golden_nic_kernels.py --write   # store tests/nic/data/golden_nic_kernels.json
    python bench/golden_nic_kernels.py           # compare the code with the stored file

``tests/nic/test_golden_nic_kernels.py`` runs the same comparison (the large tori marked slow).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "tests" / "nic" / "data" / "golden_nic_kernels.json"

# (topology, nis or None for the topology's, tree order, fast: in the default test suite)
SCHEDULES = [
    ("torus:4x4", None, "ours", True),
    ("torus:4x4:c4", None, "ours", True),
    ("torus:8x8:c4", None, "ours", True),
    ("mesh:6x5:c2", None, "ours", True),
    ("torus:4x4x4", 2, "ours", True),
    ("ring:9", None, "ours", True),
    ("hypercube:d5", 3, "ours", True),
    ("full:8", None, "ours", True),
    ("fattree:k4:l2", None, "ours", True),
    ("torus:16x16:c4", None, "ours", True),
    ("torus:8x8", None, "paper", True),
    ("mesh:4x4", 4, "paper", True),
    ("mesh:7x5:c2", None, "paper", True),
    ("torus:32x32:c4", None, "ours", False),
    ("torus:64x64:c4", None, "ours", False),
]

# (name, depth, nis, flow_w, node_w, step_w, len_w, cnt_w, err_w, tmo_w, cycles)
SCHEDULERS = [
    ("d8_n1", 8, 1, 8, 8, 8, 24, 4, 16, 16, 6000),
    ("d16_n4", 16, 4, 8, 8, 8, 24, 4, 16, 16, 6000),
    ("d5_n3_narrow", 5, 3, 3, 3, 2, 6, 2, 4, 3, 6000),
]

# (topology, algorithm) for the verifier
VERIFIER = [("torus:4x4", "multitree"), ("torus:4x4", "ring"), ("mesh:3x3", "dbtree"), ("torus:4x4:c2", "multitree")]


def _sha(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:24]


def schedule_figures(spec: str, nis, tree_order: str) -> dict:
    from nic.collectives.multitree import multitree, multitree_trees
    from noc.topology import parse_spec

    t = parse_spec(spec)
    tree, child, parent, tstep, steps = multitree_trees(t, nis, tree_order)
    s = multitree(t, nis, tree_order)
    return {"edges": int(tree.shape[0]), "construction_steps": int(steps),
            "trees_sha": _sha([tree, child, parent, tstep]),
            "transfers": s.num_transfers, "steps": s.num_steps, "flows": s.num_flows, "nis": s.nis_per_node,
            "schedule_sha": _sha([s.step, s.src, s.dst, s.flow, s.op]),
            "params": json.loads(json.dumps(s.params))}


def scheduler_figures(name, depth, nis, flow_w, node_w, step_w, len_w, cnt_w, err_w, tmo_w, cycles) -> dict:
    """A seeded random stimulus, in episodes: clear, load a random table, start, then random
    receives of the table's flows, NI completions (mostly of busy NIs, sometimes spurious),
    send back-pressure, read-backs and a timeout; a rare reset mid-episode."""
    from nic import scheduler as S

    p = S.SchedulerParams(depth=depth, nis=nis, flow_w=flow_w, node_w=node_w, step_w=step_w, len_w=len_w,
                          cnt_w=cnt_w, err_w=err_w, tmo_w=tmo_w)
    pv = p.vector()
    tab, regs = S.new_state(p)
    inp = S.new_inputs(p)
    out = np.zeros(S.N_OUTS, np.int64)
    rng = np.random.default_rng(sum(map(ord, name)))
    h = hashlib.sha256()
    flows = min(4, 1 << flow_w)
    steps = min(4, 1 << step_w)
    counts = {"sends": 0, "recvs": 0, "errors_raised": 0, "done": 0, "timeouts": 0}
    plan: list[str] = []
    for _ in range(cycles):
        if not plan:
            n_load = int(rng.integers(1, depth + 2))
            plan = ["clear"] + ["load"] * n_load + ["start"] + ["run"] * int(rng.integers(20, 120))
        phase = plan.pop(0)
        S.sched_outputs(tab, regs, pv, out)
        h.update(out.tobytes())
        inp[:] = 0
        if phase == "clear":
            inp[S.I_CLEAR] = 1
        elif phase == "load":
            inp[S.I_LOAD_VALID] = 1
            inp[S.I_LOAD_ADDR] = int(rng.integers(0, 1 << p.addr_w))
            inp[S.I_LOAD_OP] = int(rng.choice([0, 1, 2, 3], p=[0.4, 0.35, 0.2, 0.05]))
            inp[S.I_LOAD_FLOW] = int(rng.integers(flows))
            inp[S.I_LOAD_PEER] = int(rng.integers(1 << min(node_w, 4)))
            inp[S.I_LOAD_STEP] = int(rng.integers(steps))
            inp[S.I_LOAD_LEN] = int(rng.integers(1 << min(len_w, 10)))
            inp[S.I_LOAD_DEP_OP] = int(rng.integers(2))
            inp[S.I_LOAD_DEP_COUNT] = int(rng.choice([0, 0, 1, 2, (1 << cnt_w) - 1]))
            inp[S.I_LOAD_SRC] = int(rng.integers(1 << min(node_w, 3)))
            inp[S.I_LOAD_SRC_CHK] = int(rng.random() < 0.3)
        elif phase == "start":
            inp[S.I_START] = 1
        else:
            if rng.random() < 0.01:
                inp[S.I_RST] = 1
            if rng.random() < 0.05:
                inp[S.I_START] = 1
            inp[S.I_SEND_READY] = int(rng.random() < 0.7)
            busy = int(out[S.O_NI_BUSY])
            done = 0
            for i in range(nis):
                if (busy >> i) & 1 and rng.random() < 0.3:
                    done |= 1 << i
                elif rng.random() < 0.01:
                    done |= 1 << i
            inp[S.I_NI_DONE] = done
            rv = 0
            for q in range(nis):
                if rng.random() < 0.12:
                    rv |= 1 << q
                    inp[S.N_IN_HEADER + q] = int(rng.integers(flows))
                    inp[S.N_IN_HEADER + nis + q] = int(rng.integers(2))
                    inp[S.N_IN_HEADER + 2 * nis + q] = int(rng.integers(1 << min(node_w, 3)))
            inp[S.I_RECV_VALID] = rv
            if rng.random() < 0.2:
                inp[S.I_RD_EN] = 1
                inp[S.I_RD_ADDR] = int(rng.integers(0, 1 << p.addr_w))
            inp[S.I_TIMEOUT_CYCLES] = int(rng.choice([0, 0, 3, (1 << tmo_w) - 1]))
            counts["recvs"] += bin(rv).count("1")
        h.update(inp.tobytes())
        err_before = int(out[S.O_ERR_COUNT])
        S.sched_edge(tab, regs, pv, inp, out)
        counts["sends"] += int(out[S.O_SEND_VALID] == 1 and inp[S.I_SEND_READY] != 0 and inp[S.I_RST] == 0
                               and inp[S.I_CLEAR] == 0)
        S.sched_outputs(tab, regs, pv, out)
        counts["errors_raised"] += int(out[S.O_ERR_COUNT] > err_before)
        counts["done"] += int(out[S.O_DONE])
        counts["timeouts"] += int(out[S.O_EV_TIMEOUT])
    # the state the contract had when the digests were stored: the pipelined variant's
    # column and registers (zero at PIPE 0, checked) are left out
    assert not tab[:, S.C_ELIG:].any() and not regs[S.R_RX_UNEXP:].any()
    h.update(np.ascontiguousarray(tab[:, :S.C_ELIG]).tobytes())
    h.update(regs[:S.R_RX_UNEXP].tobytes())
    return {"cycles": cycles, "trace_sha": h.hexdigest()[:24], **counts}


def _damage(s, rng):
    from nic.collectives import Schedule

    arr = np.stack([s.step, s.src, s.dst, s.flow, s.op], axis=1).astype(np.int64)
    k = int(rng.integers(len(arr)))
    how = int(rng.integers(5))
    if how == 0:
        arr = np.delete(arr, k, axis=0)
    elif how == 1:
        arr[k, 0] = max(arr[k, 0] + int(rng.choice([-1, 1])), 0)
    elif how == 2:
        arr[k, 2] = (arr[k, 1] + 1 + int(rng.integers(s.num_nodes - 1))) % s.num_nodes
    elif how == 3:
        arr[k, 4] = 1 - arr[k, 4]
    else:
        arr = np.concatenate([arr, arr[k:k + 1]])
    return Schedule.from_transfers(s.algorithm, s.topology, s.num_nodes, s.nis_per_node, s.num_flows, arr)


def verifier_figures(spec: str, algorithm: str) -> dict:
    import importlib

    from nic.collectives import build

    V = importlib.import_module("nic.collectives.verify")
    from noc.topology import parse_spec

    s = build(parse_spec(spec), algorithm)
    m = 2 * s.num_flows + 1
    rng = np.random.default_rng(5)
    stepped = [V._fast_fault(s, m, 3, None)]
    for _ in range(40):
        bad = _damage(s, rng)
        stepped.append(V._fast_fault(bad, 2 * bad.num_flows + 1, 3, None))
    ordered, merged = [], []
    start = s.step.astype(float)
    for k in range(30):
        st = start + rng.normal(0, 0.6 if k % 2 else 0.05, size=start.shape)
        ar = st + (rng.uniform(-0.2, 1.0, size=start.shape) if k % 2 else 0.5)
        ordered.append(V._fast_fault(s, m, 3, V._event_order(s, (st, ar))))
        merged.append(V._fast_fault_timed(s, m, 3, (st, ar)))
    return {"stepped": [int(x) for x in stepped], "ordered": [int(x) for x in ordered],
            "merged": [int(x) for x in merged]}


def schedule_key(spec, nis, order) -> str:
    return f"{spec} nis={nis} {order}"


def compute(include_slow: bool = True) -> dict:
    out = {"command": "python bench/golden_nic_kernels.py --write", "schedules": {}, "schedulers": {}, "verifier": {}}
    for spec, nis, order, fast in SCHEDULES:
        if fast or include_slow:
            out["schedules"][schedule_key(spec, nis, order)] = schedule_figures(spec, nis, order)
            print(schedule_key(spec, nis, order), out["schedules"][schedule_key(spec, nis, order)]["schedule_sha"],
                  flush=True)
    for case in SCHEDULERS:
        out["schedulers"][case[0]] = scheduler_figures(*case)
        print(case[0], out["schedulers"][case[0]], flush=True)
    for spec, alg in VERIFIER:
        out["verifier"][f"{spec} {alg}"] = verifier_figures(spec, alg)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store the figures instead of comparing")
    ap.add_argument("--fast", action="store_true", help="leave out the large tori")
    a = ap.parse_args()
    got = compute(include_slow=not a.fast)
    if a.write:
        DATA.write_text(json.dumps(got, indent=1) + "\n")
        print(f"wrote {DATA.relative_to(ROOT)}")
        return 0
    stored = json.loads(DATA.read_text())
    bad = 0
    for part in ("schedules", "schedulers", "verifier"):
        for key, figures in got[part].items():
            if stored[part].get(key) != figures:
                bad += 1
                print(f"DIFFERS {part} {key}")
    print("identical" if not bad else f"{bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
