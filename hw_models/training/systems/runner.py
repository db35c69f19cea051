"""Each training system end to end on plain values: a workload's layer costs and the
network's communication models in, table rows out (timing on the workload and network;
convergence on a small task). The ``hw-models train-system`` command and the docs' bench
script call these; docs/training_systems.md describes the columns.

Every ``run_*`` takes a :class:`Setting` (the workload's layers, the all-reduce model of
the baseline algorithm, the device's peak FLOP rate and memory bandwidth, the task to check
convergence on, or ``None``) and returns ``(timing_rows, convergence_rows)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable

from hw_models.training.costs import LayerCost
from hw_models.training.policies import WaitFreeBackprop
from hw_models.training.systems import SYSTEMS
from hw_models.training.systems.profiled import (TIMING_ITERATIONS, ProfiledRun, SlowedComm, profile_conv,
                                                 scaled_layers, timing_row)
from hw_models.training.systems.ps import PushPull
from hw_models.training.timeline import simulate
from noc.base.errors import ConfigError


@dataclass
class Setting:
    """What every system needs: ``layers`` of ``workload`` (a
    :class:`~hw_models.training.workloads.Workload`) for ``batch`` samples per worker,
    ``comm`` (the baseline all-reduce, named ``algorithm``), ``peak_flops`` and
    ``mem_bytes_per_s`` of the device, ``task`` (or ``None``: timing only) with its ``lr``,
    ``target`` and ``max_iterations``; ``ps_comm(servers)`` makes the parameter server's
    communication model on the same network (``None``: not available)."""

    workload: Any
    batch: int
    layers: tuple[LayerCost, ...]
    comm: Any
    algorithm: str
    peak_flops: float
    mem_bytes_per_s: float
    task: Any = None
    lr: float = 0.1
    target: float = 0.95
    max_iterations: int = 1500
    ps_comm: Callable[[tuple[int, ...]], Any] | None = None
    topology: Any = None

    @property
    def model_bytes(self) -> int:
        return sum(x.grad_bytes for x in self.layers)

    @property
    def compute_s(self) -> float:
        return sum(x.fwd_s + x.bwd_s for x in self.layers)

    def sgd_iteration_s(self) -> float:
        return simulate(self.layers, self.comm, WaitFreeBackprop()).iteration_s

    def reference(self):
        from hw_models.training.systems.tasks import sync_sgd  # noqa: PLC0415

        return sync_sgd(self.task, self.lr, target=self.target, max_iterations=self.max_iterations)


def _ratio(a, b):
    return a / b if (a is not None and b not in (None, 0) and not (isinstance(b, float) and math.isnan(b))) else None


def _conv_row(system: str, r, ref_iters, iteration_s: float | None = None, ref_iteration_s: float | None = None,
              **extra) -> dict:
    it_ratio = _ratio(r.iterations_to_target, ref_iters)
    t_ratio = _ratio(iteration_s, ref_iteration_s)
    row = {"system": system, "run": r.label, "target_accuracy": r.target,
           "iterations_to_target": r.iterations_to_target if r.iterations_to_target is not None else "",
           "final_accuracy": round(r.final_accuracy, 6) if r.final_accuracy == r.final_accuracy else "nan",
           "iterations_vs_reference": "" if it_ratio is None else round(it_ratio, 4),
           "iteration_time_vs_reference": "" if t_ratio is None else round(t_ratio, 4),
           "time_to_target_vs_reference": "" if it_ratio is None or t_ratio is None else round(it_ratio * t_ratio, 4)}
    row.update(extra)
    return row


# ---- the synchronous systems on the worker and link profiles -----------------------------------


class _Profiled:
    """A system's configurations under ``profiles`` (:mod:`hw_models.training.systems.profiled`);
    nothing when ``profiles`` is None (the commands pass None for profiles of ones: their rows
    would repeat the nominal ones)."""

    def __init__(self, st: Setting, profiles):
        self.st, self.p = st, profiles
        self.runs: dict = {}
        self.its = min(st.max_iterations, TIMING_ITERATIONS)

    def layers(self, cs: float):
        return scaled_layers(self.st.layers, cs)

    def comm(self, xs: float):
        return SlowedComm(self.st.comm, xs)

    def sgd(self):
        return self.bsp(lambda cs, xs: simulate(self.layers(cs), self.comm(xs), WaitFreeBackprop()).iteration_s)

    def bsp(self, steady):
        return None if self.p is None else (self.p.bsp_key, steady)

    def periods(self, k: int, steady):
        return None if self.p is None else (self.p.period_key(k), steady)

    def workers(self, steady):
        return None if self.p is None else (lambda t: (self.p.workers_at(t), self.p.slowest_link_at(t)), steady)

    def add(self, key, label: str, nominal_s: float, how) -> None:
        if self.p is not None:
            self.runs[key] = (label, nominal_s, ProfiledRun(*how))

    def timing(self, system: str, compare: str, ref_key) -> list[dict]:
        """A row per configuration under the profiles, ``compare`` (``reduction_percent`` or
        ``speedup``) against ``ref_key``'s run under them."""
        if self.p is None:
            return []
        ref = self.runs[ref_key][2].mean_s(self.its)
        rows = []
        for label, nominal_s, run in self.runs.values():
            row = timing_row(system, label, nominal_s, run, self.p, self.its)
            row[compare] = 100 * (1 - row["iteration_s"] / ref) if compare == "reduction_percent" \
                else ref / row["iteration_s"]
            rows.append(row)
        return rows

    def conv(self, system: str, r, ref, key, iteration_s=None, ref_iteration_s=None, ref_key="base", **extra) -> dict:
        """``r``'s convergence row against the reference run ``ref`` (:func:`_conv_row`), with
        its times under the profiles (``key``'s configuration against ``ref_key``'s)."""
        row = _conv_row(system, r, ref.iterations_to_target, iteration_s, ref_iteration_s, **extra)
        if self.p is None:
            return row
        return profile_conv(row, self.runs[key][2], self.runs[ref_key][2], ref.iterations_to_target, self.its, self.p)


