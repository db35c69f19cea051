"""Fuzzing every config loader and spec parser: random strings and values either parse or
raise the project's own error (:class:`noc.base.errors.HwModelsError`: ConfigError, SpecError,
ScheduleError, ...), never anything else (no ValueError from int(), no OverflowError, no
KeyError, no pydantic ValidationError)."""

from __future__ import annotations

import math
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hw_models.noc_experiment import experiment_model
from hw_models.config import ExperimentConfig
from noc.base.config import validate
from noc.base.errors import HwModelsError

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

# what users type: ASCII and the digits and spaces that look like ASCII ones
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=24)
TRICKY = st.sampled_from(list("0123456789xcdkl:.,-+eE_ ") + ["²", "①", "４", "٤", "\u00a0", "\n", "Ⅻ", "ｘ"])
SPECISH = st.text(alphabet=TRICKY, max_size=12)
FAMILIES = ["ring", "mesh", "torus", "hypercube", "full", "fattree", "bigraph", "switch", "star", "fully_connected", "x"]
# numbers of at most 2 digits: every network they make is small (a big one is refused or slow, not fuzzed)
SMALL = st.text(alphabet=st.sampled_from(list("0123456789xdklc:") + ["²", "４"]), max_size=9).filter(
    lambda s: all(len(run) <= 2 for run in "".join(ch if ch.isdigit() else " " for ch in s).split()))
SPECS = st.one_of(TEXT, SPECISH, st.builds(lambda f, a: f"{f}:{a}", st.sampled_from(FAMILIES), SMALL))

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 70), st.integers(-(2**70), 2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([math.inf, math.nan, 1e-300, 1e300]),
                    TEXT, SPECISH)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                      max_leaves=6)


