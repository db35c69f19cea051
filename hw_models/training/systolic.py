"""Closed-form cycles of a GEMM on one systolic array, SCALE-Sim's dataflows.

A GEMM ``C[m x n] = A[m x k] @ B[k x n]`` is mapped on an array of ``rows x cols``
processing elements as SCALE-Sim maps it: the output-stationary dataflow (``os``, the
MultiTree paper's) holds ``rows x cols`` outputs in the array, streams ``k`` operand pairs
through it, and tiles ``m`` over rows and ``n`` over columns; weight-stationary (``ws``)
holds ``rows x cols`` of ``B`` (``k`` over rows, ``n`` over columns) and streams the ``m``
rows of ``A``; input-stationary (``is``) holds ``A`` (``k`` over rows, ``m`` over columns)
and streams the ``n`` columns of ``B``. With ``Sr x Sc`` the mapped dimensions and ``T``
the streamed one, each of the ``ceil(Sr / rows) * ceil(Sc / cols)`` folds takes

* ``os``: ``T + rows + cols - 2`` cycles (the operands enter skewed: ``rows - 1`` and
  ``cols - 1`` cycles of fill, then ``T`` cycles of products; a fold drains before the next
  starts);
* ``ws`` / ``is``: ``T + 2 * rows + cols - 2`` cycles (``rows`` more to load the stationary
  operand),

and folds do not overlap. This is SCALE-Sim 2's compute model without memory stalls: its
COMPUTE_REPORT "Total Cycles" equals this count minus one (it reports the 0-based index of
the last cycle), exactly, for every shape and array tested (tests/training/test_compute.py,
docs/training_workloads.md).

:func:`training_gemms` lists the GEMMs of one layer's forward and backward pass for a batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw_models.training.layers import Layer
from noc.base.errors import ConfigError

DATAFLOWS = ("os", "ws", "is")


def mapped_dims(m: int, n: int, k: int, dataflow: str = "os") -> tuple[int, int, int]:
    """``(Sr, Sc, T)``: the GEMM dimensions mapped on the array's rows and columns and the
    one streamed in time."""
    if dataflow == "os":
        return m, n, k
    if dataflow == "ws":
        return k, n, m
    if dataflow == "is":
        return k, m, n
    raise ConfigError(f"dataflow {dataflow!r} is unknown (allowed: {', '.join(DATAFLOWS)})")


def gemm_cycles(m: int, n: int, k: int, rows: int, cols: int, dataflow: str = "os") -> int:
    """Cycles of one ``m x k`` by ``k x n`` GEMM on a ``rows x cols`` array, without memory
    stalls (module docstring)."""
    sr, sc, t = mapped_dims(m, n, k, dataflow)
    folds = -(-sr // rows) * -(-sc // cols)
    per_fold = t + rows + cols - 2 if dataflow == "os" else t + 2 * rows + cols - 2
    return folds * per_fold


@dataclass(frozen=True)
class GemmRun:
    """``repeat`` runs of one ``m x k`` by ``k x n`` GEMM."""

    m: int
    n: int
    k: int
    repeat: int = 1


def training_gemms(layer: Layer, batch: int) -> tuple[tuple[GemmRun, ...], tuple[GemmRun, ...]]:
    """The forward and backward GEMMs of ``layer`` for ``batch`` samples.

    For each forward GEMM ``C = A @ B`` (``m, n, k`` per sample, ``count`` of them):

    * weights (``shared``): forward ``(batch * m, n, k)``; backward ``dA = dC @ B.T``:
      ``(batch * m, k, n)`` when the layer computes its input gradient, and
      ``dB = A.T @ dC``: ``(k, n, batch * m)``, summed over the batch; each ``count`` times;
    * two activations (not ``shared``): forward ``(m, n, k)``; backward ``(m, k, n)`` and
      ``(k, n, m)``; each ``batch * count`` times.

    The backward FLOPs of the layer (:class:`~hw_models.training.layers.Layer`) are those of
    these GEMMs: ``dA`` is left out exactly when ``layer.input_grad`` is False.
    """
    fwd: list[GemmRun] = []
    bwd: list[GemmRun] = []
    for g in layer.gemms:
        if g.shared:
            rows, rep = batch * g.m, g.count
        else:
            rows, rep = g.m, batch * g.count
        fwd.append(GemmRun(rows, g.n, g.k, rep))
        if layer.input_grad:
            bwd.append(GemmRun(rows, g.k, g.n, rep))
        bwd.append(GemmRun(g.k, g.n, rows, rep))
    return tuple(fwd), tuple(bwd)
