"""The schema of a flit-level network experiment (``hw-models noc`` config files and the
``noc_load`` sweep kind): network, per-kind channel latencies, router, traffic, sweep."""

from __future__ import annotations

import functools
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
