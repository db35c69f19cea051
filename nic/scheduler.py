"""Cycle model of the co-designed NIC scheduler — exactly docs/nic_scheduler.md.

The state of one scheduler is two int64 arrays, ``tab[DEPTH, N_COLS]`` (the table) and
``regs[N_REGS]``; inputs and outputs are int64 vectors laid out by the index constants
below. Two Numba functions implement the contract:

* :func:`sched_outputs` — the outputs during a cycle (a function of state only);
* :func:`sched_edge` — the state after the rising edge, given the cycle's inputs.

Both are ``@njit`` so a network co-simulation kernel can call them for every node, and
:class:`SchedulerModel` steps them one cycle at a time from Python with named signals
(the model-vs-RTL regression drives it that way).
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit

from noc.base.errors import ConfigError

# Bumped whenever the contract's cycle behaviour changes (the flit-level co-simulation runs
# this model, so its co-designed results change with it).
# 2: the send request is a register (AXI-Stream source): offered one cycle after the entry is
#    eligible, held until taken.
SCHEDULER_VERSION = 2
# (version 2 also gained the expected-source check and the timeout: with both off — every
# entry's src_chk 0, timeout_cycles 0 — its cycle behaviour is unchanged. The pipeline
# parameter PIPE, docs/nic_scheduler.md "Pipelined variant", changes nothing at its default 0.)

# ---- op codes ------------------------------------------------------------------------
OP_REDUCE, OP_GATHER, OP_RECV = 0, 1, 2
STATE_IDLE, STATE_RUN, STATE_DONE = 0, 1, 2

# ---- table columns -------------------------------------------------------------------
C_VALID, C_OP, C_FLOW, C_PEER, C_STEP, C_LEN, C_DEP_OP, C_DEP_COUNT, C_COUNT, C_ISSUED, C_SRC, C_SRC_CHK = range(12)
# PIPE 1 only: the entry was an eligible REDUCE/GATHER entry during the last cycle (and not
# loaded at its edge): the registered eligibility the send selection reads
C_ELIG = 12
N_COLS = 13

# ---- registers -----------------------------------------------------------------------
(R_STATE, R_ACTIVE_STEP, R_NI_BUSY, R_ERR, R_ERR_COUNT, R_ERR_SRC, R_ERR_FLOW, R_ERR_SEEN,
 R_RD_VALID, R_RD_ENTRY_VALID, R_RD_ISSUED, R_RD_OP, R_RD_FLOW, R_RD_PEER, R_RD_STEP, R_RD_LEN,
 R_RD_DEP_OP, R_RD_DEP_COUNT, R_RD_COUNT,
 # the send request register (docs/nic_scheduler.md, "The send request")
 R_OUT_VALID, R_OUT_ENTRY, R_OUT_NI, R_OUT_OP, R_OUT_FLOW, R_OUT_PEER, R_OUT_LEN, R_OUT_STEP,
 # error events of the last edge, the timeout counter, the read port's source fields
 R_EV_UNEXP, R_EV_WRONG_SRC, R_EV_TIMEOUT, R_TMO_CNT, R_RD_SRC, R_RD_SRC_CHK,
 # PIPE 1 only: the last edge's receive checks, applied at the next edge (unexpected and
 # wrong-source messages, the first unexpected one's source and flow, whether there was one)
 R_RX_UNEXP, R_RX_WRONG, R_RX_SRC, R_RX_FLOW, R_RX_FIRST) = range(38)
N_REGS = 38

# ---- parameter vector ----------------------------------------------------------------
(P_DEPTH, P_NIS, P_FLOW_W, P_NODE_W, P_STEP_W, P_LEN_W, P_CNT_W, P_ERR_W, P_ADDR_W, P_TMO_W, P_PIPE) = range(11)
N_PARAMS = 11

MAX_NIS = 16  # NIs one scheduler serves (the NIS parameter's range)

# ---- inputs (header; then recv_flow[NIS], recv_op[NIS], recv_src[NIS]) ---------------
(I_RST, I_CLEAR, I_LOAD_VALID, I_LOAD_ADDR, I_LOAD_OP, I_LOAD_FLOW, I_LOAD_PEER, I_LOAD_STEP,
 I_LOAD_LEN, I_LOAD_DEP_OP, I_LOAD_DEP_COUNT, I_RD_EN, I_RD_ADDR, I_START, I_SEND_READY,
 I_NI_DONE, I_RECV_VALID, I_LOAD_SRC, I_LOAD_SRC_CHK, I_TIMEOUT_CYCLES) = range(20)
N_IN_HEADER = 20

# ---- outputs -------------------------------------------------------------------------
(O_SEND_VALID, O_SEND_ENTRY, O_SEND_OP, O_SEND_FLOW, O_SEND_PEER, O_SEND_LEN, O_SEND_STEP,
 O_SEND_NI, O_STEP, O_NI_BUSY, O_RUNNING, O_DONE, O_ERR, O_ERR_COUNT, O_ERR_SRC, O_ERR_FLOW,
 O_RD_VALID, O_RD_ENTRY_VALID, O_RD_ISSUED, O_RD_OP, O_RD_FLOW, O_RD_PEER, O_RD_STEP, O_RD_LEN,
 O_RD_DEP_OP, O_RD_DEP_COUNT, O_RD_COUNT, O_EV_UNEXP, O_EV_WRONG_SRC, O_EV_TIMEOUT, O_RD_SRC,
 O_RD_SRC_CHK) = range(32)
N_OUTS = 32

OUTPUT_NAMES = (
    "send_valid", "send_entry", "send_op", "send_flow", "send_peer", "send_len", "send_step",
    "send_ni", "step", "ni_busy", "running", "done", "err", "err_count", "err_src", "err_flow",
    "rd_valid", "rd_entry_valid", "rd_issued", "rd_op", "rd_flow", "rd_peer", "rd_step", "rd_len",
    "rd_dep_op", "rd_dep_count", "rd_count", "ev_unexp", "ev_wrong_src", "ev_timeout", "rd_src", "rd_src_chk",
)
SCALAR_INPUT_NAMES = (
    "rst", "clear", "load_valid", "load_addr", "load_op", "load_flow", "load_peer", "load_step",
    "load_len", "load_dep_op", "load_dep_count", "rd_en", "rd_addr", "start", "send_ready",
    "ni_done", "recv_valid", "load_src", "load_src_chk", "timeout_cycles",
)


@dataclass(frozen=True)
class SchedulerParams:
    """The scheduler's parameters (docs/nic_scheduler.md, "Parameters")."""

    depth: int = 64
    nis: int = 1
    flow_w: int = 8
    node_w: int = 8
    step_w: int = 8
    len_w: int = 24
    cnt_w: int = 4
    err_w: int = 16
    tmo_w: int = 16
    # pipeline registers (docs/nic_scheduler.md, "Pipelined variant"): 0 the contract as
    # written, 1 registered eligibility (a send one cycle later) and registered receive checks
    # (their errors one edge later); the RTL's SCHED_PIPE
    pipe: int = 0

    _RANGES = {
        "depth": (1, 4096), "nis": (1, MAX_NIS), "flow_w": (1, 16), "node_w": (1, 16), "step_w": (1, 16),
        "len_w": (1, 32), "cnt_w": (1, 8), "err_w": (1, 32), "tmo_w": (1, 32), "pipe": (0, 1),
    }

    def __post_init__(self) -> None:
        for name, (lo, hi) in self._RANGES.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise ConfigError(f"scheduler parameter {name.upper()} = {v!r} is out of range; allowed {lo}..{hi}")

    @property
    def addr_w(self) -> int:
        return max(1, int(self.depth - 1).bit_length())

    @property
    def ni_w(self) -> int:
        return max(1, int(self.nis - 1).bit_length())

    def vector(self) -> np.ndarray:
        return np.array(
            [self.depth, self.nis, self.flow_w, self.node_w, self.step_w, self.len_w, self.cnt_w, self.err_w,
             self.addr_w, self.tmo_w, self.pipe],
            dtype=np.int64,
        )

    def verilog_parameters(self) -> dict[str, int]:
        hdl = {"DEPTH": self.depth, "NIS": self.nis, "FLOW_W": self.flow_w, "NODE_W": self.node_w,
               "STEP_W": self.step_w, "LEN_W": self.len_w, "CNT_W": self.cnt_w, "ERR_W": self.err_w,
               "TMO_W": self.tmo_w}
        if self.pipe:  # named only when set: the default's builds and synthesis keys stay as they were
            hdl["SCHED_PIPE"] = self.pipe
        return hdl