def _ours_or_nothing(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except HwModelsError as exc:
        assert str(exc).strip(), "an error without a message"
        return None


def _sections(model):
    """Random data for ``model``: known sections with known or unknown keys and any values."""
    opts = {}
    for name, f in model.model_fields.items():
        sub = getattr(f.annotation, "model_fields", None)
        if sub:
            keys = st.one_of(st.sampled_from(sorted(sub)), TEXT)
            opts[name] = st.one_of(st.dictionaries(keys, VALUES, max_size=4), VALUES)
        else:
            opts[name] = VALUES
    return st.fixed_dictionaries({}, optional=opts)


@FUZZ
@given(SPECS)
def test_topology_specs(spec):
    from noc.topology import parse_spec

    _ours_or_nothing(parse_spec, spec)


@FUZZ
@given(st.one_of(TEXT, SPECISH, st.integers(-(2**70), 2**70)))
def test_sizes(text):
    from noc.base.units import parse_size_bytes, parse_sizes_bytes

    _ours_or_nothing(parse_size_bytes, text)
    _ours_or_nothing(parse_sizes_bytes, text if isinstance(text, str) else str(text))


@FUZZ
@given(TEXT)
def test_algorithm_names(name):
    from nic.collectives import algorithm_name

    _ours_or_nothing(algorithm_name, name)


@FUZZ
@given(st.one_of(TEXT, VALUES.map(lambda v: __import__("json").dumps(v, allow_nan=True))))
def test_topology_json(text):
    from noc.topology import Topology

    _ours_or_nothing(Topology.from_json, text)


@FUZZ
@given(_sections(ExperimentConfig))
def test_experiment_config_data(data):
    _ours_or_nothing(validate, data, ExperimentConfig, "fuzz.toml")


@FUZZ
@given(_sections(experiment_model()))
def test_noc_config_data(data):
    _ours_or_nothing(validate, data, experiment_model(), "fuzz.toml")


@FUZZ
@given(st.dictionaries(st.sampled_from(["lr", "gamma", "tau", "seed", "n_agents", "batch_size", "temperature",
                                        "adam_eps", "fixed_point_bits", "fixed_point_frac_bits", "env"]) | TEXT,
                       VALUES, max_size=4))
def test_maddpg_config(kwargs):
    from maddpg.trainer import make_config

    _ours_or_nothing(make_config, **kwargs)


@FUZZ
@given(st.one_of(st.binary(max_size=60), TEXT.map(str.encode),
                 st.sampled_from(["[network]\n", "[traffic]\n", "[network]\nlink_bytes_per_cycle = ", "[run]\nseed = "])
                 .flatmap(lambda head: st.one_of(SPECISH, TEXT).map(lambda tail: (head + tail).encode()))))
def test_toml_files(blob):
    from hw_models.noc_experiment import load_noc_experiment as load_noc
    from hw_models.config import load_experiment

    fd, name = tempfile.mkstemp(suffix=".toml")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        _ours_or_nothing(load_experiment, name)
        _ours_or_nothing(load_noc, name)
    finally:
        os.unlink(name)


BOOKSIM_KEYS = ["topology", "k", "n", "c", "routing_function", "num_vcs", "vc_buf_size", "injection_rate", "packet_size",
                "packet_size_rate", "seed", "sample_period", "max_samples", "latency_thres", "warmup_thres", "traffic",
                "vc_allocator", "sw_allocator", "credit_delay", "perm_seed"]
BASE = "topology = mesh;\nk = 2;\nn = 2;\nrouting_function = dor;\nnum_vcs = 2;\n"


@FUZZ
@given(st.one_of(TEXT, SPECISH, st.lists(st.builds(lambda k, v: f"{k} = {v};", st.sampled_from(BOOKSIM_KEYS),
                                                     st.one_of(SPECISH, TEXT, st.integers(-(2**70), 2**70).map(str),
                                                               st.sampled_from(["{1, 2}", "{{1}}", "{", "}", "1e999"]))),
                                           max_size=3).map("\n".join)))
def test_booksim_files(text):
    from noc.booksim_config import from_booksim, parse_booksim, parse_override

    values = _ours_or_nothing(parse_booksim, text)
    if values is not None:  # over a small base network, so that what parses is quick to build
        _ours_or_nothing(from_booksim, {**parse_booksim(BASE), **values})
    _ours_or_nothing(parse_override, text)


@FUZZ
@given(st.one_of(TEXT, SPECISH))
def test_command_line_lists_and_fixed_point(text):
    from hw_models.flags import parse_fixed_point as _parse_fixed_point
    from hw_models.flags import parse_int_list as _parse_list

    _ours_or_nothing(_parse_fixed_point, text)
    _ours_or_nothing(_parse_list, text, "depths")


@FUZZ
@given(st.one_of(SCALARS, st.integers(-(2**80), 2**80)))
def test_seeds(value):
    from noc.base.config import check_seed

    _ours_or_nothing(check_seed, value, "--seed")


# a whole experiment checked (the path `config show` and `allreduce` share), on small networks
RESOLVE = st.fixed_dictionaries({}, optional={
    "network": st.fixed_dictionaries({}, optional={
        "topology": st.sampled_from(["torus:4x4", "ring:4", "mesh:2x3:c2", "fattree:k2:l2", "switch:4", "full:3:c2"]),
        "nis_per_node": st.integers(-1, 66), "routing": st.sampled_from(["auto", "dor", "nca", "shortest", "x"]),
        "link_bytes_per_cycle": SCALARS, "inject_latency_cycles": st.integers(0, 3)}),
    "router": st.fixed_dictionaries({}, optional={
        "num_vcs": st.integers(0, 5), "routing": st.sampled_from(["auto", "dor", "nca", "shortest"]),
        "dateline": st.booleans(), "flit_bytes": st.integers(0, 40)}),
    "nic": st.fixed_dictionaries({}, optional={
        "design": st.sampled_from(["codesigned", "baseline"]), "issue_delay_cycles": st.integers(0, 3),
        "packet_bytes": st.integers(0, 300), "reduce_elements_per_cycle": SCALARS}),
    "allreduce": st.fixed_dictionaries({}, optional={
        "algorithms": st.lists(st.sampled_from(["ring", "ring2d", "dbtree", "multitree", "halving_doubling", "hd"]),
                               max_size=3),
        "sizes": st.one_of(SPECISH, st.sampled_from(["4B", "64KiB", "1001", "1KiB..4KiB"])),
        "element_bytes": st.integers(0, 17)}),
})


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(RESOLVE)
def test_whole_experiments(data):
    from hw_models.experiment import resolve_experiment

    cfg = _ours_or_nothing(validate, data, ExperimentConfig, "fuzz.toml")
    if cfg is not None:
        _ours_or_nothing(resolve_experiment, cfg, "fuzz.toml")


@pytest.mark.parametrize("spec", ["ring:²", "full:①", "torus:４x4"])
def test_the_reported_specs_are_errors_of_ours(spec):
    from noc.base.errors import SpecError
    from noc.topology import parse_spec

    with pytest.raises(SpecError):
        parse_spec(spec)


# --- the sweep store: damaged cells, byte flips, truncation ---------------------------------------

def _small_store(path):
    from hw_models.sweep.store import PointRecord, SweepStore, point_key

    with SweepStore(path) as s:
        s.put_many([PointRecord(point_key("toy", {"x": x}, {}), "toy", "done", {"x": x}, {}, {"y": x * 1.5}, None,
                                0.1, "c", "t") for x in range(40)])
    return path.read_bytes()


def _read_whole_store(path):
    import warnings

    from hw_models.sweep.store import SweepStore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with SweepStore(path, create=False) as s:
            rows = list(s.rows())
            s.done_keys(r["key"] for r in rows)
            return rows


CELLS = st.sampled_from(["config", "metrics", "model_versions", "error", "status", "checksum", "key"])
CELL_VALUES = st.one_of(TEXT, st.sampled_from(["[1]", "{", "NaN", '{"y":Infinity}', "null", "{}", '"x"']),
                        st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True), st.binary(max_size=8), st.none())


