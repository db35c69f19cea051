"""Bad input, found by users trying it: every one a one-line error naming the key (or flag),
the value and what is allowed, exit status 2, no traceback, and nothing run or written.

Absurd floats (inf, NaN, 1e15, 1e-300) in every float key; non-ASCII digits in specs; one
seed rule and bounded packet sizes; NaN packet weights and an infinite latency limit; flags
checked by the rules of the keys they stand for, and ``config show`` refusing what
``allreduce`` refuses; long flit-level runs estimated first and refused without --yes.
"""

from __future__ import annotations

import math
import re
import typing

import pytest

from cli_run import run
from hw_models.noc_experiment import experiment_model
from hw_models.config import AllreduceConfig, ExperimentConfig, NetworkConfig, NicSection, RunConfig
from maddpg.trainer import MADDPGConfig
from noc.base.config import SEED_MAX, validate
from noc.base.errors import ConfigError, HwModelsError, SpecError
from noc.flit import FlitNetworkConfig
from noc.flit_traffic import TrafficConfig

SEED_RULE_TEXT = "a seed must be an integer in [0, 4294967295]"


def one_line_error(code, err, *fragments):
    """Exit 2 and exactly one line on stderr, ``error: ...``, holding every fragment."""
    assert code == 2, (code, err)
    assert err.endswith("\n") and err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    for frag in fragments:
        assert frag in err, (frag, err)


# ---- 1. every float key is a finite number in a stated range -------------------------------


def _config_models():
    noc = experiment_model()
    return {"network": NetworkConfig, "allreduce": AllreduceConfig, "nic": NicSection, "run": RunConfig,
            "router": FlitNetworkConfig, "traffic": TrafficConfig, "sweep": noc.model_fields["sweep"].annotation,
            "channels": noc.model_fields["channels"].annotation, "maddpg": MADDPGConfig}


def _has(annotation, kind) -> bool:
    if annotation is kind or typing.get_origin(annotation) is kind:
        return True
    return any(_has(a, kind) for a in typing.get_args(annotation))


def _fields(kind):
    for section, model in _config_models().items():
        for name, f in model.model_fields.items():
            if _has(f.annotation, kind) and not _has(f.annotation, bool):
                yield section, model, name, f


FLOAT_FIELDS = [(s, m, n) for s, m, n, _ in _fields(float)]


def test_the_float_keys_are_the_ones_expected():
    # a float key added later is caught by the next test only if it is found here
    names = {f"{s}.{n}" for s, _, n in FLOAT_FIELDS}
    assert {"network.link_bytes_per_cycle", "network.clock_ghz", "nic.reduce_elements_per_cycle",
            "traffic.rate_packets", "traffic.packet_weights", "traffic.hotspot_fraction", "sweep.latency_limit_factor",
            "sweep.start_flits", "sweep.step_flits", "maddpg.lr"} <= names


@pytest.mark.parametrize("section,model,name", FLOAT_FIELDS, ids=[f"{s}.{n}" for s, _, n in FLOAT_FIELDS])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 1e300])
def test_every_float_key_refuses_non_finite_and_absurd_values(section, model, name, value):
    field = model.model_fields[name]
    data = {name: [1.0, value] if _has(field.annotation, list) else value}
    if name == "packet_weights":
        data["packet_flits"] = [1, 2]
    with pytest.raises(ConfigError) as info:
        validate(data, model, source="c.toml")
    msg = str(info.value)
    assert "c.toml" in msg and name in msg and "\n" not in msg
    assert "finite number in [" in msg or "finite number in (" in msg


@pytest.mark.parametrize("key,value", [("link_bytes_per_cycle", "inf"), ("link_bytes_per_cycle", "1e15"),
                                       ("link_bytes_per_cycle", "1e-300"), ("link_bytes_per_cycle", "nan"),
                                       ("clock_ghz", "1e-300"), ("clock_ghz", "inf")])
def test_absurd_network_floats_are_refused_by_every_command_that_reads_them(tmp_path, capsys, key, value):
    f = tmp_path / "c.toml"
    f.write_text(f'[network]\ntopology = "ring:4"\n{key} = {value}\n')
    for argv in (["config", "show", str(f)], ["allreduce", "--config", str(f), "--out", str(tmp_path / "o")],
                 ["noc", "run", str(f), "--out", str(tmp_path / "o")]):
        code, out, err = run(argv, capsys)
        one_line_error(code, err, str(f), f"network.{key}", "must be a finite number in [")
        assert not (tmp_path / "o").exists()