def new_state(params: SchedulerParams) -> tuple[np.ndarray, np.ndarray]:
    """Reset state: an empty table and zero registers."""
    return np.zeros((params.depth, N_COLS), dtype=np.int64), np.zeros(N_REGS, dtype=np.int64)


def new_inputs(params: SchedulerParams) -> np.ndarray:
    return np.zeros(N_IN_HEADER + 3 * params.nis, dtype=np.int64)


# --------------------------------------------------------------------------------------
# The contract
# --------------------------------------------------------------------------------------


def _port_value(name: str, value, width: int) -> int:
    v = int(value)
    if not 0 <= v < (1 << width):
        raise ConfigError(f"scheduler input {name} = {v} does not fit its {width}-bit port (0..{(1 << width) - 1})")
    return v


@njit(cache=True)
def _mask(v, w):
    return v & ((np.int64(1) << w) - 1)


@njit(cache=True)
def sched_outputs(tab, regs, params, out):
    """Fill ``out`` with the outputs during the current cycle (state only)."""
    for k in range(out.shape[0]):
        out[k] = 0
    running = regs[R_STATE] == STATE_RUN
    busy = regs[R_NI_BUSY]
    # the send request register: held until the handshake, payload kept after it
    out[O_SEND_VALID] = regs[R_OUT_VALID]
    out[O_SEND_ENTRY] = regs[R_OUT_ENTRY]
    out[O_SEND_OP] = regs[R_OUT_OP]
    out[O_SEND_FLOW] = regs[R_OUT_FLOW]
    out[O_SEND_PEER] = regs[R_OUT_PEER]
    out[O_SEND_LEN] = regs[R_OUT_LEN]
    out[O_SEND_STEP] = regs[R_OUT_STEP]
    out[O_SEND_NI] = regs[R_OUT_NI]
    out[O_STEP] = regs[R_ACTIVE_STEP]
    out[O_NI_BUSY] = busy
    out[O_RUNNING] = 1 if running else 0
    out[O_DONE] = 1 if regs[R_STATE] == STATE_DONE else 0
    out[O_ERR] = regs[R_ERR]
    out[O_ERR_COUNT] = regs[R_ERR_COUNT]
    out[O_ERR_SRC] = regs[R_ERR_SRC]
    out[O_ERR_FLOW] = regs[R_ERR_FLOW]
    out[O_RD_VALID] = regs[R_RD_VALID]
    out[O_RD_ENTRY_VALID] = regs[R_RD_ENTRY_VALID]
    out[O_RD_ISSUED] = regs[R_RD_ISSUED]
    out[O_RD_OP] = regs[R_RD_OP]
    out[O_RD_FLOW] = regs[R_RD_FLOW]
    out[O_RD_PEER] = regs[R_RD_PEER]
    out[O_RD_STEP] = regs[R_RD_STEP]
    out[O_RD_LEN] = regs[R_RD_LEN]
    out[O_RD_DEP_OP] = regs[R_RD_DEP_OP]
    out[O_RD_DEP_COUNT] = regs[R_RD_DEP_COUNT]
    out[O_RD_COUNT] = regs[R_RD_COUNT]
    out[O_EV_UNEXP] = regs[R_EV_UNEXP]
    out[O_EV_WRONG_SRC] = regs[R_EV_WRONG_SRC]
    out[O_EV_TIMEOUT] = regs[R_EV_TIMEOUT]
    out[O_RD_SRC] = regs[R_RD_SRC]
    out[O_RD_SRC_CHK] = regs[R_RD_SRC_CHK]


