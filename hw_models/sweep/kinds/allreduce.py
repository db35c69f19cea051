"""Sweep kind ``allreduce``: one all-reduce — one algorithm, one size, one NIC design, one
model — on one network, as ``hw-models allreduce`` runs each of its runs.

A point holds the experiment config's sections (``network``, ``router``, ``nic``,
``run.seed``; docs/allreduce.md) and an ``allreduce`` table of the point's own keys:
``algorithm`` (one name, aliases taken), ``size`` (bytes or ``"1MiB"``), ``model``
(``message`` or ``flit``, default message), ``tree_order`` (MultiTree's: ``ours`` or
``paper``) and ``element_bytes``. It is checked by the rules ``hw-models allreduce`` uses
(:func:`hw_models.experiment.resolve_experiment`, then what the chosen model needs), and
runs :func:`nic.allreduce.simulate_allreduce`; its metrics are
:meth:`nic.result.AllreduceResult.row`. ``hw-models allreduce`` and ``hw-models demo`` run
their points as points of this kind (:func:`hw_models.allreduce_sweep.allreduce_plan`).
"""

from __future__ import annotations

import json
from functools import lru_cache

from hw_models.sweep.kinds import Kind, algorithm_of, choice_of, model_versions_of, size_of, table_of
from noc.base.errors import ConfigError, HwModelsError

POINT_KEYS = ("algorithm", "size", "model", "tree_order", "element_bytes")
# errors of the experiment's keys that stand for the point's: named as the point's keys
_POINT_FLAGS = {"allreduce.algorithms": "allreduce.algorithm =", "allreduce.sizes": "allreduce.size ="}


def validate(point: dict, source: str = "point") -> dict:
    from nic.allreduce import MODELS
    from nic.preparation import check_size
    from nic.collectives.multitree import TREE_ORDERS

    ar = table_of(point, "allreduce", source, POINT_KEYS)
    for key in ("algorithm", "size"):
        if key not in ar:
            raise ConfigError(f"{source}: missing key 'allreduce.{key}' (the point's "
                              f"{'algorithm, e.g. ring or multitree' if key == 'algorithm' else 'size, e.g. 1MiB'})")
    algorithm = algorithm_of(ar["algorithm"], source, "allreduce.algorithm")
    size = ar["size"]
    size_bytes = size_of(size, source, "allreduce.size", "a size is bytes (an integer) or a string such as '32KiB'")
    model = choice_of(ar.get("model", "message"), MODELS, source, "allreduce.model")
    tree_order = choice_of(ar.get("tree_order", "ours"), TREE_ORDERS, source, "allreduce.tree_order")
    from nic.collectives import size_options

    options = {"tree_order": tree_order} if algorithm == "multitree" and tree_order != "ours" else {}
    options.update(size_options(algorithm, size_bytes))  # a builder that wants the size gets it
    data = {k: v for k, v in point.items() if k != "allreduce"}
    data["allreduce"] = {"algorithms": [algorithm], "sizes": None,
                         **({"element_bytes": ar["element_bytes"]} if "element_bytes" in ar else {})}
    # the config without its size is checked once (a 1,000-point sweep over sizes resolves its
    # network, NIC and schedule a few times, not 1,000), the size against the schedule here
    cache_key = json.dumps([data, options, model], sort_keys=True, default=repr)
    common, nic, schedule = _resolved(cache_key, data, options, model, source, size_bytes)
    try:
        check_size(schedule, nic, size_bytes)
    except HwModelsError as exc:
        raise ConfigError(f"{source}: key 'allreduce.size' = {size!r}, {algorithm} on {json.loads(common)['topology']}: "
                          f"{exc}") from None
    return {**json.loads(common), "algorithm": algorithm, "size_bytes": size_bytes, "model": model,
            "schedule_options": options}


_RESOLVED: dict[str, tuple] = {}  # a point's config without its size -> what _resolved found


