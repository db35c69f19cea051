"""Sweep kind ``training``: one training iteration — one workload, one all-reduce algorithm,
one communication scheduling policy — on one network, as ``hw-models train`` runs each of
its runs (docs/training.md).

A point holds the experiment config's sections (``network``, ``router``, ``nic``,
``run.seed``; docs/allreduce.md) and a ``training`` table of the point's own keys:
``workload`` (a built-in name, or a .json/.toml layer file), ``algorithm`` (one name,
aliases taken), ``policy`` (one of the scheduling policies), ``batch`` (samples per worker,
default 16), ``device`` (default ``multitree-node``), ``engine`` (default ``closed-form``),
``model`` (``message`` or ``flit``, default message), ``iterations`` (default 3) and the
policy's own option, if any (``fusion_threshold``, ``slice_bytes``, ``partition_bytes``,
``dear_threshold``: bytes or strings such as ``"8MiB"``; ``strict``, ``fused``: booleans).

Its metrics are the run's row of ``hw-models train`` (seconds per iteration, compute,
communication, exposed communication, overlap, idle, collectives and bytes per iteration;
``policy_label``, the policy with its options as the command names it) and, as there, the reduction against ring under the same policy: ``ring_iteration_s`` and
``reduction_vs_ring_pct`` (ring is simulated alongside; for ring itself 0).
"""

from __future__ import annotations

import hashlib

from hw_models.sweep.kinds import (Kind, algorithm_of, boolean_of, choice_of, integer_of, model_versions_of, size_of,
                                   table_of)
from hw_models.training.compute import DEFAULT_DEVICE
from noc.base.errors import ConfigError, HwModelsError

OPTION_KEYS = {"fusion_threshold": "fusion_threshold_bytes", "slice_bytes": "slice_bytes",
               "partition_bytes": "partition_bytes", "dear_threshold": "dear_threshold_bytes",
               "strict": "strict", "fused": "fused"}
POINT_KEYS = ("workload", "algorithm", "policy", "batch", "device", "engine", "model", "iterations", *OPTION_KEYS)
DEFAULTS = {"batch": 16, "device": DEFAULT_DEVICE, "engine": "closed-form", "model": "message", "iterations": 3}
RING = "ring"


def _key(name: str) -> str:
    return f"training.{name}"


def _options(tr: dict, source: str) -> dict:
    """The policy options the point gives, by the policies' own option names (bytes parsed)."""
    out = {}
    for key, opt in OPTION_KEYS.items():
        if key in ("strict", "fused") and key in tr:
            out[opt] = boolean_of(tr[key], source, _key(key))
        elif key in tr:
            out[opt] = size_of(tr[key], source, _key(key), "bytes (an integer) or a string such as '8MiB'", zero=True)
    return out


def _policy(name, options: dict, source: str):
    from hw_models.training import endtoend as e2e

    if not isinstance(name, str) or name.strip().lower() in ("all", "") or "," in name:
        raise ConfigError(f"{source}: key '{_key('policy')}' = {name!r}: one policy per point (allowed: "
                          f"{', '.join(e2e.POLICIES)}); sweep over policies with an axis")
    flags = {opt: _key(k) for k, opt in OPTION_KEYS.items()}
    flags["policy"] = _key("policy")
    try:
        return e2e.make_policies(name, options, flags)[0]
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def validate(point: dict, source: str = "point") -> dict:
    from hw_models.config import ExperimentConfig
    from hw_models.experiment import check_model_network
    from hw_models.training import endtoend as e2e
    from hw_models.training.compute import ENGINES, get_device
    from nic.allreduce import MODELS
    from noc.base.config import validate as validate_model

    tr = {**DEFAULTS, **table_of(point, "training", source, POINT_KEYS)}
    for key in ("workload", "algorithm", "policy"):
        if key not in tr:
            raise ConfigError(f"{source}: missing key '{_key(key)}'")
    algorithm = algorithm_of(tr["algorithm"], source, _key("algorithm"))
    if not isinstance(tr["workload"], str) or "," in tr["workload"] or tr["workload"].strip().lower() == "all":
        raise ConfigError(f"{source}: key '{_key('workload')}' = {tr['workload']!r}: one workload per point")
    try:
        work = e2e.resolve_workloads(tr["workload"], flag=_key("workload"))[0]
    except (ConfigError, HwModelsError) as exc:
        raise ConfigError(f"{source}: {exc}") from None
    for key, low in (("batch", 1), ("iterations", 2)):
        integer_of(tr[key], source, _key(key), low)
    try:
        get_device(tr["device"])
    except ConfigError as exc:
        raise ConfigError(f"{source}: key '{_key('device')}' = {tr['device']!r}: {exc}") from None
    choice_of(tr["engine"], ENGINES, source, _key("engine"))
    choice_of(tr["model"], MODELS, source, _key("model"))
    options = _options(tr, source)
    policy = _policy(tr["policy"], options, source)
    data = {k: v for k, v in point.items() if k != "training"}
    cfg = validate_model(data, ExperimentConfig, source=source)
    exp = _experiment(cfg, source, algorithm)
    check_model_network(exp, cfg.nic.design, tr["model"], source)
    return {"config": cfg.model_dump(mode="json"), "topology": exp.topology.name, "workload": work.name,
            "workload_spec": tr["workload"],  # a layer file's contents are part of the key, by their hash
            "workload_hash": hashlib.sha256(repr(work).encode()).hexdigest()[:16], "algorithm": algorithm, "policy": policy.name, "options": options,
            **{k: tr[k] for k in DEFAULTS}}


