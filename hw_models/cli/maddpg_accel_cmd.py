"""``hw-models maddpg accel``: the CPU-FPGA MADDPG accelerator model (maddpg.accel) over agent
counts, interconnects and engine sizes: a table, accel.csv and accel.png; ``--search``
adds every design point (search.csv) and the Pareto front (pareto.png)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import typer

from maddpg.accel.parts import PARTS
from noc.base.errors import ConfigError, HwModelsError

OUTPUTS = ("accel.csv", "accel.png")
SEARCH_OUTPUTS = ("search.csv", "pareto.png")


def _int_list(text: str, flag: str, lo: int, hi: int) -> list[int]:
    out = []
    for part in str(text).split(","):
        p = part.strip()
        if not re.fullmatch(r"[0-9]{1,6}", p) or not lo <= int(p) <= hi:
            raise HwModelsError(f"{flag} {text!r}: {p!r} is not allowed; allowed: integers {lo}..{hi}, comma-separated "
                                f"(e.g. 3,6,12)")
        out.append(int(p))
    return list(dict.fromkeys(out))


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


def accel(
    agents: str = typer.Option("3,6,12", "--agents", help="Agent counts, comma-separated (2..64)."),
    interconnect: str = typer.Option("ring,mesh,crossbar", "--interconnect",
                                     help="Agent interconnects, comma-separated: ring, mesh, crossbar or any noc "
                                          "topology spec with enough endpoints (torus:2x2, fattree:k4:l2, ...)."),
    part: str = typer.Option("u250", "--part", help=f"FPGA part: {', '.join(PARTS)}."),
    env: str = typer.Option("simple_spread", "--env", help="MPE scenario whose shapes are trained."),
    batch: int = typer.Option(1024, "--batch", help="Minibatch size (1..65536)."),
    fixed_point: Optional[str] = typer.Option(None, "--fixed-point", metavar="BITS.FRAC",
                                              help="Fixed-point datapath (e.g. 16.10); default float32."),
    engine: str = typer.Option("auto", "--engine", help="auto: per agent count and interconnect, the fastest engine "
                               "size that fits; or PExLANES for every layer array."),
    level: str = typer.Option("message", "--level", help="Interconnect model: message (default) or flit."),
    semantics: str = typer.Option("parallel", "--semantics", help="parallel (the engines update at once) or "
                                  "sequential (the trainer's agent order)."),
    pcie: str = typer.Option("gen3x16", "--pcie", help="Host link, genGxL (e.g. gen4x8)."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file of accelerator keys (docs/maddpg_accel.md); "
                                          "the flags above override it."),
    cpu: str = typer.Option("measure", "--cpu", help="CPU baseline: measure (the float32 trainer timed on this machine, "
                            "cached in --cpu-cache), none (no throughput columns), or a profile JSON file."),
    cpu_cache: Path = typer.Option(Path("results/maddpg_accel/cpu"), "--cpu-cache",
                                   help="Where measured CPU profiles are kept and looked up."),
    seed: int = typer.Option(0, "--seed", help="Seed of the CPU measurement's training run."),
    search: bool = typer.Option(False, "--search", help="Also write every design of the search (search.csv) and its "
                                "Pareto front, update time against DSPs (pareto.png)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (default results/maddpg_accel/"
                                       "<part>_<datapath>); existing outputs are never replaced."),
) -> None:
    """Time one MADDPG update on per-agent FPGA engines with an on-chip agent interconnect; print a table by phase,
    write accel.csv and accel.png (and with --search, search.csv and pareto.png)."""
    from hw_models.flags import parse_fixed_point
    from maddpg.accel.config import AccelConfig
    from maddpg.accel.parts import get_part
    from noc.base.config import SEED_RULE, read_toml, validate

    ns = _int_list(agents, "--agents", 2, 64)
    ics = [s.strip() for s in interconnect.split(",") if s.strip()]
    if not ics:
        raise HwModelsError(f"--interconnect {interconnect!r}: allowed: ring, mesh, crossbar or noc specs, comma-separated")
    try:
        the_part = get_part(part)
    except ConfigError as exc:
        raise HwModelsError(f"--part {part!r}: {str(exc).split(': ', 1)[-1]}") from None
    if not 1 <= batch <= 65536:
        raise HwModelsError(f"--batch {batch}: allowed: 1..65536")
    if not 0 <= seed <= 2**32 - 1:
        raise HwModelsError(f"--seed {seed}: {SEED_RULE}")
    q_bits, q_frac = parse_fixed_point(fixed_point)
    size = _engine(engine)
    gen, lanes = _pcie(pcie)
    if level not in ("message", "flit"):
        raise HwModelsError(f"--level {level!r}: allowed: message, flit")
    if semantics not in ("parallel", "sequential"):
        raise HwModelsError(f"--semantics {semantics!r}: allowed: parallel, sequential")
    data = read_toml(config) if config is not None else {}
    data.update({"level": level, "semantics": semantics, "pcie_gen": gen, "pcie_lanes": lanes})
    if fixed_point is not None:
        data.update({"fixed_point_bits": q_bits, "fixed_point_frac_bits": q_frac})
    if size is not None:
        data.update({"pe": size[0], "lanes": size[1]})
    base = validate(data, AccelConfig, source=str(config) if config else "maddpg accel")
    if cpu not in ("measure", "none") and not Path(cpu).is_file():
        raise HwModelsError(f"--cpu {cpu!r}: allowed: measure, none, or an existing CPU profile JSON file")
    for ic in ics:  # bad interconnects fail before any work
        from maddpg.accel.interconnect import build_topology

        for n in ns:
            try:
                build_topology(ic, n, base)
            except ConfigError as exc:
                raise HwModelsError(f"--interconnect {ic!r}: {str(exc).split(': ', 1)[-1]}") from None
    workloads = {n: _workload(env, n, batch) for n in ns}
    if cpu not in ("measure", "none"):  # a profile passed in is checked before anything is made
        for n in ns:
            _cpu_profile(cpu, cpu_cache, env, n, batch, base, seed)
    out_dir = out or Path("results") / "maddpg_accel" / f"{the_part.name}_{base.datapath.replace('.', '_')}"
    _check_outputs(out_dir, "--out" if out else "the default output directory", OUTPUTS + (SEARCH_OUTPUTS if search else ()))
    typer.echo(f"maddpg accel: {env}, agents {','.join(map(str, ns))}, part {the_part.description}, {base.datapath}, "
               f"{base.clock_mhz:g} MHz, interconnect level {base.level}, {base.semantics} updates, PCIe "
               f"gen{base.pcie_gen}x{base.pcie_lanes}; seed {seed}")
    profiles = {n: _cpu_profile(cpu, cpu_cache, env, n, batch, base, seed) for n in ns}
    _run(workloads, ics, the_part, base, size, profiles, out_dir, search)


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
        typer.echo(f"CPU profile ({n} agents): {path} (measured {p.measured})")
        return p
    check_output_dir(cache, "--cpu-cache")
    typer.echo(f"measuring the CPU trainer on this machine: {env}, {n} agents, batch {batch}, seed {seed} ...")
    p = measure_cpu(env, n, batch, seed)
    replace_atomically(path, lambda tmp: tmp.write_text(p.to_json()))
    typer.echo(f"  env step {p.env_step_s * 1e6:.1f} µs, sampling {p.sample_s * 1e3:.2f} ms, update "
               f"{p.update_s * 1e3:.2f} ms; cached in {path}")
    return p


def _run(workloads, ics, part, base, size, profiles, out_dir: Path, do_search: bool) -> None:
    from hw_models.report.maddpg_accel import pareto_figure, phase_figure, result_row
    from hw_models.store import write_csv_atomic
    from maddpg.accel.model import simulate_update, throughput
    from maddpg.accel.search import fastest, search

    rows, all_rows, groups = [], [], {}
    for n, w in workloads.items():
        pts = []
        for ic in ics:
            if size is None or do_search:
                pts_ic = search(w, part, base, [ic])
                pts += pts_ic
            if size is None:
                best = fastest(pts_ic)
                if best is None:  # nothing fits: show the smallest, marked
                    best = min(pts_ic, key=lambda p: p.result.resources.dsp)
                cfg, r = best.cfg, best.result
            else:
                cfg = base.model_copy(update={"interconnect": ic})
                r = simulate_update(w, cfg, part)
            if not r.fits:
                from maddpg.accel.resources import DesignDoesNotFit, check_fits

                try:
                    check_fits(r.resources, part, cfg, f"{n} agents, {ic}, {cfg.pe}x{cfg.lanes}")
                except DesignDoesNotFit as exc:
                    typer.echo(f"warning: {exc} (its row is marked and kept for comparison)")
            thr = throughput(w, r, profiles[n]) if profiles[n] is not None else None
            rows.append(result_row(w, cfg, r, thr, profiles[n]))
        groups[n] = pts
        for p in pts:
            all_rows.append(result_row(w, p.cfg, p.result))
    _print_table(rows)
    csv_path = write_csv_atomic(out_dir / "accel.csv", rows)
    title = f"MADDPG update on {part.description}, {base.datapath}, {base.clock_mhz:g} MHz"
    png_path = phase_figure(rows, out_dir / "accel.png", title)
    typer.echo(f"wrote {csv_path}, {png_path}")
    if do_search:
        s_csv = write_csv_atomic(out_dir / "search.csv", all_rows)
        s_png = pareto_figure(groups, out_dir / "pareto.png", f"design space: {title}")
        for n, pts in groups.items():
            best = fastest(pts)
            if best is None:
                typer.echo(f"{n} agents: no design of the search fits {part.name}")
            else:
                typer.echo(f"{n} agents: fastest design that fits: {best.cfg.interconnect}, {best.cfg.pe}x{best.cfg.lanes} "
                           f"per layer array, {best.result.update_s * 1e6:.1f} µs per update, "
                           f"{best.result.resources.dsp:,} DSPs")
        typer.echo(f"wrote {s_csv}, {s_png}")


def _print_table(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="one update, critical path by phase (µs)")
    cols = ["agents", "interconnect", "engine", "fits", "DSP %", "update µs", "transfer", "critic", "actor", "targets",
            "interconnect µs", "exchange/bound", "samples/s"]
    thr = "training_speedup" in rows[0]
    if thr:
        cols += ["CPU ms", "speed-up", "env steps/s serial", "overlapped", "e2e speed-up"]
    for c in cols:
        t.add_column(c, justify="right")
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
        t.add_row(*vals)
    Console(width=240).print(t)