# ---- compression -----------------------------------------------------------------------------


def parse_compressors(spec: str):
    """Comma-separated compressors, each one of :data:`~hw_models.training.systems.compression.SPECS`."""
    from hw_models.training.systems.compression import KINDS, SPECS, Compressor  # noqa: PLC0415

    out = []
    for item in (s.strip() for s in str(spec).split(",")):
        if not item:
            continue
        bits = item.lower().split(":")
        kind = bits[0]
        if kind not in KINDS or kind == "none":
            raise ConfigError(f"--compressors {item!r}: unknown compressor (allowed: {SPECS})")
        try:
            if kind in ("topk", "randk") and len(bits) == 2:
                out.append(Compressor(kind, float(bits[1])))
            elif kind == "threshold" and len(bits) in (2, 3):
                out.append(Compressor(kind, float(bits[1]), int(bits[2]) if len(bits) == 3 else 50))
            elif kind in ("onebit", "eightbit") and len(bits) == 1:
                out.append(Compressor(kind))
            else:
                raise ValueError
        except ConfigError as exc:
            raise ConfigError(f"--compressors {item!r}: {exc}") from None
        except ValueError:
            raise ConfigError(f"--compressors {item!r}: malformed (allowed: {SPECS})") from None
    if not out:
        raise ConfigError(f"--compressors {spec!r} names no compressor")
    return out


