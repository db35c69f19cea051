"""The schema of a flit-level network experiment (``hw-models noc`` config files and the
``noc_load`` sweep kind): network, per-kind channel latencies, router, traffic, sweep."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

from pydantic import Field


@functools.cache
def experiment_model():
    """The TOML schema (built on first use: it imports the numba kernels' modules)."""
    from hw_models.config import NetworkConfig
    from noc.base.config import StrictModel
    from noc.flit import FlitNetworkConfig
    from noc.flit_traffic import TrafficConfig
    from noc.flitsim_sweep import SweepConfig

    class ChannelConfig(StrictModel):
        """Latency per kind of link (unset: network.link_latency_cycles), e.g. BookSim2's:
        2-cycle torus channels, injection 2 (its channel and its injection step), ejection 1."""

        router_latency_cycles: Optional[int] = Field(None, ge=1, le=100_000, description="Router-to-router links.")
        inject_latency_cycles: Optional[int] = Field(None, ge=1, le=100_000, description="NI-to-router links.")
        eject_latency_cycles: Optional[int] = Field(None, ge=1, le=100_000, description="Router-to-NI links.")

    class NocExperimentConfig(StrictModel):
        """A flit-level network experiment: network (as in every hw-models config), per-kind
        channel latencies, router, traffic, sweep."""

        network: NetworkConfig = NetworkConfig()
        channels: ChannelConfig = ChannelConfig()
        router: FlitNetworkConfig = FlitNetworkConfig()
        traffic: TrafficConfig = TrafficConfig()
        sweep: SweepConfig = SweepConfig()
        out_dir: str = Field("results/noc", min_length=1, description="Directory for CSV and PNG files.")

    return NocExperimentConfig


def load_noc_experiment(config: Path, pattern: Optional[str] = None, seed: Optional[int] = None,
                        rate: Optional[float] = None):
    """Read and validate CONFIG (flags override ``[traffic]`` keys); returns (config, topology).

    The routing is ``router.routing``, or ``network.routing`` when the router's is "auto";
    two different explicit choices are an error. ``network.link_bytes_per_cycle`` matters only
    with ``router.flit_bytes`` set (links narrower than a flit then carry one flit every
    ``flit_bytes / link_bytes_per_cycle`` cycles; otherwise a link carries one flit per cycle);
    ``clock_ghz`` does not change the flit-level model."""
    from hw_models.config import resolve_topology
    from hw_models.config import resolve_router
    from noc.base.config import read_toml, validate
    from noc.base.errors import ConfigError

    data = read_toml(config)
    # the flags stand for [traffic] keys: checked by their rules, named as the flags
    flags = {"pattern": "--pattern", "seed": "--seed", "rate_packets": "--rate"}
    overrides = {k: v for k, v in (("pattern", pattern), ("seed", seed), ("rate_packets", rate)) if v is not None}
    source = str(config)
    if overrides:
        traffic = data.get("traffic", {})
        if isinstance(traffic, dict):  # otherwise validation reports the bad section
            data = {**data, "traffic": {**traffic, **overrides}}
        source += " (with flags)"
    cfg = validate(data, experiment_model(), source=source, flags={f"traffic.{k}": flags[k] for k in overrides})
    net = cfg.network
    cfg = cfg.model_copy(update={"router": resolve_router(net, cfg.router, str(config))})
    links = {"link_latency_cycles": net.link_latency_cycles, "link_bytes_per_cycle": net.link_bytes_per_cycle}
    t = resolve_topology(net.topology, net.nis_given, flag=f"{config}: network.nis_per_node =", spec_flag="network.topology =",
                         **links)
    ch = cfg.channels
    if ch.model_fields_set:
        t = t.with_latencies(**{f"{kind}_cycles": getattr(ch, f"{kind}_latency_cycles") or net.link_latency_cycles
                                for kind in ("router", "inject", "eject")})
    # fail before any progress bar: the pattern must suit the topology, the routing the VCs
    from noc.flit import build_network
    from noc.flit_traffic import destinations

    destinations(cfg.traffic.pattern, t, cfg.traffic.perm_seed)
    build_network(t, cfg.router)
    if cfg.router.flow_control == "vct" and max(cfg.traffic.packet_flits) > cfg.router.vc_depth_flits:
        raise ConfigError(f"{config}: traffic.packet_flits up to {max(cfg.traffic.packet_flits)} flits do not fit a VC "
                          f"(router.vc_depth_flits = {cfg.router.vc_depth_flits}) under virtual cut-through")
    return cfg, t
