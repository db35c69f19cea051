"""What ``hw-models train-system`` and the ``train_system`` sweep kind share: the checked
setting of a run (network resolved as ``hw-models train`` resolves it, the workload's layer
costs, the task), each system's options, and the run itself
(:mod:`hw_models.training.systems.runner`). Errors are :class:`noc.base.errors.HwModelsError`
naming the command's flags (``--servers``); :func:`flags_to_keys` rewrites them for a sweep
file's keys."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Callable, NamedTuple

from hw_models.training.systems import SYSTEMS
from noc.base.errors import ConfigError, HwModelsError

DEFAULT_COMPRESSORS = "topk:0.01,randk:0.01,threshold:0.01:50,onebit,eightbit"
DEFAULT_DLION_WORKERS = "slow:2:3+walk:0.1"  # two slow workers, every worker's speed drifting
DEFAULT_DLION_LINKS = "slow:4:8+walk:0.1"  # four nodes on slow links, every link drifting
# options that belong to some systems (flag -> the systems)
OWN = {"--compressors": ("compression",), "--fix": ("compression",), "--average-every": ("compression",),
       "--servers": ("ps",), "--placement": ("ps",), "--modes": ("ps",), "--stragglers": tuple(SYSTEMS),
       "--delays": ("ssd",), "--variants": ("easgd",), "--alpha": ("easgd",), "--tau": ("easgd",),
       "--inverse-efficiency": ("kfac",), "--links": tuple(SYSTEMS), "--techniques": ("dlion",),
       "--transfer-every": ("dlion",), "--mp-keep": ("compression",)}
OPTIONS = tuple(flag[2:].replace("-", "_") for flag in OWN)  # the systems' options, as system_params takes them


def not_for(flag: str, system: str) -> str | None:
    """Why ``flag`` does not apply to ``system`` (None: it does)."""
    owners = OWN[flag]
    if system in owners:
        return None
    return f"applies to the {' and '.join(owners)} system{'s' if len(owners) > 1 else ''}, not {system}"


def flags_to_keys(message: str) -> str:
    """``--inverse-efficiency 0.0: ...`` as ``key 'inverse_efficiency' = 0.0: ...`` (a flag
    elsewhere in the message as ``key 'name'``)."""
    message = re.sub(r"^--([a-z][a-z-]*) (?=\S)", lambda m: f"key {m.group(1).replace('-', '_')!r} = ", message)
    return re.sub(r"--([a-z][a-z-]*)", lambda m: f"key {m.group(1).replace('-', '_')!r}", message)


def resolve_setting(sysname, workload, batch, device, topology, nis, algorithm, config, preset, task, lr, target,
                    max_iterations, seed, data: dict | None = None):
    """(the :class:`Setting`, its one-line description, the settings that name its output
    files); ``data``: an experiment config's data in place of the file ``config``."""
    from hw_models.config import experiment_data
    from hw_models.experiment import config_with_flags, resolve_experiment
    from hw_models.flags import flag_overlay
    from hw_models.config import check_config_file
    from hw_models.training import endtoend as e2e
    from hw_models.training.comm import NicComm
    from hw_models.training.compute import Roofline, get_device
    from hw_models.training.compute import MULTITREE_NODE_ROOFLINE
    from hw_models.training.systems.ps import ps_schedule
    from hw_models.training.systems.runner import Setting
    from hw_models.training.systems.tasks import DEFAULT_LR, DEFAULT_TARGET, MODELS, Task
    from nic.collectives import algorithm_name

    check_config_file(config)
    from hw_models.estimate import MAX_BATCH_SAMPLES, MAX_SYSTEM_ITERATIONS

    if not 1 <= batch <= MAX_BATCH_SAMPLES:
        raise HwModelsError(f"--batch {batch}: must be an integer in 1..{MAX_BATCH_SAMPLES:,} (samples per worker)")
    if task not in MODELS + ("none",):
        raise HwModelsError(f"--task {task!r}: choose one of {', '.join(MODELS + ('none',))}")
    if not 1 <= max_iterations <= MAX_SYSTEM_ITERATIONS:
        raise HwModelsError(f"--max-iterations {max_iterations}: must be an integer in 1..{MAX_SYSTEM_ITERATIONS:,} "
                            "(the digits task reaches its targets in tens to hundreds of iterations)")
    if not 0 <= seed < 2 ** 32:
        raise HwModelsError(f"--seed {seed}: must be an integer in [0, 2**32 - 1]")
    if lr is not None and not (0 < lr < 100):
        raise HwModelsError(f"--lr {lr}: must be a number in (0, 100)")
    if target is not None and not (0 < target <= 1):
        raise HwModelsError(f"--target {target}: must be an accuracy in (0, 1]")
    try:
        dev = get_device(device)
    except ConfigError as exc:
        raise HwModelsError(f"--device: {exc}") from None
    works = e2e.resolve_workloads(workload, "--workload")
    if len(works) != 1:
        raise HwModelsError(f"--workload {workload!r}: give one workload")
    alg = None if algorithm is None else algorithm_name(algorithm)
    data, source = (data, "experiment") if data is not None else experiment_data(config, preset)
    _, _, overrides, flags, drop = flag_overlay(topology=topology, nis=nis)  # as hw-models train puts them
    if alg is not None:
        flags = {"allreduce.algorithms": "--algorithm", **flags}
    cfg = config_with_flags(data, source, overrides, flags, drop)
    if alg is None:  # a flag left out never overrides the config: its first all-reduce (ring by default)
        alg = algorithm_name(cfg.allreduce.algorithms[0])
    design = cfg.nic.design
    exp = resolve_experiment(cfg, source, flags=flags, designs=[design], algorithms=[alg])
    nic = exp.nics[design]
    comm = NicComm(exp.topology, exp.schedules[alg], nic, exp.router, seed=int(cfg.run.seed), algorithm=alg)
    layers = e2e.workload_costs(works, batch, dev)[works[0].name]
    mem = dev.mem_bytes_per_s if isinstance(dev, Roofline) else MULTITREE_NODE_ROOFLINE.mem_bytes_per_s
    n = int(exp.topology.num_nodes)
    tsk = None
    if task != "none":
        tsk = Task(task, workers=n, batch=16, seed=seed)
    cache: dict = {}

    def ps_comm(servers):
        if servers not in cache:
            cache[servers] = NicComm(exp.topology, ps_schedule(exp.topology, servers), nic, exp.router,
                                     seed=int(cfg.run.seed))
        return cache[servers]

    st = Setting(works[0], batch, layers, comm, alg, dev.peak_flops, mem, tsk,
                 lr if lr is not None else DEFAULT_LR.get(task, 0.1),
                 target if target is not None else DEFAULT_TARGET.get(task, 0.95), max_iterations, ps_comm,
                 exp.topology)
    desc = (f"{works[0].name} (batch {batch} on {device}) over {exp.topology.name} ({n} workers, {design} NIC, "
            f"message level), baseline all-reduce {alg}")
    settings = {"system": sysname, "topology": exp.topology.name, "workload": works[0].name, "batch": batch,
                "device": device, "algorithm": alg, "config": source, "task": task, "lr": st.lr,
                "target": st.target, "max_iterations": max_iterations, "seed": seed,
                "costs": [[x.name, x.fwd_s, x.bwd_s, x.grad_bytes] for x in layers],
                "nic": nic.key_fields(), "router": exp.router.key_fields() if exp.router is not None else None}
    return st, desc, settings