def test_nic_and_maddpg_floats_name_the_range():
    with pytest.raises(ConfigError, match=r"reduce_elements_per_cycle' = 1e-300: must be a finite number in \[1e-6, 1048576\]"):
        validate({"nic": {"reduce_elements_per_cycle": 1e-300}}, ExperimentConfig)
    from maddpg.trainer import make_config

    with pytest.raises(ConfigError, match=r"'lr' = inf: must be a finite number in \[1e-9, 10\]"):
        make_config(lr=math.inf)


@pytest.mark.parametrize("value", [math.inf, math.nan, 1e15, 1e-300, 0, -1.0, True, "16"])
def test_topology_builders_refuse_absurd_link_widths(value):
    from noc.topology import parse_spec, torus

    with pytest.raises(SpecError, match=r"link_bytes_per_cycle must be a finite number in \[1e-6, 1e6\]"):
        torus((4, 4), link_bytes_per_cycle=value)
    with pytest.raises(SpecError, match="link_bytes_per_cycle"):
        parse_spec("ring:4").with_links(bytes_per_cycle=value)


def test_a_topology_file_with_absurd_links_is_refused():
    import json

    from noc.topology import Topology, parse_spec

    d = parse_spec("ring:4").to_dict()
    d["links"]["bytes_per_cycle"][0] = math.inf
    with pytest.raises(SpecError, match="finite number"):
        Topology.from_json(json.dumps(d))
    d["links"]["bytes_per_cycle"][0] = 16.0
    d["links"]["latency_cycles"][0] = 2**40
    with pytest.raises(SpecError, match=r"latency_cycles must each be an integer in \[1, 100000\]"):
        Topology.from_dict(d)
    for text in ("", "{", "[]", '{"format": "hw-models/topology/1"}', '{"format": "hw-models/topology/1", "links": 3}'):
        with pytest.raises(SpecError):
            Topology.from_json(text)


@pytest.mark.parametrize("preset", ["isca2021", "isca2021_mesh"])
def test_the_presets_satisfy_the_ranges(capsys, preset):
    code, out, err = run(["config", "show", "--preset", preset], capsys)
    assert code == 0, err


def test_the_example_configs_satisfy_the_ranges():
    from pathlib import Path

    from hw_models.noc_experiment import load_noc_experiment as load_experiment

    docs = Path(__file__).resolve().parents[2] / "docs"
    for f in [docs / "noc_example.toml", *sorted((docs / "examples").glob("*.toml"))]:
        load_experiment(f)  # raises on a value out of range


# ---- 2. ASCII digits only in specs ------------------------------------------------------------

UNICODE_SPECS = ["ring:²", "full:①", "torus:４x4", "mesh:4x٤", "switch:²", "hypercube:d²", "ring:4:c²",
                 "fattree:k²:l2", "bigraph:４x4", "ring:8\u00a0", "ｒing:4"]


@pytest.mark.parametrize("spec", UNICODE_SPECS)
def test_non_ascii_digits_in_a_topology_spec_are_a_spec_error(spec):
    from noc.topology import parse_spec

    with pytest.raises(SpecError, match="not an ASCII character"):
        parse_spec(spec)


@pytest.mark.parametrize("argv", [["topology", "describe", "ring:²"], ["schedule", "-t", "full:①"],
                                  ["allreduce", "-t", "torus:４x4"], ["schedule", "--size", "４KiB"],
                                  ["allreduce", "--sizes", "1MiB,٤MiB"], ["rtl", "synth", "--depths", "１6"],
                                  ["maddpg", "train", "--episodes", "1", "--fixed-point", "１6.10"]])
def test_non_ascii_digits_on_the_command_line_are_one_line_errors(tmp_path, capsys, argv):
    code, out, err = run([*argv, *(["--out", str(tmp_path / "o")] if argv[0] in ("allreduce", "maddpg") else [])],
                         capsys)
    one_line_error(code, err)
    assert not (tmp_path / "o").exists()


def test_non_ascii_digits_in_sizes_and_booksim_files_are_refused():
    from noc.base.units import parse_size_bytes
    from noc.booksim_config import parse_booksim

    for text in ("４KiB", "1٠24", "²"):
        with pytest.raises(ConfigError, match="is not a size"):
            parse_size_bytes(text)
    with pytest.raises(ConfigError, match="cannot read"):
        parse_booksim("k = ４;")
    with pytest.raises(ConfigError, match="too long a number"):
        parse_booksim("k = " + "9" * 5000 + ";")


# ---- 3. one seed rule; bounded packet sizes ---------------------------------------------------

SEED_FIELDS = [(s, m, n) for s, m, n, _ in _fields(int) if "seed" in n]