def run_compression(st: Setting, compressors, fix: str = "none", average_every: int = 10, profiles=None):
    """``profiles``: a :class:`~hw_models.training.systems.profiled.Profiles` (workers and links);
    when any factor differs from 1, a timing row per configuration under them and the
    convergence rows' times under them (:mod:`hw_models.training.systems.profiled`)."""
    from hw_models.training.systems.compression import compressed_timeline, ef_sgd  # noqa: PLC0415

    policy = WaitFreeBackprop()
    base_s = st.sgd_iteration_s()
    timing_label = f"full precision ({st.algorithm} all-reduce)"
    prof = _Profiled(st, profiles)
    prof.add("base", timing_label, base_s, prof.sgd())
    timing = [{"system": "compression", "run": timing_label,
               "iteration_s": base_s, "reduction_percent": 0.0, "wire_bytes_per_worker": st.model_bytes,
               "compression_s": 0.0}]
    times = {}
    for c in compressors:
        fixes = ["none"] + ([fix] if fix != "none" else [])
        for f in fixes:
            t = compressed_timeline(st.layers, st.comm, c, policy, mem_bytes_per_s=st.mem_bytes_per_s, fix=f,
                                    average_every=average_every)
            times[(c.label, f)] = t.iteration_s
            prof.add((c.label, f), t.label, t.iteration_s, prof.bsp(
                lambda cs, xs, c=c, f=f: compressed_timeline(
                    prof.layers(cs), prof.comm(xs), c, policy, mem_bytes_per_s=st.mem_bytes_per_s / cs, fix=f,
                    average_every=average_every).iteration_s))
            timing.append({"system": "compression", "run": t.label, "iteration_s": t.iteration_s,
                           "reduction_percent": 100 * (1 - t.iteration_s / base_s),
                           "wire_bytes_per_worker": t.wire_bytes_per_worker,
                           "compression_s": t.compute_s - st.compute_s})
    conv = []
    if st.task is not None:
        ref = st.reference()
        conv.append(prof.conv("compression", ref, ref, "base", base_s, base_s))
        for c in compressors:
            runs = [(False, "none"), (True, "none")] + ([(True, fix)] if fix != "none" else [])
            for ef, f in runs:
                r = ef_sgd(st.task, c, st.lr, error_feedback=ef, fix=f, average_every=average_every,
                           target=st.target, max_iterations=st.max_iterations)
                conv.append(prof.conv("compression", r, ref, (c.label, f), times[(c.label, f)], base_s,
                                      bytes_per_worker_iteration=round(r.extra["bytes_per_worker_iteration"], 1)))
    return timing + prof.timing("compression", "reduction_percent", "base"), conv


# ---- parameter server --------------------------------------------------------------------------


def _event_profiles(stragglers_spec: str, links_spec: str, n: int, seed: int):
    """The event simulations' workers, links (seeded ``seed + 1``, as DLion's; None: all 1) and
    the rows' words for them."""
    from hw_models.training.hetero import Profile  # noqa: PLC0415

    strag = Profile.parse(stragglers_spec, n, seed=seed)
    lp = Profile.parse(links_spec, n, seed=seed + 1, what="links")
    links = lp if lp.label != "none" else None
    return strag, links, f"stragglers {strag.label}" + (f", links {lp.label}" if links else "")


def _check_one_shard_per_worker(st: Setting, n: int) -> None:
    """The event simulations replay each worker's updates on its own task shard."""
    if st.task is not None and st.task.workers != n:
        raise ConfigError(f"the task has {st.task.workers} workers and the network {n}: one task shard per worker")


