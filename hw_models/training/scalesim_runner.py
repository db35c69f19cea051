"""SCALE-Sim 2 as the outside reference of the systolic-array model.

SCALE-Sim (PyPI ``scalesim==2.0.2``, the ``scalesim`` extra) is run in-process on a config
and a topology CSV written into a temporary directory; its COMPUTE_REPORT.csv is parsed
into :class:`ScaleSimReport` values, one per GEMM or convolution. Results are cached per
(shape, array) in this process, since SCALE-Sim walks every operand address in Python:
about 0.1 ms per cycle row, so a layer of ``folds * (k + rows + cols)`` = 10^5 rows takes
about 10 s. Use small layers in tests.

``python -m hw_models.training.scalesim_runner`` prints the comparison table of
docs/training_workloads.md (closed form vs SCALE-Sim, layer by layer).
"""

from __future__ import annotations

import contextlib
import csv
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from hw_models.training.systolic import DATAFLOWS, gemm_cycles
from hw_models.training.costs import whole
from noc.base.errors import ConfigError

INSTALL_HINT = "pip install 'hw-models[scalesim]' (scalesim==2.0.2)"


def scalesim_available() -> bool:
    import importlib.util  # noqa: PLC0415

    try:
        return importlib.util.find_spec("scalesim.scale_sim") is not None
    except (ImportError, ValueError):  # a parent missing, or blocked in sys.modules
        return False


@dataclass(frozen=True)
class ArrayConfig:
    """One systolic array as SCALE-Sim sees it. ``bandwidth_words_per_cycle``: None runs
    SCALE-Sim's CALC mode (it estimates the DRAM bandwidth that avoids stalls: no stall
    cycles); a number runs its USER mode with that interface bandwidth (stalls appear when
    the SRAMs cannot be refilled in time)."""

    rows: int = 32
    cols: int = 32
    dataflow: str = "os"
    ifmap_sram_kib: int = 512
    filter_sram_kib: int = 512
    ofmap_sram_kib: int = 256
    bandwidth_words_per_cycle: int | None = None

    def __post_init__(self):
        for key in ("rows", "cols", "ifmap_sram_kib", "filter_sram_kib", "ofmap_sram_kib"):
            whole(f"ArrayConfig.{key}", getattr(self, key))
        if self.dataflow not in DATAFLOWS:
            raise ConfigError(f"ArrayConfig.dataflow = {self.dataflow!r}: must be one of {', '.join(DATAFLOWS)}")
        bw = self.bandwidth_words_per_cycle
        if bw is not None and (isinstance(bw, bool) or not isinstance(bw, int) or bw < 1):
            raise ConfigError(f"ArrayConfig.bandwidth_words_per_cycle = {bw!r}: must be None or an integer >= 1")

    def config_text(self) -> str:
        """The SCALE-Sim 2 config file for this array."""
        return "\n".join([
            "[general]", "run_name = hw_models", "",
            "[architecture_presets]",
            f"ArrayHeight = {self.rows}", f"ArrayWidth = {self.cols}",
            f"IfmapSramSzkB = {self.ifmap_sram_kib}", f"FilterSramSzkB = {self.filter_sram_kib}",
            f"OfmapSramSzkB = {self.ofmap_sram_kib}",
            "IfmapOffset = 0", "FilterOffset = 10000000", "OfmapOffset = 20000000",
            f"Bandwidth = {self.bandwidth_words_per_cycle or 10}", f"Dataflow = {self.dataflow}",
            "MemoryBanks = 1", "",
            "[run_presets]", f"InterfaceBandwidth = {'CALC' if self.bandwidth_words_per_cycle is None else 'USER'}",
            "",
        ])


