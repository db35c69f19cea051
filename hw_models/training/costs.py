"""The plain values the training timeline takes: each layer's compute and gradient, and the
optimiser step's cost.

:class:`LayerCost` is one layer's forward and backward seconds (for the worker's whole
batch) and the bytes of its parameter gradient; a model is a tuple of them in forward order.
:class:`OptimizerCost` is the optimiser step: per layer (applied to a layer's parameters once
its gradient is synchronised, just before its next forward pass) or one global step (after
every gradient is synchronised). Both check their fields when made: a bad value is a
:class:`~noc.base.errors.ConfigError` naming the field, the value and what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Iterable

from noc.base.errors import ConfigError


def whole(name: str, value, low: int = 1) -> int:
    """``value``, an integer (not a bool) >= ``low``, else a ConfigError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{name} = {value!r}: must be an integer >= {low}")
    return value


def _seconds(owner: str, key: str, value) -> float:
    """``value`` as a finite number of seconds >= 0, else a ConfigError naming ``owner.key``."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value)) and float(value) >= 0
    if not ok:
        raise ConfigError(f"{owner}.{key} = {value!r}: must be a finite number of seconds >= 0")
    return float(value)


@dataclass(frozen=True)
class LayerCost:
    """One layer's compute for one iteration on one worker and the size of its gradient.

    ``fwd_s`` and ``bwd_s``: seconds of the forward and backward pass of the layer for the
    worker's batch (finite, >= 0); ``grad_bytes``: bytes of its parameter gradient, the data
    each iteration's all-reduce of this layer moves (an integer >= 0; 0 for a layer without
    parameters)."""

    name: str
    fwd_s: float
    bwd_s: float
    grad_bytes: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError(f"LayerCost.name = {self.name!r}: must be a non-empty string")
        owner = f"LayerCost({self.name!r})"
        object.__setattr__(self, "fwd_s", _seconds(owner, "fwd_s", self.fwd_s))
        object.__setattr__(self, "bwd_s", _seconds(owner, "bwd_s", self.bwd_s))
        g = self.grad_bytes
        if isinstance(g, bool) or not isinstance(g, Integral) or int(g) < 0:
            raise ConfigError(f"{owner}.grad_bytes = {g!r}: must be an integer number of bytes >= 0")
        object.__setattr__(self, "grad_bytes", int(g))


def as_layer_costs(layers: Iterable) -> tuple[LayerCost, ...]:
    """``layers`` (forward order) as a checked tuple of :class:`LayerCost`. Anything with
    ``name``, ``fwd_s``, ``bwd_s`` and ``grad_bytes`` attributes is taken (and checked); an
    empty model is an error."""
    out = []
    for k, layer in enumerate(layers):
        if isinstance(layer, LayerCost):
            out.append(layer)
            continue
        try:
            out.append(LayerCost(layer.name, layer.fwd_s, layer.bwd_s, layer.grad_bytes))
        except AttributeError as exc:
            raise ConfigError(f"layers[{k}] = {layer!r}: not a layer cost (needs name, fwd_s, bwd_s and "
                              f"grad_bytes; {exc})") from None
    if not out:
        raise ConfigError("layers = []: a model needs at least one layer")
    return tuple(out)


@dataclass(frozen=True)
class OptimizerCost:
    """The optimiser step's compute.

    ``per_layer_s``: seconds to update one layer's parameters, one number for every layer or
    a tuple with one per layer (forward order). A layer's update runs on the worker's
    compute just before the layer's next forward pass, once its gradient is synchronised.
    ``global_s``: one optimiser step for the whole model instead, run once every gradient is
    synchronised and before the next forward pass starts (it then waits for the whole
    communication of the iteration, as a framework's single ``optimizer.step()`` does).
    The default costs nothing and keeps the per-layer gating."""

    per_layer_s: float | tuple[float, ...] = 0.0
    global_s: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.per_layer_s, (tuple, list)):
            vals = tuple(_seconds("OptimizerCost", f"per_layer_s[{k}]", v) for k, v in enumerate(self.per_layer_s))
            object.__setattr__(self, "per_layer_s", vals)
            any_cost = any(v > 0 for v in vals)
        else:
            object.__setattr__(self, "per_layer_s", _seconds("OptimizerCost", "per_layer_s", self.per_layer_s))
            any_cost = self.per_layer_s > 0
        if self.global_s is not None:
            object.__setattr__(self, "global_s", _seconds("OptimizerCost", "global_s", self.global_s))
            if any_cost:
                raise ConfigError(f"OptimizerCost: per_layer_s = {self.per_layer_s!r} and global_s = {self.global_s!r}: "
                                  "give a per-layer cost or a global step, not both")

    def layer_s(self, num_layers: int) -> tuple[float, ...]:
        """The per-layer update seconds for a model of ``num_layers`` layers."""
        if isinstance(self.per_layer_s, tuple):
            if len(self.per_layer_s) != num_layers:
                raise ConfigError(f"OptimizerCost.per_layer_s has {len(self.per_layer_s)} values; the model has "
                                  f"{num_layers} layers (give one per layer, or one number for all)")
            return self.per_layer_s
        return (self.per_layer_s,) * num_layers

    @property
    def is_global(self) -> bool:
        return self.global_s is not None


__all__ = ["LayerCost", "OptimizerCost", "as_layer_costs"]