def test_the_seed_keys_are_the_ones_expected():
    assert {f"{s}.{n}" for s, _, n in SEED_FIELDS} == {"run.seed", "router.arbiter_seed", "traffic.seed",
                                                       "traffic.perm_seed", "maddpg.seed"}


@pytest.mark.parametrize("section,model,name", SEED_FIELDS, ids=[f"{s}.{n}" for s, _, n in SEED_FIELDS])
def test_every_seed_key_follows_one_rule(section, model, name):
    for good in (0, SEED_MAX):
        assert getattr(validate({name: good}, model), name) == good
    for bad in (-1, SEED_MAX + 1, 2**63, 2**64 + 3):
        with pytest.raises(ConfigError, match=re.escape(f"'{name}' = {bad}: {SEED_RULE_TEXT}")):
            validate({name: bad}, model)


@pytest.mark.parametrize("argv,flag", [
    (["allreduce", "-t", "ring:4", "-a", "ring", "--sizes", "64KiB"], "--seed"),
    (["maddpg", "train", "--env", "simple", "--agents", "1", "--episodes", "1"], "--seed"),
    (["noc", "run", "CONFIG"], "--seed"),
    (["noc", "sweep-load", "CONFIG"], "--seed"),
    (["rtl", "regress", "-t", "none", "--seeds", "1"], "--first-seed"),
])
@pytest.mark.parametrize("seed", [-1, 2**32, 2**63, 2**64])
def test_every_command_refuses_a_seed_outside_the_rule(tmp_path, capsys, argv, flag, seed):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[network]\ntopology = "mesh:2x2"\n[traffic]\nmeasure_cycles = 100\n')
    argv = [str(cfg) if a == "CONFIG" else a for a in argv]
    code, out, err = run([*argv, flag, str(seed), "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, f"{flag} {seed}", SEED_RULE_TEXT)
    assert not (tmp_path / "o").exists()


def test_the_largest_seed_runs(tmp_path, capsys):
    code, out, err = run(["allreduce", "-t", "ring:4", "-a", "ring", "--sizes", "64KiB", "--seed", str(SEED_MAX),
                          "--out", str(tmp_path)], capsys)
    assert code == 0, err
    assert f"verifier seed {SEED_MAX}" in out


def test_the_last_seed_of_an_rtl_regression_follows_the_rule(tmp_path, capsys):
    code, out, err = run(["rtl", "regress", "-t", "none", "--seeds", "2", "--first-seed", str(SEED_MAX),
                          "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, "the last seed 4294967296", SEED_RULE_TEXT)


@pytest.mark.parametrize("sizes", ["[9223372036854775808]", "[65537]", "[1, 0]"])
def test_packet_sizes_are_bounded(tmp_path, capsys, sizes):
    f = tmp_path / "c.toml"
    f.write_text(f'[network]\ntopology = "mesh:2x2"\n[traffic]\nmeasure_cycles = 100\npacket_flits = {sizes}\n')
    code, _, err = run(["noc", "run", str(f), "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, "traffic.packet_flits", "packet sizes must be in [1, 65536] flits")


@pytest.mark.parametrize("override,says", [
    # past BookSim2's 32-bit integers the number itself is refused, as BookSim2 cannot read it
    ("packet_size=9223372036854775808", "too long a number for BookSim2's 32-bit integers"),
    ("packet_size=65537", "packet sizes must be in [1, 65536] flits")])
def test_booksim_packet_sizes_are_bounded(tmp_path, capsys, override, says):
    f = tmp_path / "m22"
    f.write_text("topology = mesh;\nk = 2;\nn = 2;\nrouting_function = dor;\nnum_vcs = 4;\n")
    code, _, err = run(["noc", "run", "--booksim", str(f), override, "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, "packet_size", says)


# ---- 4. NaN packet weights, an infinite latency limit -----------------------------------------

@pytest.mark.parametrize("weights", ["[1.0, nan]", "[1.0, inf]", "[inf, inf]", "[-1.0, 2.0]", "[1e300, 1.0]"])
def test_packet_weights_must_be_finite(tmp_path, capsys, weights):
    f = tmp_path / "c.toml"
    f.write_text(f'[network]\ntopology = "mesh:2x2"\n[traffic]\nmeasure_cycles = 100\npacket_flits = [1, 2]\n'
                 f'packet_weights = {weights}\n')
    code, _, err = run(["noc", "run", str(f), "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, "traffic.packet_weights", "weights must be non-negative and not all zero, each a finite "
                                                        "number in [0, 1e6]")


@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "1.0"])
def test_an_infinite_latency_limit_is_refused_before_the_sweep(tmp_path, capsys, value):
    f = tmp_path / "c.toml"
    f.write_text(f'[network]\ntopology = "mesh:2x2"\n[sweep]\nlatency_limit_factor = {value}\n')
    code, out, err = run(["noc", "sweep-load", str(f), "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, "sweep.latency_limit_factor", "must be a finite number in (1, 1e6]")
    assert "saturation" not in out


# ---- 5. flags checked by the keys' rules; config show refuses what allreduce refuses ----------

def test_an_ni_count_flag_follows_the_keys_rule(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text("[network]\nnis_per_node = 65\n")
    code, _, err = run(["config", "show", str(f)], capsys)
    one_line_error(code, err, "network.nis_per_node' = 65", "less than or equal to 64")
    for argv in (["allreduce", "--nis", "65"], ["schedule", "--nis", "65"], ["allreduce", "--nis", "0"]):
        code, _, err = run([*argv, *(["--out", str(tmp_path / "o")] if argv[0] == "allreduce" else [])], capsys)
        one_line_error(code, err, f"--nis {argv[-1]}", "(the flag sets network.nis_per_node)")
    code, _, err = run(["allreduce", "--nis", "64", "-t", "ring:4", "-a", "ring", "--sizes", "64KiB", "--model", "flit",
                        "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, "serves at most 16")  # 64 NIs pass the key's rule; the flit level's own limit is 16


@pytest.mark.parametrize("argv,says", [
    (["--packet-bytes", "8"], "--packet-bytes 8: Input should be greater than or equal to 16 (the flag sets nic.packet_bytes)"),
    (["--seed", "-3"], "--seed -3: " + SEED_RULE_TEXT),
    (["--sizes", "1MiB..1KiB"], "--sizes '1MiB..1KiB'"),
    (["--sizes", "1001"], "--sizes '1001', ring on torus:4x4: size 1001 B is not a whole number of 4-byte elements"),
    (["-t", "ring:4", "-a", "ring2d"], "--algorithms ring2d: ring2d needs a 2D mesh or torus"),
])
def test_allreduce_flags_are_named_in_errors(tmp_path, capsys, argv, says):
    code, _, err = run(["allreduce", *argv, "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, says)


# configs that `hw-models allreduce` refuses before any run: `config show` refuses them too
CONTRADICTIONS = [
    ('[network]\ntopology = "torus:2x2:c2"\nnis_per_node = 4\n',
     "network.nis_per_node = 4 contradicts network.topology = torus:2x2:c2"),
    ('[network]\ntopology = "fattree:k4:l2"\nnis_per_node = 2\n', "is a switched network"),
    ('[network]\nrouting = "dor"\n[router]\nrouting = "shortest"\n',
     "network.routing = 'dor' and router.routing = 'shortest' disagree"),
    ('[nic]\nissue_delay_cycles = 3\n', "issue_delay_cycles=3 is for the baseline NIC"),
    ('[router]\nnum_vcs = 1\n', "num_vcs must be a multiple of 2"),
    ('[network]\ntopology = "ring:4"\n[allreduce]\nalgorithms = ["ring2d"]\n', "ring2d needs a 2D mesh or torus"),
    ('[allreduce]\nsizes = "1001"\n', "size 1001 B is not a whole number of 4-byte elements"),
    ('[allreduce]\nsizes = "4B"\n', "smaller than one 4-byte element per flow"),
]


@pytest.mark.parametrize("text,says", CONTRADICTIONS, ids=[c[1][:30] for c in CONTRADICTIONS])
def test_config_show_refuses_what_allreduce_refuses(tmp_path, capsys, text, says):
    f = tmp_path / "c.toml"
    f.write_text(text)
    code, _, show_err = run(["config", "show", str(f)], capsys)
    one_line_error(code, show_err, says, str(f))
    code, out, err = run(["allreduce", "--config", str(f), "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, says)
    assert "simulating" not in out and not (tmp_path / "o").exists()


# ---- 6. long flit-level runs: an estimate first, --yes to start them ---------------------------

def test_the_flit_hop_count_of_a_ring(capsys):
    from hw_models.estimate import allreduce_flit_hops
    from nic.allreduce import NicConfig
    from nic.collectives import build
    from noc.routing import route
    from noc.topology import parse_spec

    t = parse_spec("ring:4")
    s, r = build(t, "ring"), route(t)
    # 2(N-1) steps of N transfers of S/N bytes between neighbours: inject, one hop, eject
    bulk = 24 * (1 + 16384 // 16) * 3  # one head flit per transfer
    packets = 24 * (16384 // 256) * (1 + 256 // 16) * 3  # a head flit per 256 B packet
    assert allreduce_flit_hops(t, r, s, NicConfig(), 65536) == bulk
    assert allreduce_flit_hops(t, r, s, NicConfig(design="baseline"), 65536) == packets
    # the time estimate counts the flits the co-simulation steps: a bulk transfer's first 512
    from hw_models.estimate import SECONDS_PER_FLIT_HOP, flit_allreduce_seconds

    stepped = flit_allreduce_seconds(t, r, [(s, NicConfig(), 65536), (s, NicConfig(design="baseline"), 65536)])
    assert stepped == pytest.approx(SECONDS_PER_FLIT_HOP * (24 * 512 * 3 + packets), rel=1e-12)


def test_a_flit_level_terabyte_is_refused_with_its_estimate(tmp_path, capsys, monkeypatch):
    import hw_models.allreduce_sweep as sweep

    def no_run(*a, **k):
        raise AssertionError("a run started")

    monkeypatch.setattr(sweep, "run_sweep", no_run)
    # the baseline NIC's packets are stepped cycle by cycle (a co-designed bulk run's streams are jumped)
    code, out, err = run(["allreduce", "--model", "flit", "--nic", "baseline", "-s", "1TiB", "--out",
                          str(tmp_path / "o")], capsys)
    one_line_error(code, err, "the flit-level runs would take about", "days on this machine", "add --yes")
    assert not (tmp_path / "o").exists()
    monkeypatch.undo()
    # small runs are not asked about
    code, out, err = run(["allreduce", "--model", "both", "-t", "ring:4", "-a", "ring", "-s", "64KiB", "--out",
                          str(tmp_path / "small")], capsys)
    assert code == 0, err


def test_a_flit_level_run_past_the_cycle_limit_is_refused_even_with_yes(tmp_path, capsys, monkeypatch):
    import hw_models.allreduce_sweep as sweep

    def no_run(*a, **k):
        raise AssertionError("a run started")

    monkeypatch.setattr(sweep, "run_sweep", no_run)
    # the default ring on 16 nodes: a transfer is 1 TiB / 16 = 2**32 flits of 16 B, plus its head flit
    code, out, err = run(["allreduce", "--model", "flit", "-a", "ring", "-s", "1TiB", "--yes", "--out",
                          str(tmp_path / "o")], capsys)
    one_line_error(code, err, f"one transfer is {2**32 + 1:,} flits", "(2,000,000,000)", "--model message")
    assert not (tmp_path / "o").exists()


def test_yes_starts_a_long_flit_level_run(tmp_path, capsys, monkeypatch):
    import hw_models.allreduce_sweep as sweep

    def started(*a, **k):
        raise HwModelsError("started")

    monkeypatch.setattr(sweep, "run_sweep", started)
    argv = ["allreduce", "--model", "flit", "--nic", "baseline", "-s", "8GiB", "-t", "ring:4", "-a", "ring", "--out",
            str(tmp_path / "o")]
    code, out, err = run(argv, capsys)
    one_line_error(code, err, "would take about", "add --yes")
    code, out, err = run([*argv, "--yes"], capsys)
    one_line_error(code, err, "error: started")
    assert "estimated flit-level time: " in out


def test_a_long_synthetic_traffic_run_is_refused_without_yes(tmp_path, capsys, monkeypatch):
    import noc.flit_traffic

    f = tmp_path / "c.toml"
    f.write_text('[network]\ntopology = "mesh:4x4"\n[traffic]\nmeasure_cycles = 1000000000\n')
    for command in ("run", "sweep-load"):
        code, _, err = run(["noc", command, str(f), "--out", str(tmp_path / "o")], capsys)
        one_line_error(code, err, "1,000,021,000 cycles", "on mesh:4x4 (80 links) would take about", "add --yes")

    def started(*a, **k):
        raise HwModelsError("started")

    monkeypatch.setattr(noc.flit_traffic, "run_traffic", started)
    code, _, err = run(["noc", "run", str(f), "--yes", "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, "error: started")


@pytest.mark.parametrize("body,says", [
    ("[traffic]\nmeasure_cycles = 9223372036854775808\n", "traffic.measure_cycles"),
    ("[traffic]\nwarmup_cycles = 9223372036854775807\n", "traffic.warmup_cycles"),
    ("[router]\nwatchdog_cycles = 18446744073709551616\n", "router.watchdog_cycles"),
])
def test_counts_beyond_the_kernels_integers_are_refused(tmp_path, capsys, body, says):
    f = tmp_path / "c.toml"
    f.write_text('[network]\ntopology = "mesh:2x2"\n' + body)
    code, _, err = run(["noc", "run", str(f), "--yes", "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, says, "less than or equal to 1099511627776")