def run_ps(st: Setting, servers: tuple[int, ...], modes, stragglers_spec: str, *, eager_options=(False, True),
           seed: int = 0, timing_iterations: int = 100, links_spec: str = "none"):
    """The synchronous layer-by-layer timeline (coupled and eager pull), then the event
    simulation of every worker layer by layer (:mod:`hw_models.training.systems.ps_layers`)
    per mode, replayed on the task. The simulation runs ``timing_iterations`` iterations,
    doubled (up to the task's ``max_iterations``) while a replay has not reached the target.
    ``links_spec``: the nodes' link profile (seeded ``seed + 1``, as DLion's) the simulation's
    pushes and pulls are slowed by."""
    from hw_models.training.systems.ps import ps_convergence  # noqa: PLC0415
    from hw_models.training.systems.ps_layers import simulate_ps_layers  # noqa: PLC0415

    if st.ps_comm is None:
        raise ConfigError("the parameter server needs a network model (ps_comm)")
    pc = st.ps_comm(servers)
    n = pc.num_workers
    base_s = st.sgd_iteration_s()
    timing = [{"system": "ps", "run": f"sync all-reduce ({st.algorithm}, wfbp)", "iteration_s": base_s,
               "reduction_percent": 0.0}]
    for eager in (False, True):
        r = simulate(st.layers, pc, PushPull(eager))
        timing.append({"system": "ps", "run": f"sync PS layer by layer, {len(servers)} server(s), "
                       f"{'eager' if eager else 'coupled'} pull", "iteration_s": r.iteration_s,
                       "reduction_percent": 100 * (1 - r.iteration_s / base_s)})
    push = [pc.reduce_scatter_s(x.grad_bytes) if x.grad_bytes else 0.0 for x in st.layers]
    pull = [pc.all_gather_s(x.grad_bytes) if x.grad_bytes else 0.0 for x in st.layers]
    strag, links, on = _event_profiles(stragglers_spec, links_spec, n, seed)
    _check_one_shard_per_worker(st, n)
    runs, convs = {}, {}
    for mode in modes:
        for eager in (eager_options if mode != "sync" else (False,)):
            cap = st.max_iterations if st.task is not None else timing_iterations
            h = min(timing_iterations, cap)
            while True:
                run = simulate_ps_layers(st.layers, push, pull, n, mode=mode, eager=eager, stragglers=strag,
                                         gradients=n * h, seed=seed, links=links, servers=tuple(servers))
                rs = []
                if st.task is not None:
                    rs = [ps_convergence(st.task, run, st.lr, staleness_aware=aware, target=st.target)
                          for aware in ((False,) if mode == "sync" else (False, True))]
                if h >= cap or all(r.iterations_to_target is not None for r in rs):
                    break
                h = min(2 * h, cap)
            runs[(mode, eager)], convs[(mode, eager)] = run, rs
    sync_key = next((k for k in runs if k[0] == "sync"), None)
    ref_s = runs[sync_key].time_per_iteration_s() if sync_key else None
    for (mode, eager), run in runs.items():
        t = run.time_per_iteration_s()
        timing.append({"system": "ps", "run": f"PS {mode}{', eager pull' if eager else ''}, {on}", "iteration_s": t, "reduction_percent": 100 * (1 - t / ref_s) if ref_s else "",
                       "mean_staleness": round(run.mean_staleness(), 3), "max_staleness": run.max_staleness()})
    conv = []
    ref = None
    for key, rs in convs.items():
        for r in rs:
            ref = ref or r
            ref_t = ref.extra["time_to_target_s"]
            t_ratio = _ratio(r.extra["time_to_target_s"], ref_t)
            row = _conv_row("ps", r, ref.iterations_to_target, r.extra["time_per_iteration_s"],
                            ref.extra["time_per_iteration_s"], time_to_target_s=r.extra["time_to_target_s"],
                            mean_staleness=round(r.extra["mean_staleness"], 3))
            row["time_to_target_vs_reference"] = "" if t_ratio is None else round(t_ratio, 4)
            conv.append(row)
    return timing, conv


# ---- SSD-SGD --------------------------------------------------------------------------------


def run_ssd(st: Setting, delays, profiles=None):
    """``profiles``: as :func:`run_compression`'s; SSD-SGD's steps wait for the period's
    slowest worker (:mod:`hw_models.training.systems.profiled`)."""
    from hw_models.training.systems.ssd import ssd_iteration_s, ssd_sgd, ssd_timeline  # noqa: PLC0415

    base_s = st.sgd_iteration_s()
    prof = _Profiled(st, profiles)
    prof.add("base", f"SSGD ({st.algorithm}, wfbp)", base_s, prof.sgd())
    ar = st.comm.allreduce_s(st.model_bytes)
    upd = 3 * st.model_bytes / st.mem_bytes_per_s
    timing = [{"system": "ssd", "run": f"SSGD ({st.algorithm}, wfbp)", "iteration_s": base_s, "speedup": 1.0}]
    times = {}
    for k in delays:
        t, _ = ssd_timeline(st.layers, st.comm, k, st.mem_bytes_per_s)
        times[k] = t
        prof.add(k, f"SSD-SGD k={k}", t, prof.periods(k, lambda cs, xs, k=k: ssd_timeline(
            prof.layers(cs), prof.comm(xs), k, st.mem_bytes_per_s / cs)[0]))
        timing.append({"system": "ssd", "run": f"SSD-SGD k={k}", "iteration_s": t, "speedup": base_s / t,
                       "closed_form_s": ssd_iteration_s(st.compute_s, upd, ar, k), "allreduce_s": ar,
                       "local_update_s": upd})
    conv = []
    if st.task is not None:
        ref = st.reference()
        conv.append(prof.conv("ssd", ref, ref, "base", base_s, base_s))
        for k in delays:
            r = ssd_sgd(st.task, st.lr, k, target=st.target, max_iterations=st.max_iterations)
            conv.append(prof.conv("ssd", r, ref, k, times[k], base_s))
    return timing + prof.timing("ssd", "speedup", "base"), conv


