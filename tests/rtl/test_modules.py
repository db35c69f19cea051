"""Per-module benches (tests/rtl/module_benches.py) over a parameter matrix: the tie-break
tree, the one-hot mux, the table RAM and the table entry, each against its own Python
reference. Icarus runs the matrix (builds take a second); Verilator a corner of it, and
the rest with ``-m slow``.
"""

from __future__ import annotations

import pytest

from dp_runner import run_bench
from rtl_matrix import SIMS


def _clog2(n):
    return max(1, (n - 1).bit_length())


# (module, bench, parameter set)
MATRIX = [("nic_sched_lowest", "lowest_bench", {"N": n, "IDX_W": _clog2(n)}) for n in (1, 2, 3, 5, 8, 16, 64, 256)]
MATRIX += [("nic_sched_mux", "mux_bench", {"N": n, "W": w}) for n, w in ((1, 1), (3, 8), (16, 5), (64, 1))]
MATRIX += [("nic_sched_ram", "ram_bench", {"DEPTH": d, "W": w, "ADDR_W": _clog2(d)}) for d, w in ((1, 4), (5, 8), (16, 32))]
MATRIX += [("nic_sched_entry", "entry_bench", {"NIS": n, "FLOW_W": fw, "NODE_W": nw, "STEP_W": sw, "CNT_W": cw,
                                               "PRIOR_W": 5})
           for n, fw, nw, sw, cw in ((1, 8, 8, 8, 4), (2, 1, 1, 1, 1), (4, 16, 16, 16, 8), (16, 3, 3, 4, 2))]

# Verilator in the default run: one set per module
VERILATOR_DEFAULT = {("nic_sched_lowest", 5), ("nic_sched_mux", 3), ("nic_sched_ram", 5), ("nic_sched_entry", 4)}


def _cases():
    out = []
    for sim in SIMS:
        name = sim.values[0] if hasattr(sim, "values") else sim
        marks = tuple(sim.marks) if hasattr(sim, "values") else ()
        for mod, bench, params in MATRIX:
            key = (mod, params.get("N", params.get("DEPTH", params.get("NIS"))))
            slow = name == "verilator" and key not in VERILATOR_DEFAULT
            tag = "-".join(f"{k}{v}" for k, v in params.items())
            out.append(pytest.param(name, mod, bench, params, id=f"{mod}-{tag}-{name}",
                                    marks=marks + ((pytest.mark.slow,) if slow else ())))
    return out


@pytest.mark.parametrize("sim,module,bench,params", _cases())
def test_module_bench(sim, module, bench, params, tmp_path):
    run_bench(sim, module, bench, params, {}, tmp_path, sources=[f"{module}.v"], test_module="module_benches",
              job_env="HWM_MOD_JOB", build_prefix="mod")
