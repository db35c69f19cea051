"""Sweep kind ``train_system``: one training-communication system on one workload and network
with its convergence check, as ``hw-models train-system`` runs it (docs/training_systems.md).

A point's keys are the command's options with underscores: ``system`` (required: a name
of the registry :data:`hw_models.training.systems.SYSTEMS`), ``workload``, ``batch``, ``device``, ``preset``,
``topology``, ``nis``, ``algorithm``, ``task``, ``lr``, ``target``, ``max_iterations``,
``seed``, the worker profile ``stragglers`` and the link profile ``links`` (every system;
where a system's default is none -- ``links`` but for dlion, ``stragglers`` for compression,
ssd and kfac -- kept in the resolved point only when its factors are not all 1, so a point
with a profile of ones is the point without it: the same key, the same rows) -- and the chosen system's own: ``compressors``, ``fix``,
``average_every``; ``servers``, ``placement``, ``modes``; ``delays``; ``variants``,
``alpha``, ``tau``; ``inverse_efficiency``; ``techniques``, ``transfer_every``; ``mp_keep``
(lists as the command's comma-separated strings); and
``experiment``, a table of an experiment config's keys (what the command's ``--config`` file
holds; not with ``preset``). Metrics: every cell of the command's two tables,
``t<i>_<column>`` (timing) and ``c<i>_<column>`` (convergence) for row ``i`` in order, with
the columns in order in ``timing_columns`` and ``convergence_columns`` (comma-separated) and
``c<i>_iterations_to_target`` -1 where the target was not reached (:func:`tables` reads
them back).
"""

from __future__ import annotations

from hw_models.sweep.kinds import Kind, choice_of, model_versions_of
from hw_models.training.compute import DEFAULT_DEVICE
from hw_models.training.systems import SYSTEMS
from noc.base.errors import ConfigError, HwModelsError

COMMON = {"workload": "resnet50", "batch": 16, "device": DEFAULT_DEVICE, "preset": None, "topology": None,
          "nis": None, "algorithm": None, "task": "logreg", "lr": None, "target": None, "max_iterations": 1500,
          "seed": 0}
TYPES = {"workload": str, "batch": int, "device": str, "preset": str, "topology": str, "nis": int, "algorithm": str,
         "task": str, "lr": float, "target": float, "max_iterations": int, "seed": int, "compressors": str,
         "fix": str, "average_every": int, "servers": int, "placement": str, "modes": str, "stragglers": str,
         "delays": str, "variants": str, "alpha": float, "tau": int, "inverse_efficiency": float,
         "links": str, "techniques": str, "transfer_every": int, "mp_keep": float}
OPTIONS = tuple(k for k in TYPES if k not in COMMON)  # the systems' own options, in system_params' order


def _resolve(point: dict, source: str):
    from hw_models.training.systems.setup import flags_to_keys, not_for, resolve_setting, system_params

    allowed = ("system", *COMMON, *OPTIONS, "experiment")
    for key in point:
        if key not in allowed:
            raise ConfigError(f"{source}: unknown key {key!r} (allowed: {', '.join(allowed)})")
    system = choice_of(point.get("system"), SYSTEMS, source, "system")
    vals = {**COMMON, **{k: point.get(k) for k in OPTIONS}, **{k: v for k, v in point.items() if k in COMMON}}
    for key, value in vals.items():
        want = TYPES[key]
        ok = value is None or (isinstance(value, want) and not isinstance(value, bool)) or (
            want is float and isinstance(value, int) and not isinstance(value, bool))
        if not ok:
            raise ConfigError(f"{source}: key {key!r} = {value!r}: must be {want.__name__}")
        why = not_for("--" + key.replace("_", "-"), system) if key in OPTIONS else None
        if value is not None and why:
            raise ConfigError(f"{source}: key {key!r} {why}")
    experiment = point.get("experiment")
    if experiment is not None and not isinstance(experiment, dict):
        raise ConfigError(f"{source}: key 'experiment' = {experiment!r}: must be a table of experiment config keys")
    if experiment is not None and vals["preset"] is not None:
        raise ConfigError(f"{source}: keys 'experiment' and 'preset': give one of them")
    try:
        st, _, settings = resolve_setting(system, vals["workload"], vals["batch"], vals["device"], vals["topology"],
                                          vals["nis"], vals["algorithm"], None, vals["preset"], vals["task"],
                                          vals["lr"], vals["target"], vals["max_iterations"], vals["seed"],
                                          data=experiment)
        params = system_params(system, st.comm.num_workers, *(vals[k] for k in OPTIONS), st=st)
    except HwModelsError as exc:
        raise ConfigError(f"{source}: {flags_to_keys(str(exc))}") from None
    if experiment is not None:
        vals["experiment"] = experiment
    return system, vals, st, params