def _given(flag: str, value: str | None, default: str) -> str:
    """``value`` when the flag was given (an empty or blank one is an error, never the
    default), else ``default``."""
    if value is None:
        return default
    if not value.strip():
        raise HwModelsError(f"{flag} {value!r}: empty; give a value or leave the flag out for the default {default!r}")
    return value


def _profiles(stragglers, links, n: int) -> dict:
    """The synchronous systems' ``--stragglers`` and ``--links`` (default none): the given ones
    whose factors are not all 1 (a profile of ones is the default's run)."""
    from hw_models.training.hetero import Profile

    out = {}
    for key, flag, what, value in (("stragglers", "--stragglers", "stragglers", stragglers),
                                   ("links", "--links", "links", links)):
        text = _stragglers(_given(flag, value, "none"), n, flag, what)
        if Profile.parse(text, n, what=what).label != "none":
            out[key] = text
    return out


def system_params(sysname, n, *values, st=None) -> dict:
    """``sysname``'s options checked for ``n`` workers: ``values`` are :data:`OPTIONS` in order
    (None: not given; the other systems' options are ignored), ``st`` the :class:`Setting` when
    resolved. The settings that name its run, and ``objects``: the arguments of its run."""
    return _code(sysname).params(SimpleNamespace(**dict(zip(OPTIONS, values, strict=True))), n, st)


