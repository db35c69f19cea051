"""The NIC flags of the commands that run all-reduces (``allreduce``, ``train``): what they
ask of the config's ``[nic]`` table."""

from __future__ import annotations

from noc.errors import HwModelsError


def nic_choices(nic, variant, lockstep=None, step_priority=None, flow_control=None, packet_bytes=None, reduction=None,
                nis=None, designs=("codesigned", "baseline", "both")):
    """What the NIC flags ask for: the design choice (None: the config's; codesigned,
    baseline or both), the [nic] keys they set (dotted key -> value) with the flag that set
    each, and the NI count (a --variant sets it). Contradictions between flags are errors
    naming both; the values are checked with the config (hw_models.experiment). ``designs``:
    the --nic values the command takes."""
    from nic.allreduce import VARIANT_NIC, VARIANTS

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
    if design in ("codesigned", "baseline"):
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