# --------------------------------------------------------------------------------------
# The rising edge, one stage per rule of docs/nic_scheduler.md ("What happens at the
# rising edge"); each stage reads the values during the cycle (``Sampled``) and the
# inputs, and writes its part of the state.
# --------------------------------------------------------------------------------------

_stage = njit(cache=True, inline="always")

# The values during the cycle that the edge's rules read (docs/nic_scheduler.md,
# "Combinational view of the state"), sampled before any of them changes the state.
Sampled = namedtuple("Sampled", ("state", "active_step", "busy", "first_pending", "active_pending", "next_step",
                                 "out_valid", "fire", "held", "take_entry", "take_ni"))


@_stage
def _reset(tab, regs, depth):
    """``rst`` or ``clear``: every entry and register back to zero (IDLE, empty request)."""
    for i in range(depth):
        for c in range(N_COLS):
            tab[i, c] = 0
    for r in range(N_REGS):
        regs[r] = 0


@_stage
def _pending(tab, depth, act):
    """``first_pending`` (-1: none) and whether a pending entry has the active step."""
    first_pending = -1
    active_pending = False
    for i in range(depth):
        if tab[i, C_VALID] == 1 and tab[i, C_ISSUED] == 0:
            if first_pending < 0:
                first_pending = i
            if tab[i, C_STEP] == act:
                active_pending = True
    return first_pending, active_pending