def _fuzz_store_cells(cell, value, row):
    import sqlite3

    with tempfile.TemporaryDirectory() as d:
        p = __import__("pathlib").Path(d) / "s.sqlite"
        _small_store(p)
        db = sqlite3.connect(str(p))
        try:
            db.execute(f"UPDATE points SET {cell} = ? WHERE rowid = ?", (value, row))
            db.commit()
        except sqlite3.IntegrityError:  # the schema's own checks refuse it
            pass
        db.close()
        rows = _ours_or_nothing(_read_whole_store, p)
        if rows is not None:  # every row read back is a whole one
            assert all(isinstance(r["config"], dict) and isinstance(r["metrics"], dict) for r in rows)


def _fuzz_store_bytes(flips, cut):
    with tempfile.TemporaryDirectory() as d:
        p = __import__("pathlib").Path(d) / "s.sqlite"
        data = bytearray(_small_store(p))
        for at, byte in flips:
            data[at % len(data)] ^= byte or 1
        p.write_bytes(bytes(data[:max(0, len(data) - cut)]))
        _ours_or_nothing(_read_whole_store, p)


@FUZZ
@given(CELLS, CELL_VALUES, st.integers(1, 40))
def test_fuzz_sweep_store_cells(cell, value, row):
    _fuzz_store_cells(cell, value, row)


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=6), st.integers(0, 9000))
def test_fuzz_sweep_store_bytes(flips, cut):
    _fuzz_store_bytes(flips, cut)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=12), st.integers(0, 9000),
       CELLS, CELL_VALUES, st.integers(1, 40))
def test_fuzz_sweep_store_many(flips, cut, cell, value, row):
    _fuzz_store_bytes(flips, cut)
    _fuzz_store_cells(cell, value, row)
