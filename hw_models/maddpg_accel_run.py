"""The CPU-FPGA MADDPG accelerator model as ``hw-models maddpg accel`` runs it: the flags
(:class:`AccelRequest`, plain values) checked all at once before any work (:func:`resolve`),
then the CPU baseline measured or loaded, every design to model (per agent count and
interconnect: the search's, or the one ``--engine`` fixes) run as a point of sweep kind
``maddpg_accel`` into ``<out>/runs.sqlite``, and the table, accel.csv and accel.png (with
``search``, search.csv and pareto.png) rendered from the stored points (:func:`run`).
Existing outputs are never replaced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, get_args

from maddpg.accel import INTERCONNECTS
from noc.base.errors import ConfigError, HwModelsError

ORIGIN = "hw-models maddpg accel"
OUTPUTS = ("accel.csv", "accel.png")
SEARCH_OUTPUTS = ("search.csv", "pareto.png")


@dataclass(frozen=True)
class AccelRequest:
    """The flags of ``hw-models maddpg accel``."""

    agents: str
    interconnect: Optional[str]  # None: not given (the --config file's key, else DEFAULT_INTERCONNECTS)
    part: str
    env: str
    batch: int
    fixed_point: Optional[str]
    engine: str
    level: Optional[str]  # None for these three: not given, the --config file's key or its default stands
    semantics: Optional[str]
    pcie: Optional[str]
    config: Optional[Path]
    cpu: str
    cpu_cache: Path
    seed: int
    search: bool
    out: Optional[Path]
    workers: Optional[int] = None  # 0 (this process) unless dask
    dask: Optional[str] = None


@dataclass(frozen=True)
class AccelSetup:
    """A checked request: agent counts, interconnects, the part, the base config, the engine
    size (None: the fastest that fits), the workloads and the output directory."""

    req: AccelRequest
    agent_counts: list
    interconnects: list
    part: object
    base: object
    size: Optional[tuple]
    workloads: dict
    out_dir: Path


def _engine(text: str) -> tuple[int, int] | None:
    if text.strip().lower() == "auto":
        return None
    m = re.fullmatch(r"\s*([0-9]{1,4})x([0-9]{1,4})\s*", text)
    if not m or not (1 <= int(m.group(1)) <= 4096 and 1 <= int(m.group(2)) <= 4096):
        raise HwModelsError(f"--engine {text!r}: allowed: auto (the fastest engine size that fits) or PExLANES with "
                            f"each 1..4096 (e.g. 8x16: 8 PEs of 16 MAC lanes per layer array)")
    return int(m.group(1)), int(m.group(2))


def _pcie(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*gen([1-5])x([0-9]{1,2})\s*", text.lower())
    if not m or int(m.group(2)) not in (1, 2, 4, 8, 16):
        raise HwModelsError(f"--pcie {text!r}: allowed: genGxL with G in 1..5 and L in 1, 2, 4, 8, 16 (e.g. gen3x16)")
    return int(m.group(1)), int(m.group(2))


#: the interconnects compared when neither --interconnect nor the --config file names one
DEFAULT_INTERCONNECTS = ",".join(INTERCONNECTS)


def resolve(req: AccelRequest) -> AccelSetup:
    """Every check of the flags before any work; bad input names its flag."""
    from hw_models.flags import parse_fixed_point, parse_int_list
    from maddpg.accel.config import AccelConfig
    from maddpg.accel.parts import get_part
    from noc.base.config import SEED_RULE, read_toml, validate

    ns = parse_int_list(req.agents, "--agents", 2, 64)
    data = read_toml(req.config) if req.config is not None else {}
    ic_text = req.interconnect if req.interconnect is not None else DEFAULT_INTERCONNECTS
    ic_flag = "--interconnect"
    if req.interconnect is None and isinstance(data.get("interconnect"), str):
        ic_text, ic_flag = data["interconnect"], f"{req.config}: interconnect"
    ics = [s.strip() for s in ic_text.split(",") if s.strip()]
    if not ics:
        raise HwModelsError(f"{ic_flag} {ic_text!r}: allowed: {', '.join(INTERCONNECTS)} or noc specs, "
                            "comma-separated")
    try:
        the_part = get_part(req.part)
    except ConfigError as exc:
        raise HwModelsError(f"--part {req.part!r}: {str(exc).split(': ', 1)[-1]}") from None
    if not 1 <= req.batch <= 65536:
        raise HwModelsError(f"--batch {req.batch}: allowed: 1..65536")
    if not 0 <= req.seed <= 2**32 - 1:
        raise HwModelsError(f"--seed {req.seed}: {SEED_RULE}")
    q_bits, q_frac = parse_fixed_point(req.fixed_point)
    size = _engine(req.engine)
    # one rule with --config: a flag given overrides the file's key, a flag left out never does
    if req.pcie is not None:
        gen, lanes = _pcie(req.pcie)
        data.update({"pcie_gen": gen, "pcie_lanes": lanes})
    for key, value in (("level", req.level), ("semantics", req.semantics)):
        allowed = get_args(AccelConfig.model_fields[key].annotation)  # the config's choices
        if value is not None and value not in allowed:
            raise HwModelsError(f"--{key} {value!r}: allowed: {', '.join(allowed)}")
        if value is not None:
            data[key] = value
    if req.fixed_point is not None:
        data.update({"fixed_point_bits": q_bits, "fixed_point_frac_bits": q_frac})
    if size is not None:
        data.update({"pe": size[0], "lanes": size[1]})
    base = validate(data, AccelConfig, source=str(req.config) if req.config else "maddpg accel")
    if req.cpu not in ("measure", "none") and not Path(req.cpu).is_file():
        raise HwModelsError(f"--cpu {req.cpu!r}: allowed: measure, none, or an existing CPU profile JSON file")
    for ic in ics:  # bad interconnects fail before any work
        from maddpg.accel.interconnect import build_topology

        for n in ns:
            try:
                build_topology(ic, n, base)
            except ConfigError as exc:
                raise HwModelsError(f"{ic_flag} {ic!r}: {str(exc).split(': ', 1)[-1]}") from None
    workloads = {n: _workload(req.env, n, req.batch) for n in ns}
    if req.cpu not in ("measure", "none"):  # a profile passed in is checked before anything is made
        for n in ns:
            _cpu_profile(req.cpu, req.cpu_cache, req.env, n, req.batch, base, req.seed)
    out_dir = req.out or Path("results") / "maddpg_accel" / f"{the_part.name}_{base.datapath.replace('.', '_')}"
    _check_outputs(out_dir, "--out" if req.out else "the default output directory",
                   OUTPUTS + (SEARCH_OUTPUTS if req.search else ()))
    return AccelSetup(req, ns, ics, the_part, base, size, workloads, out_dir)


def run(s: AccelSetup) -> None:
    """The header, the CPU baselines and the designs: table and files."""
    req, base = s.req, s.base
    print(f"maddpg accel: {req.env}, agents {','.join(map(str, s.agent_counts))}, part {s.part.description}, "
          f"{base.datapath}, {base.clock_mhz:g} MHz, interconnect level {base.level}, {base.semantics} updates, PCIe "
          f"gen{base.pcie_gen}x{base.pcie_lanes}; seed {req.seed}")
    profiles = {n: _cpu_profile(req.cpu, req.cpu_cache, req.env, n, req.batch, base, req.seed) for n in s.agent_counts}
    _run(s, profiles)


def _check_outputs(out_dir: Path, named: str, files: tuple[str, ...]) -> None:
    from hw_models.store import check_output_dir

    existing = [f for f in files if (out_dir / f).exists()]
    if existing:
        raise HwModelsError(f"{named} {out_dir}: {', '.join(existing)} already there (another run's output, never "
                            f"replaced); allowed: a directory without {', '.join(files)} (choose another --out)")
    check_output_dir(out_dir, named, files)


def _workload(env: str, n: int, batch: int):
    from maddpg.accel.config import workload_for

    try:
        return workload_for(env, n, batch)
    except ConfigError as exc:
        raise HwModelsError(f"--env {env!r} with --agents {n}: {exc}") from None


def _cpu_profile(cpu: str, cache: Path, env: str, n: int, batch: int, cfg, seed: int):
    from maddpg.accel.host import load_profile

    if cpu == "none":
        return None
    if cpu != "measure":
        p = load_profile(cpu)
        if (p.env, p.n_agents, p.batch) != (env, n, batch):
            raise HwModelsError(f"--cpu {cpu}: a profile of {p.env}, {p.n_agents} agents, batch {p.batch}, not of {env}, "
                                f"{n} agents, batch {batch}; allowed: a profile of the run's one agent count, or measure "
                                "(profiles kept in --cpu-cache are reused)")
        return p
    return _cached_or_measure(cache, env, n, batch, cfg, seed)


def _cached_or_measure(cache: Path, env: str, n: int, batch: int, cfg, seed: int):
    from hw_models.store import check_output_dir
    from noc.base.files import replace_atomically
    from maddpg.accel.host import load_profile, machine_name, measure_cpu

    host = re.sub(r"[^A-Za-z0-9]+", "-", machine_name())[:60]
    name = f"{env}_{n}a_b{batch}_seed{seed}_{host}.json"  # the CPU trainer in float32, whatever the card's datapath
    path = cache / name
    if path.is_file():
        p = load_profile(path)
        print(f"CPU profile ({n} agents): {path} (measured {p.measured})")
        return p
    check_output_dir(cache, "--cpu-cache")
    print(f"measuring the CPU trainer on this machine: {env}, {n} agents, batch {batch}, seed {seed} ...")
    p = measure_cpu(env, n, batch, seed)
    replace_atomically(path, lambda tmp: tmp.write_text(p.to_json()))
    print(f"  env step {p.env_step_s * 1e6:.1f} µs, sampling {p.sample_s * 1e3:.2f} ms, update "
               f"{p.update_s * 1e3:.2f} ms; cached in {path}")
    return p


def _plan(s: AccelSetup):
    """The designs to model, as points of sweep kind ``maddpg_accel``, per (agent count,
    interconnect) in order: the search's (engine size auto, or ``--search``), then the given
    engine size's."""
    from hw_models.sweep.plan import Plan
    from maddpg.accel.search import LANE_LADDER, PE_LADDER

    configs, groups = [], {}
    for n in s.agent_counts:
        for ic in s.interconnects:
            cfgs = []
            if s.size is None or s.req.search:
                cfgs += [s.base.model_copy(update={"interconnect": ic, "pe": pe, "lanes": ln, "layer_balance": bal})
                         for bal in ("uniform", "work") for pe in PE_LADDER for ln in LANE_LADDER]
            if s.size is not None:
                cfgs.append(s.base.model_copy(update={"interconnect": ic}))
            groups[n, ic] = range(len(configs), len(configs) + len(cfgs))
            configs += [{"agents": n, "env": s.req.env, "batch": s.req.batch, "part": s.part.name,
                         "accel": c.model_dump(mode="json")} for c in cfgs]
    return Plan("maddpg_accel", configs, "maddpg accel", ORIGIN), groups


