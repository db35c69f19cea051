"""Sweep kind ``noc_load``: one synthetic-traffic run of the flit-level network at one
offered load — one point of ``hw-models noc sweep-load``, or what ``hw-models noc run``
runs.

A point holds the sections of a ``hw-models noc`` config (docs/noc.md): ``network``,
``channels``, ``router`` and ``traffic``, whose ``rate_packets`` is the point's load in
packets per NI per cycle. It is checked as ``hw-models noc run`` checks its config (the
pattern must suit the topology, the router the routing's VCs, packets a VC under virtual
cut-through) and runs :func:`noc.flit_traffic.run_traffic`; the metrics are the whole
:class:`noc.flit_traffic.RunStats` as plain data (every figure at full precision, the link
utilisation as a list, :func:`stats_from_metrics` reads it back: ``hw-models noc`` renders
its tables, CSV and PNG from them) and ``link_util_max``, as the command's CSV rounds it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import NamedTuple

from hw_models.sweep.kinds import Kind, model_versions_of
from noc.base.errors import ConfigError

SECTIONS = ("network", "channels", "router", "traffic")


def validate(point: dict, source: str = "point") -> dict:
    from hw_models.noc_experiment import experiment_model  # the schema of `hw-models noc` configs
    from hw_models.config import resolve_router
    from noc.base.config import validate as validate_model

    for key in point:
        if key not in SECTIONS:
            raise ConfigError(f"{source}: unknown key {key!r} (allowed: {', '.join(SECTIONS)}; a point is one load, "
                              "traffic.rate_packets, so [sweep] and out_dir have no place in it)")
    rest = _rest_key(point)
    if rest in _RESTS:  # the network, channels and router of an earlier valid point: only the traffic is new
        return _with_traffic(_RESTS[rest], rest, point, source)
    cfg = validate_model(point, experiment_model(), source=source)
    net = cfg.network
    router = resolve_router(net, cfg.router, source)
    # the latencies of the three kinds of link, resolved: a config that leaves [channels] out
    # and one that spells out the defaults run the same network
    latency = {kind: getattr(cfg.channels, f"{kind}_latency_cycles") or net.link_latency_cycles
               for kind in ("router", "inject", "eject")}
    base = _base_topology(net.topology, net.nis_given, net.link_bytes_per_cycle, net.link_latency_cycles, source)
    network = {**net.model_dump(mode="json"), "topology": base.name, "nis_per_node": base.nis_per_node}
    resolved = {"topology": base.name, "network": network, "channels": latency,
                "router": router.model_dump(mode="json"), "traffic": cfg.traffic.model_dump(mode="json")}
    t = _topology(json.dumps(network, sort_keys=True), json.dumps(latency, sort_keys=True))
    _check_fits(t, router, cfg.traffic, _fits_key(rest, resolved["traffic"]), source)
    if len(_RESTS) > 256:
        _RESTS.clear()
    _RESTS[rest] = _Rest(resolved["topology"], network, latency, resolved["router"], t, router)
    return resolved


class _Rest(NamedTuple):
    """A valid point's sections other than its traffic, resolved."""

    topology: str
    network: dict
    channels: dict
    router: dict
    t: object  # the topology with its links' latencies
    router_config: object  # noc.flit.FlitNetworkConfig


#: the resolved sections of the points validated so far, by their network, channels and router
#: tables as given (a sample of a million loads repeats a few of them): shared between the
#: points' resolved configs, which are read, never changed
_RESTS: dict[str, _Rest] = {}


def _rest_key(point: dict) -> str:
    """The point's tables other than ``traffic`` as text: ``repr`` of TOML data (tables,
    arrays, strings, numbers, booleans, dates) tells every two different values apart (1 and
    1.0 and True too); points built alike give their keys in the same order."""
    return repr([(k, v) for k, v in point.items() if k != "traffic"])


def _with_traffic(rest: _Rest, rest_key: str, point: dict, source: str) -> dict:
    """:func:`validate` of a point whose other tables are ``rest``'s: its traffic table alone
    checked (with the same messages: validated in the same model, the other tables left to
    their defaults) and fitted to the network."""
    from hw_models.noc_experiment import experiment_model
    from noc.base.config import validate as validate_model

    traffic = validate_model({"traffic": point["traffic"]} if "traffic" in point else {}, experiment_model(),
                             source=source).traffic
    resolved = {"topology": rest.topology, "network": rest.network, "channels": rest.channels, "router": rest.router,
                "traffic": traffic.model_dump(mode="json")}
    _check_fits(rest.t, rest.router_config, traffic, _fits_key(rest_key, resolved["traffic"]), source)
    return resolved


def _fits_key(rest_key: str, traffic: dict) -> str:
    """What :func:`_check_fits` keeps its result under: the point's other tables as given
    (:func:`_rest_key`) and its resolved traffic without the load, in the model's field order."""
    return rest_key + repr([(k, v) for k, v in traffic.items() if k != "rate_packets"])