@dataclass(frozen=True)
class ScaleSimReport:
    """One row of SCALE-Sim's COMPUTE_REPORT.csv. ``total_cycles`` is SCALE-Sim's "Total
    Cycles": the 0-based index of the layer's last cycle, stalls included."""

    total_cycles: int
    stall_cycles: int
    overall_util_pct: float
    mapping_efficiency_pct: float
    compute_util_pct: float

    @property
    def cycles(self) -> int:
        """The number of cycles the layer takes (``total_cycles + 1``), stalls included."""
        return self.total_cycles + 1

    @property
    def compute_cycles(self) -> int:
        """The number of cycles without the stalls."""
        return self.total_cycles + 1 - self.stall_cycles


@dataclass(frozen=True)
class ConvShape:
    """A convolution as SCALE-Sim's conv topology gives it: the (already padded) input
    map, the filter, channels, number of filters and strides; no padding of its own."""

    ifmap_h: int
    ifmap_w: int
    filter_h: int
    filter_w: int
    channels: int
    filters: int
    stride_h: int = 1
    stride_w: int = 1

    @property
    def gemm(self) -> tuple[int, int, int]:
        """``(m, n, k)`` of its im2col GEMM, by SCALE-Sim's output-size rule."""
        oh = -(-(self.ifmap_h - self.filter_h + self.stride_h) // self.stride_h)
        ow = -(-(self.ifmap_w - self.filter_w + self.stride_w) // self.stride_w)
        return oh * ow, self.filters, self.filter_h * self.filter_w * self.channels


_CACHE: dict[tuple, ScaleSimReport] = {}


def _parse_report(text: str) -> list[ScaleSimReport]:
    rows = list(csv.reader(io.StringIO(text)))
    out = []
    for row in rows[1:]:
        cells = [c.strip() for c in row if c.strip() != ""]
        if not cells:
            continue
        out.append(ScaleSimReport(total_cycles=int(float(cells[1])), stall_cycles=int(float(cells[2])),
                                  overall_util_pct=float(cells[3]), mapping_efficiency_pct=float(cells[4]),
                                  compute_util_pct=float(cells[5])))
    return out


def _run(kind: str, rows: list[str], array: ArrayConfig) -> list[ScaleSimReport]:
    try:
        from scalesim.scale_sim import scalesim  # noqa: PLC0415
    except ImportError:
        raise ConfigError(f"SCALE-Sim is not installed: {INSTALL_HINT}") from None
    with tempfile.TemporaryDirectory(prefix="hw_models_scalesim_") as tmp:
        d = Path(tmp)
        (d / "scale.cfg").write_text(array.config_text())
        header = "Layer, M, N, K," if kind == "gemm" else \
            "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Stride h, Stride w,"
        (d / "topology.csv").write_text("\n".join([header, *rows]) + "\n")
        with contextlib.redirect_stdout(io.StringIO()):
            sim = scalesim(save_disk_space=True, verbose=False, config=str(d / "scale.cfg"),
                           topology=str(d / "topology.csv"), input_type_gemm=(kind == "gemm"))
            sim.run_scale(top_path=str(d / "out"))
        reports = _parse_report((d / "out" / "hw_models" / "COMPUTE_REPORT.csv").read_text())
    if len(reports) != len(rows):
        raise RuntimeError(f"SCALE-Sim reported {len(reports)} layers for {len(rows)}")
    return reports


def _cached(kind: str, items: Sequence, array: ArrayConfig, row, key=None) -> tuple[ScaleSimReport, ...]:
    """The report of each of ``items`` on ``array``: cached ones from :data:`_CACHE`, the rest (sorted by
    ``key``, ``row(i, item)`` each) in one SCALE-Sim invocation."""
    todo = sorted({x for x in items if (kind, x, array) not in _CACHE}, key=key)
    if todo:
        for x, r in zip(todo, _run(kind, [row(i, x) for i, x in enumerate(todo)], array)):
            _CACHE[(kind, x, array)] = r
    return tuple(_CACHE[(kind, x, array)] for x in items)


def _check_ints(what: str, values: Sequence[int]) -> None:
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{what} {tuple(values)}: every entry must be an integer >= 1")


def run_gemms(shapes: Sequence[tuple[int, int, int]], array: ArrayConfig = ArrayConfig()) -> tuple[ScaleSimReport, ...]:
    """SCALE-Sim's report for each ``(m, n, k)`` GEMM (``m x k`` by ``k x n``) on ``array``;
    shapes already run on the same array come from the cache, the rest run in one
    SCALE-Sim invocation."""
    shapes = [tuple(s) for s in shapes]
    for s in shapes:
        _check_ints("GEMM (m, n, k)", s)
    return _cached("gemm", shapes, array, lambda i, s: f"G{i}, {s[0]}, {s[1]}, {s[2]},")


def run_convs(convs: Sequence[ConvShape], array: ArrayConfig = ArrayConfig()) -> tuple[ScaleSimReport, ...]:
    """SCALE-Sim's report for each convolution (its conv topology format) on ``array``."""
    for c in convs:
        _check_ints("ConvShape", (c.ifmap_h, c.ifmap_w, c.filter_h, c.filter_w, c.channels, c.filters,
                                  c.stride_h, c.stride_w))
        if c.filter_h > c.ifmap_h or c.filter_w > c.ifmap_w:
            raise ConfigError(f"{c}: the filter is larger than the input map")
    return _cached("conv", convs, array, lambda i, c: f"C{i}, {c.ifmap_h}, {c.ifmap_w}, {c.filter_h}, {c.filter_w}, "
                   f"{c.channels}, {c.filters}, {c.stride_h}, {c.stride_w},",
                   key=lambda c: (c.ifmap_h, c.ifmap_w, c.filter_h, c.filter_w, c.channels, c.filters))


# ---------------------------------------------------------------------------------------
# The comparison table of docs/training_workloads.md
# ---------------------------------------------------------------------------------------

def comparison_cases() -> list[tuple[str, tuple[int, int, int]]]:
    """Layers of the built-in workloads as single-array GEMMs (one sample per array unless
    the name says otherwise): forward, and the two backward GEMMs for some."""
    from hw_models.training.systolic import training_gemms  # noqa: PLC0415
    from hw_models.training.workloads import get_workload  # noqa: PLC0415

    cases = []
    for wl, layer, batch, passes in [
        ("alphago_zero", "value.fc1", 1, "f"), ("alphago_zero", "policy.conv", 1, "fb"),
        ("ncf", "mlp_fc1", 16, "fb"), ("transformer", "enc0.attn.scores", 1, "f"),
        ("transformer", "enc0.attn.context", 1, "f"), ("googlenet", "inception5b.5x5", 1, "fb"),
        ("resnet50", "layer4.2.conv3", 1, "f"), ("alexnet", "conv1", 1, "f"),
    ]:
        fwd, bwd = training_gemms(get_workload(wl).layer(layer), batch)
        label = f"{wl} {layer}" + (f" (batch {batch})" if batch > 1 else "")
        cases.append((f"{label} fwd", (fwd[0].m, fwd[0].n, fwd[0].k)))
        if "b" in passes:
            names = ["dX", "dW"] if len(bwd) == 2 else ["dW"]
            for nm, g in zip(names, bwd):
                cases.append((f"{label} bwd {nm}", (g.m, g.n, g.k)))
    return cases


def comparison_table(array: ArrayConfig = ArrayConfig()) -> str:
    cases = comparison_cases()
    reports = run_gemms([s for _, s in cases], array)
    out = ["| layer (GEMM m x n x k) | closed form cycles | SCALE-Sim Total Cycles + 1 | stall cycles | difference |",
           "|---|---:|---:|---:|---:|"]
    for (label, (m, n, k)), r in zip(cases, reports):
        closed = gemm_cycles(m, n, k, array.rows, array.cols, array.dataflow)
        out.append(f"| {label} ({m} x {n} x {k}) | {closed:,} | {r.cycles:,} | {r.stall_cycles} | {closed - r.cycles} |")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover - prints the docs' table (about a minute)
    print(comparison_table())
