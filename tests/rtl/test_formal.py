"""The stream rules proved with Yosys's SAT engine (hw_models.rtl.formal), in every state
reachable from reset (temporal induction), for small parameter sets:

* nic_packetiser's transmit stream holds tvalid and its beat until tready, and takes no
  request while a beat is on offer;
* nic_scheduler's send request holds valid and its payload until send_ready (rst and
  clear may withdraw it), and its error counter saturates instead of wrapping;
* nic_depacketiser's receive pipeline (ADD_LAT 1, 2, 5) writes every beat it takes once
  and lets no beat read a word an earlier beat has still to write.

The proofs can fail: the mutants of bench/rtl_mutation.py that break the hold rules (the
packetiser reloading its output while tready is low, the scheduler refilling its request
register while stalled) are refused, and so is a counter that wraps."""

from __future__ import annotations

from pathlib import Path

import pytest

from hw_models.rtl.formal import prove
from hw_models.toolchain import RTL_DIR, rtl_sources

PROPS = Path(__file__).parent / "formal" / "props_packetiser.v"
SCHED_PROPS = Path(__file__).parent / "formal" / "props_scheduler.v"

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


SCHED_SETS = [(2, 2, 2), (3, 1, 1)]  # (DEPTH, NIS, ERR_W); every other width 2


@pytest.mark.parametrize("depth,nis,err_w", SCHED_SETS, ids=[f"d{d}n{n}err{e}" for d, n, e in SCHED_SETS])
def test_the_send_request_holds_until_taken_and_the_error_count_saturates(depth, nis, err_w):
    r = prove("props_scheduler", rtl_sources() + [SCHED_PROPS], {"DEPTH": depth, "NIS": nis, "ERR_W": err_w},
              max_steps=4)
    assert r.proven, r.verdict
    assert r.induction_length == 1


def _mutated(tmp_path, sources, target, old, new):
    """Copies of ``sources`` under tmp_path/src with the one ``old`` of file ``target`` replaced by ``new``."""
    out = []
    for src in sources:
        dst = tmp_path / "src" / src.name
        dst.parent.mkdir(exist_ok=True)
        text = src.read_text()
        if src.name == target:
            assert text.count(old) == 1
            text = text.replace(old, new)
        dst.write_text(text)
        out.append(dst)
    return out


def _mutated_scheduler(tmp_path, old, new):
    return _mutated(tmp_path, rtl_sources(), "nic_scheduler.v", old, new)


@pytest.mark.parametrize("old,new", [
    ("assign send_take_any = (!out_valid_reg || send_ready) && send_any && free_any;",
     "assign send_take_any = send_any && free_any;"),
    ("err_count_reg <= (err_sum > ERR_MAX) ? {ERR_W{1'b1}} : err_sum[ERR_W-1:0];",
     "err_count_reg <= err_sum[ERR_W-1:0];"),
], ids=["refilled-while-stalled", "counter-wraps"])
def test_a_scheduler_that_breaks_a_rule_is_refused(old, new, tmp_path):
    srcs = _mutated_scheduler(tmp_path, old, new)
    r = prove("props_scheduler", srcs + [SCHED_PROPS], {"DEPTH": 2, "NIS": 2, "ERR_W": 2}, max_steps=6,
              work_dir=tmp_path / "work")
    assert not r.proven


ARB_PROPS = Path(__file__).parent / "formal" / "props_rx_arb.v"
DP_FILES = ("nic_fp32_add.v", "nic_reduce_add.v", "nic_packetiser.v", "nic_depacketiser.v", "nic_datapath.v")


@pytest.mark.slow  # about 50 s of CPU per set (the whole two- or three-NI data path is in the problem)
@pytest.mark.parametrize("nis", [2, 3])
def test_the_receive_arbiter_grants_one_stream_for_a_whole_packet(nis):
    r = prove("props_rx_arb", [RTL_DIR / n for n in DP_FILES] + [ARB_PROPS], {"NIS": nis}, max_steps=4)
    assert r.proven, r.verdict
    assert r.induction_length == 1


@pytest.mark.slow
def test_an_arbiter_that_releases_the_grant_mid_packet_is_refused(tmp_path):
    srcs = _mutated(tmp_path, [RTL_DIR / n for n in DP_FILES], "nic_datapath.v",
                    "&& m_tready && rx_tlast[rx_sel];", "&& m_tready;")
    r = prove("props_rx_arb", srcs + [ARB_PROPS], {"NIS": 2}, max_steps=4, work_dir=tmp_path / "work")
    assert not r.proven


DEPACK_PROPS = Path(__file__).parent / "formal" / "props_depacketiser.v"
DEPACK_FILES = ("nic_fp32_add.v", "nic_reduce_add.v", "nic_depacketiser.v")


@pytest.mark.parametrize("add_lat", [1, 2, 5, 6])
def test_every_beat_taken_is_written_once_and_never_reads_a_word_still_in_the_pipeline(add_lat):
    r = prove("props_depacketiser", [RTL_DIR / n for n in DEPACK_FILES] + [DEPACK_PROPS], {"ADD_LAT": add_lat},
              max_steps=6)
    assert r.proven, r.verdict
    assert r.induction_length == 1


@pytest.mark.parametrize("old,new", [
    # the two receive-pipeline mutants of bench/rtl_mutation.py: a beat to a word in the pipeline does not wait;
    # a waiting beat is overwritten by the next one
    ("if (q[s][Q_W-1] && q[s][Q_W-2 -: BA_W] == p_addr) hz = 1'b1;",
     "if (q[s][Q_W-1] && q[s][Q_W-2 -: BA_W] == p_addr && 1'b0) hz = 1'b1;"),
    ("assign rx_tready = !rst && !(p_valid && hazard);", "assign rx_tready = !rst;"),
], ids=["no-wait", "overwrite"])
def test_a_receive_pipeline_that_breaks_a_rule_is_refused(old, new, tmp_path):
    srcs = _mutated(tmp_path, [RTL_DIR / n for n in DEPACK_FILES], "nic_depacketiser.v", old, new)
    r = prove("props_depacketiser", srcs + [DEPACK_PROPS], {"ADD_LAT": 2}, max_steps=6, work_dir=tmp_path / "work")
    assert not r.proven
