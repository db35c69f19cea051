"""FPGA parts: the resources a design may use.

Counts are the vendor's product-table figures for the devices on these boards (BRAM in 36 Kb
blocks, URAM in 288 Kb blocks). ``usable_fraction`` (a design assumption, :class:`AccelConfig`)
keeps back what the platform shell, the PCIe DMA and routing take.
"""

from __future__ import annotations

from dataclasses import dataclass

from noc.base.errors import ConfigError

RESOURCES = ("dsp", "bram36", "uram", "lut", "ff")


@dataclass(frozen=True)
class Part:
    """An FPGA device's resources and the card's off-chip memory bandwidth."""

    name: str
    description: str
    dsp: int
    bram36: int
    uram: int
    lut: int
    ff: int
    card_memory_gb_per_s: float  # DDR4 / HBM2 (Alveo) or the PS DDR4 (Zynq) the host DMA writes to

    def amount(self, resource: str) -> int:
        return int(getattr(self, resource))


PARTS: dict[str, Part] = {
    "u250": Part("u250", "Alveo U250 (XCU250, 4x DDR4-2400)", dsp=12_288, bram36=2_688, uram=1_280, lut=1_728_000,
                 ff=3_456_000, card_memory_gb_per_s=77.0),
    "u55c": Part("u55c", "Alveo U55C (XCU55C, 16 GB HBM2)", dsp=9_024, bram36=2_016, uram=960, lut=1_304_000,
                 ff=2_607_000, card_memory_gb_per_s=460.0),
    "zcu104": Part("zcu104", "Zynq UltraScale+ ZCU104 (XCZU7EV, PS DDR4)", dsp=1_728, bram36=312, uram=96, lut=230_400,
                   ff=460_800, card_memory_gb_per_s=19.2),
}


def get_part(name: str) -> Part:
    key = str(name).strip().lower()
    if key not in PARTS:
        raise ConfigError(f"part {name!r} is unknown; allowed: {', '.join(PARTS)}")
    return PARTS[key]
