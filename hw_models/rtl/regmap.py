"""The NIC scheduler's AXI-Lite register map (rtl/nic_regs.v): the one description of it.

The register table in docs/rtl.md is :func:`markdown_table` (a test checks they are the
same text), the offsets in rtl/nic_regs.v are checked against :data:`REGISTERS` by a test,
and the cocotb benches pack and unpack register values with :func:`pack` and :func:`unpack`.

Registers are 32 bits wide at 4-byte-aligned byte offsets. Access: ``RW`` read/write,
``RO`` read-only (writes ignored), ``W1C`` write 1 to clear (sticky flags), ``WO``
write-only command (reads 0; a 1 acts once). An address that is not in the map answers
``SLVERR`` (reads return 0, writes change nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Magic value of the ID register: "NS" (NIC scheduler), register map version 1.
ID_VALUE = 0x4E53_0001


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    reset: int
    meaning: str

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb

    def bits(self) -> str:
        return f"[{self.lsb}]" if self.width == 1 else f"[{self.lsb + self.width - 1}:{self.lsb}]"


@dataclass(frozen=True)
class Register:
    offset: int
    name: str
    access: str  # RW, RO, W1C, WO
    fields: tuple[Field, ...]
    meaning: str

    @property
    def reset(self) -> int:
        return sum(f.reset << f.lsb for f in self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name!r}; fields are {', '.join(f.name for f in self.fields)}")


# Entry word layouts, shared by the staging registers (written) and the read-back (read)
_W0 = (Field("op", 0, 2, 0, "0 REDUCE, 1 GATHER, 2 RECV (3 is refused: a bad load)"),
       Field("dep_op", 2, 1, 0, "which messages the entry counts: 0 REDUCE, 1 GATHER"),
       Field("src_chk", 3, 1, 0, "1: messages the entry counts must come from `src`"),
       Field("dep_count", 4, 8, 0, "messages to wait for (low CNT_W bits used)"),
       Field("step", 12, 16, 0, "schedule step (low STEP_W bits used)"))
_W1 = (Field("flow", 0, 16, 0, "flow id (low FLOW_W bits used)"),
       Field("peer", 16, 16, 0, "destination node (low NODE_W bits used)"))
_W2 = (Field("len", 0, 32, 0, "message length in elements (low LEN_W bits used)"),)
_W3 = (Field("src", 0, 16, 0, "expected source node (low NODE_W bits used)"),)

#: Interrupt flag bits (IRQ_STATUS, IRQ_ENABLE).
FLAGS = (Field("done", 0, 1, 0, "the schedule finished (`done` rose)"),
         Field("unexpected", 1, 1, 0, "a message arrived that no entry needs"),
         Field("wrong_src", 2, 1, 0, "a message arrived from another source than its checking entry expects"),
         Field("timeout", 3, 1, 0, "TIMEOUT cycles running without progress (send, receive, NI done)"))

REGISTERS: tuple[Register, ...] = (
    Register(0x00, "ID", "RO", (Field("id", 0, 32, ID_VALUE, "0x4E530001: NIC scheduler, map version 1"),),
             "identifies the block"),
    Register(0x04, "CONFIG", "RO", (Field("depth", 0, 16, 0, "DEPTH (table entries)"),
                                    Field("nis", 16, 8, 0, "NIS (NIs, receive ports)")),
             "the HDL parameters (reset value: as built)"),
    Register(0x08, "CTRL", "WO", (Field("start", 0, 1, 0, "1: start running the loaded table"),
                                  Field("clear", 1, 1, 0, "1: invalidate the table, zero errors and IRQ_STATUS")),
             "commands (one-cycle pulses to the scheduler)"),
    Register(0x0C, "STATUS", "RO", (Field("running", 0, 1, 0, "the schedule is running"),
                                    Field("done", 1, 1, 0, "the schedule finished"),
                                    Field("err", 2, 1, 0, "an error happened since reset/clear"),
                                    Field("send_valid", 3, 1, 0, "a send request is offered"),
                                    Field("step", 16, 16, 0, "the active step")),
             "scheduler state"),
    Register(0x10, "IRQ_STATUS", "W1C", FLAGS, "sticky event flags; `irq` = OR of IRQ_STATUS & IRQ_ENABLE"),
    Register(0x14, "IRQ_ENABLE", "RW", tuple(Field(f.name, f.lsb, 1, 0, "1: this flag raises `irq`") for f in FLAGS),
             "interrupt enable mask"),
    Register(0x18, "TIMEOUT", "RW", (Field("cycles", 0, 32, 0, "cycles without progress that are a timeout; 0 = off "
                                                              "(low TMO_W bits used)"),),
             "timeout"),
    Register(0x1C, "ERR_COUNT", "RO", (Field("count", 0, 32, 0, "errors since reset/clear, saturating (ERR_W bits)"),),
             "all errors: unexpected, wrong source, timeout, spurious NI done, bad load"),
    Register(0x20, "ERR_INFO", "RO", (Field("src", 0, 16, 0, "source of the first unexpected message"),
                                      Field("flow", 16, 16, 0, "flow of the first unexpected message")),
             "first unexpected message"),
    Register(0x24, "NI_BUSY", "RO", (Field("busy", 0, 16, 0, "bit i: NI i is sending"),), "NIs sending"),
    Register(0x30, "ENTRY_ADDR", "RW", (Field("addr", 0, 16, 0, "table address for ENTRY_CMD (low ADDR_W bits "
                                                               "used)"),),
             "entry address"),
    Register(0x34, "ENTRY_W0", "RW", _W0, "entry to load: op, dep_op, src_chk, dep_count, step"),
    Register(0x38, "ENTRY_W1", "RW", _W1, "entry to load: flow, peer"),
    Register(0x3C, "ENTRY_W2", "RW", _W2, "entry to load: len"),
    Register(0x40, "ENTRY_W3", "RW", _W3, "entry to load: expected source"),
    Register(0x44, "ENTRY_CMD", "WO", (Field("load", 0, 1, 0, "1: load ENTRY_W0..W3 into entry ENTRY_ADDR"),
                                       Field("read", 1, 1, 0, "1: read entry ENTRY_ADDR into RD_W0..W3"),
                                       Field("inc", 2, 1, 0, "1: then ENTRY_ADDR += 1")),
             "entry commands"),
    Register(0x48, "RD_W0", "RO", _W0 + (Field("valid", 28, 1, 0, "the entry is loaded"),
                                         Field("issued", 29, 1, 0, "the entry was sent (or retired)")),
             "entry read back: as ENTRY_W0, and its state"),
    Register(0x4C, "RD_W1", "RO", _W1, "entry read back: flow, peer"),
    Register(0x50, "RD_W2", "RO", _W2, "entry read back: len"),
    Register(0x54, "RD_W3", "RO", _W3 + (Field("count", 16, 8, 0, "messages counted so far"),),
             "entry read back: expected source, arrival count"),
)

BY_NAME = {r.name: r for r in REGISTERS}


def pack(reg: str, **values: int) -> int:
    """The register value with these fields (others 0); a value wider than its field is refused."""
    r = BY_NAME[reg]
    v = 0
    for name, x in values.items():
        f = r.field(name)
        if not 0 <= int(x) < (1 << f.width):
            raise ValueError(f"{reg}.{name} = {x} does not fit {f.width} bits")
        v |= int(x) << f.lsb
    return v


def unpack(reg: str, value: int) -> dict[str, int]:
    """Every field of ``reg`` in ``value``."""
    return {f.name: (int(value) >> f.lsb) & ((1 << f.width) - 1) for f in BY_NAME[reg].fields}


def entry_words(op: int, flow: int, peer: int, step: int, length: int, dep_op: int, dep_count: int,
                src: int = 0, src_chk: int = 0) -> dict[str, int]:
    """The four staging register values of one table row."""
    return {"ENTRY_W0": pack("ENTRY_W0", op=op, dep_op=dep_op, src_chk=src_chk, dep_count=dep_count, step=step),
            "ENTRY_W1": pack("ENTRY_W1", flow=flow, peer=peer),
            "ENTRY_W2": pack("ENTRY_W2", len=length),
            "ENTRY_W3": pack("ENTRY_W3", src=src)}


def markdown_table() -> str:
    """The register table of docs/rtl.md: one line per field."""
    lines = ["| offset | register | access | bits | field | reset | meaning |", "|---|---|---|---|---|---|---|"]
    for r in REGISTERS:
        for k, f in enumerate(r.fields):
            head = (f"0x{r.offset:02X}", r.name, r.access) if k == 0 else ("", "", "")
            reset = "as built" if (r.name == "CONFIG") else f"0x{f.reset:X}"
            lines.append(f"| {head[0]} | {head[1]} | {head[2]} | {f.bits()} | {f.name} | {reset} | {f.meaning} |")
    return "\n".join(lines)
