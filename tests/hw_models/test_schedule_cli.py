"""``hw-models schedule``: summary, tables, JSON output, one-line errors."""

from __future__ import annotations

import pytest

from hw_models.cli import main
from nic.collectives import Schedule, multitree
from noc.topology import parse_spec


def run(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def test_summary_compares_algorithms_with_bounds(capsys):
    code, out, _ = run(["schedule", "--topology", "torus:4x4", "--algorithm", "ring,multitree", "--nis", "4"], capsys)
    assert code in (0, None)
    assert "torus:4x4:c4" in out and "ring" in out and "multitree" in out
    assert "edges per step [64, 64, 48, 48, 16]" in out
    assert "bounds: injection 30,720 cycles" in out  # 2*15/16 * 1 MiB / (4 NIs x 16 B/cycle)


def test_tables_of_one_node(capsys):
    code, out, _ = run(["schedule", "-t", "torus:4x4", "--tables", "--node", "0"], capsys)
    assert code in (0, None) and "multitree: node 0" in out and "reduce" in out and "gather" in out


def test_json_output_round_trips(tmp_path, capsys):
    f = tmp_path / "s.json"
    code, _, _ = run(["schedule", "-t", "torus:4x4", "-a", "multitree", "--format", "json", "--out", str(f)], capsys)
    assert code in (0, None)
    assert Schedule.from_json(f.read_text()) == multitree(parse_spec("torus:4x4"))


@pytest.mark.parametrize("argv,msg", [
    (["-a", "bogus"], "unknown algorithm 'bogus'"),
    (["-t", "fattree:k4:l2", "--nis", "2"], "switched network"),
    (["-t", "torus:4x"], "torus"),
    (["--format", "xml"], "--format 'xml'"),
    (["--size", "12 parsecs"], "size"),
    (["--tables", "--node", "99"], "--node 99"),
    (["-a", "ring,multitree", "--format", "json"], "one --algorithm"),
])
def test_bad_input_is_a_one_line_error(argv, msg, capsys):
    code, _, err = run(["schedule", *argv], capsys)
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1