def convergence_runs(sysname: str, params: dict, task: str) -> int:
    """How many convergence runs on the task (each up to ``--max-iterations``) ``sysname``
    makes with ``params`` (:func:`system_params`); 0 with ``--task none``."""
    return 0 if task == "none" else _code(sysname).runs(params, task)


def profiled_configs(sysname: str, params: dict, n: int) -> tuple[int, int]:
    """``(bulk-synchronous, SSD-SGD period)`` configurations ``sysname`` with ``params``
    (:func:`system_params`) times iteration by iteration on a profile that changes every
    iteration (a ``walk`` or ``lognormal`` part: one timeline per iteration); ``(0, 0)`` when
    its profiles are constant or scheduled (a timeline per distinct set of factors: few)."""
    from hw_models.training.hetero import Profile

    code = _code(sysname)
    if code.profiled is None:
        return 0, 0
    drift = [Profile.parse(params[k], n) for k in ("stragglers", "links") if k in params]
    return code.profiled(params) if any(p.walk or p.sigma for p in drift) else (0, 0)


def run_system(sysname, st, obj, seed):
    """``sysname``'s ``(timing_rows, convergence_rows)`` on ``st`` with ``obj`` (the
    ``objects`` of :func:`system_params`)."""
    return _code(sysname).run(st, seed, *obj)


def _stragglers(text: str, n: int, flag: str = "--stragglers", what: str = "stragglers") -> str:
    """``--stragglers`` (or ``--links``) checked for ``n`` workers."""
    from hw_models.training.hetero import Profile

    try:
        Profile.parse(text, n, what=what)
    except ConfigError as exc:
        raise HwModelsError(f"{flag}: {exc}") from None
    return text


def _run_profiles(st, prof: dict, seed: int):
    """The :class:`~hw_models.training.systems.profiled.Profiles` of ``prof`` (None: none given)."""
    from hw_models.training.systems.profiled import Profiles

    if not prof:
        return None
    return Profiles(prof.get("stragglers", "none"), prof.get("links", "none"), st.comm.num_workers, seed)


# ---- each system's options, runs and runner -----------------------------------------------------


def _compression(o, n, st) -> dict:
    from hw_models.training.systems.compression import FIXES
    from hw_models.training.systems.runner import parse_compressors

    comps = parse_compressors(_given("--compressors", o.compressors, DEFAULT_COMPRESSORS))
    f = _given("--fix", o.fix, "none").strip().lower()
    if f not in FIXES:
        raise HwModelsError(f"--fix {o.fix!r}: choose one of {', '.join(FIXES)}")
    avg = 10 if o.average_every is None else o.average_every
    if avg < 1:
        raise HwModelsError(f"--average-every {avg}: must be an integer >= 1")
    keep = o.mp_keep
    if keep is not None and not 0 < keep <= 1:
        raise HwModelsError(f"--mp-keep {keep}: must be a share in (0, 1] (of the boundary's values)")
    if keep is not None and st is not None and st.workload.name != "ncf":
        raise HwModelsError(f"--mp-keep: workload {st.workload.name!r} has no embedding/MLP model-parallel "
                            "boundary (use -w ncf)")
    prof = _profiles(o.stragglers, o.links, n)
    return {"compressors": [c.label for c in comps], "fix": f, "average_every": avg,
            **({"mp_keep": keep} if keep is not None else {}), **prof, "objects": (comps, f, avg, keep, prof)}