# ---- EASGD -------------------------------------------------------------------------------------


def run_easgd(st: Setting, variants, alpha: float | None, tau: int, stragglers_spec: str = "none", *, seed: int = 0,
              timing_iterations: int = 200, links_spec: str = "none"):
    """Timing on the iteration timeline (all workers alike) and the closed form; with
    stragglers or slow links (``links_spec``, seeded ``seed + 1`` as DLion's) also the event
    simulation of every worker's exchanges (:mod:`hw_models.training.systems.hogwild`), whose
    updates the convergence rows then replay in event order."""
    from hw_models.training.systems.easgd import easgd, easgd_round_s, easgd_timeline  # noqa: PLC0415
    from hw_models.training.systems.hogwild import replay_easgd, simulate_easgd  # noqa: PLC0415

    if st.ps_comm is None:
        raise ConfigError("EASGD's master needs a network model (ps_comm)")
    n = st.comm.num_workers
    master = st.ps_comm((0,))
    m = st.model_bytes
    kw = dict(push_all_s=master.reduce_scatter_s(m), pull_all_s=master.all_gather_s(m),
              allreduce_s=st.comm.allreduce_s(m), num_workers=n, mem_bytes_per_s=st.mem_bytes_per_s)
    closed = {v: easgd_round_s(v, tau, st.compute_s, m, **kw) / tau for v in variants}
    per_step = {v: easgd_timeline(v, tau, st.layers, st.comm, master.reduce_scatter_s, master.all_gather_s,
                                  num_workers=n, mem_bytes_per_s=st.mem_bytes_per_s)[0] for v in variants}
    ref_v = "async" if "async" in per_step else variants[0]
    timing = [{"system": "easgd", "run": f"{v} EASGD tau={tau}", "iteration_s": per_step[v],
               f"speedup_vs_{ref_v}": per_step[ref_v] / per_step[v], "closed_form_s": closed[v]} for v in variants]
    strag, links, on = _event_profiles(stragglers_spec, links_spec, n, seed)
    runs = {}
    if strag.label != "none" or links:
        _check_one_shard_per_worker(st, n)
        its = st.max_iterations if st.task is not None else timing_iterations
        ev = dict(exchange_s=(kw["push_all_s"] + kw["pull_all_s"]) / n, update_s=3 * m / st.mem_bytes_per_s,
                  allreduce_s=kw["allreduce_s"], stragglers=strag, iterations=its, seed=seed, links=links)
        runs = {v: simulate_easgd(v, tau, n, st.compute_s, **ev) for v in variants}
        ref_t = runs[ref_v].time_per_iteration_s()
        for v, run in runs.items():
            t = run.time_per_iteration_s()
            timing.append({"system": "easgd", "run": f"{v} EASGD tau={tau}, {on} (event simulation)", "iteration_s": t,
                           f"speedup_vs_{ref_v}": ref_t / t,
                           "mean_staleness": round(run.mean_staleness(), 3), "max_staleness": run.max_staleness()})
    conv = []
    if st.task is not None:
        a = alpha if alpha is not None else 0.9 / st.task.workers
        ref = st.reference()
        conv.append(_conv_row("easgd", ref, ref.iterations_to_target))
        for v in variants:
            r = easgd(st.task, v, st.lr, alpha=a, tau=tau, target=st.target, max_iterations=st.max_iterations)
            conv.append(_conv_row("easgd", r, ref.iterations_to_target, per_step[v], per_step[ref_v]))
        for v, run in runs.items():
            r = replay_easgd(st.task, run, st.lr, alpha=a, target=st.target)
            conv.append(_conv_row("easgd", r, ref.iterations_to_target, run.time_per_iteration_s(),
                                  runs[ref_v].time_per_iteration_s(), mean_staleness=round(run.mean_staleness(), 3)))
    return timing, conv


