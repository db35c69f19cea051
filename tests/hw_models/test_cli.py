"""The command line: help, version, topology describe, config show, one-line errors with exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


# spec -> what the error must name: the over-limit count or estimate (worked out in
# tests/noc/test_topology.py and test_routing.py)
_DESCRIBE_TOO_LARGE = {
    "torus:100x100": "47.7 GiB (limit 4 GiB)",  # 10000**2 pairs * (5 * 102 + 2) bytes
    "torus:64x64": "5.2 GiB (limit 4 GiB)",
    "switch:100000": "100,000 endpoints",
    "bigraph:1000x1000": "1,000,000 endpoints",
    "torus:99999x99999": "9,999,800,001 endpoints",
    "hypercube:d16": "65,536 endpoints",
    "fattree:k64:l6": "68,719,476,736 endpoints",
    "full:5000": "25,005,000 directed links",
    "ring:100000000": "100,000,000 endpoints",
    "switch:12000": "144,000,000 channel dependencies",  # its 1.6 GiB table is not built either
}

_DESCRIBE_LIMITED = r'''
import contextlib, io, json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # each spec would need more if built
from hw_models.cli import main
for spec in sys.argv[1:]:
    err, t0 = io.StringIO(), time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(["topology", "describe", spec])
            code = 0
        except SystemExit as exc:
            code = exc.code
        except Exception as exc:  # noqa: BLE001
            code, _ = f"raised {type(exc).__name__}", err.write(str(exc))
    print(json.dumps([spec, code, err.getvalue(), time.perf_counter() - t0]), flush=True)
'''


def test_describe_refuses_too_large_topologies_before_building_them():
    import json
    import os
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])  # this checkout first, as in the parent process
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    res = subprocess.run([sys.executable, "-c", _DESCRIBE_LIMITED, *_DESCRIBE_TOO_LARGE], capture_output=True,
                         text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    results = {row[0]: row[1:] for row in map(json.loads, res.stdout.splitlines())}
    for spec, fragment in _DESCRIBE_TOO_LARGE.items():
        code, err, seconds = results[spec]
        assert code == 2, (spec, code, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], (spec, err)
        assert seconds < 10, (spec, seconds)


@pytest.mark.parametrize(
    "flag,name,fragment",
    [
        ("--json", "/proc/x", "cannot create a file in /proc"),
        ("--json", "adir", "is a directory"),
        ("--json", "", "empty file name"),
        ("--json", "newdir/", "names a directory"),
        ("--json", "afile/t.json", "afile is not a directory"),
        ("--png", "/proc/x.png", "cannot create a file in /proc"),
        ("--png", "out.txt", "must end in .png"),
        ("--png", "noext", "must end in .png"),
        ("--png", "adir", "is a directory"),
        ("--png", "adir.png", "is a directory"),
    ],
)
def test_describe_checks_output_paths_before_any_work(tmp_path, capsys, monkeypatch, flag, name, fragment):
    import noc.topology

    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "adir.png").mkdir()
    (tmp_path / "afile").write_text("")

    def no_work(*_a, **_k):
        raise AssertionError("the topology was built before the paths were checked")

    monkeypatch.setattr(noc.topology, "parse_spec", no_work)
    code, out, err = run(["topology", "describe", "ring:4", flag, name], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag}") and fragment in lines[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "adir.png", "afile"]  # nothing written
    assert not any((tmp_path / "adir").iterdir())


def test_describe_reports_the_files_it_wrote(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["topology", "describe", "ring:4", "--json", "sub/dir/t", "--png", "pics/r.PNG"], capsys)
    assert code in (0, None)
    wrote = [line.removeprefix("wrote ") for line in out.splitlines() if line.startswith("wrote ")]
    assert wrote == [str(Path("sub/dir/t")), str(Path("pics/r.PNG"))]
    assert Topology.from_json((tmp_path / "sub/dir/t").read_text()) == parse_spec("ring:4")
    assert (tmp_path / "pics/r.PNG").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in (tmp_path / "pics").iterdir()) == ["r.PNG"]


def test_describe_refuses_a_picture_of_too_many_links_before_routing(tmp_path, capsys, monkeypatch):
    import noc.routing

    monkeypatch.setattr(noc.routing, "route", lambda *a, **k: (_ for _ in ()).throw(AssertionError("routed")))
    code, _, err = run(["topology", "describe", "full:150", "--png", str(tmp_path / "f.png")], capsys)
    # full:150: 150*149 router links + 300 NI links
    assert code == 2 and "22,650 directed links, too many to draw (limit 20,000" in err
    assert not (tmp_path / "f.png").exists()


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


def test_config_show_prints_a_config_that_loads_the_same(tmp_path, capsys):
    from hw_models.config import load_experiment

    f = tmp_path / "c.toml"
    f.write_text('[network]\ntopology = "torus:4x4:c2"\n')
    code, out, _ = run(["config", "show", str(f)], capsys)
    assert code in (0, None) and "nis_per_node = 2" in out  # the spec's own count, not the key's default 1
    shown = tmp_path / "shown.toml"
    shown.write_text(out)
    code, _, err = run(["allreduce", "--config", str(shown), "-a", "ring", "--sizes", "64KiB", "--out",
                        str(tmp_path / "o")], capsys)
    assert code in (0, None), err
    assert load_experiment(shown).network.nis_per_node == 2


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

    # docs/allreduce.md, "The paper's set-up": the paper's routers and NIs, with the channel
    # timing its public simulator runs (150-cycle router channels on every topology,
    # credits over them) and its node's reduction unit
    for preset, credit in (("isca2021", 1), ("isca2021_mesh", 2)):
        code, out, _ = run(["config", "show", "--preset", preset], capsys)
        assert code == 0
        cfg = tomllib.loads(out)
        net = cfg["network"]
        assert (net["link_bytes_per_cycle"], net["link_latency_cycles"], net["nis_per_node"]) == (16.0, 150, 4)
        assert (net["inject_latency_cycles"], net["eject_latency_cycles"]) == (2, 1)  # BookSim2's NI channels
        assert cfg["allreduce"]["sizes"] == "32KiB..64MiB" and cfg["allreduce"]["element_bytes"] == 4
        # 4 VCs x 318 flits, iSLIP allocators, routing delay 0, BookSim2 credit delay 1 (torus) or 2
        # (mesh), which the flit level counts with the cycle a credit is sent in, 128-bit flits
        router = cfg["router"]
        assert (router["num_vcs"], router["vc_depth_flits"], router["vc_allocator"], router["sw_allocator"]) == \
            (4, 318, "islip", "islip")
        assert (router["routing_delay_cycles"], router["vc_alloc_delay_cycles"], router["sw_alloc_delay_cycles"],
                router["st_delay_cycles"], router["credit_delay_cycles"], router["flit_bytes"]) == \
            (0, 1, 1, 1, 1 + credit, 16)
        assert router["credit_adds_link_latency"] is True
        # the node sums a child's chunk at 32 fp32 per cycle in 512-element granules
        assert (cfg["nic"]["reduction"], cfg["nic"]["reduce_elements_per_cycle"],
                cfg["nic"]["reduce_granule_elements"]) == ("chunk", 32.0, 512)
        assert cfg["network"]["topology"].startswith("torus" if credit == 1 else "mesh")