@_stage
def _eligible(tab, i, act):
    """Entry ``i`` is pending in the active step with its dependencies arrived (RUN checked
    by the caller)."""
    return (tab[i, C_VALID] == 1 and tab[i, C_ISSUED] == 0 and tab[i, C_STEP] == act
            and tab[i, C_COUNT] >= tab[i, C_DEP_COUNT])


@_stage
def _take(tab, depth, nis, act, busy, held, pipe):
    """``free_ni`` (the lowest NI neither busy nor held) and ``take_entry`` (the lowest
    eligible REDUCE/GATHER entry; PIPE 1: the lowest not issued whose registered
    eligibility is set), -1 each when there is none."""
    take_ni = -1
    for i in range(nis):
        if ((busy | held) >> i) & 1 == 0:
            take_ni = i
            break
    take_entry = -1
    if take_ni >= 0:
        for i in range(depth):
            if pipe:
                if tab[i, C_ELIG] == 1 and tab[i, C_ISSUED] == 0:
                    take_entry = i
                    break
            elif _eligible(tab, i, act) and tab[i, C_OP] != OP_RECV:
                take_entry = i
                break
    return take_entry, take_ni


@_stage
def _sample(tab, regs, params, inp):
    """The values during the cycle (before the edge)."""
    depth = params[P_DEPTH]
    state = regs[R_STATE]
    act = regs[R_ACTIVE_STEP]
    busy = regs[R_NI_BUSY]
    first_pending, active_pending = _pending(tab, depth, act)
    next_step = tab[first_pending, C_STEP] if first_pending >= 0 else 0
    out_valid = regs[R_OUT_VALID]
    fire = out_valid == 1 and inp[I_SEND_READY] != 0
    held = (np.int64(1) << regs[R_OUT_NI]) if out_valid == 1 else np.int64(0)
    take_entry, take_ni = -1, -1
    if state == STATE_RUN and (out_valid == 0 or inp[I_SEND_READY] != 0):
        take_entry, take_ni = _take(tab, depth, params[P_NIS], act, busy, held, params[P_PIPE])
    return Sampled(state, act, busy, first_pending, active_pending, next_step, out_valid, fire, held, take_entry,
                   take_ni)


@_stage
def _read_port(tab, regs, params, inp):
    """Rule 8: ``rd_en`` latches entry ``rd_addr`` as it was during the cycle (zeros past
    DEPTH); ``rd_valid = rd_en``."""
    regs[R_RD_VALID] = 1 if inp[I_RD_EN] != 0 else 0
    if inp[I_RD_EN] == 0:
        return
    a = _mask(inp[I_RD_ADDR], params[P_ADDR_W])
    if a < params[P_DEPTH]:
        regs[R_RD_ENTRY_VALID] = tab[a, C_VALID]
        regs[R_RD_ISSUED] = tab[a, C_ISSUED]
        regs[R_RD_OP] = tab[a, C_OP]
        regs[R_RD_FLOW] = tab[a, C_FLOW]
        regs[R_RD_PEER] = tab[a, C_PEER]
        regs[R_RD_STEP] = tab[a, C_STEP]
        regs[R_RD_LEN] = tab[a, C_LEN]
        regs[R_RD_DEP_OP] = tab[a, C_DEP_OP]
        regs[R_RD_DEP_COUNT] = tab[a, C_DEP_COUNT]
        regs[R_RD_COUNT] = tab[a, C_COUNT]
        regs[R_RD_SRC] = tab[a, C_SRC]
        regs[R_RD_SRC_CHK] = tab[a, C_SRC_CHK]
    else:
        for r in range(R_RD_ENTRY_VALID, R_RD_COUNT + 1):
            regs[r] = 0
        regs[R_RD_SRC] = 0
        regs[R_RD_SRC_CHK] = 0


