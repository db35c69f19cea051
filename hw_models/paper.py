"""The MultiTree paper's runs, as its public simulator makes them, set up here.

The paper (ISCA 2021) names its configurations: ring, double binary tree and 2D ring as
baselines, and MultiTree with its co-designed NIC in four variants (alpha, beta, gamma,
delta: 1 or 4 NIs per node, 256 B packets or whole-chunk transfers). Its public simulator
runs each with particular flags; :data:`RUNS` says what each is here, and
:func:`paper_run` simulates one of them with the ``isca2021`` presets (``isca2021_mesh`` on
meshes): the same routers, channels, reduction unit and transmit queue.

* ring and double binary tree: one NI per node, the baseline NIC (each transfer as soon as
  its data is ready), 256 B packets; the double binary tree pipelined in N/2 chunks, as
  there.
* 2D ring: the four-direction 2D ring (``ring2d_4dir``) on four NIs, the baseline NIC,
  256 B packets.
* MultiTree: the trees built as the public implementation builds them (``tree_order =
  "paper"``), the co-designed NIC (tables, lockstep, step priority) with the variant's NIs
  and flow control.

Packet-mode runs use virtual cut-through routers, as the paper's do; bulk (whole-chunk)
transfers are one packet longer than a VC, so they run on wormhole routers.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw_models.config import load_experiment, resolve_router, with_ni_latencies
from nic.allreduce import NicConfig, simulate_allreduce
from nic.variants import VARIANT_NIC, VARIANTS
from nic.collectives import build
from noc.base.errors import ConfigError
from noc.topology import parse_spec, with_concentration

# the paper's topologies, by the names its runs use
TOPOLOGIES = {"torus4x4": "torus:4x4", "mesh4x4": "mesh:4x4", "torus8x8": "torus:8x8"}


@dataclass(frozen=True)
class PaperRun:
    algorithm: str
    nis: int
    nic: dict
    options: dict


_BASELINE = {"design": "baseline", "flow_control": "packet", "packet_bytes": 256}
RUNS = {
    "ring": PaperRun("ring", 1, _BASELINE, {}),
    "dtree": PaperRun("dbtree", 1, _BASELINE, {"pipeline_chunks": "N/2"}),
    "ring2d": PaperRun("ring2d_4dir", 4, _BASELINE, {}),
    **{v: PaperRun("multitree", VARIANTS[v]["nis"], {**VARIANT_NIC, "flow_control": VARIANTS[v]["flow_control"]},
                   {"tree_order": "paper"}) for v in VARIANTS},
}


def paper_setup(topology: str, run: str):
    """(topology, schedule, NicConfig, router config) of one of the paper's runs:
    ``topology`` one of :data:`TOPOLOGIES` (or a spec of a 2D torus or mesh), ``run`` one
    of :data:`RUNS`."""
    if run not in RUNS:
        raise ConfigError(f"run {run!r} is unknown; choose one of {', '.join(RUNS)}")
    spec = TOPOLOGIES.get(topology, topology)
    base = parse_spec(spec)
    mesh = base.name.startswith("mesh")
    cfg = load_experiment(preset="isca2021_mesh" if mesh else "isca2021")
    net = cfg.network
    r = RUNS[run]
    t = parse_spec(with_concentration(base, r.nis).name, link_bytes_per_cycle=net.link_bytes_per_cycle,
                   link_latency_cycles=net.link_latency_cycles)
    t = with_ni_latencies(t, net)
    options = {k: (t.num_nodes // 2 if v == "N/2" else v) for k, v in r.options.items()}
    schedule = build(t, r.algorithm, **options)
    nic = NicConfig(**{**cfg.nic.model_dump(), **r.nic}, element_bytes=cfg.allreduce.element_bytes,
                    clock_ghz=net.clock_ghz, flit_bytes=cfg.router.flit_bytes or 16)
    router = resolve_router(net, cfg.router, "paper preset")
    if not nic.bulk:
        router = router.model_copy(update={"flow_control": "vct"})
    return t, schedule, nic, router


def paper_run(topology: str, run: str, size_bytes: int, model: str = "flit"):
    """Simulate one of the paper's runs; an :class:`~nic.result.AllreduceResult`."""
    t, schedule, nic, router = paper_setup(topology, run)
    return simulate_allreduce(t, schedule, nic, router, int(size_bytes), model=model)