# ---- K-FAC -------------------------------------------------------------------------------------


def run_kfac(st: Setting, inverse_efficiency: float, kfac_lr: float = 0.1, damping: float = 1e-2, profiles=None):
    """``profiles``: as :func:`run_compression`'s; each K-FAC inversion at its owner's speed
    (:mod:`hw_models.training.systems.profiled`)."""
    from hw_models.training.systems.kfac import PLACEMENTS, SCHEMES, kfac_sgd, kfac_timeline  # noqa: PLC0415

    base = None
    timing = []
    sgd_s = st.sgd_iteration_s()
    prof = _Profiled(st, profiles)
    for scheme in SCHEMES:
        for pl in PLACEMENTS:
            t = kfac_timeline(st.workload, st.batch, st.layers, st.comm, st.peak_flops, scheme=scheme, placement=pl,
                              inverse_efficiency=inverse_efficiency)
            base = base or t.iteration_s
            name = {("dkfac", "round_robin"): "D-KFAC ", ("pipelined", "balanced"): "SPD-KFAC "}.get((scheme, pl), "")
            prof.add((scheme, pl), f"{name}({scheme}, {pl})", t.iteration_s, prof.workers(
                lambda f, xs, scheme=scheme, pl=pl: kfac_timeline(
                    st.workload, st.batch, prof.layers(max(f)), prof.comm(xs), st.peak_flops, scheme=scheme,
                    placement=pl, inverse_efficiency=inverse_efficiency, worker_factors=f).iteration_s))
            timing.append({"system": "kfac", "run": f"{name}({scheme}, {pl})", "iteration_s": t.iteration_s,
                           "reduction_percent": 100 * (1 - t.iteration_s / base), "inverse_s": t.inverse_s,
                           "inverse_gather_s": t.inverse_gather_s, "precondition_s": t.precondition_s,
                           "exposed_comm_s": t.exposed_comm_s, "factor_bytes": t.factor_bytes,
                           "factors": t.num_factors})
    timing.append({"system": "kfac", "run": f"SGD ({st.algorithm}, wfbp)", "iteration_s": sgd_s,
                   "reduction_percent": 100 * (1 - sgd_s / base)})
    prof.add("sgd", f"SGD ({st.algorithm}, wfbp)", sgd_s, prof.sgd())
    conv = []
    if st.task is not None:
        ref = st.reference()
        conv.append(prof.conv("kfac", ref, ref, "sgd", ref_key="sgd"))
        r = kfac_sgd(st.task, kfac_lr, damping=damping, target=st.target, max_iterations=st.max_iterations)
        conv.append(prof.conv("kfac", r, ref, (SCHEMES[-1], PLACEMENTS[-1]), timing[-2]["iteration_s"], sgd_s,
                              ref_key="sgd"))
    return timing + prof.timing("kfac", "reduction_percent", (SCHEMES[0], PLACEMENTS[0])), conv


# ---- DLion -------------------------------------------------------------------------------------

REPORTED_DLION = "up to 4.2x faster than the baselines (heterogeneous GPU cluster), better accuracy"