@dataclass(frozen=True)
class _Stored:
    """A design as the store holds it, in the shape :mod:`maddpg.accel.search` and the Pareto
    figure read (``cfg``: its config; ``result``: fits, update cycles and seconds, DSPs)."""

    cfg: object
    result: object


def _stored(config: dict, m: dict) -> _Stored:
    from types import SimpleNamespace

    from maddpg.accel.config import AccelConfig

    return _Stored(AccelConfig.model_validate(config["accel"]), SimpleNamespace(
        fits=m["fits"], update_cycles=m["update_cycles"], update_s=m["update_s"], resources=SimpleNamespace(dsp=m["dsp"])))


def _row(m: dict) -> dict:
    """A design's table and CSV row, from its stored metrics."""
    return {c: m[f"row_{c}"] for c in m["row_columns"].split(",")}


def _run(s: AccelSetup, profiles: dict) -> None:
    from types import SimpleNamespace

    from hw_models.console import console
    from hw_models.job import run_plan_points
    from hw_models.report.maddpg_accel import pareto_figure, phase_figure, throughput_cells
    from hw_models.store import STORE_NAME, write_csv_atomic
    from maddpg.accel.model import throughput
    from maddpg.accel.search import fastest

    plan, groups = _plan(s)
    store = s.out_dir / STORE_NAME
    ran = run_plan_points(console(240), plan, store, lambda p: f"{p.config['agents']} agents, "
                          f"{p.config['accel']['interconnect']}", workers=s.req.workers, dask=s.req.dask)
    designs = [_stored(c, m) for c, m in zip(plan.configs, ran.metrics)]
    rows, search_rows, found = [], [], {}
    for (n, ic), at in groups.items():
        pts = [designs[i] for i in at]
        if s.size is not None:
            k = at[-1]
        else:  # the fastest that fits; when none does, the smallest, marked
            best = fastest(pts) or min(pts, key=lambda p: p.result.resources.dsp)
            k = next(i for i, p in zip(at, pts) if p is best)
        m = ran.metrics[k]
        if m["misfit"]:
            print(f"warning: {m['misfit']} (its row is marked and kept for comparison)")
        row = _row(m)
        if profiles[n] is not None:
            row.update(throughput_cells(throughput(s.workloads[n], SimpleNamespace(update_s=m["update_s"]), profiles[n]),
                                        profiles[n]))
        rows.append(row)
        searched = at if s.size is None else at[:-1]
        found.setdefault(n, []).extend(designs[i] for i in searched)
        search_rows += [_row(ran.metrics[i]) for i in searched]
    _print_table(rows)
    csv_path = write_csv_atomic(s.out_dir / "accel.csv", rows)
    base, part = s.base, s.part
    title = f"MADDPG update on {part.description}, {base.datapath}, {base.clock_mhz:g} MHz"
    png_path = phase_figure(rows, s.out_dir / "accel.png", title)
    print(f"wrote {csv_path}, {png_path}")
    if s.req.search:
        s_csv = write_csv_atomic(s.out_dir / "search.csv", search_rows)
        s_png = pareto_figure(found, s.out_dir / "pareto.png", f"design space: {title}")
        for n, pts in found.items():
            best = fastest(pts)
            if best is None:
                print(f"{n} agents: no design of the search fits {part.name}")
            else:
                print(f"{n} agents: fastest design that fits: {best.cfg.interconnect}, {best.cfg.pe}x{best.cfg.lanes} "
                      f"per layer array, {best.result.update_s * 1e6:.1f} µs per update, "
                      f"{best.result.resources.dsp:,} DSPs")
        print(f"wrote {s_csv}, {s_png}")


