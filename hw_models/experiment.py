"""One experiment config, checked whole: what ``hw-models config show`` and ``hw-models
allreduce`` both run before anything is simulated.

:func:`config_with_flags` puts command-line flags into the config's data, in the keys they
stand for, and validates the whole (so ``--nis 65`` is refused by the rule that refuses
``nis_per_node = 65``, and named as the flag). :func:`resolve_experiment` then checks what
no single key can: the NI count against the spec's ``:cN``, the network's and the router's
routing, the NIC the ``[nic]`` keys make (for each design asked for), the router's VCs on
the routes, the algorithms on the topology and the sizes on each schedule. It returns the
values the runs take, so a command cannot check one thing and run another.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Mapping

from hw_models.config import (ExperimentConfig, resolve_router, resolve_topology, validate, with_ni_latencies)
from noc.base.errors import ConfigError, HwModelsError


def config_with_flags(data: dict, source: str, overrides: Mapping[str, Any],
                      flags: Mapping[str, str], drop: tuple[str, ...] = ()) -> ExperimentConfig:
    """Validate ``data`` (a config's raw TOML data) with ``overrides`` (dotted key ->
    value, from flags) set and the dotted keys in ``drop`` removed; errors in an
    overridden key name the flag ``flags`` gives for it."""
    if overrides:
        source += " (with flags)"
    return validate(data_with_flags(data, overrides, drop), ExperimentConfig, source=source, flags=flags)


def data_with_flags(data: dict, overrides: Mapping[str, Any], drop: tuple[str, ...] = ()) -> dict:
    """A copy of config data ``data`` with ``overrides`` (dotted key -> value) set and the
    dotted keys in ``drop`` removed: what :func:`config_with_flags` validates, and the base
    of the points a command runs (:mod:`hw_models.sweep.plan`)."""
    data = copy.deepcopy(data)
    for key in drop:
        section, _, name = key.partition(".")
        if isinstance(data.get(section), dict):
            data[section].pop(name, None)
    for key, value in overrides.items():
        section, _, name = key.partition(".")
        sec = data.setdefault(section, {})
        if isinstance(sec, dict):  # otherwise validation names the bad section
            sec[name] = value
    return data


@dataclass(frozen=True)
class ResolvedExperiment:
    """What the runs of a checked config take."""

    config: ExperimentConfig
    source: str
    topology: Any  # noc.topology.Topology
    router: Any  # noc.flit.FlitNetworkConfig, routing settled
    nics: dict  # design -> nic.allreduce.NicConfig
    routes: Any  # noc.routing.PairRoutes of no pairs: the routing's name and VC classes
    schedules: dict  # algorithm -> nic.collectives.Schedule
    sizes_bytes: list
    left_out: list = field(default_factory=list)  # default algorithms that do not fit, with why


def _label(key: str, source: str, flags: Mapping[str, str]) -> str:
    return flags.get(key) or f"{source}: {key} ="


def resolve_experiment(cfg: ExperimentConfig, source: str, *, flags: Mapping[str, str] | None = None,
                       designs: list[str] | None = None, algorithms: list[str] | None = None,
                       schedule_options: Mapping[str, dict] | None = None) -> ResolvedExperiment:
    """Check ``cfg`` whole and build what its runs take; errors name ``source`` and the key
    (or the flag in ``flags`` that set it). ``designs``: the NIC designs to run (default
    the config's); ``algorithms``: canonical names asked for on the command line (default
    the config's; ring is always added; default algorithms that do not fit the topology
    are left out, named ones are errors)."""
    from nic.nic_config import NicConfig  # noqa: PLC0415
    from nic.preparation import check_size  # noqa: PLC0415
    from nic.collectives import ScheduleError, build, timing_options  # noqa: PLC0415
    from noc.routing import check_vc_classes, route_pairs  # noqa: PLC0415

    flags = dict(flags or {})
    net = cfg.network
    links = {"link_bytes_per_cycle": net.link_bytes_per_cycle, "link_latency_cycles": net.link_latency_cycles}
    nis = net.nis_given
    spec_flag = flags.get("network.topology") or (
        f"{source}: network.topology =" if "network.nis_per_node" in flags else "network.topology =")
    t = resolve_topology(net.topology, nis, flag=_label("network.nis_per_node", source, flags),
                         spec_flag=spec_flag, **links)
    t = with_ni_latencies(t, net)
    router = resolve_router(net, cfg.router, source)
    # the NIC of each design: the [nic] keys (and the NIC flags), the element size, the
    # clock and the routers' flit size
    nics = {}
    for d in designs or [cfg.nic.design]:
        data = {**cfg.nic.model_dump(), "design": d, "element_bytes": cfg.allreduce.element_bytes,
                "clock_ghz": net.clock_ghz, "flit_bytes": router.flit_bytes or 16}
        try:
            nics[d] = validate(data, NicConfig, source=f"{source}: [nic]")
        except ConfigError as exc:
            raise ConfigError(f"{exc} (the [nic] keys and the NIC flags do not make a {d} NIC)") from None
    # the routers' VCs must split into the routes' VC classes (both models refuse them otherwise)
    try:
        # the routing's VC classes; no path is built (a run routes only its transfers' pairs)
        routes = route_pairs(t, [], [], router.routing, dateline=router.dateline)
        check_vc_classes(t, routes, int(router.num_vcs))
    except ConfigError as exc:
        raise ConfigError(f"{source} on {t.name}: {exc}") from None
    # the algorithms on this topology; every size a whole number of elements, one per flow at least
    defaults_only = algorithms is None and "algorithms" not in cfg.allreduce.model_fields_set
    names = list(dict.fromkeys(algorithms if algorithms is not None else cfg.allreduce.algorithms))
    if "ring" not in names:
        names.insert(0, "ring")  # the baseline every speedup is measured against
    schedules, left_out = {}, []
    for a in names:
        options = dict((schedule_options or {}).get(a, {}))
        if "size_bytes" in options:  # a sized builder times its choices with the run's NIC and routers
            options.update(timing_options(a, nics[next(iter(nics))], router))
        try:
            schedules[a] = build(t, a, **options)
        except ScheduleError as exc:
            if not defaults_only or a == "ring":
                asked = ",".join(algorithms) if algorithms is not None else cfg.allreduce.algorithms
                raise ScheduleError(f"{_label('allreduce.algorithms', source, flags)} {asked!s}: {exc}") from None
            left_out.append(f"{a} ({exc})")
    sizes = list(dict.fromkeys(cfg.allreduce.sizes_bytes))
    nic = next(iter(nics.values()))
    for a, s in schedules.items():
        for size in sizes:
            try:
                check_size(s, nic, size)
            except HwModelsError as exc:
                raise ConfigError(f"{_label('allreduce.sizes', source, flags)} {cfg.allreduce.sizes!r}, "
                                  f"{a} on {t.name}: {exc}") from None
    return ResolvedExperiment(config=cfg, source=source, topology=t, router=router, nics=nics, routes=routes,
                              schedules=schedules, sizes_bytes=sizes, left_out=left_out)


def check_model_network(exp: ResolvedExperiment, design: str, model: str, source: str) -> None:
    """Check that the all-reduce ``model`` (``message`` or ``flit``) can run ``design``'s NICs
    on the experiment's network, as every command and sweep kind that runs all-reduces does
    before it starts: the flit-level co-simulation's router and NIC scheduler limits, or the
    message model's router. Raises ``ConfigError`` starting with ``source``."""
    from nic.nic_config import check_message_router
    from nic.flit_cosim import flit_network
    from nic.scheduler import MAX_NIS as MAX_SCHEDULER_NIS

    t, router, nic = exp.topology, exp.router, exp.nics[design]
    try:
        if model == "flit":
            flit_network(t, nic, router)
        else:
            check_message_router(t, exp.routes, nic, router)
    except ConfigError as exc:
        raise ConfigError(f"{source} on {t.name}: {exc}") from None
    if model == "flit" and t.nis_per_node > MAX_SCHEDULER_NIS:
        raise ConfigError(f"{source}: {t.name} has {t.nis_per_node} NIs per node; the flit level's NIC scheduler "
                          f"serves at most {MAX_SCHEDULER_NIS} (docs/nic_scheduler.md)")
