"""Periodic, delayed exchanges (SSD-SGD, the EASGD family) on the iteration timeline.

The timeline (:func:`hw_models.training.timeline.simulate` with an
:class:`~hw_models.training.timeline.Exchange`) runs the workload's forward and backward
passes layer by layer, hands a round's last backward pass's gradients (or models) to the
network as they appear, costs each collective with a communication model, and gates the
forward pass of the round ``lag`` rounds later, layer by layer. This module adds what these
systems share:

* :class:`MasterComm` -- a round-robin (``serial``) or lock-free (``concurrent``) EASGD master
  as a communication model: one "collective" of ``b`` bytes is every worker's exchange of
  those bytes with the master, i.e. the one-server parameter server's all-worker push and
  pull of ``b`` plus the master's ``N`` centre updates (``3 b`` bytes of memory traffic
  each), serialised (``push + pull + N * update``) or overlapped (``max(push + pull, N *
  update)``);
* :class:`WholeModel` -- the policy of the closed forms' assumption: one fused collective of
  the whole model once the oldest waiting round's gradients are all there;
* :func:`steady_step_s` -- the steady-state seconds per iteration (step) of such a run,
  measured over whole rounds after a warm-up of ``lag + 2`` rounds.
"""

from __future__ import annotations

import math

from hw_models.training.costs import OptimizerCost
from hw_models.training.policies import Collective, NetworkView, Policy, WaitFreeBackprop
from hw_models.training.timeline import Exchange, simulate
from noc.base.errors import ConfigError

POLICIES = ("wfbp", "fused")
WARMUP_ROUNDS = 2
MEASURED_ROUNDS = 4


class MasterComm:
    """EASGD's master as a cost model (see the module docstring). ``push_all_s(b)`` and
    ``pull_all_s(b)``: the one-server parameter server's all-worker push and pull of ``b``
    bytes on the network."""

    def __init__(self, push_all_s, pull_all_s, num_workers: int, mem_bytes_per_s: float, mode: str):
        if mode not in ("serial", "concurrent"):
            raise ConfigError(f"MasterComm.mode = {mode!r}: must be serial or concurrent")
        self._push, self._pull = push_all_s, pull_all_s
        self.num_workers = int(num_workers)
        self.mem_bytes_per_s = float(mem_bytes_per_s)
        self.mode = mode

    def allreduce_s(self, nbytes: int) -> float:
        net = self._push(nbytes) + self._pull(nbytes)
        upd = self.num_workers * 3 * nbytes / self.mem_bytes_per_s
        return net + upd if self.mode == "serial" else max(net, upd)

    def reduce_scatter_s(self, nbytes: int) -> float:  # pragma: no cover - never asked
        raise ConfigError("the EASGD master exchanges whole models (allreduce only)")

    all_gather_s = reduce_scatter_s

    def describe(self) -> str:
        return f"EASGD master ({self.mode}, {self.num_workers} workers)"


class WholeModel(Policy):
    """One fused collective of every gradient of the oldest waiting round, once all are there
    (the closed forms' fused whole-model all-reduce)."""

    name = "fused"
    source = "the closed-form models' assumption: one fused all-reduce of the whole model"

    def next_collective(self, view: NetworkView) -> Collective | None:
        need = sum(1 for x in view.layers if x.grad_bytes > 0)
        grads = view.waiting("reduce")[:need]
        whole = {p.layer for p in grads if p.offset_bytes == 0 and p.nbytes == view.layers[p.layer].grad_bytes}
        if len(grads) < need or len(whole) < need:
            return None
        return Collective("allreduce", tuple(p.piece() for p in grads))


def make_policy(name: str) -> Policy:
    if name == "wfbp":
        return WaitFreeBackprop()
    if name == "fused":
        return WholeModel()
    raise ConfigError(f"exchange policy = {name!r}: must be one of {', '.join(POLICIES)}")


def run_rounds(layers, comm, policy: Policy, exchange: Exchange, update_s: tuple[float, ...]):
    """Simulate enough rounds for the steady state; the timeline result."""
    rounds = exchange.lag + WARMUP_ROUNDS + MEASURED_ROUNDS
    opt = OptimizerCost(per_layer_s=tuple(update_s)) if any(u > 0 for u in update_s) else None
    return simulate(layers, comm, policy, iterations=rounds * exchange.every, optimizer=opt, exchange=exchange)


def steady_step_s(result, exchange: Exchange) -> float:
    """Seconds per iteration over the last :data:`MEASURED_ROUNDS` rounds of ``result``."""
    its = result.iterations
    first = len(its) - MEASURED_ROUNDS * exchange.every
    span = its[-1].end_s - its[first].start_s
    out = span / (MEASURED_ROUNDS * exchange.every)
    if not math.isfinite(out):
        raise ConfigError("the exchange timeline did not reach a steady state")
    return out


__all__ = ["MEASURED_ROUNDS", "POLICIES", "WARMUP_ROUNDS", "MasterComm", "WholeModel", "make_policy", "run_rounds",
           "steady_step_s"]