def run_dlion(st: Setting, techniques, workers_spec: str, links_spec: str, transfer_every: int = 20, *,
              seed: int = 0, baselines: tuple[str, ...] = ("ps", "easgd"), policy: str = "wfbp"):
    """DLion's technique sets (:mod:`hw_models.training.systems.dlion`) and the baselines on the
    same workers (``workers_spec``) and links (``links_spec``): synchronous all-reduce (its
    ring as slow as the slowest link), the asynchronous one-server parameter server (whole
    iterations) and asynchronous EASGD (their event simulations, the server/master on node 0,
    worker ``i``'s push, pull or exchange over its link to it, ``link_factor(i, 0)`` times
    slower). DLion and the all-reduce baseline are timed on the iteration timeline with
    ``policy``. Timing rows: seconds per round (the mean over the run's rounds, and for the
    round-timed runs over the first ``common_rounds``, which every one of them ran: the
    profiles drift, so means over different rounds differ) and bytes per round; convergence
    rows: time to the target and final accuracy."""
    from hw_models.training.hetero import Profile  # noqa: PLC0415
    from hw_models.training.systems.dlion import Net, allreduce_baseline, dlion  # noqa: PLC0415
    from hw_models.training.systems.hogwild import replay_easgd, simulate_easgd  # noqa: PLC0415
    from hw_models.training.systems.ps import ps_convergence, simulate_ps  # noqa: PLC0415

    if st.task is None:
        raise ConfigError("--task none: dlion needs a task (its rounds follow the workers' gradients); "
                          "choose logreg or mlp")
    if st.ps_comm is None:
        raise ConfigError("dlion's links need a network model (ps_comm)")
    n = st.comm.num_workers
    _check_one_shard_per_worker(st, n)
    m = st.model_bytes
    master = st.ps_comm((0,))
    net = Net(st.compute_s, st.comm.all_gather_s(n * m), st.comm.allreduce_s(m), m, tuple(st.layers),
              lambda b: st.comm.all_gather_s(n * b), st.comm, policy)
    wp = Profile.parse(workers_spec, n, seed=seed, what="stragglers")
    lp = Profile.parse(links_spec, n, seed=seed + 1, what="links")
    kw = dict(target=st.target, max_iterations=st.max_iterations, seed=seed)
    results = [("allreduce", allreduce_baseline(st.task, net, wp, lp, st.lr, **kw))]
    for techs in techniques:
        results.append(("+".join(techs) or "none", dlion(st.task, techs, net, wp, lp, st.lr,
                                                         transfer_every=transfer_every, **kw)))
    if "ps" in baselines:
        run = simulate_ps(n, st.compute_s, master.reduce_scatter_s(m), master.all_gather_s(m), mode="async",
                          stragglers=wp, gradients=n * st.max_iterations, seed=seed, links=lp)
        r = ps_convergence(st.task, run, st.lr, target=st.target, label="PS async, 1 server")
        results.append(("ps", _as_round(r, r.extra["time_to_target_s"], run.time_per_iteration_s(), 2 * n * m)))
    if "easgd" in baselines:
        ev = dict(exchange_s=(master.reduce_scatter_s(m) + master.all_gather_s(m)) / n,
                  update_s=3 * m / st.mem_bytes_per_s, allreduce_s=net.allreduce_s, stragglers=wp,
                  iterations=st.max_iterations, seed=seed, links=lp)
        run = simulate_easgd("async", 1, n, st.compute_s, **ev)
        r = replay_easgd(st.task, run, st.lr, alpha=0.9 / n, target=st.target)
        per = run.time_per_iteration_s()
        tt = r.iterations_to_target * per if r.iterations_to_target else math.nan
        results.append(("easgd", _as_round(r, tt, per, 2 * n * m)))
    base = results[0][1]
    # the profiles change from round to round, so runs of different lengths average different rounds:
    # each round-timed run's mean over the rounds every one of them ran, too
    common = min(len(r.extra["round_s"]) for _, r in results if "round_s" in r.extra)
    timing, conv = [], []
    for key, r in results:
        per = r.extra.get("round_s")
        timing.append({"system": "dlion", "run": r.label, "techniques": key, "iteration_s": r.extra["mean_round_s"],
                       "common_rounds": common if per else "",
                       "common_round_s": math.fsum(per[:common]) / common if per else "",
                       "bytes_per_round": round(r.extra["bytes_per_round"], 1), "stragglers": wp.label,
                       "links": lp.label})
        row = _conv_row("dlion", r, base.iterations_to_target, r.extra["mean_round_s"], base.extra["mean_round_s"],
                        time_to_target_s=r.extra["time_to_target_s"])
        sp = _ratio(base.extra["time_to_target_s"], r.extra["time_to_target_s"])
        row["time_to_target_vs_reference"] = "" if sp is None or sp != sp else round(1 / sp, 4)
        row["speedup_vs_allreduce"] = "" if sp is None or sp != sp else round(sp, 4)
        row["reported"] = REPORTED_DLION if key == TECHNIQUE_ALL else ""
        conv.append(row)
    return timing, conv


