"""The regression's random stimulus drives every bit of every input field both ways (1 and
0) on each HDL parameter set of the default matrix, over the seeds the default run uses: a
stuck-at bit in any field can be seen (docs/rtl.md, "What was checked")."""

from __future__ import annotations

import pytest

from rtl_matrix import HDL_PARAMS
from hw_models.rtl.lockstep import ModelStepper
from hw_models.rtl.regress import random_episodes
from hw_models.rtl.stimulus import Environment


def _fields(p):
    return {"load_addr": p.addr_w, "load_op": 2, "load_flow": p.flow_w, "load_peer": p.node_w, "load_step": p.step_w,
            "load_len": p.len_w, "load_dep_op": 1, "load_dep_count": p.cnt_w, "rd_addr": p.addr_w,
            "ni_done": p.nis, "recv_flow": p.flow_w, "recv_op": 1, "recv_src": p.node_w, "load_src": p.node_w,
            "load_src_chk": 1, "timeout_cycles": p.tmo_w}


# d16n16 is left out: the lowest free NI takes each send, so NIs 8..15 are busy (and report
# ni_done) only when eight sends are in flight at once, which random tables rarely ask for
@pytest.mark.parametrize("tag", [t for t in HDL_PARAMS if t != "d16n16"])
def test_every_bit_of_every_field_is_driven_to_1_and_to_0(tag):
    p = HDL_PARAMS[tag]
    widths = _fields(p)
    ones = dict.fromkeys(widths, 0)
    zeros = dict.fromkeys(widths, 0)

    def see(name, v):
        ones[name] |= v
        zeros[name] |= ~v & ((1 << widths[name]) - 1)

    env = Environment(p, random_episodes(p, range(20)))
    m = ModelStepper(p)
    while (inp := env.next_inputs(m.outputs())) is not None:
        if inp.get("load_valid"):
            for k in ("load_addr", "load_op", "load_flow", "load_peer", "load_step", "load_len", "load_dep_op",
                      "load_dep_count", "load_src", "load_src_chk"):
                see(k, inp.get(k, 0))
        if inp.get("rd_en"):
            see("rd_addr", inp.get("rd_addr", 0))
        see("ni_done", inp.get("ni_done", 0))
        see("timeout_cycles", inp.get("timeout_cycles", 0))
        for item in inp.get("recv") or []:
            if item is not None:
                see("recv_flow", item[0])
                see("recv_op", item[1])
                see("recv_src", item[2])
        m.edge(inp)
    # an address >= DEPTH does not exist, so the top address bit of a non-power-of-two
    # DEPTH is covered by the addresses that have it
    full = {k: (1 << w) - 1 for k, w in widths.items()}
    full["load_addr"] = (1 << max(0, p.depth - 1).bit_length()) - 1  # a load beyond DEPTH writes nothing
    missing = {k: f"{full[k] & ~ones[k]:#x} never 1, {full[k] & ~zeros[k]:#x} never 0"
               for k in widths if ones[k] & full[k] != full[k] or zeros[k] & full[k] != full[k]}
    assert missing == {}