def _experiment(cfg, source: str, algorithm: str):
    """The experiment of ``cfg`` for ``algorithm`` (and ring, the baseline), checked as
    ``hw-models train`` checks it."""
    from hw_models.experiment import resolve_experiment

    algos = [algorithm] if algorithm == RING else [RING, algorithm]
    return resolve_experiment(cfg, source, designs=[cfg.nic.design], algorithms=algos)


# The communication model of each (config, model, algorithm) this process has run, kept
# across points: a size is simulated once per algorithm, as `hw-models train` always did.
_COMMS: dict[tuple[str, str, str], object] = {}


def _comm_key(resolved: dict, algorithm: str) -> tuple[str, str, str]:
    from hw_models.sweep.store import canonical_json

    return canonical_json(resolved["config"]), resolved["model"], algorithm


def _comm(resolved: dict, algorithm: str):
    key = _comm_key(resolved, algorithm)
    if key not in _COMMS:
        from hw_models.config import ExperimentConfig
        from hw_models.experiment import resolve_experiment
        from hw_models.training import endtoend as e2e
        from noc.base.config import validate as validate_model

        cfg = validate_model(resolved["config"], ExperimentConfig, source="point")
        exp = resolve_experiment(cfg, "point", designs=[cfg.nic.design], algorithms=[algorithm])
        if len(_COMMS) >= 32:
            _COMMS.clear()
        _COMMS[key] = e2e.nic_comms(exp, cfg.nic.design, resolved["model"])[algorithm]
    return _COMMS[key]


def forget_comms() -> None:
    """Drop the communication models kept so far (a command starts afresh: its count of the
    sizes it simulated is its own)."""
    _COMMS.clear()


def simulations(resolved: dict, algorithm: str) -> dict:
    """How many all-reduce, reduce-scatter and all-gather sizes this process has simulated
    for ``algorithm`` on the network of ``resolved`` (a point) since :func:`forget_comms`,
    by kind (all 0 when none)."""
    comm = _COMMS.get(_comm_key(resolved, algorithm))
    if comm is None:
        from hw_models.training.comm import KINDS

        return {k: 0 for k in KINDS}
    return comm.cache_info()


def _simulate(resolved: dict, algorithm: str):
    from hw_models.training import endtoend as e2e
    from hw_models.training.compute import get_device
    from hw_models.training.timeline import simulate

    works = e2e.resolve_workloads(resolved["workload_spec"])
    layers = e2e.workload_costs(works, resolved["batch"], get_device(resolved["device"]), resolved["engine"])
    policy = e2e.make_policies(resolved["policy"], resolved["options"])[0]
    return simulate(layers[resolved["workload"]], _comm(resolved, algorithm), policy,
                    iterations=resolved["iterations"])


def timeline(resolved: dict):
    """The :class:`~hw_models.training.timeline.TimelineResult` of the point (its algorithm's
    run; the same figures as its metrics), e.g. for a trace or a Gantt chart."""
    return _simulate(resolved, resolved["algorithm"])


def run(resolved: dict) -> dict:
    from hw_models.training import endtoend as e2e

    algorithm = resolved["algorithm"]
    mine = e2e.TrainRun.from_result(resolved["workload"], algorithm, _simulate(resolved, algorithm))
    ring = mine if algorithm == RING else e2e.TrainRun.from_result(resolved["workload"], RING,
                                                                    _simulate(resolved, RING))
    m = {k: v for k, v in mine.row().items() if k not in ("workload", "algorithm", "policy")}
    m["policy_label"] = mine.policy  # with its options, as hw-models train names it (e.g. "p3 (1 MiB slices)")
    m["ring_iteration_s"] = ring.iteration_s
    m["reduction_vs_ring_pct"] = e2e.reduction_percent(mine.iteration_s, ring.iteration_s)
    return m


def train_run(resolved: dict, metrics: dict):
    """The :class:`hw_models.training.endtoend.TrainRun` a point's metrics hold."""
    from hw_models.training.endtoend import TrainRun

    fields = {k: metrics[k] for k in TrainRun.__dataclass_fields__ if k not in ("workload", "algorithm", "policy")}
    return TrainRun(resolved["workload"], resolved["algorithm"], metrics["policy_label"], **fields)


def model_versions() -> dict:
    return model_versions_of("message_model", "flit_model", "schedule", training=1)


KIND = Kind(name="training", summary="one training iteration: workload, all-reduce algorithm and scheduling policy "
            "on one network, with the reduction against ring (as hw-models train runs it)",
            validate=validate, run=run, model_versions=model_versions)
