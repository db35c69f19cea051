"""The command line: help, version, topology describe, config show, one-line errors with exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hw_models import __version__
from noc.topology import Topology, parse_spec
from cli_run import run


def test_version_and_help(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"hw-models {__version__}"
    code, out, _ = run(["--help"], capsys)
    assert code == 0 and "topology" in out and "config" in out


def test_python_dash_m_entry_point():
    res = subprocess.run([sys.executable, "-m", "hw_models", "--help"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "Usage" in res.stdout


def test_topology_describe_prints_properties_and_writes_json_and_png(tmp_path, capsys):
    j, p = tmp_path / "t.json", tmp_path / "t.png"
    code, out, _ = run(["topology", "describe", "torus:4x4:c4", "--json", str(j), "--png", str(p)], capsys)
    assert code in (0, None)
    assert "diameter" in out and "deadlock-free" in out
    assert Topology.from_json(j.read_text()) == parse_spec("torus:4x4:c4")
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_spec_is_one_line_and_exit_2(capsys):
    code, out, err = run(["topology", "describe", "torus:4x"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: bad topology spec 'torus:4x'")
    assert "Traceback" not in err


def test_config_show_fills_defaults(tmp_path, capsys):
    import tomllib

    f = tmp_path / "c.toml"
    f.write_text('[network]\ntopology = "mesh:4x4"\n')
    code, out, _ = run(["config", "show", str(f)], capsys)
    assert code in (0, None)
    cfg = tomllib.loads(out)
    assert cfg["network"]["topology"] == "mesh:4x4"
    assert cfg["network"]["link_bytes_per_cycle"] == 16.0  # default filled in
    assert cfg["allreduce"]["element_bytes"] == 4
    assert cfg["router"]["num_vcs"] == 2 and "flit_bytes" not in cfg["router"]  # unset: one flit per cycle
    f.write_text(out)  # what it prints reads back as the same config
    code, again, _ = run(["config", "show", str(f)], capsys)
    assert code in (0, None) and again == out


@pytest.mark.parametrize(
    "text,fragments",
    [
        ('[network]\nbandwidth = 3\n', ["unknown key 'network.bandwidth'", "allowed:", "link_bytes_per_cycle"]),
        ('[network]\nlink_latency_cycles = 0\n', ["'network.link_latency_cycles' = 0", "greater than or equal to 1"]),
        ('[network]\ntopology = "torus:0x4"\n', ["network.topology", "torus:0x4"]),
        ('[allreduce]\nsizes = "12 apples"\n', ["allreduce.sizes", "not a size"]),
        ('[network\n', ["not valid TOML"]),
        # values of the wrong type are refused, not converted
        ('[network]\nnis_per_node = "4"\n', ["'network.nis_per_node' = '4'", "valid integer"]),
        ('[network]\nnis_per_node = true\n', ["'network.nis_per_node' = True", "valid integer"]),
        ('[network]\nlink_latency_cycles = 2.0\n', ["'network.link_latency_cycles' = 2.0", "valid integer"]),
        ('[router]\ndebug = "yes"\n', ["'router.debug' = 'yes'", "valid boolean"]),
        ('[run]\nout_dir = ""\n', ["'run.out_dir' = ''", "at least 1 character"]),
    ],
)
def test_config_errors_name_file_key_and_value(tmp_path, capsys, text, fragments):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    code, _, err = run(["config", "show", str(f)], capsys)
    assert code == 2
    line = err.strip()
    assert "\n" not in line and str(f) in line
    for frag in fragments:
        assert frag in line


def test_missing_config_file_and_unknown_preset(tmp_path, capsys):
    code, _, err = run(["config", "show", str(tmp_path / "nope.toml")], capsys)
    assert code == 2 and "no such config file" in err
    code, _, err = run(["config", "show", "--preset", "isca2099"], capsys)
    assert code == 2 and "isca2021" in err


@pytest.mark.parametrize("command", [["config", "show"], ["noc", "run"], ["allreduce", "--config"]])
def test_a_config_that_is_no_text_file_is_a_one_line_error(tmp_path, capsys, command):
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00[network]")
    for path, says in ((tmp_path, "is a directory"), (binary, "not a text file")):
        code, _, err = run([*command, str(path), *(["--out", str(tmp_path / "o")] if command[0] == "allreduce" else [])],
                           capsys)
        assert code == 2 and says in err and str(path) in err and len(err.strip().splitlines()) == 1


def test_isca2021_preset_matches_the_published_setup(capsys):
    import tomllib

    code, out, _ = run(["config", "show", "--preset", "isca2021"], capsys)
    cfg = tomllib.loads(out)
    # shared/reference/isca2021_setup.md: 128-bit flits, 1-cycle links at 1 GHz, 4 NIs, 32 KiB..64 MiB fp32
    assert cfg["network"]["link_bytes_per_cycle"] == 16.0
    assert cfg["network"]["link_latency_cycles"] == 1
    assert cfg["network"]["nis_per_node"] == 4
    assert cfg["allreduce"]["sizes"] == "32KiB..64MiB" and cfg["allreduce"]["element_bytes"] == 4
    # its routers: 4 VCs x 318 flits, iSLIP, routing delay 0 and credit delay 1 (torus), 128-bit flits
    router = cfg["router"]
    assert (router["num_vcs"], router["vc_depth_flits"], router["allocator"]) == (4, 318, "islip")
    assert (router["routing_delay_cycles"], router["vc_alloc_delay_cycles"], router["sw_alloc_delay_cycles"],
            router["credit_delay_cycles"], router["flit_bytes"]) == (0, 1, 1, 1, 16)