@_stage
def _register_eligibility(tab, depth, s):
    """PIPE 1: every entry's registered eligibility becomes whether it is an eligible
    REDUCE/GATHER entry during this cycle (a load clears it again: rule 5)."""
    run = s.state == STATE_RUN
    for i in range(depth):
        tab[i, C_ELIG] = 1 if run and _eligible(tab, i, s.active_step) and tab[i, C_OP] != OP_RECV else 0


@_stage
def _retire_recvs(tab, depth, s):
    """Rule 2: in RUN every eligible RECV entry becomes issued (they need no NI)."""
    if s.state != STATE_RUN:
        return
    for i in range(depth):
        if _eligible(tab, i, s.active_step) and tab[i, C_OP] == OP_RECV:
            tab[i, C_ISSUED] = 1


@_stage
def _send_request(tab, regs, s):
    """Rule 1: the handshake makes the held NI busy; ``take`` fills the request register
    with ``take_entry`` on ``free_ni`` and issues the entry; else a handshake empties it
    (the payload holds). Returns the NIs busy after the handshake."""
    busy = s.busy | s.held if s.fire else s.busy
    e = s.take_entry
    if e >= 0:
        regs[R_OUT_VALID] = 1
        regs[R_OUT_ENTRY] = e
        regs[R_OUT_NI] = s.take_ni
        regs[R_OUT_OP] = tab[e, C_OP]
        regs[R_OUT_FLOW] = tab[e, C_FLOW]
        regs[R_OUT_PEER] = tab[e, C_PEER]
        regs[R_OUT_LEN] = tab[e, C_LEN]
        regs[R_OUT_STEP] = s.active_step
        tab[e, C_ISSUED] = 1
    elif s.fire:
        regs[R_OUT_VALID] = 0
    return busy


@_stage
def _ni_completion(regs, nis, done_mask, busy, busy_before):
    """Rule 3: ``ni_done[i]`` frees busy NI i; on an idle NI it is an error (a spurious
    done). Returns the errors."""
    errors = 0
    for i in range(nis):
        if (done_mask >> i) & 1:
            if (busy_before >> i) & 1:
                busy &= ~(np.int64(1) << i)
            else:
                errors += 1
    regs[R_NI_BUSY] = busy
    return errors


@_stage
def _port_matches(inp, nis, fw, p, flow, dep_op):
    """Whether receive port ``p`` holds a message of ``flow`` with op ``dep_op``."""
    return (_mask(inp[N_IN_HEADER + p], fw) == flow and (inp[N_IN_HEADER + nis + p] & 1) == dep_op)


@_stage
def _wrong_source(tab, depth, f, o, s):
    """A checking entry of the message's flow and op expects another source than ``s``."""
    for i in range(depth):
        if (tab[i, C_VALID] == 1 and tab[i, C_FLOW] == f and tab[i, C_DEP_OP] == o
                and tab[i, C_SRC_CHK] == 1 and tab[i, C_SRC] != s):
            return True
    return False


@_stage
def _needed(tab, inp, depth, nis, fw, rv, p, f, o):
    """Some entry matching port ``p`` still needs it after the lower ports' matches."""
    for i in range(depth):
        if tab[i, C_VALID] == 1 and tab[i, C_FLOW] == f and tab[i, C_DEP_OP] == o:
            prior = 0
            for q in range(p):
                if (rv >> q) & 1 and _port_matches(inp, nis, fw, q, f, o):
                    prior += 1
            if tab[i, C_COUNT] + prior < tab[i, C_DEP_COUNT]:
                return True
    return False