TECHNIQUE_ALL = "batching+priority+transfer"


def _as_round(r, time_to_target_s: float, mean_round_s: float, bytes_per_round: float):
    """A baseline's convergence result with the extras DLion's rows read."""
    return replace(r, extra={"time_to_target_s": time_to_target_s, "mean_round_s": mean_round_s,
                             "bytes_per_round": bytes_per_round})


# ---- DCT's model-parallel half ---------------------------------------------------------------

REPORTED_DCT = ">= 100x less DP traffic, 20x less MP traffic, 37 % shorter training"


def run_dct_mp(st: Setting, keep: float, profiles=None):
    """DCT's boundary compression (:mod:`hw_models.training.systems.dct_mp`) on NCF split at
    its embedding/MLP boundary: the hybrid DP x MP iteration on the timeline (wfbp) with the
    boundary dense and kept to ``keep``, next to the compression table's data-parallel
    reference (embeddings all-reduced whole); per worker per iteration the data-parallel
    gradient bytes and the boundary's bytes (forward + backward, the share leaving the
    worker); convergence on the mlp task. ``profiles``: as :func:`run_compression`'s, a row
    per hybrid iteration on them (the boundary all-to-all at the slowest link)."""
    from hw_models.training.systems.dct_mp import (alltoall_s, boundary_bytes, boundary_width,  # noqa: PLC0415
                                                   dct_mp_sgd, hybrid_iteration, mp_traffic)

    n = st.comm.num_workers
    width = boundary_width()
    kinds = [x.kind for x in st.workload.layers]
    t = mp_traffic(width, st.batch, n, keep)
    base_s = st.sgd_iteration_s()
    dp_bytes = sum(x.grad_bytes for x, k in zip(st.layers, kinds) if k != "embedding")
    timing = []
    dense_s = None
    prof = _Profiled(st, profiles)
    prof.add("base", "data parallel", base_s, prof.sgd())
    for kp in (None, keep):
        r = hybrid_iteration(st.layers, kinds, st.comm, width, st.batch, kp)
        prof.add(kp, "hybrid DP x MP (embeddings sharded), dense boundary" if kp is None
                 else f"DCT model-parallel boundary keep={keep:g}", r.iteration_s,
                 prof.bsp(lambda cs, xs, kp=kp: hybrid_iteration(prof.layers(cs), kinds, prof.comm(xs), width,
                                                                 st.batch, kp).iteration_s))
        dense_s = dense_s or r.iteration_s
        row = {"system": "compression", "iteration_s": r.iteration_s,
               "reduction_percent": 100 * (1 - r.iteration_s / base_s), "wire_bytes_per_worker": dp_bytes,
               "mp_bytes_per_worker": t["dense_bytes"] if kp is None else t["compressed_bytes"],
               "boundary_s": 2 * alltoall_s(st.comm, boundary_bytes(width, st.batch, kp))}
        if kp is None:
            row["run"] = "hybrid DP x MP (embeddings sharded), dense boundary"
        else:
            row.update(run=f"DCT model-parallel boundary keep={keep:g}", mp_dense_bytes_per_worker=t["dense_bytes"],
                       mp_reduction=round(t["reduction"], 4),
                       mp_time_reduction_percent=100 * (1 - r.iteration_s / dense_s), reported=REPORTED_DCT)
        timing.append(row)
    conv = []
    if st.task is not None and st.task.model == "mlp":
        ref = st.reference()
        r = dct_mp_sgd(st.task, keep, st.lr, target=st.target, max_iterations=st.max_iterations)
        conv.append(_conv_row("compression", r, ref.iterations_to_target))
    extra = [r for r in prof.timing("compression", "reduction_percent", "base") if not r["run"].startswith("data")]
    return timing + extra, conv


__all__ = ["REPORTED_DCT", "REPORTED_DLION", "run_dct_mp", "SYSTEMS", "Setting", "parse_compressors", "run_compression", "run_dlion", "run_easgd",
           "run_kfac", "run_ps", "run_ssd"]
