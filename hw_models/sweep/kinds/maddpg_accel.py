"""Sweep kind ``maddpg_accel``: one MADDPG update on one CPU–FPGA accelerator design, as
``hw-models maddpg accel`` models each of its rows (docs/maddpg_accel.md).

A point's keys: ``agents`` (required, >= 2), ``env`` (an MPE scenario the trainer offers;
default ``simple_spread``), ``batch`` (default 1024), ``part`` (``u250``, ``u55c``,
``zcu104``; default ``u250``) and an ``accel`` table of the design's config keys
(:class:`maddpg.accel.config.AccelConfig`: ``pe``, ``lanes``, ``interconnect``, ``level``,
``fixed_point_bits``, ``clock_mhz``, ...; the rest at their defaults).

Metrics: ``update_cycles``, ``update_us``, ``samples_per_s``, ``fpga_cycles``,
``transfer_cycles``, ``macs_per_engine``, ``fits`` (and ``over``: the most over-subscribed
resource when it does not), the resources (``dsp``, ``bram36``, ``uram``, ``lut``, ``ff``),
the critical-path cycles by phase (``<phase>_cycles``) and the exchanges' cycles with their
bounds (``exchange_<name>_cycles``); ``update_s``; and the command's CSV row of the design,
``row_<column>`` for each of ``row_columns`` (comma-separated), with ``misfit``, the warning
the command prints for a design that does not fit ("" when it fits). A design that does not
fit is a point with ``fits = false``, not an error: a sweep over engine sizes finds where
the part ends.
"""

from __future__ import annotations

from hw_models.sweep.kinds import Kind, choice_of, integer_of, model_versions_of, table_of
from noc.base.errors import ConfigError

POINT_KEYS = ("agents", "env", "batch", "part", "accel")


def _workload(env: str, agents: int, batch: int):
    from maddpg.accel.config import spread_workload, workload_for

    return spread_workload(agents, batch) if env == "simple_spread" else workload_for(env, agents, batch)


def validate(point: dict, source: str = "point") -> dict:
    from maddpg.accel.config import AccelConfig
    from maddpg.accel.parts import get_part
    from maddpg.env import SCENARIOS
    from noc.base.config import validate as validate_model

    unknown = sorted(set(point) - set(POINT_KEYS))
    if unknown:
        raise ConfigError(f"{source}: unknown key {unknown[0]!r} (allowed: {', '.join(POINT_KEYS)})")
    if "agents" not in point:
        raise ConfigError(f"{source}: missing key 'agents' (the number of agents, e.g. 3)")
    for key, low, default in (("agents", 2, None), ("batch", 1, 1024)):
        integer_of(point.get(key, default), source, key, low)
    env = choice_of(point.get("env", "simple_spread"), SCENARIOS, source, "env")
    try:
        part = get_part(point.get("part", "u250"))
    except ConfigError as exc:
        raise ConfigError(f"{source}: key 'part': {exc}") from None
    accel = table_of(point, "accel", source, tuple(AccelConfig.model_fields))
    cfg = validate_model(accel, AccelConfig, source=f"{source}: accel")
    return {"agents": point["agents"], "env": env, "batch": point.get("batch", 1024), "part": part.name,
            "accel": cfg.model_dump(mode="json")}


def design_row(w, cfg, r) -> dict:
    """The command's CSV row of one design: the design, its resources, the update by phase
    (cycles and µs), the exchange against its bound (with a CPU profile, the command adds
    :func:`hw_models.report.maddpg_accel.throughput_cells`)."""
    from maddpg.accel.parts import get_part
    from maddpg.accel.resources import limits

    part = get_part(r.part)
    lim = limits(part, cfg)
    row = {
        "agents": r.n_agents, "interconnect": r.interconnect, "level": cfg.level, "part": r.part,
        "datapath": r.datapath, "semantics": cfg.semantics, "batch": w.batch, "clock_mhz": cfg.clock_mhz,
        "pe": cfg.array("critic")[0], "lanes": cfg.array("critic")[1], "actor_pe": cfg.array("actor")[0],
        "actor_lanes": cfg.array("actor")[1], "layer_balance": cfg.layer_balance, "macs_per_engine": r.macs_per_engine,
        "fits": "yes" if r.fits else f"no ({r.over})", "minibatch_buffer": r.resources.minibatch_buffer,
    }
    for res in ("dsp", "bram36", "uram", "lut", "ff"):
        row[res] = r.resources.amount(res)
        row[f"{res}_pct"] = f"{100.0 * r.resources.amount(res) / max(lim[res], 1):.1f}"
    row["update_cycles"] = f"{r.update_cycles:.0f}"
    row["update_us"] = f"{r.update_s * 1e6:.2f}"
    for name, cycles in (("{}_cycles", r.phase_cycles), ("{}_busy_cycles", r.busy_cycles),
                         ("exchange_{}_cycles", r.exchange)):
        row.update({name.format(k): f"{v:.0f}" for k, v in cycles.items()})
    for p in ("interconnect", "transfer"):  # how much of the exchange and of the transfers ran under compute
        busy = r.busy_cycles[p]
        row[f"{p}_hidden_pct"] = f"{100.0 * (1.0 - r.phase_cycles[p] / busy):.1f}" if busy > 0 else ""
    row["samples_per_s"] = f"{r.samples_per_s(w.batch):.0f}"
    return row


def run(resolved: dict) -> dict:
    from maddpg.accel.config import AccelConfig
    from maddpg.accel.model import simulate_update
    from maddpg.accel.parts import get_part
    from maddpg.accel.resources import DesignDoesNotFit, check_fits

    w = _workload(resolved["env"], resolved["agents"], resolved["batch"])
    cfg = AccelConfig.model_validate(resolved["accel"])
    part = get_part(resolved["part"])
    r = simulate_update(w, cfg, part)
    m = {"update_cycles": float(r.update_cycles), "update_us": r.update_s * 1e6,
         "samples_per_s": r.samples_per_s(w.batch), "fpga_cycles": float(r.fpga_cycles),
         "transfer_cycles": float(r.transfer_cycles), "macs_per_engine": int(r.macs_per_engine), "fits": bool(r.fits),
         "over": r.over, "datapath": r.datapath}
    for res in ("dsp", "bram36", "uram", "lut", "ff"):
        m[res] = r.resources.amount(res)
    m.update({f"{p}_cycles": float(v) for p, v in r.phase_cycles.items()})
    m.update({f"exchange_{k}_cycles": float(v) for k, v in r.exchange.items()})
    row = design_row(w, cfg, r)
    m.update({"update_s": r.update_s, "row_columns": ",".join(row), **{f"row_{c}": v for c, v in row.items()}})
    m["misfit"] = ""
    if not r.fits:
        try:
            check_fits(r.resources, part, cfg, f"{w.n_agents} agents, {cfg.interconnect}, {cfg.pe}x{cfg.lanes}")
        except DesignDoesNotFit as exc:
            m["misfit"] = str(exc)
    return m


def model_versions() -> dict:
    return model_versions_of("message_model", "flit_model", maddpg_accel=2)


KIND = Kind(name="maddpg_accel", summary="one MADDPG update on one CPU-FPGA accelerator design: agents, part, "
            "engine size, datapath and interconnect (as hw-models maddpg accel models each row)",
            validate=validate, run=run, model_versions=model_versions)