@_stage
def _count_receives(tab, inp, depth, nis, fw, rv):
    """Every valid entry's count grows by the ports it matches, up to its dep_count."""
    for i in range(depth):
        if tab[i, C_VALID] == 1:
            m = 0
            for p in range(nis):
                if (rv >> p) & 1 and _port_matches(inp, nis, fw, p, tab[i, C_FLOW], tab[i, C_DEP_OP]):
                    m += 1
            if m > 0:
                c = tab[i, C_COUNT] + m
                tab[i, C_COUNT] = c if c < tab[i, C_DEP_COUNT] else tab[i, C_DEP_COUNT]


@_stage
def _receives(tab, regs, params, inp):
    """Rule 4: each valid port's message is checked (unexpected: no entry needs it;
    wrong source), then counted. Returns (unexpected messages, wrong-source messages,
    whether there was an unexpected one, the lowest port's source and flow)."""
    depth = params[P_DEPTH]
    nis = params[P_NIS]
    fw = params[P_FLOW_W]
    rv = inp[I_RECV_VALID]
    n_unexp = 0
    n_wrong = 0
    first = 0
    first_src = 0
    first_flow = 0
    if rv & ((np.int64(1) << nis) - 1) == 0:
        return n_unexp, n_wrong, first, first_src, first_flow
    for p in range(nis):
        if (rv >> p) & 1 == 0:
            continue
        f = _mask(inp[N_IN_HEADER + p], fw)
        o = inp[N_IN_HEADER + nis + p] & 1
        s = _mask(inp[N_IN_HEADER + 2 * nis + p], params[P_NODE_W])
        if _wrong_source(tab, depth, f, o, s):
            n_wrong += 1
        if not _needed(tab, inp, depth, nis, fw, rv, p, f, o):
            n_unexp += 1
            if first == 0:
                first = 1
                first_src = s
                first_flow = f
    _count_receives(tab, inp, depth, nis, fw, rv)
    return n_unexp, n_wrong, first, first_src, first_flow


@_stage
def _receive_errors(regs, pipe, n_unexp, n_wrong, first, first_src, first_flow):
    """Rule 4's errors as this edge applies them: the receives' own (PIPE 0), or those the
    last edge registered (PIPE 1, which registers this edge's). The first unexpected message
    since reset is recorded in err_src/err_flow. Returns (unexpected, wrong source)."""
    if pipe:
        n_unexp, regs[R_RX_UNEXP] = regs[R_RX_UNEXP], n_unexp
        n_wrong, regs[R_RX_WRONG] = regs[R_RX_WRONG], n_wrong
        first, regs[R_RX_FIRST] = regs[R_RX_FIRST], first
        first_src, regs[R_RX_SRC] = regs[R_RX_SRC], first_src
        first_flow, regs[R_RX_FLOW] = regs[R_RX_FLOW], first_flow
    if first != 0 and regs[R_ERR_SEEN] == 0:
        regs[R_ERR_SEEN] = 1
        regs[R_ERR_SRC] = first_src
        regs[R_ERR_FLOW] = first_flow
    return n_unexp, n_wrong


@_stage
def _load(tab, params, inp):
    """Rule 5: ``load_valid`` writes entry ``load_addr`` (valid, count 0, not issued), over
    anything this edge did to it; an address past DEPTH or op 3 is an error and writes
    nothing. Returns the errors."""
    if inp[I_LOAD_VALID] == 0:
        return 0
    a = _mask(inp[I_LOAD_ADDR], params[P_ADDR_W])
    op = _mask(inp[I_LOAD_OP], 2)
    if a >= params[P_DEPTH] or op == 3:
        return 1
    tab[a, C_VALID] = 1
    tab[a, C_OP] = op
    tab[a, C_FLOW] = _mask(inp[I_LOAD_FLOW], params[P_FLOW_W])
    tab[a, C_PEER] = _mask(inp[I_LOAD_PEER], params[P_NODE_W])
    tab[a, C_STEP] = _mask(inp[I_LOAD_STEP], params[P_STEP_W])
    tab[a, C_LEN] = _mask(inp[I_LOAD_LEN], params[P_LEN_W])
    tab[a, C_DEP_OP] = inp[I_LOAD_DEP_OP] & 1
    tab[a, C_DEP_COUNT] = _mask(inp[I_LOAD_DEP_COUNT], params[P_CNT_W])
    tab[a, C_COUNT] = 0
    tab[a, C_ISSUED] = 0
    tab[a, C_SRC] = _mask(inp[I_LOAD_SRC], params[P_NODE_W])
    tab[a, C_SRC_CHK] = inp[I_LOAD_SRC_CHK] & 1
    tab[a, C_ELIG] = 0
    return 0


