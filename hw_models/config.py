"""Experiment configuration: TOML files (or a named preset) into validated pydantic models.

Every key carries its unit in its name. Unknown keys and out-of-range values are
:class:`noc.base.errors.ConfigError`\\ s naming file, key, value and what is allowed: every float
key is a finite number in a stated range (:func:`noc.base.config.finite`), every seed follows
:data:`noc.base.config.SEED_RULE`. Command-line flags that stand for keys are checked by the same
fields (:func:`noc.base.config.validate` with ``flags=``, :func:`noc.base.config.check_value`), and
what no single key can check (an NI count against the spec's ``:cN``, two routings, a NIC
that is not one) by :func:`hw_models.experiment.resolve_experiment`, which both
``hw-models config show`` and ``hw-models allreduce`` run.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, Field, create_model, field_validator

from noc.base.units import parse_sizes_bytes
from nic.allreduce import NicConfig
from nic.collectives import ALGORITHMS, DEFAULT_ALGORITHMS
from noc.base.config import SEED_RULE, Seed, StrictModel, check_value, finite, finite_rule, read_toml, validate
from noc.base.errors import ConfigError, HwModelsError
from noc.base.files import why_missing
from noc.flit import FlitNetworkConfig
from noc.routing import ALGORITHMS as ROUTING_ALGORITHMS
from noc.topology import LINK_BYTES_PER_CYCLE_RANGE, MAX_LINK_LATENCY_CYCLES, parse_spec
from hw_models.presets import PRESETS
MAX_NIS_PER_NODE = 64
CLOCK_GHZ_RANGE = (1e-3, 100.0)  # 1 MHz .. 100 GHz


_PARSED_SPECS: set[str] = set()  # topology specs that parsed (parsing builds the topology)

class NetworkConfig(StrictModel):
    """The network: topology spec and link parameters."""

    topology: str = Field("torus:4x4", description="Topology spec (torus:4x4, mesh:8x8:c4, fattree:k8:l2, ...).")
    nis_per_node: int = Field(1, ge=1, le=MAX_NIS_PER_NODE, description="NIs per node on direct networks (MultiTree kary - 1).")
    link_bytes_per_cycle: Annotated[float, finite(*LINK_BYTES_PER_CYCLE_RANGE)] = Field(
        16.0, description=f"Bytes a link carries per cycle, per direction: {finite_rule(*LINK_BYTES_PER_CYCLE_RANGE)}.")
    link_latency_cycles: int = Field(1, ge=1, le=MAX_LINK_LATENCY_CYCLES, description="Cycles from a link's input to its output.")
    inject_latency_cycles: Optional[int] = Field(
        None, ge=1, le=MAX_LINK_LATENCY_CYCLES, description="Cycles of an NI's injection link (default: link_latency_cycles).")
    eject_latency_cycles: Optional[int] = Field(
        None, ge=1, le=MAX_LINK_LATENCY_CYCLES, description="Cycles of an NI's ejection link (default: link_latency_cycles).")
    routing: Literal[ROUTING_ALGORITHMS] = "auto"
    clock_ghz: Annotated[float, finite(*CLOCK_GHZ_RANGE)] = Field(
        1.0, description=f"Clock used to turn cycles into seconds and GB/s: {finite_rule(*CLOCK_GHZ_RANGE)}.")

    @field_validator("topology")
    @classmethod
    def _spec_parses(cls, v: str) -> str:
        if v not in _PARSED_SPECS:  # a sweep validates one spec many times: parse (build) it once
            parse_spec(v)  # raises SpecError with the accepted forms
            if len(_PARSED_SPECS) > 256:
                _PARSED_SPECS.clear()
            _PARSED_SPECS.add(v)
        return v

    @property
    def nis_given(self) -> int | None:
        """``nis_per_node`` when the config sets it, else None: the topology spec's own NI
        count (its ``:cN``, 1 without one) holds. A count set both ways must agree."""
        return self.nis_per_node if "nis_per_node" in self.model_fields_set else None


def _registered_algorithm(name: str) -> str:
    """``name`` if it is in the algorithm registry (:data:`nic.collectives.ALGORITHMS`), read
    when a config is validated, so an algorithm registered later is a valid choice."""
    if name not in ALGORITHMS:
        *first, last = (repr(a) for a in ALGORITHMS)
        raise ValueError(f"Input should be {', '.join(first)} or {last}")
    return name


class _AlgorithmSchema:
    """The JSON schema of an algorithm name: an enum of the registry's names as it is when
    the schema is made (``ExperimentConfig.model_json_schema()``)."""

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler):
        return {**handler(core_schema), "enum": list(ALGORITHMS)}


AlgorithmName = Annotated[str, AfterValidator(_registered_algorithm), _AlgorithmSchema]


class AllreduceConfig(StrictModel):
    """Which all-reduces to run."""

    algorithms: list[AlgorithmName] = Field(
        default_factory=lambda: list(DEFAULT_ALGORITHMS), min_length=1
    )
    sizes: str = Field("32KiB..4MiB", description="All-reduce sizes in bytes: '32KiB..64MiB' (doubling) or a list '1MiB,4MiB'.")
    element_bytes: int = Field(4, ge=1, le=16, description="Bytes per element (fp32 = 4).")

    @field_validator("sizes", mode="before")
    @classmethod
    def _sizes_text(cls, v):
        if isinstance(v, list) and all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in v):
            raise ValueError("must be one string, not a list: a doubling range '32KiB..64MiB' or sizes "
                             f"separated by commas, e.g. {','.join(str(x) for x in v[:3])!r}")
        return v

    @field_validator("sizes")
    @classmethod
    def _sizes_parse(cls, v: str) -> str:
        parse_sizes_bytes(v)
        return v

    @property
    def sizes_bytes(self) -> list[int]:
        return parse_sizes_bytes(self.sizes)


# The [nic] section: NicConfig's own keys (the element size and clock come from [allreduce]
# and [network], the flit size from [router]); the CLI's --nic, --variant and switches override them.
NIC_KEYS = ("design", "flow_control", "packet_bytes", "step_priority", "issue_delay_cycles", "reduction",
            "reduce_elements_per_cycle", "reduce_granule_elements", "reduce_latency_cycles", "tx_buffer_flits")
NicSection = create_model("NicSection", __base__=StrictModel, __doc__="The NIC: design, flow control, reduction unit.",
                          **{k: (NicConfig.model_fields[k].annotation, NicConfig.model_fields[k]) for k in NIC_KEYS})


class RunConfig(StrictModel):
    seed: Seed = Field(1, description=f"Seed of every random choice: {SEED_RULE}.")
    out_dir: str = Field("results", min_length=1, description="Directory for CSV, PNG and traces.")


class ExperimentConfig(StrictModel):
    network: NetworkConfig = NetworkConfig()
    # the flit-level routers (VCs, buffers, allocators, pipeline delays); the message-level
    # model takes its router delay, VC counts and buffer sizes from it too
    router: FlitNetworkConfig = FlitNetworkConfig()
    allreduce: AllreduceConfig = AllreduceConfig()
    nic: NicSection = NicSection()
    run: RunConfig = RunConfig()


def resolve_router(network: NetworkConfig, router: FlitNetworkConfig, source: str) -> FlitNetworkConfig:
    """The router config with its routing settled: ``router.routing``, or
    ``network.routing`` when the router's is "auto"; two different explicit choices are an
    error naming ``source``."""
    if router.routing == "auto":
        return router if network.routing == "auto" else router.model_copy(update={"routing": network.routing})
    if network.routing not in ("auto", router.routing):
        raise ConfigError(f"{source}: network.routing = {network.routing!r} and router.routing = {router.routing!r} "
                          "disagree; set one of them")
    return router


def with_ni_latencies(topology, network: NetworkConfig):
    """``topology`` with the config's injection and ejection link latencies, when it sets them."""
    inject, eject = network.inject_latency_cycles, network.eject_latency_cycles
    if inject is None and eject is None:
        return topology
    lat = network.link_latency_cycles
    return topology.with_latencies(router_cycles=lat, inject_cycles=inject or lat, eject_cycles=eject or lat)