def _run_compression(st, seed, comps, f, avg, keep, prof):
    timing, conv = _runner().run_compression(st, comps, f, avg, profiles=_run_profiles(st, prof, seed))
    if keep is not None:
        t2, c2 = _runner().run_dct_mp(st, keep, profiles=_run_profiles(st, prof, seed))
        timing, conv = timing + t2, conv + c2
    return timing, conv


def _ps(o, n, st) -> dict:
    from hw_models.training.systems.ps import MODES, parse_mode, server_nodes

    s = 4 if o.servers is None else o.servers
    try:
        nodes = server_nodes(_given("--placement", o.placement, "spread"), n, s)
    except ConfigError as exc:
        raise HwModelsError(f"{'--servers' if 'servers =' in str(exc) else '--placement'}: {exc}") from None
    mlist = [x.strip() for x in _given("--modes", o.modes, "sync,async,ssp:2").split(",") if x.strip()]
    if not mlist:
        raise HwModelsError(f"--modes {o.modes!r} names no mode (allowed: {', '.join(MODES)})")
    try:
        for m in mlist:
            parse_mode(m)
    except ConfigError as exc:
        raise HwModelsError(f"--modes: {exc}") from None
    strag = _stragglers(o.stragglers if o.stragglers is not None else "slow:2:3", n)
    lk = _profiles(None, o.links, n)  # {"links": ...} only for links not all 1: older points keep their keys
    return {"servers": list(nodes), "modes": mlist, "stragglers": strag, **lk,
            "objects": (nodes, mlist, strag, lk.get("links", "none"))}


def _ssd(o, n, st) -> dict:
    from hw_models.flags import parse_int_list
    from hw_models.training.systems.ssd import MAX_DELAY

    ks = parse_int_list(_given("--delays", o.delays, "1,2,4,8"), "--delays", 1, MAX_DELAY)
    prof = _profiles(o.stragglers, o.links, n)
    return {"delays": ks, **prof, "objects": (ks, prof)}


def _easgd(o, n, st) -> dict:
    from hw_models.training.systems.easgd import VARIANTS

    vs = [v.strip().lower() for v in _given("--variants", o.variants, ",".join(VARIANTS)).split(",") if v.strip()]
    bad = [v for v in vs if v not in VARIANTS]
    if bad or not vs:
        raise HwModelsError(f"--variants {o.variants!r}: allowed {', '.join(VARIANTS)}")
    t = 1 if o.tau is None else o.tau
    if t < 1:
        raise HwModelsError(f"--tau {t}: must be an integer >= 1")
    if o.alpha is not None and not 0 < o.alpha < 1:
        raise HwModelsError(f"--alpha {o.alpha}: the elastic moving rate must be in (0, 1)")
    strag = _stragglers("none" if o.stragglers is None else o.stragglers, n)
    lk = _profiles(None, o.links, n)
    return {"variants": vs, "alpha": o.alpha, "tau": t, "stragglers": strag, **lk,
            "objects": (vs, o.alpha, t, strag, lk.get("links", "none"))}


def _kfac(o, n, st) -> dict:
    eff = 0.05 if o.inverse_efficiency is None else o.inverse_efficiency
    if not 0 < eff <= 1:
        raise HwModelsError(f"--inverse-efficiency {eff}: must be in (0, 1]")
    prof = _profiles(o.stragglers, o.links, n)
    return {"inverse_efficiency": eff, **prof, "objects": (eff, prof)}