@_stage
def _timeout(regs, params, inp, s):
    """Rule 9: ``timeout_cycles`` consecutive RUN cycles without progress (a send
    handshake, a receive, an ni_done) are one timeout; the counter then stops until
    progress. Returns whether it fired."""
    nis = params[P_NIS]
    tmo = _mask(inp[I_TIMEOUT_CYCLES], params[P_TMO_W])
    ports = (np.int64(1) << nis) - 1
    progress = s.fire or (inp[I_RECV_VALID] & ports) != 0 or (inp[I_NI_DONE] & ports) != 0
    if s.state != STATE_RUN or progress or tmo == 0:
        regs[R_TMO_CNT] = 0
    elif regs[R_TMO_CNT] < tmo:
        regs[R_TMO_CNT] += 1
        if regs[R_TMO_CNT] == tmo:
            return True
    return False


@_stage
def _errors(regs, params, errors, n_unexp, n_wrong, timeout):
    """Rule 6: the cycle's error events, and ``err_count`` grown by its errors, saturating."""
    regs[R_EV_UNEXP] = 1 if n_unexp > 0 else 0
    regs[R_EV_WRONG_SRC] = 1 if n_wrong > 0 else 0
    regs[R_EV_TIMEOUT] = 1 if timeout else 0
    if errors > 0:
        regs[R_ERR] = 1
        err_max = (np.int64(1) << params[P_ERR_W]) - 1
        e = regs[R_ERR_COUNT] + errors
        regs[R_ERR_COUNT] = e if e < err_max else err_max


@_stage
def _run_state(regs, inp, s):
    """Rule 7: ``start`` in IDLE/DONE runs from ``next_step``; in RUN, ``step_over`` moves
    to the next pending step, or to DONE when nothing is pending."""
    if s.state == STATE_IDLE or s.state == STATE_DONE:
        if inp[I_START] != 0:
            regs[R_STATE] = STATE_RUN
            regs[R_ACTIVE_STEP] = s.next_step
    elif s.state == STATE_RUN:
        if not s.active_pending and s.busy == 0 and s.out_valid == 0:
            if s.first_pending >= 0:
                regs[R_ACTIVE_STEP] = s.next_step
            else:
                regs[R_STATE] = STATE_DONE


@njit(cache=True)
def sched_edge(tab, regs, params, inp, out):
    """Advance the state across one rising edge. ``out`` must hold this cycle's outputs.

    The stages run in an order in which none reads what another wrote this edge: the
    read port before any table update, the receives' counts before a load of the same
    entry (a load overrides them)."""
    if inp[I_RST] != 0 or inp[I_CLEAR] != 0:
        _reset(tab, regs, params[P_DEPTH])
        return
    s = _sample(tab, regs, params, inp)
    depth = params[P_DEPTH]
    _read_port(tab, regs, params, inp)
    if params[P_PIPE]:
        _register_eligibility(tab, depth, s)
    _retire_recvs(tab, depth, s)
    busy = _send_request(tab, regs, s)
    errors = _ni_completion(regs, params[P_NIS], inp[I_NI_DONE], busy, s.busy)
    n_unexp, n_wrong, first, first_src, first_flow = _receives(tab, regs, params, inp)
    n_unexp, n_wrong = _receive_errors(regs, params[P_PIPE], n_unexp, n_wrong, first, first_src, first_flow)
    errors += n_unexp + n_wrong + _load(tab, params, inp)
    timeout = _timeout(regs, params, inp, s)
    _errors(regs, params, errors + (1 if timeout else 0), n_unexp, n_wrong, timeout)
    _run_state(regs, inp, s)


