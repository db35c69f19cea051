"""Store, or check, a fixed matrix of all-reduce runs through the public dispatch.

Each case is resolved as ``hw-models allreduce`` resolves its flags (``hw_models.experiment``:
the topology, the router config, the NIC of each design) and run by
``nic.allreduce.simulate_allreduce`` at flit level (the co-simulation) or at message level.
For every run the file keeps the total cycles, the per-step ends and a SHA-256 of the
per-transfer start, sent and arrive cycles, so a change of any transfer's timing shows; and
for every case the NIC and router configs' key fields, so a change of what stored results
are keyed by shows too.

    python bench/golden_flit_cycles.py --write     # store tests/nic/data/golden_flit_cycles.json
    python bench/golden_flit_cycles.py             # compare the code with the stored file
    python bench/golden_flit_cycles.py --only fast # just the cases the default suite runs

``tests/nic/test_golden_flit_cycles.py`` runs the same comparison (the fast cases with the suite,
the rest marked slow).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "nic" / "data" / "golden_flit_cycles.json"

KIB = 1024
MAIN = ("ring", "ring2d", "dbtree", "multitree")

# (name, preset, topology, nis, algorithms, designs, sizes, models, fast)
# ``fast``: in the default test suite (a few seconds once compiled); the rest is slow.
CASES = [
    ("torus4x4c4", None, "torus:4x4:c4", None, MAIN, ("codesigned", "baseline"), (16 * KIB,), ("flit",), True),
    ("torus4x4c4_64k", None, "torus:4x4:c4", None, MAIN, ("codesigned", "baseline"), (64 * KIB,), ("flit",), False),
    ("torus4x4_1ni", None, "torus:4x4", 1, MAIN, ("codesigned", "baseline"), (16 * KIB,), ("flit",), True),
    ("mesh4x4c4", None, "mesh:4x4:c4", None, MAIN, ("codesigned", "baseline"), (16 * KIB, 64 * KIB), ("flit",), False),
    ("mesh4x4_1ni", None, "mesh:4x4", 1, ("ring", "multitree"), ("codesigned", "baseline"), (32 * KIB,), ("flit",), False),
    ("fattree", None, "fattree:k4:l2", None, ("ring", "dbtree", "multitree"), ("codesigned", "baseline"),
     (16 * KIB, 64 * KIB), ("flit",), False),
    ("isca2021", "isca2021", None, None, ("ring", "dbtree", "ring2d_4dir", "multitree"), ("codesigned",),
     (32 * KIB,), ("flit",), False),
    ("isca2021_base", "isca2021", None, None, ("ring", "multitree"), ("baseline",), (32 * KIB,), ("flit",), False),
    ("isca2021_1ni", "isca2021", "torus:4x4", 1, ("ring", "multitree"), ("codesigned",), (64 * KIB,), ("flit",), False),
    ("message_torus4x4c4", None, "torus:4x4:c4", None, MAIN, ("codesigned", "baseline"), (64 * KIB, 1024 * KIB),
     ("message",), True),
    ("message_isca2021", "isca2021", None, None, ("ring", "multitree"), ("codesigned",), (256 * KIB,), ("message",),
     False),
]


def _digest(times: dict) -> str:
    h = hashlib.sha256()
    for name in ("start_cycles", "sent_cycles", "arrive_cycles"):
        h.update(np.ascontiguousarray(times[name], np.float64).tobytes())
    return h.hexdigest()[:16]


def resolve_case(case):
    """The checked experiment of a case, as ``hw-models allreduce`` resolves its flags, and its seed."""
    from hw_models.config import experiment_data
    from hw_models.experiment import config_with_flags, resolve_experiment

    name, preset, topology, nis, algorithms, designs, sizes, models, _ = case
    data, source = experiment_data(None, preset)
    overrides, drop = {}, ()
    if topology is not None:
        overrides["network.topology"] = topology
        drop = ("network.nis_per_node", "network.routing")
    if nis is not None:
        overrides["network.nis_per_node"] = nis
    cfg = config_with_flags(data, source, overrides, {}, drop)
    return resolve_experiment(cfg, source, designs=list(designs), algorithms=list(algorithms)), cfg.run.seed


def run_case(case) -> dict:
    """The stored figures of one case (every algorithm x design x size x model)."""
    from nic.allreduce import simulate_allreduce

    name, preset, topology, nis, algorithms, designs, sizes, models, _ = case
    exp, seed = resolve_case(case)
    runs = {}
    for model in models:
        for design in designs:
            nic = exp.nics[design]
            for a in algorithms:
                for size in sizes:
                    times: dict = {}
                    res = simulate_allreduce(exp.topology, exp.schedules[a], nic, exp.router, size, model=model,
                                             seed=seed, times_out=times)
                    runs[f"{model}|{design}|{a}|{size}"] = {
                        "total_cycles": res.total_cycles, "step_end_cycles": list(res.step_end_cycles),
                        "times_sha256": _digest(times), "verified": res.verified}
    return {"topology": exp.topology.name, "nic_key_fields": {d: exp.nics[d].key_fields() for d in designs},
            "router_key_fields": exp.router.key_fields(), "runs": runs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"store the figures in {DATA.relative_to(ROOT)}")
    ap.add_argument("--only", choices=("fast", "slow"), help="only the default suite's cases, or only the others")
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    args = ap.parse_args(argv)
    cases = [c for c in CASES if (args.only is None or c[-1] == (args.only == "fast"))
             and (not args.case or c[0] in args.case)]
    stored = json.loads(DATA.read_text()) if DATA.exists() else {"cases": {}}
    out = {"command": "python bench/golden_flit_cycles.py --write", "cases": dict(stored["cases"])}
    bad = 0
    for c in cases:
        got = run_case(c)
        if args.write:
            out["cases"][c[0]] = got
            print(f"{c[0]}: {len(got['runs'])} runs stored")
            continue
        want = stored["cases"].get(c[0])
        if want != got:
            bad += 1
            diff = [k for k in got["runs"] if want is None or want["runs"].get(k) != got["runs"][k]]
            print(f"{c[0]}: DIFFERS ({', '.join(diff[:6]) or 'key fields'})")
        else:
            print(f"{c[0]}: {len(got['runs'])} runs identical")
    if args.write:
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
