"""Parsing of the command-line flags the commands share, below the commands (library code
and the commands both read them): the NIC flags of the commands that run all-reduces
(``allreduce``, ``train``) and what they ask of the config's ``[nic]`` table, the
fixed-point format of ``maddpg train`` and ``maddpg accel``, lists of integers."""

from __future__ import annotations

import re
from typing import Optional

from nic.variants import DESIGNS, VARIANT_NIC, VARIANTS
from noc.base.errors import HwModelsError


def nic_choices(nic, variant, lockstep=None, step_priority=None, flow_control=None, packet_bytes=None, reduction=None,
                nis=None, designs=(*DESIGNS, "both")):
    """What the NIC flags ask for: the design choice (None: the config's; codesigned,
    baseline or both), the [nic] keys they set (dotted key -> value) with the flag that set
    each, and the NI count (a --variant sets it). Contradictions between flags are errors
    naming both; the values are checked with the config (hw_models.experiment). ``designs``:
    the --nic values the command takes."""
    overrides: dict = {}
    flags: dict = {}

    def put(key, value, flag):
        overrides[f"nic.{key}"], flags[f"nic.{key}"] = value, flag

    design = None
    if variant is not None:
        key = variant.strip().lower()
        if key not in VARIANTS:
            raise HwModelsError(f"--variant {variant!r}: choose one of {', '.join(VARIANTS)}")
        v = VARIANTS[key]
        if nis is not None and nis != v["nis"]:
            raise HwModelsError(f"--nis {nis} contradicts --variant {key} ({v['nis']} NI(s) per node)")
        nis = v["nis"]
        for k, val in {**{k: val for k, val in VARIANT_NIC.items() if k != "design"},
                       "flow_control": v["flow_control"]}.items():
            put(k, val, f"--variant {key}")
        design = VARIANT_NIC["design"]
    if nic is not None and nic not in designs:
        raise HwModelsError(f"--nic {nic!r}: choose {', '.join(designs[:-1])} or {designs[-1]}")
    design_flag = "--nic" if nic is not None else f"--variant {variant}"
    if lockstep is not None:
        implied = "codesigned" if lockstep else "baseline"
        if nic is not None and nic != implied:
            raise HwModelsError(f"--{'' if lockstep else 'no-'}lockstep contradicts --nic {nic} (lockstep is the "
                                "co-designed NIC's, send-when-ready the baseline's)")
        design_flag = "--lockstep" if lockstep else "--no-lockstep"
        nic = implied
    design = nic or design
    if design in DESIGNS:
        put("design", design, design_flag)
    if step_priority is not None:
        put("step_priority", step_priority, "--step-priority" if step_priority else "--no-step-priority")
    if flow_control is not None:
        if flow_control not in ("bulk", "packet"):
            raise HwModelsError(f"--flow-control {flow_control!r}: choose bulk or packet")
        put("flow_control", flow_control, "--flow-control")
    if packet_bytes is not None:
        put("packet_bytes", packet_bytes, "--packet-bytes")
    if reduction is not None:
        if reduction not in ("free", "chunk", "stream"):
            raise HwModelsError(f"--reduction {reduction!r}: choose free, chunk or stream")
        put("reduction", reduction, "--reduction")
    return design, overrides, flags, nis


def parse_fixed_point(text: Optional[str]) -> tuple[int, int]:
    """``"16.10"`` -> (16, 10); None -> (0, 0), float32."""
    if text is None:
        return 0, 0
    parts = text.split(".")
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):
        raise HwModelsError(f"--fixed-point {text!r}: expected BITS.FRAC, e.g. 16.10 (16-bit words, 10 fraction bits)")
    bits, frac = int(parts[0]), int(parts[1])
    if not 2 <= bits <= 32 or frac >= bits:
        raise HwModelsError(f"--fixed-point {text!r}: need 2 <= BITS <= 32 and FRAC < BITS")
    return bits, frac


def parse_int_list(text: str, flag: str, lo: Optional[int] = None, hi: Optional[int] = None) -> list[int]:
    """Comma-separated integers (ASCII digits; empty parts skipped), each in ``lo``..``hi``
    where given, duplicates dropped (first occurrence kept); errors name ``flag``."""

    from noc.base.errors import ConfigError

    allowed = "comma-separated integers" + (f" in {lo}..{hi}" if hi is not None else
                                            f" >= {lo}" if lo is not None else "")
    parts = [x.strip() for x in str(text).split(",") if x.strip()]
    for x in parts:  # ASCII digits: int() also takes '４'
        if not re.fullmatch(r"[+-]?[0-9]{1,18}", x) or (lo is not None and int(x) < lo) or (hi is not None
                                                                                            and int(x) > hi):
            raise ConfigError(f"{flag} {text!r}: must be {allowed} ({x!r} is not)")
    if not parts:
        raise ConfigError(f"{flag} {text!r}: must be {allowed} (none given)")
    return list(dict.fromkeys(int(x) for x in parts))


def flag_overlay(*, topology=None, nis=None, algorithms=None, nic=None, variant=None, lockstep=None,
                 step_priority=None, flow_control=None, packet_bytes=None, reduction=None, sizes=None, seed=None,
                 designs=(*DESIGNS, "both")):
    """The flags the commands that run all-reduces share (``allreduce``, ``demo``, ``train``),
    put into the config keys they stand for: (the --nic design choice or None, the algorithm
    names asked for or None, overrides: dotted key -> value, flags: dotted key -> the flag
    that set it, keys to drop). The values are checked with the config
    (:func:`hw_models.experiment.config_with_flags`), so errors name the flag."""
    from nic.collectives import algorithm_name

    if topology is not None and not topology.strip():
        raise HwModelsError("--topology is empty; give a spec such as torus:4x4")
    if algorithms is not None and not algorithms.replace(",", "").strip():
        raise HwModelsError(f"--algorithms {algorithms!r} names no algorithm")
    names = None if algorithms is None else list(dict.fromkeys(algorithm_name(a) for a in algorithms.split(",")
                                                               if a.strip()))
    design, overrides, flags, nis = nic_choices(nic, variant, lockstep, step_priority, flow_control, packet_bytes,
                                                reduction, nis, designs)
    drop: tuple[str, ...] = ()
    if topology is not None:  # a flag given overrides its key; the config's other keys stand
        overrides["network.topology"], flags["network.topology"] = topology, "--topology"
        if re.search(r":c[0-9]+$", topology.strip().lower()):  # the spec gives the NI count too (torus:4x4:c4)
            drop = ("network.nis_per_node",)
    if nis is not None:  # --nis, or the NI count of a --variant
        overrides["network.nis_per_node"], flags["network.nis_per_node"] = nis, "--nis"
    if names is not None:  # checked by algorithm_name (it takes aliases), named as the flag
        flags["allreduce.algorithms"] = "--algorithms"
    for key, flag, value in (("allreduce.sizes", "--sizes", sizes), ("run.seed", "--seed", seed)):
        if value is not None:
            overrides[key], flags[key] = value, flag
    return design, names, overrides, flags, drop