def resolve_topology(spec: str, nis: Optional[int], flag: str = "--nis", spec_flag: str = "--topology",
                     **link_kwargs):
    """The topology of ``spec`` (with ``link_kwargs``), with ``nis`` NIs per node when given
    (errors name ``flag`` and ``spec_flag``: where the NI count and the spec came from). The
    count follows ``network.nis_per_node``'s rule wherever it comes from; a spec that
    states its own NI count (``:cN``) and a different ``nis`` is an error."""
    import re  # noqa: PLC0415

    from noc.topology import with_concentration  # noqa: PLC0415

    if nis is not None:
        check_value(NetworkConfig, "nis_per_node", nis, flag, name="network.nis_per_node")
    t = parse_spec(spec, **link_kwargs)
    if nis is None or nis == t.nis_per_node:
        return t
    if re.search(r":c[0-9]+$", spec.strip().lower()):
        raise HwModelsError(f"{flag} {nis} contradicts {spec_flag} {spec.strip()} ({t.nis_per_node} NIs per node)")
    if not t.is_direct:
        raise HwModelsError(f"{flag} {nis}: {t.name} is a switched network with one NI per endpoint; "
                            "more NIs per node need a direct network (torus, mesh, ring, hypercube, full)")
    return parse_spec(with_concentration(t, nis).name, **link_kwargs)


def preset_path(name: str) -> Path:
    if name not in PRESETS:
        raise ConfigError(f"preset {name!r} is unknown; available: {', '.join(PRESETS)}")
    return Path(str(resources.files("hw_models") / "presets" / f"{name}.toml"))


def check_config_file(config: Optional[Path]) -> None:
    """``--config`` names a file (when given)."""
    if config is not None and not config.is_file():
        raise HwModelsError(f"--config {config}: {'is a directory' if config.is_dir() else why_missing(config)}")


def experiment_data(path: str | Path | None = None, preset: str | None = None) -> tuple[dict, str]:
    """The raw data of ``path`` (a TOML file), or a named preset, or the defaults (empty),
    and the name errors give it (the file, ``preset NAME`` or ``defaults``)."""
    if path is not None and preset is not None:
        raise ConfigError("give a config file or a preset, not both")
    if preset is not None:
        return read_toml(preset_path(preset)), f"preset {preset}"
    if path is None:
        return {}, "defaults"
    return read_toml(path), str(path)


def load_experiment(path: str | Path | None = None, preset: str | None = None) -> ExperimentConfig:
    """Load ``path`` (a TOML file), or a named preset, or the defaults."""
    if preset is not None and path is None:
        path = preset_path(preset)
        preset = None
    data, source = experiment_data(path, preset)
    return validate(data, ExperimentConfig, source=source)
