"""Compute time of a training iteration, layer by layer: roofline and systolic-array models.

:func:`layer_costs` gives each layer's forward and backward seconds and gradient bytes for a
workload, a batch per worker and a device, as :class:`LayerCost` values, in forward order.

Devices:

* :class:`Roofline` -- a peak FLOP rate and a memory bandwidth: a pass of a layer takes
  ``max(flops / peak_flops, bytes / mem_bytes_per_s) / efficiency``;
* :class:`Systolic` -- ``arrays`` systolic arrays of ``rows x cols`` processing elements
  (the MultiTree paper's node: 16 arrays of 32 x 32, output stationary). The batch is split
  over the arrays (``ceil(batch / arrays)`` samples each, as the paper's node gives each of
  its 16 vault accelerators its own samples); each array runs a layer's GEMMs
  (:func:`~hw_models.training.systolic.training_gemms`) one after another, timed by the
  closed form of :mod:`hw_models.training.systolic` or by SCALE-Sim itself
  (``engine="scalesim"``); layers without GEMMs run on a vector unit of
  ``vector_flops_per_cycle`` per node; with more than one array busy, the backward pass
  adds the sum of the arrays' partial weight gradients on that vector unit.

docs/training_workloads.md states the conventions and the presets' values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hw_models.training.layers import Layer
from hw_models.training.systolic import DATAFLOWS, GemmRun, gemm_cycles, training_gemms
from hw_models.training.costs import LayerCost
from hw_models.training.workloads import Workload
from noc.base.errors import ConfigError

ENGINES = ("closed-form", "scalesim")


def _positive(owner: str, key: str, value, integer: bool = False, lo: float = 0.0, hi: float = math.inf,
              lo_open: bool = True) -> None:
    bad = isinstance(value, bool) or not isinstance(value, (int, float))
    if not bad and integer and not isinstance(value, int):
        bad = True
    if not bad:
        v = float(value)
        bad = not math.isfinite(v) or (v <= lo if lo_open else v < lo) or v > hi
    if bad:
        kind = "an integer" if integer else "a finite number"
        rng = f"{'>' if lo_open else '>='} {lo:g}" + (f" and <= {hi:g}" if hi != math.inf else "")
        raise ConfigError(f"{owner}.{key} = {value!r}: must be {kind} {rng}")


@dataclass(frozen=True)
class Roofline:
    """``peak_flops`` (FLOP/s), ``mem_bytes_per_s`` and the fraction ``efficiency`` of the
    roofline a layer achieves."""

    peak_flops: float
    mem_bytes_per_s: float
    efficiency: float = 1.0

    def __post_init__(self):
        _positive("Roofline", "peak_flops", self.peak_flops)
        _positive("Roofline", "mem_bytes_per_s", self.mem_bytes_per_s)
        _positive("Roofline", "efficiency", self.efficiency, hi=1.0)


@dataclass(frozen=True)
class Systolic:
    """A node of ``arrays`` systolic arrays of ``rows x cols`` PEs at ``freq_hz``, with
    SCALE-Sim's three SRAMs per array (KiB; they matter only for SCALE-Sim's stall model,
    which the closed form leaves out), a ``dataflow`` of ``os``, ``ws`` or ``is``, and a
    vector unit of ``vector_flops_per_cycle`` for the layers that are not GEMMs (0: such
    layers take no time, as in SCALE-Sim, which times convolutions and GEMMs only)."""

    rows: int = 32
    cols: int = 32
    arrays: int = 16
    freq_hz: float = 1e9
    ifmap_sram_kib: int = 512
    filter_sram_kib: int = 512
    ofmap_sram_kib: int = 256
    dataflow: str = "os"
    vector_flops_per_cycle: int = 512

    def __post_init__(self):
        for key in ("rows", "cols", "arrays", "ifmap_sram_kib", "filter_sram_kib", "ofmap_sram_kib"):
            _positive("Systolic", key, getattr(self, key), integer=True)
        _positive("Systolic", "freq_hz", self.freq_hz, lo=1e3, lo_open=False, hi=1e12)
        _positive("Systolic", "vector_flops_per_cycle", self.vector_flops_per_cycle, integer=True, lo_open=False)
        if self.dataflow not in DATAFLOWS:
            raise ConfigError(f"Systolic.dataflow = {self.dataflow!r}: must be one of {', '.join(DATAFLOWS)}")

    @property
    def peak_flops(self) -> float:
        """FLOP/s of all arrays at full use (2 per multiply-add)."""
        return 2.0 * self.rows * self.cols * self.arrays * self.freq_hz

    def array_config(self):
        """The SCALE-Sim view of one array."""
        from hw_models.training.scalesim_runner import ArrayConfig  # noqa: PLC0415

        return ArrayConfig(rows=self.rows, cols=self.cols, dataflow=self.dataflow,
                           ifmap_sram_kib=self.ifmap_sram_kib, filter_sram_kib=self.filter_sram_kib,
                           ofmap_sram_kib=self.ofmap_sram_kib)


# The MultiTree paper's accelerator node: 16 arrays of 32x32 PEs, output stationary, with the
# SRAMs of the SCALE-Sim configuration its authors used (512/512/256 KiB); the clock (1 GHz)
# and the vector unit (one 32-wide lane per array) are our assumptions.
MULTITREE_NODE = Systolic()
# The same node as a roofline: its peak (32.8 TFLOP/s) and an HMC's 320 GB/s (our assumption).
MULTITREE_NODE_ROOFLINE = Roofline(peak_flops=MULTITREE_NODE.peak_flops, mem_bytes_per_s=320e9, efficiency=1.0)
# An NVIDIA V100 in fp32 (15.7 TFLOP/s, 900 GB/s HBM2) as an ideal roofline; lower the
# efficiency for what a framework achieves.
V100_FP32 = Roofline(peak_flops=15.7e12, mem_bytes_per_s=900e9, efficiency=1.0)

DEVICES: dict[str, Systolic | Roofline] = {
    "multitree-node": MULTITREE_NODE,
    "multitree-node-roofline": MULTITREE_NODE_ROOFLINE,
    "v100-fp32": V100_FP32,
}


DEFAULT_DEVICE = "multitree-node"
"""The device the commands and sweep kinds time a workload on unless told otherwise."""


def describe_device(device: Systolic | Roofline) -> str:
    """One line saying what ``device`` is, for help texts: ``16 systolic arrays of 32x32, 1 GHz``
    or ``roofline of 15.7 TFLOP/s, 900 GB/s``."""
    if isinstance(device, Systolic):
        return f"{device.arrays} systolic arrays of {device.rows}x{device.cols}, {device.freq_hz / 1e9:g} GHz"
    eff = "" if device.efficiency == 1.0 else f", {device.efficiency:g} efficiency"
    return f"roofline of {device.peak_flops / 1e12:g} TFLOP/s, {device.mem_bytes_per_s / 1e9:g} GB/s{eff}"


def device_choices() -> str:
    """The preset devices with what each is: ``multitree-node (16 systolic arrays ...), ...``."""
    return ", ".join(f"{name} ({describe_device(d)})" for name, d in DEVICES.items())


def get_device(name: str) -> Systolic | Roofline:
    """A preset device by name (:data:`DEVICES`); a :class:`ConfigError` listing them otherwise."""
    if name not in DEVICES:
        raise ConfigError(f"device {name!r} is unknown (allowed: {', '.join(DEVICES)})")
    return DEVICES[name]


# ---------------------------------------------------------------------------------------
# Roofline
# ---------------------------------------------------------------------------------------

_VIEWS = ("flatten", "reshape")  # no data moves


def layer_bytes(layer: Layer, batch: int, dtype_bytes: int) -> tuple[int, int]:
    """Bytes a layer's forward and backward passes move to and from memory for ``batch``
    samples: forward reads its input and parameters and writes its output; backward reads
    the output's gradient, the input and the parameters, writes the input's gradient (when
    it computes it) and the parameters' gradient; a backward pass without arithmetic (a
    residual sum passing its gradient on, the first layer without parameters) moves nothing.
    Embeddings touch only the looked-up rows (backward: read, add, write them); reshapes
    move nothing."""
    if layer.kind in _VIEWS:
        return 0, 0
    if layer.kind == "embedding":
        rows = batch * layer.activation_elems * dtype_bytes
        return 2 * rows, 3 * rows
    x, y, p = batch * layer.input_elems, batch * layer.activation_elems, layer.params
    fwd = x + y + p
    bwd = y + x + (x if layer.input_grad else 0) + 2 * p if layer.bwd_flops else 0
    return fwd * dtype_bytes, bwd * dtype_bytes


def _roofline_costs(workload: Workload, batch: int, dev: Roofline) -> tuple[LayerCost, ...]:
    out = []
    for layer in workload.layers:
        fb, bb = layer_bytes(layer, batch, workload.dtype_bytes)
        fwd_s = max(batch * layer.fwd_flops / dev.peak_flops, fb / dev.mem_bytes_per_s) / dev.efficiency
        bwd_s = max(batch * layer.bwd_flops / dev.peak_flops, bb / dev.mem_bytes_per_s) / dev.efficiency
        out.append(LayerCost(layer.name, fwd_s, bwd_s, layer.params * workload.dtype_bytes))
    return tuple(out)


# ---------------------------------------------------------------------------------------
# Systolic arrays
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LayerCycles:
    """One layer on a :class:`Systolic` node: cycles of the forward and backward passes on
    each array (GEMMs, or the vector unit for other layers) and of the sum of the arrays'
    partial weight gradients (``grad_sum_cycles``, part of the backward pass)."""

    name: str
    fwd_cycles: int
    bwd_cycles: int
    grad_sum_cycles: int


def _runs_cycles(runs: tuple[GemmRun, ...], dev: Systolic, table: dict | None) -> int:
    """Cycles of ``runs`` one after another: the closed form, or ``table`` (SCALE-Sim's cycles by GEMM shape)."""
    return sum((gemm_cycles(r.m, r.n, r.k, dev.rows, dev.cols, dev.dataflow) if table is None
                else table[(r.m, r.n, r.k)]) * r.repeat for r in runs)


def systolic_layer_cycles(workload: Workload, batch: int, device: Systolic,
                          engine: str = "closed-form") -> tuple[LayerCycles, ...]:
    """Per-layer cycles of ``workload`` for ``batch`` samples per worker on ``device``
    (module docstring). ``engine``: ``closed-form`` or ``scalesim`` (SCALE-Sim's cycles for
    every distinct GEMM; slow for large layers, cached in the process)."""
    _check_batch(batch)
    _check_engine(engine)
    per_array = -(-batch // device.arrays)
    busy = min(batch, device.arrays)
    passes = [(layer, *training_gemms(layer, per_array)) for layer in workload.layers]
    table = None
    if engine == "scalesim":
        from hw_models.training.scalesim_runner import run_gemms  # noqa: PLC0415

        shapes = sorted({(r.m, r.n, r.k) for _, f, b in passes for r in (*f, *b)})
        reports = run_gemms(shapes, device.array_config()) if shapes else ()
        table = {s: rep.cycles for s, rep in zip(shapes, reports)}
    vec = device.vector_flops_per_cycle
    out = []
    for layer, fwd, bwd in passes:
        if layer.gemms:
            f, b = _runs_cycles(fwd, device, table), _runs_cycles(bwd, device, table)
        elif vec:
            f = -(-per_array * layer.fwd_flops // vec)
            b = -(-per_array * layer.bwd_flops // vec)
        else:
            f = b = 0
        g = -(-(busy - 1) * layer.params // vec) if (vec and busy > 1 and layer.params) else 0
        out.append(LayerCycles(layer.name, f, b, g))
    return tuple(out)


def _check_batch(batch) -> None:
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"batch = {batch!r}: must be an integer >= 1 (samples per worker)")


def _check_engine(engine) -> None:
    if engine not in ENGINES:
        raise ConfigError(f"engine = {engine!r}: must be one of {', '.join(ENGINES)}")


def layer_costs(workload: Workload, batch: int, device: Systolic | Roofline,
                engine: str = "closed-form") -> tuple[LayerCost, ...]:
    """Each layer's forward and backward seconds for ``batch`` samples on one worker of
    ``device``, and its gradient bytes, in forward order. ``engine`` applies to a
    :class:`Systolic` device (``closed-form`` or ``scalesim``)."""
    _check_batch(batch)
    _check_engine(engine)
    if isinstance(device, Roofline):
        return _roofline_costs(workload, batch, device)
    if not isinstance(device, Systolic):
        raise ConfigError(f"device {device!r} is neither a Roofline nor a Systolic (presets: {', '.join(DEVICES)})")
    cycles = systolic_layer_cycles(workload, batch, device, engine)
    hz = device.freq_hz
    return tuple(LayerCost(c.name, c.fwd_cycles / hz, (c.bwd_cycles + c.grad_sum_cycles) / hz,
                           layer.params * workload.dtype_bytes)
                 for c, layer in zip(cycles, workload.layers))


def compute_table(batch: int = 16, engine: str = "closed-form") -> str:
    """A Markdown table of each built-in workload's compute time per iteration (forward and
    backward ms for ``batch`` samples per worker) on each preset device."""
    from hw_models.training.workloads import WORKLOADS  # noqa: PLC0415

    head = "| workload | " + " | ".join(f"{d} fwd ms | {d} bwd ms" for d in DEVICES) + " |"
    rows = [head, "|---|" + "---:|" * (2 * len(DEVICES))]
    for name, w in WORKLOADS.items():
        cells = []
        for dev in DEVICES.values():
            costs = layer_costs(w, batch, dev, engine)
            cells += [f"{sum(c.fwd_s for c in costs) * 1e3:.3f}", f"{sum(c.bwd_s for c in costs) * 1e3:.3f}"]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


if __name__ == "__main__":  # pragma: no cover - prints the docs' table
    print(compute_table())