def _print_table(rows: list[dict]) -> None:
    from rich.console import Console

    from hw_models.console import table

    cols = ["agents", "interconnect", "engine", "fits", "DSP %", "update µs", "transfer", "critic", "actor", "targets",
            "interconnect µs", "exchange/bound", "samples/s"]
    thr = "training_speedup" in rows[0]
    if thr:
        cols += ["CPU ms", "speed-up", "env steps/s serial", "overlapped", "e2e speed-up"]
    cells = []
    for r in rows:
        us = lambda p: f"{float(r[f'{p}_cycles']) / float(r['clock_mhz']):.1f}"  # noqa: E731
        bound = float(r["exchange_inputs_bound_cycles"]) + float(r["exchange_targets_bound_cycles"])
        ex = float(r["exchange_inputs_cycles"]) + float(r["exchange_targets_cycles"])
        size = f"{r['pe']}x{r['lanes']}" + (" work" if r["layer_balance"] == "work" else "")
        vals = [str(r["agents"]), r["interconnect"], size, r["fits"], r["dsp_pct"], r["update_us"],
                us("transfer"), us("critic"), us("actor"), us("targets"), us("interconnect"),
                f"{ex / bound:.2f}" if bound else "-", r["samples_per_s"]]
        if thr:
            vals += [r["cpu_update_ms"], r["training_speedup"] + "x", r["serial_env_steps_per_s"],
                     r["overlapped_env_steps_per_s"], r["overlapped_speedup"] + "x"]
        cells.append(vals)
    Console(width=240).print(table("one update, critical path by phase (µs)", cols, cells))
