"""``hw-models train-system``: the training-communication systems that co-designed all-reduce is
compared against -- gradient compression with error feedback, the parameter server, SSD-SGD,
the EASGD family, SPD-KFAC -- timed on a workload over the configured network and checked
for convergence on a small task. The work is :mod:`hw_models.training.systems.runner`'s;
this module checks input, resolves the network as ``hw-models train`` does, prints and writes.

Outputs: ``<out>/train_system_<system>_<topology>_<workload>_<hash>.csv`` (timing) and
``..._convergence.csv``, the hash covering every setting, so a run never replaces another
run's files (the same command writes the same bytes again).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Optional

import typer

from noc.errors import ConfigError, HwModelsError

SYSTEM_NAMES = ("compression", "ps", "ssd", "easgd", "kfac")
DEFAULT_COMPRESSORS = "topk:0.01,randk:0.01,threshold:0.01:50,onebit,eightbit"
# options that belong to one system (flag -> system)
OWN = {"--compressors": "compression", "--fix": "compression", "--average-every": "compression",
       "--servers": "ps", "--placement": "ps", "--modes": "ps", "--stragglers": "ps", "--delays": "ssd",
       "--variants": "easgd", "--alpha": "easgd", "--tau": "easgd", "--inverse-efficiency": "kfac"}


def train_system(
    system: str = typer.Argument(..., help="compression, ps, ssd, easgd or kfac."),
    workload: str = typer.Option("resnet50", "--workload", "-w", help="One built-in workload or a .json/.toml "
                                 "layer file (docs/training_workloads.md)."),
    batch: int = typer.Option(16, "--batch", "-b", help="Samples per worker per iteration (the workload)."),
    device: str = typer.Option("multitree-node", "--device", help="multitree-node, multitree-node-roofline, "
                               "v100-fp32."),
    topology: Optional[str] = typer.Option(None, "--topology", "-t", help="Topology spec (default: the config's)."),
    nis: Optional[int] = typer.Option(None, "--nis", help="NIs per node (default: the config's)."),
    algorithm: str = typer.Option("ring", "--algorithm", "-a", help="The all-reduce of the synchronous baseline "
                                  "(as `hw-models allreduce` names it)."),
    config: Optional[Path] = typer.Option(None, "--config", help="Experiment TOML."),
    preset: Optional[str] = typer.Option(None, "--preset", help="A named config: isca2021."),
    task: str = typer.Option("logreg", "--task", help="Convergence task on digits: logreg, mlp, or none "
                             "(timing only)."),
    lr: Optional[float] = typer.Option(None, "--lr", help="Learning rate of the task (default: 0.1 logreg, 0.2 "
                                       "mlp)."),
    target: Optional[float] = typer.Option(None, "--target", help="Test accuracy to reach (default 0.95)."),
    max_iterations: int = typer.Option(1500, "--max-iterations", help="Iterations before a run counts as not "
                                       "reaching the target."),
    seed: int = typer.Option(0, "--seed", help="Seed of the task's split, shards and batches, and of the "
                             "stragglers."),
    out: Path = typer.Option(Path("out/train_system"), "--out", "-o", help="Output directory."),
    compressors: Optional[str] = typer.Option(None, "--compressors", help="compression: comma-separated "
                                              f"topk:RATIO, randk:RATIO, threshold:RATIO[:REFRESH], onebit, "
                                              f"eightbit (default {DEFAULT_COMPRESSORS})."),
    fix: Optional[str] = typer.Option(None, "--fix", help="compression: none, step_ahead, error_averaging, both "
                                      "(also run with this fix)."),
    average_every: Optional[int] = typer.Option(None, "--average-every", help="compression: error averaging "
                                                "period in iterations (default 10)."),
    servers: Optional[int] = typer.Option(None, "--servers", help="ps: number of servers (default 4)."),
    placement: Optional[str] = typer.Option(None, "--placement", help="ps: spread, first, or node indices "
                                            "'0,5,10' (default spread)."),
    modes: Optional[str] = typer.Option(None, "--modes", help="ps: comma-separated sync, async, ssp:BOUND "
                                        "(default sync,async,ssp:2)."),
    stragglers: Optional[str] = typer.Option(None, "--stragglers", help="ps: none, slow:COUNT:FACTOR, "
                                             "lognormal:SIGMA, combined with + (default slow:2:3)."),
    delays: Optional[str] = typer.Option(None, "--delays", help="ssd: comma-separated delays k (default "
                                         "1,2,4,8)."),
    variants: Optional[str] = typer.Option(None, "--variants", help="easgd: comma-separated sync, async, "
                                           "measgd, hogwild (default all)."),
    alpha: Optional[float] = typer.Option(None, "--alpha", help="easgd: elastic moving rate (default 0.9 / "
                                          "workers)."),
    tau: Optional[int] = typer.Option(None, "--tau", help="easgd: local steps between exchanges (default 1)."),
    inverse_efficiency: Optional[float] = typer.Option(None, "--inverse-efficiency", help="kfac: share of the "
                                                       "device's peak FLOP rate a factor inversion reaches "
                                                       "(default 0.05)."),
) -> None:
    """Time a training system on a workload over the network and check its convergence on a small task."""
    from rich.console import Console

    sysname = system.strip().lower()
    if sysname not in SYSTEM_NAMES:
        raise HwModelsError(f"SYSTEM {system!r}: unknown (allowed: {', '.join(SYSTEM_NAMES)})")
    given = {"--compressors": compressors, "--fix": fix, "--average-every": average_every, "--servers": servers,
             "--placement": placement, "--modes": modes, "--stragglers": stragglers, "--delays": delays,
             "--variants": variants, "--alpha": alpha, "--tau": tau, "--inverse-efficiency": inverse_efficiency}
    for flag, value in given.items():
        if value is not None and OWN[flag] != sysname:
            raise HwModelsError(f"{flag} applies to the {OWN[flag]} system, not {sysname}; leave it out")
    st, desc, settings = _setting(sysname, workload, batch, device, topology, nis, algorithm, config, preset, task,
                                  lr, target, max_iterations, seed)
    n = st.comm.num_workers
    params = _system_params(sysname, n, compressors, fix, average_every, servers, placement, modes, stragglers,
                            delays, variants, alpha, tau, inverse_efficiency, st)
    settings.update({k: v for k, v in params.items() if k != "objects"})
    from hw_models.store import check_output_dir

    digest = hashlib.sha1(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:10]
    stem = f"train_system_{sysname}_{st.topology.name.replace(':', '_')}_{st.workload.name}_{digest}"
    check_output_dir(out, "--out", [f"{stem}.csv", f"{stem}_convergence.csv"])

    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(f"{sysname} on {desc}; task {task}"
                  + (f" ({st.task.workers} workers, batch {st.task.batch}, lr {st.lr:g}, target {st.target:g})"
                     if st.task is not None else "") + f"; seed {seed}", soft_wrap=True)
    timing, conv = _run(sysname, st, params["objects"], seed)
    _table(console, f"{sysname}: time per iteration on {st.workload.name}", timing)
    if conv:
        _table(console, f"{sysname}: convergence on digits ({task})", conv)
    from hw_models.store import write_csv_atomic

    meta = {k: settings[k] for k in ("topology", "workload", "batch", "device", "algorithm", "seed")}
    written = [write_csv_atomic(out / f"{stem}.csv", [{**r, **meta} for r in _uniform(timing)])]
    if conv:
        written.append(write_csv_atomic(out / f"{stem}_convergence.csv",
                                        [{**r, "task": task, **meta} for r in _uniform(conv)]))
    console.print(f"wrote {', '.join(str(w) for w in written)}", soft_wrap=True)


# ---------------------------------------------------------------------------------------


def _setting(sysname, workload, batch, device, topology, nis, algorithm, config, preset, task, lr, target,
             max_iterations, seed):
    from hw_models.config import experiment_data
    from hw_models.experiment import config_with_flags, resolve_experiment
    from hw_models.training import endtoend as e2e
    from hw_models.training.comm import NicComm
    from hw_models.training.compute import Roofline, get_device
    from hw_models.training.compute import MULTITREE_NODE_ROOFLINE
    from hw_models.training.systems.ps import ps_schedule
    from hw_models.training.systems.runner import Setting
    from hw_models.training.systems.tasks import DEFAULT_LR, DEFAULT_TARGET, MODELS, Task
    from nic.collectives import algorithm_name

    if config is not None and not config.is_file():
        raise HwModelsError(f"--config {config}: {'is a directory' if config.is_dir() else 'no such file'}")
    if batch < 1:
        raise HwModelsError(f"--batch {batch}: must be an integer >= 1 (samples per worker)")
    if task not in MODELS + ("none",):
        raise HwModelsError(f"--task {task!r}: choose one of {', '.join(MODELS + ('none',))}")
    if max_iterations < 1:
        raise HwModelsError(f"--max-iterations {max_iterations}: must be an integer >= 1")
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
    alg = algorithm_name(algorithm)
    data, source = experiment_data(config, preset)
    overrides, flags, drop = {}, {"allreduce.algorithms": "--algorithm"}, ()
    if topology is not None:
        if not topology.strip():
            raise HwModelsError("--topology is empty; give a spec such as torus:4x4")
        overrides["network.topology"], flags["network.topology"] = topology, "--topology"
        drop = ("network.nis_per_node", "network.routing")
    if nis is not None:
        overrides["network.nis_per_node"], flags["network.nis_per_node"] = nis, "--nis"
    cfg = config_with_flags(data, source, overrides, flags, drop)
    design = cfg.nic.design
    exp = resolve_experiment(cfg, source, flags=flags, designs=[design], algorithms=[alg])
    nic = exp.nics[design]
    comm = NicComm(exp.topology, exp.schedules[alg], nic, exp.router, seed=int(cfg.run.seed))
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


def _ints(flag: str, text: str, lo: int) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise HwModelsError(f"{flag} {text!r}: must be comma-separated integers >= {lo}") from None
    if not vals or any(v < lo for v in vals):
        raise HwModelsError(f"{flag} {text!r}: must be comma-separated integers >= {lo}")
    return list(dict.fromkeys(vals))


def _system_params(sysname, n, compressors, fix, average_every, servers, placement, modes, stragglers, delays,
                   variants, alpha, tau, inverse_efficiency, st) -> dict:
    from hw_models.training.systems.compression import FIXES
    from hw_models.training.systems.easgd import VARIANTS
    from hw_models.training.systems.ps import Stragglers, parse_mode, server_nodes
    from hw_models.training.systems.runner import parse_compressors

    if sysname == "compression":
        comps = parse_compressors(compressors or DEFAULT_COMPRESSORS)
        f = (fix or "none").strip().lower()
        if f not in FIXES:
            raise HwModelsError(f"--fix {fix!r}: choose one of {', '.join(FIXES)}")
        avg = 10 if average_every is None else average_every
        if avg < 1:
            raise HwModelsError(f"--average-every {avg}: must be an integer >= 1")
        return {"compressors": [c.label for c in comps], "fix": f, "average_every": avg,
                "objects": (comps, f, avg)}
    if sysname == "ps":
        s = 4 if servers is None else servers
        try:
            nodes = server_nodes(placement or "spread", n, s)
        except ConfigError as exc:
            raise HwModelsError(f"{'--servers' if 'servers =' in str(exc) else '--placement'}: {exc}") from None
        mlist = [x.strip() for x in (modes or "sync,async,ssp:2").split(",") if x.strip()]
        if not mlist:
            raise HwModelsError(f"--modes {modes!r} names no mode (allowed: sync, async, ssp:BOUND)")
        try:
            for m in mlist:
                parse_mode(m)
        except ConfigError as exc:
            raise HwModelsError(f"--modes: {exc}") from None
        strag = stragglers if stragglers is not None else "slow:2:3"
        try:
            Stragglers.parse(strag, n)
        except ConfigError as exc:
            raise HwModelsError(f"--stragglers: {exc}") from None
        return {"servers": list(nodes), "modes": mlist, "stragglers": strag, "objects": (nodes, mlist, strag)}
    if sysname == "ssd":
        ks = _ints("--delays", delays or "1,2,4,8", 1)
        return {"delays": ks, "objects": (ks,)}
    if sysname == "easgd":
        vs = [v.strip().lower() for v in (variants or ",".join(VARIANTS)).split(",") if v.strip()]
        bad = [v for v in vs if v not in VARIANTS]
        if bad or not vs:
            raise HwModelsError(f"--variants {variants!r}: allowed {', '.join(VARIANTS)}")
        t = 1 if tau is None else tau
        if t < 1:
            raise HwModelsError(f"--tau {t}: must be an integer >= 1")
        if alpha is not None and not 0 < alpha < 1:
            raise HwModelsError(f"--alpha {alpha}: the elastic moving rate must be in (0, 1)")
        return {"variants": vs, "alpha": alpha, "tau": t, "objects": (vs, alpha, t)}
    eff = 0.05 if inverse_efficiency is None else inverse_efficiency
    if not 0 < eff <= 1:
        raise HwModelsError(f"--inverse-efficiency {eff}: must be in (0, 1]")
    return {"inverse_efficiency": eff, "objects": (eff,)}


def _run(sysname, st, obj, seed):
    from hw_models.training.systems import runner

    if sysname == "compression":
        comps, f, avg = obj
        return runner.run_compression(st, comps, f, avg)
    if sysname == "ps":
        nodes, mlist, strag = obj
        return runner.run_ps(st, nodes, mlist, strag, seed=seed)
    if sysname == "ssd":
        return runner.run_ssd(st, obj[0])
    if sysname == "easgd":
        vs, a, t = obj
        return runner.run_easgd(st, vs, a, t)
    return runner.run_kfac(st, obj[0])


def _uniform(rows: list[dict]) -> list[dict]:
    """Rows with one set of columns (in first-seen order), blanks where a row has none."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    return [{c: r.get(c, "") for c in cols} for r in rows]


def _fmt(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "nan"
        return f"{v:.4g}"
    return str(v)


def _table(console, title: str, rows: list[dict]) -> None:
    from rich.table import Table

    rows = _uniform(rows)
    table = Table(title=title)
    cols = [c for c in rows[0] if c != "system"]
    for c in cols:
        table.add_column(c.replace("_", " "), justify="left" if c == "run" else "right")
    for r in rows:
        table.add_row(*[_fmt(r[c]) for c in cols])
    console.print(table)
