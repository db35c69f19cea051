"""The NIC data path's benches (tests/rtl/datapath_benches.py): the reduction adder over a
lane/format/latency matrix, the packetiser/depacketiser round trip through the buffer, and
the receive side's hazard bench (beats to a word still in the adder's pipeline wait, with
``rx_tready`` low, cycle by cycle as hw_models.rtl.datapath_ref.ReceiveTiming says), and
two NIs under cocotbext-axi pause patterns on every stream. Icarus runs the matrix; Verilator one set of each (the rest with ``-m slow``).
"""

from __future__ import annotations

import json
import re

import pytest

from dp_runner import DP_SOURCES, run_bench, sim_cases
from hw_models.toolchain import REPO_ROOT

# (FMT, LANES, ADD_LAT)
ADDER = [(1, lanes, 0) for lanes in (1, 2, 4, 16)] + [(0, lanes, 0) for lanes in (1, 4)] \
    + [(1, 2, 1), (1, 2, 2), (0, 4, 1), (0, 4, 2), (1, 2, 3), (1, 2, 4), (1, 2, 5), (1, 2, 6), (0, 4, 6), (1, 2, 7), (0, 4, 7)]
ADDER_VERILATOR_DEFAULT = {(1, 4, 0), (0, 4, 0)}
ROUNDTRIP = [{"LANES": 1, "FMT": 0, "BUF_WORDS": 32}, {"LANES": 2, "FMT": 1, "BUF_WORDS": 64},
             {"LANES": 4, "FMT": 1, "BUF_WORDS": 16}, {"LANES": 2, "FMT": 1, "BUF_WORDS": 32, "ADD_LAT": 2}]
ROUNDTRIP_VERILATOR_DEFAULT = {(2, 0)}
HAZARD = [{"LANES": 2, "FMT": 1, "BUF_WORDS": 8, "ADD_LAT": lat} for lat in (0, 1, 2, 5, 6, 7)] \
    + [{"LANES": 1, "FMT": 0, "BUF_WORDS": 4, "ADD_LAT": 2}]


@pytest.mark.parametrize("sim,case", sim_cases(ADDER, ADDER_VERILATOR_DEFAULT, lambda c: c,
                                                  lambda c: f"{('int32', 'fp32')[c[0]]}-lanes{c[1]}-lat{c[2]}"))
def test_reduction_adder_matches_numpy_float32_and_exact_int32(sim, case, tmp_path):
    fmt, lanes, lat = case
    params = {"LANES": lanes, "FMT": fmt, **({"ADD_LAT": lat} if lat else {})}
    log = run_bench(sim, "nic_reduce_add", "adder_bench", params, {"random": 6000}, tmp_path,
                    sources=["nic_fp32_add.v", "nic_reduce_add.v"])
    assert "pairs over" in log


@pytest.mark.parametrize("sim,case", sim_cases(ROUNDTRIP, ROUNDTRIP_VERILATOR_DEFAULT,
                                                  lambda c: (c["LANES"], c.get("ADD_LAT", 0)),
                                                  lambda c: f"lanes{c['LANES']}-fmt{c['FMT']}-lat{c.get('ADD_LAT', 0)}"))
def test_packetiser_and_depacketiser_round_trip(sim, case, tmp_path):
    params = {**case, "FLOW_W": 4, "NODE_W": 4, "STEP_W": 3, "LEN_W": 12}
    log = run_bench(sim, "nic_datapath", "roundtrip_bench", params, {"trials": 24, "seed": case["LANES"]}, tmp_path)
    assert "round trip:" in log


@pytest.mark.parametrize("sim,case", sim_cases(HAZARD, set(), lambda c: c["ADD_LAT"],
                                                  lambda c: f"lanes{c['LANES']}-fmt{c['FMT']}-lat{c['ADD_LAT']}"))
def test_a_beat_to_a_word_in_the_adder_pipeline_waits_and_nothing_is_lost(sim, case, tmp_path):
    params = {**case, "FLOW_W": 4, "NODE_W": 4, "STEP_W": 3, "LEN_W": 12}
    log = run_bench(sim, "nic_datapath", "hazard_bench", params, {"messages": 60, "seed": 7 + case["ADD_LAT"]},
                    tmp_path)
    stalls = int(re.search(r"(\d+) stall cycles", log).group(1))
    assert (stalls > 0) == (case["ADD_LAT"] > 0)