# --------------------------------------------------------------------------------------
# Python stepping
# --------------------------------------------------------------------------------------


class SchedulerModel:
    """One scheduler stepped a cycle at a time with named signals.

    >>> m = SchedulerModel(SchedulerParams(depth=4, nis=1))
    >>> outs = m.outputs()          # outputs during the current cycle
    >>> m.tick(load_valid=1, load_addr=0, load_op=0, load_step=0)   # the rising edge
    """

    def __init__(self, params: SchedulerParams) -> None:
        self.params = params
        self._p = params.vector()
        self.tab, self.regs = new_state(params)
        self._inp = new_inputs(params)
        self._out = np.zeros(N_OUTS, dtype=np.int64)
        self.cycle = 0
        self._index = {n: i for i, n in enumerate(SCALAR_INPUT_NAMES)}
        pr = self.params
        # port widths (docs/nic_scheduler.md, "Ports"): a value that does not fit is refused,
        # where the hardware would silently drop its high bits
        self._widths = dict.fromkeys(SCALAR_INPUT_NAMES, 1) | {
            "load_addr": pr.addr_w, "rd_addr": pr.addr_w, "load_op": 2, "load_flow": pr.flow_w,
            "load_peer": pr.node_w, "load_step": pr.step_w, "load_len": pr.len_w, "load_dep_count": pr.cnt_w,
            "ni_done": pr.nis, "recv_valid": pr.nis, "load_src": pr.node_w, "timeout_cycles": pr.tmo_w}

    def outputs(self) -> dict[str, int]:
        sched_outputs(self.tab, self.regs, self._p, self._out)
        return {name: int(v) for name, v in zip(OUTPUT_NAMES, self._out)}

    def tick(self, recv: list[tuple[int, int, int]] | None = None, **inputs: int) -> dict[str, int]:
        """Apply one cycle's inputs at the rising edge; return the outputs that held during it.

        ``recv[p]`` is receive port p's message this cycle: ``None`` or ``(flow, op, src)``.
        Other inputs are named as in docs/nic_scheduler.md; unnamed inputs are 0.
        """
        inp = self._inp
        inp[:] = 0
        widths = self._widths
        for name, value in inputs.items():
            if name not in self._index:
                raise ConfigError(f"unknown scheduler input {name!r}; inputs are {', '.join(SCALAR_INPUT_NAMES)} and recv")
            inp[self._index[name]] = _port_value(name, value, widths[name])
        nis = self.params.nis
        if recv:
            mask = 0
            for p, item in enumerate(recv):
                if p >= nis:
                    raise ConfigError(f"{len(recv)} receives in one cycle but NIS = {nis}")
                if item is None:
                    continue
                flow, op, src = (_port_value(f"recv_{n}[{p}]", v, w) for n, v, w in
                                 zip(("flow", "op", "src"), item, (self.params.flow_w, 1, self.params.node_w)))
                mask |= 1 << p
                inp[N_IN_HEADER + p] = flow
                inp[N_IN_HEADER + nis + p] = op
                inp[N_IN_HEADER + 2 * nis + p] = src
            inp[I_RECV_VALID] = mask
        sched_outputs(self.tab, self.regs, self._p, self._out)
        held = {name: int(v) for name, v in zip(OUTPUT_NAMES, self._out)}
        sched_edge(self.tab, self.regs, self._p, inp, self._out)
        self.cycle += 1
        return held

    def load_table(self, entries: np.ndarray) -> int:
        """Load ``entries`` one per cycle; return cycles used.

        Rows are op, flow, peer, step, len, dep_op, dep_count, optionally followed by the
        expected source and its check bit (src, src_chk; 0, 0 when absent).
        """
        for addr, row in enumerate(np.asarray(entries, dtype=np.int64)):
            op, flow, peer, step, length, dep_op, dep_count = (int(x) for x in row[:7])
            src, chk = (int(row[7]), int(row[8])) if len(row) >= 9 else (0, 0)
            self.tick(load_valid=1, load_addr=addr, load_op=op, load_flow=flow, load_peer=peer, load_step=step,
                      load_len=length, load_dep_op=dep_op, load_dep_count=dep_count, load_src=src, load_src_chk=chk)
        return len(entries)