def validate(point: dict, source: str = "point") -> dict:
    system, vals, st, params = _resolve(point, source)
    out = {"system": system, **{k: vals[k] for k in COMMON}, "lr": st.lr, "target": st.target,
           "algorithm": st.algorithm, **({"experiment": vals["experiment"]} if "experiment" in vals else {})}
    out.update({k: v for k, v in params.items() if k != "objects"})
    if system == "compression":  # canonical, and as the option takes it (a label such as 'topk 0.01' is not)
        out["compressors"] = ",".join(c.spec for c in params["objects"][0])
    if system == "ps":  # canonical: the count and the nodes, whatever way the placement was given
        out["placement"] = ",".join(str(x) for x in out["servers"])
        out["servers"] = len(out["servers"])
    return out


def run(resolved: dict) -> dict:
    from hw_models.training.systems.setup import not_for, run_system

    point = {k: v for k, v in resolved.items() if k in ("system", *COMMON, "experiment")}
    system = point["system"]
    for k in (k for k in OPTIONS if not not_for("--" + k.replace("_", "-"), system)):  # the system's own
        v = resolved.get(k)
        if isinstance(v, list):
            v = ",".join(str(x) for x in v)
        if v is not None:
            point[k] = v
    system, vals, st, params = _resolve(point, "point")
    timing, conv = run_system(system, st, params["objects"], vals["seed"])
    m: dict = {}
    for prefix, rows in (("t", timing), ("c", conv)):
        columns = list(dict.fromkeys(k for r in rows for k in r))
        m["timing_columns" if prefix == "t" else "convergence_columns"] = ",".join(columns)
        for i, r in enumerate(rows):
            m.update({f"{prefix}{i}_{c}": r.get(c, "") for c in columns})
    for i, r in enumerate(conv):
        it = r["iterations_to_target"]
        m[f"c{i}_iterations_to_target"] = int(it) if it != "" else -1
        m[f"c{i}_final_accuracy"] = float(r["final_accuracy"])
    return m


def tables(metrics: dict) -> tuple[list[dict], list[dict]]:
    """The command's timing and convergence rows (every row with every column, blank where
    it has none) as a point's metrics hold them."""
    out = []
    for prefix, name in (("t", "timing_columns"), ("c", "convergence_columns")):
        columns = [c for c in metrics[name].split(",") if c]
        rows: list[dict] = []
        while columns and f"{prefix}{len(rows)}_{columns[0]}" in metrics:
            rows.append({c: metrics[f"{prefix}{len(rows)}_{c}"] for c in columns})
        out.append(rows)
    for r in out[1]:
        r["iterations_to_target"] = "" if r["iterations_to_target"] == -1 else r["iterations_to_target"]
        r["final_accuracy"] = "nan" if r["final_accuracy"] != r["final_accuracy"] else r["final_accuracy"]
    return out[0], out[1]


def model_versions() -> dict:
    return model_versions_of("schedule", "message_model", train_system=3)


KIND = Kind(name="train_system", summary=f"one training-communication system ({', '.join(SYSTEMS)}) "
            "timed on a workload and network, with its convergence on digits (as hw-models train-system)",
            validate=validate, run=run, model_versions=model_versions)
