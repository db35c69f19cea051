"""BookSim2 files are read as BookSim2's own parser reads them.

bench/data/booksim_grammar_reference.json holds BookSim2's verdict (accepted, or its
``Parse error`` line) on 58 probe texts, made by ``bench/booksim_grammar_reference.py
--booksim PATH`` with the commit it names; here every probe BookSim2 refuses is refused,
and every probe it accepts is read (but for the ones named below, refused by name because
BookSim2 reads them into a value it does not say: atoi overflowing, atof's infinity)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from noc.base.errors import ConfigError
from noc.booksim_config import DEFAULTS, NO_EFFECT, _KNOWN, parse_booksim, parse_override
from noc.booksim_fields import FIELDS

REFERENCE = json.loads((Path(__file__).parents[2] / "bench" / "data" / "booksim_grammar_reference.json").read_text())
PROBES = {p["name"]: p for p in REFERENCE["probes"]}
# accepted by BookSim2's parser, refused here by name: what BookSim2 does next is not what the file says
REFUSED_HERE = {"huge_int": "too long a number", "huge_float": "too large a number"}


def ours(probe: dict) -> dict:
    values = parse_booksim(probe["text"], probe["name"])
    if probe["override"] is not None:
        key, value = parse_override(probe["override"])
        values[key] = value
    return values


def test_the_reference_was_made_by_booksim2_on_every_probe():
    assert len(PROBES) == 58 and REFERENCE["booksim_commit"].startswith("28f43299")
    assert all(p["booksim"]["accepted"] is not None for p in PROBES.values())
    assert {n for n, p in PROBES.items() if not p["booksim"]["accepted"]} >= {
        "missing_semicolon_last", "brace_list_with_space", "block_comment", "quoted_string", "int_for_float_key",
        "empty_file"}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_a_probe_is_accepted_or_refused_as_booksim2_does(name):
    probe = PROBES[name]
    if probe["booksim"]["accepted"] and name not in REFUSED_HERE:
        ours(probe)
        return
    with pytest.raises(ConfigError) as err:
        ours(probe)
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message
    if name in REFUSED_HERE:
        assert REFUSED_HERE[name] in message
    booksim = probe["booksim"]["message"]
    if "field:" in booksim:  # BookSim2 names the key it refuses; so do we
        assert booksim.rsplit(":", 1)[1].strip() in message


def test_errors_name_the_line_and_say_what_to_write():
    cases = {
        "k = 4;\nn = 2\nseed = 1;": "line 3: expected ';' after n = 2",
        "k = 4;\npacket_size = {1, 2};": "line 2: cannot read '{' (a brace list is written without spaces",
        "injection_rate = 1;": "write it with a decimal point",
        'topology = "mesh";': "no quoted strings",
        "/* c */ k = 4;": "comments are //",
        "no_such_key = 4;": "'no_such_key' is not a BookSim2 key",
        "": "BookSim2 refuses an empty file",
        "packet_size = {1}};": "more closing braces",
    }
    for text, needle in cases.items():
        with pytest.raises(ConfigError, match=None) as err:
            parse_booksim(text, "f.cfg")
        assert needle in str(err.value), (text, str(err.value))


def test_values_keep_their_kind_and_brace_lists_nest():
    values = parse_booksim("k = 4; injection_rate = .5; traffic = hotspot({{0,5},{2,1}}); packet_size = {{1,,5}};")
    assert values == {"k": 4, "injection_rate": 0.5, "traffic": "hotspot({{0,5},{2,1}})", "packet_size": [[1, 5]]}
    assert isinstance(values["injection_rate"], float) and parse_booksim("credit_delay = -0;")["credit_delay"] == 0


def test_every_booksim2_key_is_known_and_its_default_matches_booksim2():
    assert _KNOWN == set(FIELDS)  # mapped, required at one value, or known to change nothing
    assert set(NO_EFFECT) <= set(FIELDS)
    for key, value in DEFAULTS.items():
        assert FIELDS[key][1] == value, key


def test_a_file_whose_run_measures_no_period_is_refused_with_what_to_change():
    from noc.booksim_config import from_booksim

    base = "topology = mesh; k = 4; n = 2; routing_function = dim_order; warmup_periods = 3;"
    with pytest.raises(ConfigError, match=r"max_samples = 3: with warmup_periods = 3 no sample period is measured.*"
                                          r"max_samples = 13"):
        from_booksim(parse_booksim(base + "max_samples = 3;"), "f.cfg")
    with pytest.raises(ConfigError, match=r"max_samples = 3: .*BookSim2 prints the last warm-up period's figures"):
        from_booksim(parse_booksim(base + "max_samples = 3;"), "f.cfg")
    with pytest.raises(ConfigError, match=r"max_samples = 2: with warmup_periods = 3 no sample period is measured "
                                          r"\(BookSim2 ends it as 'Simulation unstable'\).*max_samples = 13"):
        from_booksim(parse_booksim(base + "max_samples = 2;"), "f.cfg")
    assert from_booksim(parse_booksim(base + "max_samples = 4;"), "f.cfg").traffic.max_samples == 4