_BASES: dict[str, object] = {}  # the topologies resolved so far, by their arguments (a sweep repeats them)


def _base_topology(spec, nis, link_bytes_per_cycle, link_latency_cycles, source):
    """The topology ``network`` names, built once per distinct network (building one costs
    milliseconds; a million-point sample repeats a few networks); an error names ``source``."""
    from hw_models.config import resolve_topology

    key = repr((spec, nis, link_bytes_per_cycle, link_latency_cycles))
    if key not in _BASES:
        if len(_BASES) > 64:
            _BASES.clear()
        _BASES[key] = resolve_topology(spec, nis, flag=f"{source}: network.nis_per_node =",
                                       spec_flag="network.topology =", link_bytes_per_cycle=link_bytes_per_cycle,
                                       link_latency_cycles=link_latency_cycles)
    return _BASES[key]


_FITS: set[str] = set()  # points (by _fits_key: without their load) found to fit


def _check_fits(t, router, traffic, key: str, source: str) -> None:
    """What ``hw-models noc run`` checks before it runs: the pattern on the topology, the
    router's VCs on the routing, packets that fit a VC under virtual cut-through (the
    result kept under ``key``)."""
    from noc.flit import build_network
    from noc.flit_traffic import destinations

    if key in _FITS:
        return
    try:
        destinations(traffic.pattern, t, traffic.perm_seed)
        build_network(t, router)
    except ConfigError as exc:
        raise ConfigError(f"{source} on {t.name}: {exc}") from None
    if router.flow_control == "vct" and max(traffic.packet_flits) > router.vc_depth_flits:
        raise ConfigError(f"{source}: traffic.packet_flits up to {max(traffic.packet_flits)} flits do not fit a VC "
                          f"(router.vc_depth_flits = {router.vc_depth_flits}) under virtual cut-through")
    if len(_FITS) > 256:
        _FITS.clear()
    _FITS.add(key)


@lru_cache(maxsize=16)
def _topology(network_json: str, latency_json: str):
    net = json.loads(network_json)
    lat = json.loads(latency_json)
    t = _base_topology(net["topology"], net["nis_per_node"], net["link_bytes_per_cycle"], net["link_latency_cycles"],
                       "resolved network")
    return t.with_latencies(router_cycles=lat["router"], inject_cycles=lat["inject"], eject_cycles=lat["eject"])


def objects(resolved: dict):
    """(topology with its links' latencies, router config, traffic config) a resolved point runs."""
    from noc.flit import FlitNetworkConfig
    from noc.flit_traffic import TrafficConfig

    t = _topology(json.dumps(resolved["network"], sort_keys=True), json.dumps(resolved["channels"], sort_keys=True))
    return t, FlitNetworkConfig.model_validate(resolved["router"]), TrafficConfig.model_validate(resolved["traffic"])


def run(resolved: dict) -> dict:
    from noc.flit_traffic import run_traffic

    t, router, traffic = objects(resolved)
    return metrics(run_traffic(t, router, traffic))


def metrics(stats) -> dict:
    """The metrics of a :class:`noc.flit_traffic.RunStats`: every field as plain data (the
    link utilisation a list) and ``link_util_max`` as :meth:`~noc.flit_traffic.RunStats.row` has it."""
    import dataclasses

    import numpy as np

    out = {}
    for f in dataclasses.fields(stats):
        v = getattr(stats, f.name)
        out[f.name] = v.tolist() if isinstance(v, np.ndarray) else v.item() if isinstance(v, np.generic) else v
    out["link_util_max"] = stats.row()["link_util_max"]
    return out


def stats_from_metrics(data: dict):
    """The :class:`noc.flit_traffic.RunStats` of a point's metrics (or of a record of the
    JSONL store of an older ``hw-models noc sweep-load``: the same fields); a ``ValueError``
    naming what does not fit."""
    import dataclasses

    import numpy as np

    from noc.flit_traffic import RunStats

    names = [f.name for f in dataclasses.fields(RunStats)]
    missing = [n for n in names if n not in data]
    if missing:
        raise ValueError(f"not a load point: no {', '.join(missing)}")
    fields = {n: data[n] for n in names}
    for n in ("packets", "cycles"):
        if isinstance(fields[n], bool) or not isinstance(fields[n], int):
            raise ValueError(f"{n} = {fields[n]!r} is not a whole number")
    if not isinstance(fields["stable"], bool):
        raise ValueError(f"stable = {fields['stable']!r} is not a boolean")
    fields["link_utilisation"] = np.asarray(fields["link_utilisation"], dtype=np.float64)
    if fields["link_utilisation"].ndim != 1:
        raise ValueError("link_utilisation is not a list of numbers")
    return RunStats(**fields)


def model_versions() -> dict:
    return model_versions_of("flit_model", noc_load=2)  # 2: the whole RunStats in the metrics


KIND = Kind(name="noc_load", summary="one synthetic-traffic run of the flit-level network at one load "
            "(a point of hw-models noc sweep-load)", validate=validate, run=run, model_versions=model_versions)
