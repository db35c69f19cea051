"""Communication costs for the training timeline: seconds of one collective of ``nbytes``.

A cost model is anything with ``num_workers`` and three methods, each ``nbytes -> seconds``
(:class:`CommModel`): ``allreduce_s``, ``reduce_scatter_s`` and ``all_gather_s`` (the last
two for policies that split an all-reduce, DeAR). Two are here:

* :class:`AlphaBeta` -- the analytical latency-bandwidth model, for tests and quick runs:
  ring all-reduce ``2(N-1)/N * nbytes / bytes_per_s + 2(N-1) * latency_s``, each half a
  reduce-scatter or an all-gather; recursive halving-doubling ``2(N-1)/N * nbytes /
  bytes_per_s + 2 log2(N) * latency_s``.
* :class:`NicComm` -- the project's NIC and network models (:func:`nic.allreduce.simulate_allreduce`):
  a schedule (ring, MultiTree, ...) on a topology, run by the NIC model over the network,
  at message level (default) or flit level, each size simulated exactly once and cached;
  cycles become seconds at the NIC's clock (the config's ``network.clock_ghz``).

Sizes: a schedule splits a vector of whole elements (``element_bytes`` each) into its flows,
at least one element per flow, so :class:`NicComm` simulates ``nbytes`` rounded up to whole
elements and to at least one element per flow (:meth:`NicComm.sim_bytes`), the size it
would actually move. No interpolation: every distinct size is simulated.

Reduce-scatter and all-gather from a schedule: every schedule here is REDUCE transfers
towards each flow's root followed by GATHER transfers away from it, and the NIC's
dependency rule (a node's REDUCE waits for the REDUCEs arriving at it; a GATHER for the
GATHER arriving, or at the root for the REDUCEs) makes the REDUCE transfers alone a
complete schedule (its end: every flow's sum at the flow's root, i.e. a reduce-scatter when
every node roots an equal share, as in ring, 2D ring, halving-doubling and MultiTree) and
the GATHER transfers alone another (each root starts from its sum at once: an all-gather).
:class:`NicComm` simulates the two phases separately (steps renumbered densely within each),
and checks the split once per schedule: the reduce phase followed by the gather phase,
replayed on exact integers in the simulated order, performs the all-reduce
(:func:`nic.collectives.verify`). Where a schedule overlaps the phases (the pipelined double
binary tree), reduce-scatter + all-gather is slower than its all-reduce. The flit level runs
whole all-reduces only (the NIC scheduler's tables count the REDUCEs arriving at a flow's
root in the root's GATHER rows, so a reduce phase alone is not a table it can run): there
the two phases split the flit-level all-reduce time in the proportion the message level
measures for them (an analytical split).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from hw_models.training.costs import whole
from noc.base.errors import ConfigError

KINDS = ("allreduce", "reduce_scatter", "all_gather")
ALPHA_BETA_ALGORITHMS = ("ring", "halving_doubling")


@runtime_checkable
class CommModel(Protocol):
    """What the timeline asks of a communication cost model."""

    num_workers: int

    def allreduce_s(self, nbytes: int) -> float: ...

    def reduce_scatter_s(self, nbytes: int) -> float: ...

    def all_gather_s(self, nbytes: int) -> float: ...


def collective_s(comm: CommModel, kind: str, nbytes: int) -> float:
    """Seconds of one collective of ``kind`` (one of :data:`KINDS`) moving ``nbytes``: ``comm.<kind>_s``."""
    if kind not in KINDS:
        raise ConfigError(f"collective kind {kind!r} is unknown (allowed: {', '.join(KINDS)})")
    return float(getattr(comm, f"{kind}_s")(nbytes))


def describe(comm: CommModel) -> str:
    """A one-line description of a cost model (its ``describe()``, else its repr)."""
    d = getattr(comm, "describe", None)
    return d() if callable(d) else repr(comm)


def _check_nbytes(nbytes) -> int:
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or int(nbytes) < 0:
        raise ConfigError(f"nbytes = {nbytes!r}: must be an integer number of bytes >= 0")
    return int(nbytes)


@dataclass(frozen=True)
class AlphaBeta:
    """The latency-bandwidth (alpha-beta) cost of collectives among ``num_workers`` workers.

    ``latency_s`` (alpha): start-up seconds of each of the algorithm's steps;
    ``bytes_per_s``: bandwidth of each worker's link per direction (``math.inf``: free
    bandwidth). ``algorithm``: ``ring`` (N-1 steps per phase) or ``halving_doubling``
    (log2 N steps per phase; N a power of two). A reduce-scatter or an all-gather is one phase,
    ``steps * latency_s + (N-1)/N * nbytes / bytes_per_s``; an all-reduce is both. One
    worker communicates nothing (0 s)."""

    latency_s: float
    bytes_per_s: float
    num_workers: int
    algorithm: str = "ring"

    def __post_init__(self) -> None:
        lat = self.latency_s
        if isinstance(lat, bool) or not isinstance(lat, (int, float)) or not math.isfinite(lat) or lat < 0:
            raise ConfigError(f"AlphaBeta.latency_s = {lat!r}: must be a finite number of seconds >= 0")
        bw = self.bytes_per_s
        if isinstance(bw, bool) or not isinstance(bw, (int, float)) or math.isnan(bw) or bw <= 0:
            raise ConfigError(f"AlphaBeta.bytes_per_s = {bw!r}: must be a number > 0 (math.inf for free bandwidth)")
        n = whole("AlphaBeta.num_workers", self.num_workers)
        if self.algorithm not in ALPHA_BETA_ALGORITHMS:
            raise ConfigError(f"AlphaBeta.algorithm = {self.algorithm!r}: must be one of {', '.join(ALPHA_BETA_ALGORITHMS)}")
        if self.algorithm == "halving_doubling" and n & (n - 1):
            raise ConfigError(f"AlphaBeta.num_workers = {n}: halving_doubling needs a power of two")

    @property
    def steps_per_phase(self) -> int:
        n = self.num_workers
        return n - 1 if self.algorithm == "ring" else int(round(math.log2(n)))

    def _phase_s(self, nbytes) -> float:
        nbytes = _check_nbytes(nbytes)
        n = self.num_workers
        if nbytes == 0 or n == 1:
            return 0.0
        return self.steps_per_phase * self.latency_s + (n - 1) / n * nbytes / self.bytes_per_s

    def allreduce_s(self, nbytes: int) -> float:
        return 2.0 * self._phase_s(nbytes)

    def reduce_scatter_s(self, nbytes: int) -> float:
        return self._phase_s(nbytes)

    def all_gather_s(self, nbytes: int) -> float:
        return self._phase_s(nbytes)

    def describe(self) -> str:
        return (f"alpha-beta {self.algorithm}, {self.num_workers} workers, alpha {self.latency_s:g} s, "
                f"{self.bytes_per_s:g} B/s")


def _phase_schedule(schedule, op: int):
    """The transfers of ``op`` (REDUCE or GATHER) of ``schedule`` as a schedule of their own
    (steps renumbered densely, order kept), and their indices in ``schedule``."""
    from nic.collectives import Schedule  # noqa: PLC0415
    from nic.scheduler import OP_REDUCE  # noqa: PLC0415

    idx = np.nonzero(schedule.op == op)[0]
    _, dense = np.unique(schedule.step[idx], return_inverse=True)
    arr = np.stack([dense, schedule.src[idx], schedule.dst[idx], schedule.flow[idx], schedule.op[idx]], axis=1)
    name = "reduce" if op == OP_REDUCE else "gather"
    part = Schedule.from_transfers(f"{schedule.algorithm}/{name}", schedule.topology, schedule.num_nodes,
                                   schedule.nis_per_node, schedule.num_flows, arr, schedule.params)
    # the canonical order of a subset of a canonically ordered schedule is the subset's order
    if not (np.array_equal(part.src, schedule.src[idx]) and np.array_equal(part.dst, schedule.dst[idx])
            and np.array_equal(part.flow, schedule.flow[idx])):
        raise RuntimeError(f"internal error: the {name} phase of {schedule.algorithm} changed order")
    return part, idx


class NicComm:
    """Collective costs from the project's NIC and network models (see the module docstring).

    ``topology``, ``schedule``, ``nic`` (:class:`nic.allreduce.NicConfig`, default: the
    co-designed NIC at 1 GHz) and ``network`` (a :class:`noc.flit.FlitNetworkConfig`, or
    ``None`` for the pure fluid message model) as :func:`nic.allreduce.simulate_allreduce`
    takes them; ``model``: ``"message"`` or ``"flit"``; ``fixed_latency_s``: seconds added
    to every collective (a software or launch overhead); ``seed``: of the functional
    verifier's input vectors. Every distinct simulated size is run once (per kind) and
    cached in this object. ``algorithm``: the registry's name of ``schedule``; for a sized
    one (``nic.collectives.SIZED``, e.g. ``forest``) each size runs the schedule built for
    that size, NIC and network (:meth:`schedule_for`), ``schedule`` being the one built
    without a size."""

    def __init__(self, topology, schedule, nic=None, network=None, *, model: str = "message",
                 fixed_latency_s: float = 0.0, seed: int = 0, algorithm: str | None = None):
        from nic.allreduce import MODELS, NicConfig  # noqa: PLC0415

        if model not in MODELS:
            raise ConfigError(f"model = {model!r}: must be one of {', '.join(MODELS)}")
        lat = fixed_latency_s
        if isinstance(lat, bool) or not isinstance(lat, (int, float)) or not math.isfinite(lat) or lat < 0:
            raise ConfigError(f"fixed_latency_s = {lat!r}: must be a finite number of seconds >= 0")
        self.topology = topology
        self.schedule = schedule
        self.nic = NicConfig() if nic is None else nic
        self.network = network
        self.model = model
        self.fixed_latency_s = float(lat)
        self.seed = int(seed)
        self._cycles: dict[tuple[str, int], float] = {}
        self._phases: dict[int, tuple] = {}  # id(schedule) -> (schedule, reduce phase, gather phase)
        self._twin: NicComm | None = None
        from nic.collectives import SIZED, algorithm_name  # noqa: PLC0415

        name = None if algorithm is None else algorithm_name(algorithm)
        self.algorithm = name if name in SIZED else None

    # ---- construction from an experiment config ----------------------------------------
    @classmethod
    def from_config(cls, config=None, *, preset: str | None = None, algorithm: str = "ring",
                    design: str | None = None, model: str = "message", fixed_latency_s: float = 0.0) -> "NicComm":
        """The cost of ``algorithm``'s all-reduce on an experiment config's network: ``config``
        a TOML path, an :class:`hw_models.config.ExperimentConfig`, or ``None`` (the
        defaults, or ``preset``). The topology, routers, NIC (``design``, default the
        config's) and clock are the config's, checked as ``hw-models allreduce`` checks them."""
        from hw_models.config import ExperimentConfig, experiment_data  # noqa: PLC0415
        from hw_models.experiment import config_with_flags, resolve_experiment  # noqa: PLC0415
        from nic.collectives import algorithm_name  # noqa: PLC0415

        if isinstance(config, ExperimentConfig):
            if preset is not None:
                raise ConfigError("give a config or a preset, not both")
            cfg, source = config, "config"
        else:
            data, source = experiment_data(Path(config) if config is not None else None, preset)
            cfg = config_with_flags(data, source, {}, {})
        alg = algorithm_name(algorithm)
        exp = resolve_experiment(cfg, source, designs=[design] if design else None, algorithms=[alg])
        nic = next(iter(exp.nics.values()))
        return cls(exp.topology, exp.schedules[alg], nic, exp.router, model=model, fixed_latency_s=fixed_latency_s,
                   seed=int(cfg.run.seed), algorithm=alg)

    # ---- sizes and costs --------------------------------------------------------------
    @property
    def num_workers(self) -> int:
        return int(self.topology.num_nodes)

    @property
    def clock_ghz(self) -> float:
        return float(self.nic.clock_ghz)

    def schedule_for(self, size: int):
        """The schedule a collective of ``size`` simulated bytes runs: for a sized algorithm
        the registry's build for that size with this NIC and network, else ``schedule``."""
        if self.algorithm is None:
            return self.schedule
        from nic.collectives import build, size_options, timing_options  # noqa: PLC0415

        return build(self.topology, self.algorithm, **size_options(self.algorithm, size),
                     **timing_options(self.algorithm, self.nic, self.network))

    def sim_bytes(self, nbytes: int) -> int:
        """The size simulated for ``nbytes``: whole ``element_bytes`` elements, rounded up,
        and at least one element per flow of the schedule."""
        nbytes = _check_nbytes(nbytes)
        e = int(self.nic.element_bytes)
        return max(-(-nbytes // e), int(self.schedule.num_flows)) * e

    def cycles(self, kind: str, nbytes: int) -> float:
        """Simulated cycles of one collective of ``kind`` for ``nbytes`` (0 for 0 bytes), cached."""
        if kind not in KINDS:
            raise ConfigError(f"collective kind {kind!r} is unknown (allowed: {', '.join(KINDS)})")
        if _check_nbytes(nbytes) == 0:
            return 0.0
        size = self.sim_bytes(nbytes)
        key = (kind, size)
        if key not in self._cycles:
            self._cycles[key] = self._simulate(kind, size)
        return self._cycles[key]

    def _seconds(self, kind: str, nbytes: int) -> float:
        if _check_nbytes(nbytes) == 0:
            return 0.0
        return self.cycles(kind, nbytes) / (self.clock_ghz * 1e9) + self.fixed_latency_s

    def allreduce_s(self, nbytes: int) -> float:
        return self._seconds("allreduce", nbytes)

    def reduce_scatter_s(self, nbytes: int) -> float:
        return self._seconds("reduce_scatter", nbytes)

    def all_gather_s(self, nbytes: int) -> float:
        return self._seconds("all_gather", nbytes)

    def cache_info(self) -> dict:
        """How many simulations this object ran, per kind."""
        out = {k: 0 for k in KINDS}
        for kind, _ in self._cycles:
            out[kind] += 1
        return out

    def describe(self) -> str:
        return (f"{self.schedule.algorithm} on {self.topology.name}, {self.nic.design} NIC, {self.model} level, "
                f"{self.clock_ghz:g} GHz" + (f", +{self.fixed_latency_s:g} s per collective"
                                             if self.fixed_latency_s else ""))

    # ---- simulation -------------------------------------------------------------------
    def _simulate(self, kind: str, size: int) -> float:
        from nic.allreduce import simulate_allreduce  # noqa: PLC0415

        schedule = self.schedule_for(size)
        if kind == "allreduce":
            r = simulate_allreduce(self.topology, schedule, self.nic, self.network, int(size), model=self.model,
                                   seed=self.seed)
            return float(r.total_cycles)
        if self.model == "flit":
            # the flit level runs whole all-reduces only: its share for each phase is the
            # phase's share of reduce-scatter + all-gather at message level
            twin = self._message_twin()
            rs, ag = twin.cycles("reduce_scatter", size), twin.cycles("all_gather", size)
            share = (rs if kind == "reduce_scatter" else ag) / (rs + ag) if rs + ag > 0 else 0.5
            return self.cycles("allreduce", size) * share
        reduce_part, gather_part = self._split(schedule)
        part = reduce_part[0] if kind == "reduce_scatter" else gather_part[0]
        _, arrive = self._run_phase(part, size)
        return float(arrive.max()) if arrive.size else 0.0

    def _message_twin(self) -> "NicComm":
        if self._twin is None:
            self._twin = NicComm(self.topology, self.schedule, self.nic, self.network, model="message", seed=self.seed,
                                 algorithm=self.algorithm)
        return self._twin

    def _run_phase(self, part, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Message-level start and arrival cycles of a phase schedule's transfers."""
        from nic.allreduce import check_times, run_message  # noqa: PLC0415
        from nic.preparation import prepare  # noqa: PLC0415

        prep = prepare(self.topology, part, self.nic, int(size))
        times, _ = run_message(self.topology, prep, self.nic, self.network)
        check_times(prep, times.start_cycles, times.usable_cycles)
        return times.start_cycles, times.arrive_cycles

    def _split(self, s):
        """Schedule ``s``'s reduce and gather phases (each ``(schedule, indices)``), checked once:
        run one after the other at the smallest size, they perform the all-reduce."""
        if id(s) not in self._phases:
            from nic.collectives import verify  # noqa: PLC0415
            from nic.scheduler import OP_GATHER, OP_REDUCE  # noqa: PLC0415

            red, gat = _phase_schedule(s, OP_REDUCE), _phase_schedule(s, OP_GATHER)
            if len(red[1]) + len(gat[1]) != s.num_transfers:
                raise RuntimeError(f"internal error: {s.algorithm} has transfers that neither reduce nor gather")
            size = self.sim_bytes(1)
            rs_start, rs_arrive = self._run_phase(red[0], size)
            ag_start, ag_arrive = self._run_phase(gat[0], size)
            end = float(rs_arrive.max()) if rs_arrive.size else 0.0
            start = np.empty(s.num_transfers)
            arrive = np.empty(s.num_transfers)
            start[red[1]], arrive[red[1]] = rs_start, rs_arrive
            start[gat[1]], arrive[gat[1]] = ag_start + end, ag_arrive + end
            verify(s, seed=self.seed, times=(start, arrive))
            self._phases[id(s)] = (s, red, gat)  # the schedule kept: its id is not reused
        return self._phases[id(s)][1:]


__all__ = ["ALPHA_BETA_ALGORITHMS", "AlphaBeta", "CommModel", "KINDS", "NicComm", "collective_s", "describe"]