# two NIs under cocotbext-axi pause patterns (1 = pause that cycle; the second stream uses the pattern
# rotated by one): sources idle, sinks back-pressured, both (crossed), neither; at ADD_LAT 0 and 2
IDLE = [1, 0, 0, 1, 1, 0, 1]
BACKPRESSURE = [0, 1, 1, 0, 1, 0, 0, 1]
PAUSES = {"none": {}, "idle": {"idle": IDLE}, "backpressure": {"backpressure": BACKPRESSURE},
          "crossed": {"idle": IDLE, "backpressure": BACKPRESSURE}}
PAUSE_CASES = [(lat, name) for lat in (0, 2) for name in PAUSES]


@pytest.mark.parametrize("sim,case", sim_cases(PAUSE_CASES, set(), lambda c: c, lambda c: f"lat{c[0]}-{c[1]}"))
def test_two_nis_lose_nothing_under_pause_patterns_on_every_stream(sim, case, tmp_path):
    lat, name = case
    params = {"LANES": 2, "FMT": 0, "BUF_WORDS": 32, "FLOW_W": 4, "NODE_W": 4, "STEP_W": 3, "LEN_W": 12,
              **({"ADD_LAT": lat} if lat else {})}
    log = run_bench(sim, "nic_dp_axis2", "pause_bench", params,
                    {"messages": 10, "sends": 12, "seed": 20 + lat, **PAUSES[name]}, tmp_path,
                    sources=[*DP_SOURCES, REPO_ROOT / "tests" / "rtl" / "hdl" / "nic_dp_axis2.v"])
    counts = json.loads(re.search(r"PAUSE (\{.*\})", log).group(1))
    # the arbiter holds one source while the other has the receive port
    assert min(counts["rx_held"]) > 0
    # the patterns really paused the streams they were given to, and only those
    assert (min(counts["rx_gaps"]) > 0) == ("idle" in PAUSES[name])
    assert (min(counts["tx_held"]) > 0) == ("backpressure" in PAUSES[name])


# (top module, parameters): every format, lane counts 1..16, odd and tiny buffers, narrow fields, DEPTH 1
LINT = [("nic_top", {}), ("nic_top", {"DEPTH": 1, "LANES": 1, "FMT": 0, "BUF_WORDS": 2, "FLOW_W": 1, "NODE_W": 1,
                                      "STEP_W": 1, "LEN_W": 1, "CNT_W": 1, "ERR_W": 1}),
        ("nic_top", {"DEPTH": 64, "LANES": 16, "FMT": 1, "BUF_WORDS": 48, "FLOW_W": 16, "NODE_W": 16, "STEP_W": 16,
                     "LEN_W": 32}),
        ("nic_datapath", {"LANES": 4, "FMT": 0, "BUF_WORDS": 1000}),
        ("nic_reduce_add", {"LANES": 1, "FMT": 1}), ("nic_reduce_add", {"LANES": 16, "FMT": 0}),
        ("nic_reduce_add", {"LANES": 2, "FMT": 1, "ADD_LAT": 1}), ("nic_reduce_add", {"LANES": 2, "FMT": 0, "ADD_LAT": 2}),
        ("nic_reduce_add", {"LANES": 2, "FMT": 1, "ADD_LAT": 6}), ("nic_top", {"ADD_LAT": 6, "NIS": 4, "LANES": 4}),
        ("nic_reduce_add", {"LANES": 2, "FMT": 1, "ADD_LAT": 7}), ("nic_top", {"ADD_LAT": 7, "LANES": 4}),
        ("nic_top", {"ADD_LAT": 2}), ("nic_top", {"ADD_LAT": 1, "FMT": 0, "BUF_WORDS": 2, "LANES": 1}),
        # several NIs: a power of two, an odd count with every width 1, the most
        ("nic_top", {"NIS": 4}), ("nic_top", {"NIS": 3, "DEPTH": 1, "LANES": 1, "BUF_WORDS": 2, "FLOW_W": 1, "NODE_W": 1,
                                              "STEP_W": 1, "LEN_W": 1, "CNT_W": 1, "ERR_W": 1}),
        ("nic_top", {"NIS": 16, "ADD_LAT": 2}), ("nic_datapath", {"NIS": 2, "LANES": 1})]


@pytest.mark.parametrize("top,params", LINT, ids=[f"{t}-{'-'.join(f'{k}{v}' for k, v in p.items()) or 'defaults'}"
                                                  for t, p in LINT])
def test_the_data_path_is_lint_clean(top, params):
    from hw_models.rtl.lint import lint_warnings
    from hw_models.toolchain import datapath_sources

    assert lint_warnings(datapath_sources(), top, params) is None
