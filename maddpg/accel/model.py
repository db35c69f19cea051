"""One update on the accelerator, by phase, and end-to-end training throughput.

The engines' tasks (:mod:`maddpg.accel.engine`) and the exchanges
(:mod:`maddpg.accel.interconnect`) are list-scheduled on their resources — per engine its
actor arrays, critic arrays and vector unit; one interconnect — each task starting when its
inputs are ready and its resource is free. Per engine, in order:

* targets: its target actor on every agent's minibatch (``N`` passes, actor arrays);
* interconnect: the inputs exchange (from cycle 0), the target-action exchange (streamed
  tile by tile behind the target passes with ``stream_exchange``);
* critic: ``Q(x, a)`` once the inputs are in; after the target actions, the target critic,
  the TD loss, the critic's backward pass and Adam;
* actor: its forward pass and sample (actor arrays, right after the target passes), the
  critic on ``[x, .. pi_i ..]`` with the updated critic, ``dQ/da_i``, the Gumbel gradient,
  the actor's backward pass and Adam; then the soft target updates (targets).

``semantics = "sequential"`` chains the agents as the trainer does: agent ``i``'s target
actions wait for agents ``0 .. i-1``'s soft updates.

Cycles by phase are those on the critical path (they add up to the update); the host's
transfer is exposed only where it outlasts the update it overlaps (``overlap_host``) or in
full before it. A minibatch in card memory (``tiles``) cannot be read faster than the card's
memory bandwidth shared by all engines: the update takes at least that long.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from maddpg.accel import engine as E
from maddpg.accel import host as H
from maddpg.accel import interconnect as X
from maddpg.accel.config import AccelConfig, Workload
from maddpg.accel.parts import Part
from maddpg.accel.resources import Resources, check_fits, estimate, overfull

PHASES = ("transfer", "critic", "actor", "targets", "interconnect")


@dataclass
class _Task:
    name: str
    phase: str
    resource: tuple
    cycles: float
    deps: list
    start: float = 0.0
    end: float = 0.0
    by: object = None  # the task whose end set this one's start (critical path)


def _schedule(tasks: list[_Task]) -> _Task:
    free: dict[tuple, _Task] = {}
    last = None
    for t in tasks:
        t.start, t.by = 0.0, None
        for d in t.deps:
            if d.end > t.start:
                t.start, t.by = d.end, d
        prev = free.get(t.resource)
        if prev is not None and prev.end > t.start:
            t.start, t.by = prev.end, prev
        t.end = t.start + t.cycles
        free[t.resource] = t
        if last is None or t.end > last.end:
            last = t
    return last


def _critical(last: _Task) -> dict[str, float]:
    out = {p: 0.0 for p in PHASES}
    t = last
    while t is not None:
        out[t.phase] += t.cycles
        t = t.by
    return out


@dataclass(frozen=True)
class UpdateResult:
    """One update of ``n`` agents on one design."""

    n_agents: int
    interconnect: str
    part: str
    datapath: str
    pe: int
    lanes: int
    macs_per_engine: int
    fpga_cycles: float  # engines and interconnect, one update
    update_cycles: float  # the update period, exposed host transfer included
    phase_cycles: dict  # critical-path cycles by phase (sum: update_cycles)
    busy_cycles: dict  # busiest engine's task cycles by phase, the exchanges' cycles
    exchange: dict  # inputs/targets cycles and their bounds
    transfer_cycles: float  # host <-> card, one update
    clock_mhz: float
    resources: Resources = field(compare=False)
    fits: bool = True
    over: str = ""  # the most over-subscribed resource when not

    @property
    def update_s(self) -> float:
        return self.update_cycles / (self.clock_mhz * 1e6)

    def samples_per_s(self, batch: int) -> float:
        return self.n_agents * batch / self.update_s


def _tasks(w: Workload, cfg: AccelConfig, ex: dict, ex_to: list[float]) -> list[_Task]:
    n = w.n_agents
    eng = [E.engine_tasks(w, i, cfg) for i in range(n)]
    tiles = -(-w.batch // cfg.tile_b) if cfg.layer_pipelining else 1
    tasks: list[_Task] = []
    T = lambda *a: tasks.append(_Task(*a)) or tasks[-1]  # noqa: E731
    if cfg.semantics == "parallel":
        # target passes in chunks (a tile of one minibatch each), so the exchange can stream behind them
        chunks = min(n * tiles, 64) if cfg.stream_exchange else 1
        tact = [[T(f"target actor {i} chunk {k}", "targets", ("actor", i), eng[i].target_actor_pass * n / chunks, [])
                 for k in range(chunks)] for i in range(n)]
        x_in = T("exchange inputs", "interconnect", ("net",), ex["inputs"], [])
        prev = x_in
        for k in range(chunks):
            prev = T(f"exchange targets {k}", "interconnect", ("net",), ex["targets"] / chunks,
                     [tact[i][k] for i in range(n)] + [prev])
        x_tgt = [prev] * n
    else:
        x_in = T("exchange inputs", "interconnect", ("net",), ex["inputs"], [])
        x_tgt = []
    soft: list[_Task] = []
    for i in range(n):
        e = eng[i]
        if cfg.semantics == "sequential":
            tp = [T(f"target actor {j} on minibatch {i}", "targets", ("actor", j), eng[j].target_actor_pass,
                    [soft[j]] if j < i else []) for j in range(n)]
            x_tgt.append(T(f"exchange targets to {i}", "interconnect", ("net",), ex_to[i], tp))
        cq = T(f"critic {i} forward", "critic", ("critic", i), e.critic_forward, [x_in])
        af = T(f"actor {i} forward", "actor", ("actor", i), e.actor_forward_sample, [])
        ctq = T(f"target critic {i}", "targets", ("critic", i), e.target_critic_forward, [x_tgt[i], cq])
        ctd = T(f"td loss {i}", "critic", ("vec", i), e.td_loss, [ctq])
        cbw = T(f"critic {i} backward", "critic", ("critic", i), e.critic_backward, [ctd])
        cad = T(f"critic {i} adam", "critic", ("vec", i), e.adam_critic, [cbw])
        aq = T(f"critic {i} on pi", "actor", ("critic", i), e.critic_forward, [cad, af])
        adq = T(f"critic {i} dQ/da", "actor", ("critic", i), e.critic_input_grad, [aq])
        agb = T(f"gumbel backward {i}", "actor", ("vec", i), e.gumbel_backward, [adq])
        abw = T(f"actor {i} backward", "actor", ("actor", i), e.actor_backward, [agb])
        aad = T(f"actor {i} adam", "actor", ("vec", i), e.adam_actor, [abw])
        soft.append(T(f"soft update {i}", "targets", ("vec", i), e.soft_update, [aad]))
    return tasks


def card_memory_cycles(w: Workload, cfg: AccelConfig, part: Part) -> float:
    """Minibatch traffic to card memory per update when it is streamed (``tiles``): each engine
    reads its columns of every minibatch once and its critic inputs three times (Q, Q', Q on
    pi) and writes the gathered ones once."""
    wb = cfg.word_bytes
    nbytes = sum(w.n_agents * w.batch * (2 * w.obs_dims[i] + w.act_dims[i]) + 5 * w.batch * w.critic_in
                 for i in range(w.n_agents)) * wb
    return nbytes / (part.card_memory_gb_per_s * 1e9) * cfg.clock_mhz * 1e6


def simulate_update(w: Workload, cfg: AccelConfig, part: Part, *, check: bool = False) -> UpdateResult:
    """Time one update of ``w`` on design ``cfg`` on ``part`` (``check``: raise
    :class:`~maddpg.accel.resources.DesignDoesNotFit` when it does not fit; otherwise the
    result says so)."""
    n = w.n_agents
    topo = X.build_topology(cfg.interconnect, n, cfg) if n > 1 else None
    res = estimate(cfg, w, part, topo)
    if check:
        check_fits(res, part, cfg, f"the design ({n} engines of {E.engine_macs(cfg, w)} MACs, {cfg.datapath}, "
                                   f"{cfg.interconnect})")
    over = overfull(res, part, cfg)
    ex = X.exchange_times(w, cfg)
    ex_to = [0.0] * n
    if cfg.semantics == "sequential" and n > 1:
        for i in range(n):
            m = X.exchange_messages(w, cfg.word_bytes, "targets")
            sel = m.dst == i
            ex_to[i] = X.exchange_cycles(X.Messages(m.src[sel], m.dst[sel], m.nbytes[sel]), topo, cfg)
    tasks = _tasks(w, cfg, ex, ex_to)
    last = _schedule(tasks)
    fpga = last.end
    phases = _critical(last)
    if res.minibatch_buffer == "tiles":
        floor = card_memory_cycles(w, cfg, part)
        if floor > fpga:
            phases["transfer"] += floor - fpga
            fpga = floor
    hz = cfg.clock_mhz * 1e6
    xfer = (H.transfer_s(H.h2d_bytes(w, cfg), cfg) + H.transfer_s(H.d2h_bytes(w, cfg), cfg)) * hz
    if cfg.overlap_host:
        exposed = max(0.0, xfer - fpga)
    else:
        exposed = xfer
    phases["transfer"] += exposed
    busy = {p: 0.0 for p in PHASES}
    for i in range(n):
        per = {p: 0.0 for p in PHASES}
        for t in tasks:
            if t.resource[0] != "net" and t.resource[1] == i:
                per[t.phase] += t.cycles
        for p in ("critic", "actor", "targets"):
            busy[p] = max(busy[p], per[p])
    busy["interconnect"] = sum(t.cycles for t in tasks if t.resource == ("net",))
    busy["transfer"] = xfer
    pa, la = cfg.array("critic")
    return UpdateResult(n, cfg.interconnect, part.name, cfg.datapath, pa, la, E.engine_macs(cfg, w), fpga,
                        fpga + exposed, phases, busy, ex, xfer, cfg.clock_mhz, res, not over, over[0][0] if over else "")


@dataclass(frozen=True)
class Throughput:
    """End to end, per update period (``update_every_steps`` environment steps)."""

    cpu_update_s: float
    accel_update_s: float
    training_speedup: float  # CPU update / accelerator update (host transfer included)
    cpu_env_steps_per_s: float  # the CPU trainer: steps, then its update
    serial_env_steps_per_s: float  # CPU steps and samples, then the card updates (the trainer's loop)
    overlapped_env_steps_per_s: float  # the CPU steps the next period while the card updates
    serial_speedup: float
    overlapped_speedup: float


def throughput(w: Workload, r: UpdateResult, cpu: H.CpuProfile) -> Throughput:
    u = w.update_every_steps
    env_s = u * cpu.env_step_s
    cpu_period = env_s + cpu.update_s
    serial = env_s + cpu.sample_s + r.update_s
    overlapped = max(env_s + cpu.sample_s, r.update_s)
    return Throughput(cpu.update_s, r.update_s, cpu.update_s / r.update_s, u / cpu_period, u / serial, u / overlapped,
                      cpu_period / serial, cpu_period / overlapped)
