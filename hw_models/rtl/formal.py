"""Proofs of the RTL's stream rules with Yosys's own SAT engine (no external solver).

A property module (tests/rtl/formal/props_*.v) instantiates a module of rtl/ and states
its rules as ``assert``/``assume`` in ``always @*`` blocks; :func:`prove` reads it with
``read_verilog -sv -formal -DFORMAL`` (the module's own ``ifdef FORMAL`` invariants
included), flattens it and runs ``sat -tempinduct -prove-asserts -set-assumes
-set-init-zero``: a base case from the zero state (the property module assumes reset in
the first cycle) and a temporal induction step of increasing length up to
``max_steps``. Proven means every assertion holds in every reachable state.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hw_models.toolchain import ToolchainError, stage_sources, yosys_command


@dataclass(frozen=True)
class ProofResult:
    proven: bool
    induction_length: int | None  # the induction length that closed the proof
    verdict: str  # Yosys's last line about the proof
    log: str


def prove(top: str, sources: Sequence[Path], parameters: Mapping[str, int] | None = None, *,
          max_steps: int = 12, work_dir: Path | None = None) -> ProofResult:
    """Temporal induction of every assertion of ``top`` (a property module among ``sources``)."""
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="hwm-formal-") as tmp:
            return prove(top, sources, parameters, max_steps=max_steps, work_dir=Path(tmp))
    work = Path(work_dir)
    names = stage_sources(sources, work)
    ch = " ".join(f"-set {k} {v}" for k, v in (parameters or {}).items())
    script = (f"read_verilog -sv -formal -DFORMAL {' '.join(names)}; {f'chparam {ch} {top}; ' if ch else ''}"
              f"prep -flatten -top {top}; memory_map; opt_clean; async2sync; dffunmap; "
              f"sat -tempinduct -prove-asserts -set-assumes -set-init-zero -maxsteps {max_steps}")
    p = subprocess.run([*yosys_command(), "-p", script], cwd=work, capture_output=True, text=True)
    log = p.stdout + p.stderr
    if "ERROR" in log and "SAT" not in log:
        raise ToolchainError(f"yosys could not read {top}: {log[-2000:]}")
    lines = [ln.strip() for ln in log.splitlines()
             if "Induction step" in ln or "proof finished" in ln or "proof failed" in ln]
    proven = any("Induction step proven: SUCCESS" in ln for ln in lines)
    length = len(re.findall(r"Base case for induction length \d+ proven", log)) if proven else None
    return ProofResult(proven=proven, induction_length=length, verdict=lines[-1] if lines else log[-300:], log=log)
