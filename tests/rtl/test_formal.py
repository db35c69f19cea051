"""The stream rules proved with Yosys's SAT engine (hw_models.rtl.formal): nic_packetiser's
transmit stream holds tvalid and its beat until tready, and takes no request while a beat
is on offer, in every state reachable from reset (temporal induction), for small
parameter sets. The proof can fail: the packetiser that reloads its output register
while tready is low (a mutant of bench/rtl_mutation.py) is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from hw_models.rtl.formal import prove
from hw_models.toolchain import RTL_DIR

PROPS = Path(__file__).parent / "formal" / "props_packetiser.v"

# (LANES, BUF_WORDS, LEN_W): messages up to 15 and 31 beats, packets of any size
SETS = [(1, 4, 4), (2, 8, 5)]


@pytest.mark.parametrize("lanes,buf_words,len_w", SETS, ids=[f"lanes{a}-buf{b}-len{c}" for a, b, c in SETS])
def test_the_transmit_stream_holds_its_beat_until_taken(lanes, buf_words, len_w):
    r = prove("props_packetiser", [RTL_DIR / "nic_packetiser.v", PROPS],
              {"LANES": lanes, "BUF_WORDS": buf_words, "LEN_W": len_w})
    assert r.proven, r.verdict
    assert r.induction_length == 1


def test_a_packetiser_that_reloads_while_stalled_is_refused(tmp_path):
    text = (RTL_DIR / "nic_packetiser.v").read_text()
    old = "&& (!tx_tvalid || tx_tready);"
    assert text.count(old) == 1
    mutant = tmp_path / "src" / "nic_packetiser.v"
    mutant.parent.mkdir()
    mutant.write_text(text.replace(old, ";"))
    r = prove("props_packetiser", [mutant, PROPS], {"LANES": 1, "BUF_WORDS": 4, "LEN_W": 4}, max_steps=4,
              work_dir=tmp_path / "work")
    assert not r.proven
    assert "FAIL" in r.verdict or "failed" in r.verdict