def _resolved(cache_key: str, data: dict, options: dict, model: str, source: str, size_bytes: int):
    """(the resolved config's parts that do not depend on the size, as JSON text; the NIC; the schedule)
    of a point's config without its size, checked as ``hw-models allreduce`` checks them
    (the experiment whole with the point's size, then what the model needs). Kept per
    config; errors are not, so each names its own point."""
    if cache_key in _RESOLVED:
        return _RESOLVED[cache_key]
    from hw_models.config import ExperimentConfig
    from hw_models.experiment import check_model_network, resolve_experiment
    from noc.base.config import validate as validate_model

    data = {**data, "allreduce": {**data["allreduce"], "sizes": str(size_bytes)}}
    cfg = validate_model(data, ExperimentConfig, source=source)
    algorithm = cfg.allreduce.algorithms[0]
    exp = resolve_experiment(cfg, source, flags={k: f"{source}: {v}" for k, v in _POINT_FLAGS.items()},
                             designs=[cfg.nic.design], algorithms=[algorithm],
                             schedule_options={algorithm: options} if options else None)
    check_model_network(exp, cfg.nic.design, model, source)
    t, router, nic = exp.topology, exp.router, exp.nics[cfg.nic.design]
    network = cfg.network.model_dump(mode="json")
    network.update(topology=t.name, nis_per_node=t.nis_per_node)
    # what run() rebuilds from the resolved config must be what was checked here
    if _topology(json.dumps(network, sort_keys=True)).to_dict() != t.to_dict():  # pragma: no cover - a bug
        raise AssertionError(f"the resolved network of {t.name} does not rebuild its topology")
    common = json.dumps({"topology": t.name, "nic": nic.model_dump(mode="json"), "network": network,
                         "router": router.model_dump(mode="json"), "seed": cfg.run.seed})
    if len(_RESOLVED) >= 64:
        _RESOLVED.pop(next(iter(_RESOLVED)))
    _RESOLVED[cache_key] = out = (common, nic, exp.schedules[algorithm])
    return out


@lru_cache(maxsize=16)
def _topology(network_json: str):
    from hw_models.config import NetworkConfig, resolve_topology, with_ni_latencies

    net = NetworkConfig.model_validate(json.loads(network_json))
    t = resolve_topology(net.topology, net.nis_per_node, link_bytes_per_cycle=net.link_bytes_per_cycle,
                         link_latency_cycles=net.link_latency_cycles)
    return with_ni_latencies(t, net)


@lru_cache(maxsize=64)
def _schedule(network_json: str, algorithm: str, options_json: str, nic_json: str, router_json: str):
    """The point's schedule; a sized builder (given the point's size) also gets the point's
    NIC and routers to time its choices with, as :func:`validate` built it."""
    from nic.collectives import build, timing_options

    options = json.loads(options_json)
    if "size_bytes" in options:
        options.update(timing_options(algorithm, _nic(nic_json), _router(router_json)))
    return build(_topology(network_json), algorithm, **options)


@lru_cache(maxsize=64)
def _nic(nic_json: str):
    from nic.allreduce import NicConfig

    return NicConfig.model_validate(json.loads(nic_json))


@lru_cache(maxsize=64)
def _router(router_json: str):
    from noc.flit import FlitNetworkConfig

    return FlitNetworkConfig.model_validate(json.loads(router_json))


def objects(resolved: dict):
    """(topology, schedule, NIC, router) of a resolved point; each built once per worker
    for the points that share it (the models are frozen)."""
    net = json.dumps(resolved["network"], sort_keys=True)
    nic, router = json.dumps(resolved["nic"], sort_keys=True), json.dumps(resolved["router"], sort_keys=True)
    schedule = _schedule(net, resolved["algorithm"], json.dumps(resolved["schedule_options"], sort_keys=True), nic,
                         router)
    return _topology(net), schedule, _nic(nic), _router(router)


def run(resolved: dict) -> dict:
    from nic.allreduce import simulate_allreduce

    t, schedule, nic, router = objects(resolved)
    res = simulate_allreduce(t, schedule, nic, router, resolved["size_bytes"], model=resolved["model"],
                             seed=resolved["seed"])
    return metrics(res)


def metrics(result) -> dict:
    """The metrics of an :class:`nic.result.AllreduceResult` (a fresh run's and an imported record's)."""
    return result.row()


def model_versions() -> dict:
    return model_versions_of("message_model", "flit_model", "schedule", "scheduler")


KIND = Kind(name="allreduce", summary="one all-reduce: algorithm, size, NIC design and model on one network "
            "(as hw-models allreduce runs it)", validate=validate, run=run, model_versions=model_versions)