def _dlion(o, n, st) -> dict:
    from hw_models.training.systems.dlion import parse_techniques

    try:
        techs = parse_techniques(_given("--techniques", o.techniques, "all"))
    except ConfigError as exc:
        raise HwModelsError(f"--techniques: {exc}") from None
    every = 20 if o.transfer_every is None else o.transfer_every
    if every < 1:
        raise HwModelsError(f"--transfer-every {every}: must be an integer >= 1 (rounds between transfers)")
    strag = _stragglers(_given("--stragglers", o.stragglers, DEFAULT_DLION_WORKERS), n)
    lk = _stragglers(_given("--links", o.links, DEFAULT_DLION_LINKS), n, "--links", "links")
    return {"techniques": ["+".join(t) or "none" for t in techs], "stragglers": strag, "links": lk,
            "transfer_every": every, "objects": (techs, strag, lk, every)}


class Code(NamedTuple):
    """A system's code here: ``params(options, n, st)`` (:func:`system_params`); ``runs(params,
    task)`` its convergence runs on a task; ``run(st, seed, *objects)`` its rows; ``profiled(params)``
    its configurations timed iteration by iteration on drifting profiles (None: it times none so)."""

    params: Callable
    runs: Callable
    run: Callable
    profiled: Callable | None = None


CODE = {
    # the reference, each compressor without and with error feedback (and the fix); DCT's mlp runs
    "compression": Code(_compression, lambda p, task: 1 + len(p["compressors"]) * (2 + (p["fix"] != "none"))
                        + (2 if "mp_keep" in p and task == "mlp" else 0), _run_compression,
                        # synchronous SGD, each compressor (and with the fix); DCT's three
                        lambda p: (1 + len(p["compressors"]) * (1 + (p["fix"] != "none"))
                                   + (3 if "mp_keep" in p else 0), 0)),
    # a replay per mode; asynchronous ones coupled and eager, each plain and staleness-aware
    "ps": Code(_ps, lambda p, task: sum(1 if m.strip().lower() == "sync" else 4 for m in p["modes"]),
               lambda st, seed, nodes, ml, strag, lk: _runner().run_ps(st, nodes, ml, strag, seed=seed, links_spec=lk)),
    "ssd": Code(_ssd, lambda p, task: 1 + len(p["delays"]),
                lambda st, seed, ks, prof: _runner().run_ssd(st, ks, profiles=_run_profiles(st, prof, seed)),
                lambda p: (1, len(p["delays"]))),
    # the event simulation's replays with stragglers or slow links
    "easgd": Code(_easgd, lambda p, task: 1 + len(p["variants"]) * (
        2 if p["stragglers"].strip().lower() != "none" or "links" in p else 1),
        lambda st, seed, vs, a, t, strag, lk: _runner().run_easgd(st, vs, a, t, strag, seed=seed, links_spec=lk)),
    # SGD and K-FAC; profiled: two schemes x two placements, and SGD
    "kfac": Code(_kfac, lambda p, task: 2,
                 lambda st, seed, eff, prof: _runner().run_kfac(st, eff, profiles=_run_profiles(st, prof, seed)),
                 lambda p: (5, 0)),
    # the all-reduce baseline, each technique set, the PS and EASGD baselines
    "dlion": Code(_dlion, lambda p, task: 3 + len(p["techniques"]),
                  lambda st, seed, techs, strag, lk, every: _runner().run_dlion(st, techs, strag, lk, every,
                                                                                seed=seed)),
}
"""Each system's :class:`Code`, by its name in :data:`hw_models.training.systems.SYSTEMS`."""


def _runner():
    from hw_models.training.systems import runner  # noqa: PLC0415 (heavy: not at the commands' import)

    return runner


def _code(sysname: str) -> Code:
    if sysname not in CODE:  # a system in the registry (hw_models.training.systems.SYSTEMS) without its code here
        raise HwModelsError(f"system {sysname!r} has no options, runs or runner in {__name__}")
    return CODE[sysname]
