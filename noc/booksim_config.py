"""BookSim2 configuration files, read into this package's own configuration.

BookSim2's files are ``key = value;`` statements with ``//`` comments; a value is an
integer, a floating-point number, or a word (``mesh``, ``islip(1)``, a brace list such as
``{{1,5}}``) written without spaces, and each key takes only the kinds its table in
BookSim2 holds (:data:`noc.booksim_fields.FIELDS`). :func:`parse_booksim` reads that syntax
as BookSim2's own lexer and grammar do (what BookSim2 stops on with a parse error is
refused here, by line and key); :func:`from_booksim` maps the keys onto a
topology, a :class:`~noc.flit.FlitNetworkConfig` and a
:class:`~noc.flit_traffic.TrafficConfig` with BookSim2's semantics switched on (its
allocators, torus VC classes, random tie direction, packets to their own source,
injection during the drain, its channel latencies and credit timing, its run
methodology). Every key BookSim2 has is either mapped, known to change nothing
BookSim2 itself reads (:data:`NO_EFFECT`, listed in the result's ``notes``), or refused
with a :class:`~noc.base.errors.ConfigError` that names the key and its value: nothing is
silently ignored.

Timing, from BookSim2's router and channel code: a head spends ``routing_delay +
vc_alloc_delay + sw_alloc_delay + st_prepare_delay + st_final_delay`` cycles in each
router and ``L`` on each router-to-router channel (mesh 1; torus 2 with
``use_noc_latency``, the default; 1 without), and the injection and ejection add 3 in
all, so its zero-load head latency is ``(H + 1) P + H L + 3`` over ``H`` channels. Here:
the same router delays (``st_delay_cycles`` = st_prepare + st_final), router links of
``L`` cycles, injection links of 2 and ejection links of 1. A credit is usable upstream
``1 + L + credit_delay`` cycles after its flit left the buffer (``credit_delay_cycles =
1 + credit_delay`` with ``credit_adds_link_latency``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noc.base.errors import ConfigError

# BookSim2 keys that change nothing in the runs mapped here (BookSim2's IQ router never reads
# alloc_iters or arb_type; the rest only shape its printed output or its debugging)
NO_EFFECT = {
    "alloc_iters": "BookSim2's IQ router ignores it (one iteration unless the allocator is written islip(N))",
    "arb_type": "BookSim2's IQ router ignores it (round-robin arbiters)",
    "print_csv_results": "output only (hw-models noc run --booksim always writes its CSV)",
    "print_activity": "output only",
    "pair_stats": "output only (per-pair figures are not printed here)",
    "watch_file": "debug output only", "watch_flits": "debug output only", "watch_packets": "debug output only",
    "watch_transactions": "debug output only", "watch_out": "debug output only", "stats_out": "output only",
    "deadlock_warn_timeout": "only prints a warning in BookSim2",
    "viewer_trace": "output only", "sim_power": "power model only", "power_output_file": "power model only",
    "tech_file": "power model only", "channel_width": "power model only", "output_delay": "unused by BookSim2",
    "in_ports": "unused by BookSim2", "out_ports": "unused by BookSim2", "channel_file": "unused by BookSim2",
    "channel_sweep": "power model only",
    "fail_seed": "only read with link_failures > 0, which is refused here",
    "vct": "only read by BookSim2's event router (router = iq is the one modelled)",
    **{k: "output only (per-node statistics files)" for k in (
        "active_packets_out", "ejected_flits_out", "free_credits_out", "injected_flits_out", "max_credits_out",
        "outstanding_credits_out", "received_flits_out", "sent_flits_out", "sent_packets_out", "stored_flits_out",
        "used_credits_out")},
    **{k: "only read by BookSim2's shared buffer policies (buffer_policy = private is the one modelled)" for k in (
        "private_bufs", "private_buf_size", "private_buf_start_vc", "private_buf_end_vc", "max_held_slots",
        "feedback_aging_scale", "feedback_offset")},
}

# values a key must have because the behaviour behind other values is not modelled here
_REQUIRED = {
    "input_speedup": 1, "output_speedup": 1, "internal_speedup": 1.0, "speculative": 0, "noq": 0,
    "vc_busy_when_full": 0, "vc_priority_donation": 0, "vc_shuffle_requests": 0, "hold_switch_for_packet": 0,
    "classes": 1, "subnets": 1, "use_read_write": 0, "sim_count": 1,
    "include_queuing": 1, "sim_type": "latency", "priority": "none",
    "buffer_policy": "private", "buf_size": -1, "output_buffer_size": -1, "router": "iq", "measure_stats": 1, "link_failures": 0,
}

_TOPOLOGIES = ("mesh", "torus", "cmesh", "fattree")
_ROUTING = {"mesh": ("dor", "dim_order"), "torus": ("dim_order",), "cmesh": ("dor_no_express",), "fattree": ("nca",)}
# routing functions BookSim2 has for these topologies that are not modelled here, and why
_ROUTING_NOT_MODELLED = {
    "cmesh": {"dor": "its dor_cmesh takes the edge routers' express channels (links k/2 routers along an edge), "
                     "which are not modelled",
              "xy_yx": "its xy_yx_cmesh picks XY or YX per packet and takes the express channels",
              "xy_yx_no_express": "its xy_yx_no_express_cmesh picks XY or YX per packet (half the VCs each); "
                                  "not modelled"},
    "fattree": {"anca": "its anca_fattree picks the up port by downstream credits (adaptive); not modelled"},
}
# traffic patterns per topology: cmesh numbers its nodes row by row over the whole 2k x 2k
# grid of nodes, so BookSim2's bit and digit patterns act on other nodes than here
_PATTERNS_ON = {"cmesh": ("uniform", "hotspot"), "fattree": ("uniform", "transpose", "bitcomp", "bitrev", "shuffle",
                                                             "randperm", "hotspot")}
_ALLOCATORS = ("islip", "separable_input_first")
_PATTERNS = {"uniform": "uniform", "transpose": "transpose", "bitcomp": "bitcomp", "bitrev": "bitrev",
             "shuffle": "shuffle", "tornado": "tornado", "neighbor": "neighbor_all", "randperm": "randperm"}
_METHOD_KEYS = {"warmup_periods": "warmup_periods", "sample_period": "sample_period_cycles",
                "max_samples": "max_samples", "latency_thres": "latency_thres_cycles", "warmup_thres": "warmup_thres",
                "acc_warmup_thres": "acc_warmup_thres", "stopping_thres": "stopping_thres",
                "acc_stopping_thres": "acc_stopping_thres", "seed": "seed"}
# BookSim2's defaults (booksim_config.cpp) of the keys that map
DEFAULTS: dict[str, Any] = {
    "topology": "torus", "k": 8, "n": 2, "c": 1, "routing_function": "none", "use_noc_latency": 1,
    "num_vcs": 16, "vc_buf_size": 8, "vc_allocator": "islip", "sw_allocator": "islip", "routing_delay": 1,
    "vc_alloc_delay": 1, "sw_alloc_delay": 1, "st_prepare_delay": 0, "st_final_delay": 1, "credit_delay": 0,
    "traffic": "uniform", "packet_size": 1, "packet_size_rate": 1, "injection_rate": 0.1,
    "injection_rate_uses_flits": 0, "injection_process": "bernoulli", "burst_alpha": 0.5,
    "burst_beta": 0.5, "burst_r1": -1.0, "warmup_periods": 3, "sample_period": 1000, "max_samples": 10,
    "latency_thres": 500.0, "warmup_thres": 0.05, "acc_warmup_thres": 0.05, "stopping_thres": 0.05,
    "acc_stopping_thres": 0.05, "seed": 0, "vc_prioritize_empty": 0, "wait_for_tail_credit": 0, "perm_seed": 0, "x": 8, "y": 8, "xr": 1,
    "yr": 1, **_REQUIRED,
}
_KNOWN = set(DEFAULTS) | set(NO_EFFECT) | {"read_request_begin_vc", "read_request_end_vc", "write_request_begin_vc",
                                           "write_request_end_vc", "read_reply_begin_vc", "read_reply_end_vc",
                                           "write_reply_begin_vc", "write_reply_end_vc", "write_fraction",
                                           "read_request_size", "write_request_size", "read_reply_size",
                                           "write_reply_size", "read_request_subnet", "write_request_subnet",
                                           "read_reply_subnet", "write_reply_subnet", "class_priority",
                                           "network_file", "spec_check_elig", "spec_check_cred",
                                           "spec_mask_by_reqs", "spec_sw_allocator", "batch_size", "batch_count",
                                           "max_outstanding_requests"}


@dataclass(frozen=True)
class BookSimRun:
    """A BookSim2 configuration in this package's terms."""

    topology: Any  # noc.topology.Topology, with BookSim2's channel latencies
    network: Any  # noc.flit.FlitNetworkConfig
    traffic: Any  # noc.flit_traffic.TrafficConfig
    values: dict  # every key's value, BookSim2's defaults filled in
    notes: list[str] = field(default_factory=list)  # keys accepted that change nothing here


# BookSim2's lexer (src/config.l), rule by rule: at each position the longest match wins, a
# tie goes to the earlier rule, and any other character is a token of its own (which its
# grammar then refuses unless it is '=' or ';'). Comments are // to the end of the line; a
# word may carry parameters in parentheses, braces and commas, and a brace list is one word
# without spaces: islip(4), hotspot({{0,5},{2,1}}), {1,2}.
_LEX_RULES = (
    ("comment", re.compile(r"//[^\n]*")),
    ("space", re.compile(r"[ \t\r]+")),
    ("newline", re.compile(r"\n")),
    ("str", re.compile(r"\{[A-Za-z0-9_\-.({,)}]+\}")),
    ("int", re.compile(r"-?[0-9]+")),
    ("float", re.compile(r"-?[0-9]*\.[0-9]+")),
    ("float", re.compile(r"-?(?:[0-9]*\.)?[0-9]+(?:[eE][-+]?[0-9]+)?")),
    ("str", re.compile(r"[A-Za-z_\-/.][A-Za-z0-9_\-/.+({,)}]*")),
)
_INT32 = (-2**31, 2**31 - 1)  # BookSim2 reads integers with atoi into an int
_TYPE_NAMES = {"int": "an integer", "float": "a floating-point number", "str": "a word or brace list"}
# what a character BookSim2 cannot read usually means
_HINTS = {'"': "BookSim2 has no quoted strings: write the word bare", "'": "BookSim2 has no quoted strings: write "
          "the word bare", "*": "BookSim2's comments are // to the end of the line", "#": "BookSim2's comments are // "
          "to the end of the line", "{": "a brace list is written without spaces, e.g. {1,2}", "+": "a number is "
          "written without a + sign"}


@dataclass(frozen=True)
class _Token:
    kind: str  # int, float, str, or char (one character that is no number or word)
    text: str
    line: int


def _lex(text: str, source: str) -> list[_Token]:
    out, pos, line = [], 0, 1
    while pos < len(text):
        best, length = None, 0
        for kind, rule in _LEX_RULES:
            m = rule.match(text, pos)
            if m and m.end() - pos > length:
                best, length = kind, m.end() - pos
        if best is None:
            best, length = "char", 1
        if best == "newline":
            line += 1
        elif best not in ("comment", "space"):
            out.append(_Token(best, text[pos:pos + length], line))
        pos += length
    return out


def _syntax_error(source: str, tok: _Token | None, expected: str) -> ConfigError:
    if tok is None:
        return ConfigError(f"{source}: the file ends inside 'key = value;' (expected {expected}; BookSim2 refuses it "
                           "with a syntax error)")
    if tok.kind == "char" and tok.text not in "=;":
        hint = _HINTS.get(tok.text, "BookSim2 syntax: key = value;")
        return ConfigError(f"{source}: line {tok.line}: cannot read {tok.text!r} ({hint})")
    return ConfigError(f"{source}: line {tok.line}: expected {expected}, found {tok.text[:30]!r} (BookSim2 syntax: "
                       "key = value; refuses this with a syntax error)")


def _brace_list(text: str, source: str, key: str) -> list:
    """A brace list as nested Python lists: ``{{0,5},{2,1}}`` is ``[[0, 5], [2, 1]]``; an element
    reads as an int or float where it is written as one, else as a word (empty elements are
    skipped, as BookSim2's tokenize_str skips them)."""
    stack: list[list] = []
    item, done = "", None
    for ch in text:
        if done is not None:
            raise _refuse(source, key, text, "has more closing braces than opening ones")
        if ch == "{":
            stack.append([])
        elif ch in ",}":
            if item:
                stack[-1].append(_scalar(item))
                item = ""
            if ch == "}":
                inner = stack.pop()
                if stack:
                    stack[-1].append(inner)
                else:
                    done = inner
        else:
            item += ch
    if done is None:
        raise _refuse(source, key, text, "has more opening braces than closing ones")
    return done


def _scalar(text: str) -> Any:
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    if re.fullmatch(r"-?(?:[0-9]*\.)?[0-9]+(?:[eE][-+]?[0-9]+)?", text):
        return float(text)
    return text


def _assign(tok_key: _Token, tok_value: _Token, source: str) -> Any:
    """The value BookSim2 assigns for ``key = value;``, or the error it stops with."""
    from noc.booksim_fields import FIELDS

    key, text = tok_key.text, tok_value.text
    if key not in FIELDS:
        raise ConfigError(f"{source}: line {tok_key.line}: {key!r} is not a BookSim2 key")
    types = FIELDS[key][0]
    if tok_value.kind not in types:
        takes = " or ".join(_TYPE_NAMES[t] for t in types)
        fix = " (write it with a decimal point, e.g. 1.0)" if tok_value.kind == "int" and "float" in types else ""
        raise ConfigError(f"{source}: line {tok_key.line}: BookSim2 key {key} = {text[:30]}: BookSim2 reads "
                          f"{text[:30]!r} as {_TYPE_NAMES[tok_value.kind]} and {key} takes {takes}{fix}")
    if tok_value.kind == "int":
        if len(text) > 12 or not _INT32[0] <= int(text) <= _INT32[1]:
            raise ConfigError(f"{source}: key {key!r}: {text[:30]!r}... is too long a number for BookSim2's 32-bit "
                              f"integers (allowed: {_INT32[0]} to {_INT32[1]})")
        return int(text)
    if tok_value.kind == "float":
        value = float(text)
        if not math.isfinite(value):
            raise ConfigError(f"{source}: key {key!r}: {text[:30]!r} is too large a number (BookSim2 reads it as "
                              "infinity)")
        return value
    return _brace_list(text, source, key) if text.startswith("{") else text


def parse_booksim(text: str, source: str = "booksim config") -> dict[str, Any]:
    """BookSim2's ``key = value;`` files into a dict, read as BookSim2's own parser reads
    them (its lexer, its grammar, its typed key tables; later keys win): whatever BookSim2
    stops on with a parse error is a :class:`ConfigError` naming the line and the key."""
    toks = _lex(text, source)
    if not toks:
        raise ConfigError(f"{source}: no 'key = value;' in the file (BookSim2 refuses an empty file)")
    values: dict[str, Any] = {}
    i = 0
    while i < len(toks):
        parts = toks[i:i + 4] + [None] * (4 - len(toks[i:i + 4]))
        key, eq, value, end = parts
        if key.kind != "str":
            raise _syntax_error(source, key, "a key")
        if eq is None or eq.text != "=":
            raise _syntax_error(source, eq, f"'=' after {key.text!r}")
        if value is None or value.kind == "char":
            raise _syntax_error(source, value, f"a value for {key.text!r}")
        if end is None or end.text != ";":
            raise _syntax_error(source, end, f"';' after {key.text} = {value.text[:30]}")
        values[key.text] = _assign(key, value, source)
        i += 4
    return values


def parse_override(item: str) -> tuple[str, Any]:
    """One command-line ``key=value``, read as BookSim2 reads it (the file syntax with the
    ``;`` added)."""
    if "=" not in item:
        raise ConfigError(f"override {item!r}: expected key=value")
    parsed = parse_booksim(item + ";", source=f"override {item!r}")
    if len(parsed) != 1:
        raise ConfigError(f"override {item!r}: expected one key=value")
    return next(iter(parsed.items()))


def read_booksim(path: str | Path, overrides: list[str] | None = None) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such BookSim2 config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read the BookSim2 config file ({exc})") from None
    values = parse_booksim(text, str(p))
    for item in overrides or []:
        k, v = parse_override(item)
        values[k] = v
    return values


def _refuse(source: str, key: str, value: Any, why: str) -> ConfigError:
    return ConfigError(f"{source}: BookSim2 key {key} = {value!r}: {why}")


def _number(values: dict, key: str, source: str, kind: type = int) -> Any:
    v = values[key]
    if kind is float and isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if kind is int and isinstance(v, int) and not isinstance(v, bool):
        return v
    raise _refuse(source, key, v, f"must be {'a number' if kind is float else 'an integer'}")


def _flag(values: dict, key: str, source: str) -> bool:
    if values[key] in (0, 1):
        return bool(values[key])
    raise _refuse(source, key, values[key], "must be 0 or 1")


def _allocator(values: dict, key: str, source: str) -> str:
    v = values[key]
    if v in _ALLOCATORS:
        return v
    m = re.fullmatch(r"islip\(([0-9]+)\)", str(v))
    if m and int(m.group(1)) == 1:
        return "islip"
    raise _refuse(source, key, v, f"allowed here: {', '.join(_ALLOCATORS)} (other allocators and iSLIP with "
                                  "more than one iteration are not modelled)")


def _packet_sizes(values: dict, source: str) -> tuple[list[int], list[float] | None]:
    size, rate = values["packet_size"], values["packet_size_rate"]

    def first_class(v: Any, key: str) -> list:
        if isinstance(v, list):  # {a, b}: one entry per class; {{a, b}}: class 0 draws from a, b
            if not v:
                raise _refuse(source, key, v, "is empty")
            v = v[0]
        return v if isinstance(v, list) else [v]

    sizes = first_class(size, "packet_size")
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in sizes):
        raise _refuse(source, "packet_size", size, "packet sizes must be integers >= 1")
    rates = first_class(rate, "packet_size_rate")
    if rates == [1] or rates == [1] * len(sizes):
        return sizes, None
    if len(rates) != len(sizes) or not all(isinstance(r, int) and not isinstance(r, bool) and 0 <= r <= 10**6
                                           for r in rates) or sum(rates) <= 0:
        raise _refuse(source, "packet_size_rate", rate, f"needs one integer weight in [0, 1e6] per packet size "
                                                        f"({len(sizes)}), not all zero")
    return sizes, [float(r) for r in rates]


def tokenize(data: str) -> list[str]:
    """BookSim2's ``tokenize_str`` (config_utils.cpp), which splits the parameters of
    ``name(params)`` and brace lists: a string not starting with ``{`` is one element, commas
    and all; otherwise the top-level elements up to the first closing brace. So
    ``hotspot({0,5})`` has the parameters ``0`` and ``5`` (node 0, rate 5), and several nodes
    are written ``hotspot({{0,5},{2,1}})``."""
    if not data:
        return []
    if data[0] != "{":
        return [data]
    values, start, nested = [], 1, 0
    for curr in range(1, len(data)):
        ch = data[curr]
        if ch == "{":
            nested += 1
        elif ch == "}" and nested:
            nested -= 1
        elif ch in ",}" and not nested:
            if curr > start:
                values.append(data[start:curr])
            start = curr + 1
    return values


def _numbers(data: str, kind: type, source: str, key: str, value: Any, what: str) -> list:
    """BookSim2's ``tokenize_int`` / ``tokenize_float`` (tokenize, then atoi / atof), refusing
    an element atoi / atof would read only in part (``0.1,0.2`` read as 0.1)."""
    out = []
    for item in tokenize(data):
        pattern = r"\s*[-+]?[0-9]+" if kind is int else r"\s*[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
        if not re.fullmatch(pattern, item):
            raise _refuse(source, key, value, f"BookSim2 reads {what} {item!r} as {kind.__name__}({item!r}) would not "
                          "(its atoi/atof stop at the first character they cannot read); parameters are written in "
                          "braces, e.g. on_off({0.1,0.2,-1}) or hotspot({{0,5},{2,1}})")
        out.append(kind(item))
    return out


def _params(value: str, name: str) -> list[str] | None:
    """The parameters of BookSim2's ``name(params)`` (None without parentheses), split as its
    InjectionProcess::New and TrafficPattern::New do."""
    if value == name:
        return None
    m = re.fullmatch(re.escape(name) + r"\((.*?)\)?", value, flags=re.S)
    if not m:
        return None
    return tokenize(m.group(1))


def _hotspot(value: str, nodes: int, source: str, notes: list[str]) -> tuple[list[int], list[int] | None]:
    """BookSim2's ``hotspot(params)``: the hotspot nodes and their integer rates, as its
    TrafficPattern::New reads them (parameter 1 the nodes, parameter 2 the rates)."""
    params = _params(value, "hotspot") or []
    if not params:
        raise _refuse(source, "traffic", value, "BookSim2 draws the hotspot at random before it sets the seed; "
                      "name the hotspot nodes: hotspot(n), or hotspot({{n1,n2,...},{rates}})")
    hot = _numbers(params[0], int, source, "traffic", value, "the hotspot nodes")
    if not hot:
        raise _refuse(source, "traffic", value, "no hotspot node")
    if not all(0 <= h < nodes for h in hot):
        raise _refuse(source, "traffic", value, f"hotspot nodes must be in [0, {nodes - 1}] (a negative one is "
                      "drawn at random before BookSim2 sets the seed: not modelled)")
    if len(params) > 2:
        notes.append(f"traffic = {value!r}: BookSim2 reads parameter 1 as the hotspot nodes {hot} and parameter 2 as "
                     "their rates, and ignores the rest (several nodes are written hotspot({{n1,n2},{r1,r2}}))")
    if len(params) < 2:
        return hot, None
    rates = _numbers(params[1], int, source, "traffic", value, "the hotspot rates")
    if not rates:
        return hot, None
    rates = (rates + [rates[-1]] * len(hot))[: len(hot)]  # BookSim2 repeats the last rate
    if not all(1 <= r <= 1_000_000 for r in rates):
        raise _refuse(source, "traffic", value, "hotspot rates must be integers in [1, 1e6]")
    return hot, (None if len(set(rates)) == 1 else rates)


def _on_off(v: dict, rate: float, source: str, notes: list[str]) -> dict:
    """BookSim2's on_off parameters (``on_off({alpha,beta,r1})`` or burst_alpha / burst_beta /
    burst_r1, exactly one of the three negative: derived) as burst_alpha and burst_beta."""
    proc = v["injection_process"]
    params = _params(str(proc), "on_off") or []
    if len(params) > 3:
        raise _refuse(source, "injection_process", proc, "an initial on/off state per node is not modelled (BookSim2 "
                      "reads it from the wrong parameter); give at most on_off({alpha,beta,r1})")
    given = {}
    for i, key in enumerate(("burst_alpha", "burst_beta", "burst_r1")):
        if i < len(params):
            given[key] = _numbers(params[i], float, source, "injection_process", proc, f"parameter {i + 1} ({key})")[0]
        else:
            given[key] = _number(v, key, source, float)
    a, b, r1 = given["burst_alpha"], given["burst_beta"], given["burst_r1"]
    if sum(x < 0 for x in (a, b, r1)) != 1:
        raise _refuse(source, "injection_process", proc, f"burst_alpha = {a:g}, burst_beta = {b:g}, burst_r1 = "
                      f"{r1:g}: exactly one must be negative (BookSim2 derives it from the other two and the rate)")
    if a < 0:
        a = b * rate / (r1 - rate) if r1 > rate else -1.0
    elif b < 0:
        b = a * (r1 - rate) / rate
    if not 0 < a <= 1 or not 0 <= b <= 1:
        raise _refuse(source, "injection_process", proc, f"burst_alpha = {a:.6g} (derived or given) must be in "
                      f"(0, 1] and burst_beta = {b:.6g} in [0, 1] for the packet rate {rate:.6g}")
    out = {"injection_process": "on_off", "burst_alpha": a, "burst_beta": b}
    if rate * (a + b) / a > 1.0:  # BookSim2 derives r1 > 1 without a check: an on source sends every cycle
        out["rate_packets"] = a / (a + b)
        notes.append(f"injection_process = {proc!r}: the rate while on, {rate:g} (alpha + beta) / alpha = "
                     f"{rate * (a + b) / a:.4g}, exceeds 1; BookSim2 then sends every cycle while on, so the rate is "
                     f"alpha / (alpha + beta) = {a / (a + b):.4g} packets/node/cycle, not {rate:g}")
    return out


def cmesh_node(booksim_node: int, k: int) -> int:
    """BookSim2's cmesh node number (row by row over the 2k x 2k grid of nodes, each router
    serving a 2 x 2 block) -> this package's NI number (router * 4 + port, the router's
    port 2 * (row in the block) + (column in the block), as BookSim2's NodeToPort)."""
    x, y = booksim_node % (2 * k), booksim_node // (2 * k)
    return ((y // 2) * k + x // 2) * 4 + 2 * (y % 2) + x % 2


def from_booksim(values: dict[str, Any], source: str = "booksim config") -> BookSimRun:
    """Map BookSim2 keys (as :func:`read_booksim` returns them) onto this package's
    topology, router and traffic configuration, or raise :class:`ConfigError` naming the
    first key whose setting is not modelled here."""
    from noc.base.config import validate
    from noc.flit import FlitNetworkConfig
    from noc.flit_traffic import TrafficConfig
    from noc.topology import fat_tree, mesh, torus

    for key in values:
        if key not in _KNOWN:
            raise ConfigError(f"{source}: {key!r} is not a BookSim2 key")
    v = {**DEFAULTS, **values}
    notes = [f"{k} = {values[k]!r}: {why}" for k, why in NO_EFFECT.items() if k in values]
    for key, need in _REQUIRED.items():
        if v[key] != need and not (isinstance(need, float) and v[key] == need):
            raise _refuse(source, key, v[key], f"only {need!r} is modelled here")
    if v["vc_prioritize_empty"] and "islip" not in (values.get("vc_allocator"), DEFAULTS["vc_allocator"]):
        raise _refuse(source, "vc_prioritize_empty", v["vc_prioritize_empty"], "only modelled with the islip VC "
                      "allocator (which ignores it)")
    topo = v["topology"]
    if topo not in _TOPOLOGIES:
        raise _refuse(source, "topology", topo, f"allowed here: {', '.join(_TOPOLOGIES)}")
    k, n = _number(v, "k", source), _number(v, "n", source)
    if k < 2 or n < 1:
        raise _refuse(source, "k" if k < 2 else "n", k if k < 2 else n, "k must be >= 2 and n >= 1")
    if n > 32 or k > 1 << 16:  # before a list of n sizes is made; the topology's own limits follow
        raise _refuse(source, "n" if n > 32 else "k", n if n > 32 else k, "at most 32 dimensions (n) of at most "
                      "65536 routers each (k)")
    c = _number(v, "c", source)
    if topo == "cmesh":  # BookSim2's CMesh asserts all of these (networks/cmesh.cpp)
        for key, need in (("c", 4), ("n", 2), ("xr", 2), ("yr", 2)):
            if _number(v, key, source) != need:
                raise _refuse(source, key, v[key], f"BookSim2's cmesh needs {key} = {need} (it asserts c = 4 = xr * yr, "
                              "n <= 2; n = 1 is not modelled)")
        if v["x"] != v["y"]:
            raise _refuse(source, "x", v["x"], f"BookSim2's cmesh needs x == y (y = {v['y']!r})")
    elif c != 1:
        raise _refuse(source, "c", c, f"BookSim2's {topo} has one node per router; only 1 is modelled")
    rf = v["routing_function"]
    if rf not in _ROUTING[topo]:
        why = _ROUTING_NOT_MODELLED.get(topo, {}).get(rf, "")
        raise _refuse(source, "routing_function", rf, (why + "; " if why else "") +
                      f"allowed on a {topo} here: {', '.join(_ROUTING[topo])}")
    if topo == "fattree":
        if n > 12 or k ** n > 1 << 16:
            raise _refuse(source, "n", n, "at most 65536 nodes (k**n) in a fat tree here")
        t = fat_tree(k, n).with_latencies(router_cycles=1, inject_cycles=2, eject_cycles=1)
    else:
        # cmesh: its channels between neighbouring routers are c/n = 2 cycles with use_noc_latency
        link_cycles = 2 if (topo in ("torus", "cmesh") and v["use_noc_latency"]) else 1
        dims = [k] * n
        build = torus if topo == "torus" else mesh
        t = build(dims, c).with_latencies(router_cycles=link_cycles, inject_cycles=2, eject_cycles=1)
    delays = {key: _number(v, key, source) for key in ("routing_delay", "vc_alloc_delay", "sw_alloc_delay",
                                                        "st_prepare_delay", "st_final_delay", "credit_delay")}
    for key in ("vc_alloc_delay", "sw_alloc_delay"):
        if delays[key] < 1:
            raise _refuse(source, key, delays[key], "BookSim2 needs it >= 1")
    router = validate({
        "num_vcs": _number(v, "num_vcs", source), "vc_depth_flits": _number(v, "vc_buf_size", source),
        "routing_delay_cycles": delays["routing_delay"], "vc_alloc_delay_cycles": delays["vc_alloc_delay"],
        "sw_alloc_delay_cycles": delays["sw_alloc_delay"],
        "st_delay_cycles": delays["st_prepare_delay"] + delays["st_final_delay"],
        "credit_delay_cycles": 1 + delays["credit_delay"], "credit_adds_link_latency": True,
        "vc_allocator": _allocator(v, "vc_allocator", source), "sw_allocator": _allocator(v, "sw_allocator", source),
        "routing": "nca" if topo == "fattree" else "dor", "vc_class_rule": "booksim", "tie_break": "random",
        "vc_release": "tail_credit" if _flag(v, "wait_for_tail_credit", source) else "tail_sent",
    }, FlitNetworkConfig, source=f"{source} (as router keys)")
    pattern = v["traffic"]
    name = pattern.split("(")[0] if isinstance(pattern, str) else pattern
    if not isinstance(pattern, str) or (name not in _PATTERNS and name != "hotspot") or (
            name != pattern and name != "hotspot"):
        raise _refuse(source, "traffic", pattern, f"allowed here: {', '.join(_PATTERNS)}, hotspot({{nodes}},{{rates}})")
    if topo in _PATTERNS_ON and name not in _PATTERNS_ON[topo]:
        raise _refuse(source, "traffic", pattern, f"allowed on a {topo} here: {', '.join(_PATTERNS_ON[topo])}"
                      + (" (BookSim2 numbers cmesh nodes over the whole grid of nodes, so its bit and digit patterns "
                         "pair other nodes)" if topo == "cmesh" else " (the digit patterns need a mesh or torus)"))
    hot_keys: dict = {}
    if name == "hotspot":
        hot, rates = _hotspot(pattern, t.num_endpoints, source, notes)
        if topo == "cmesh":
            hot = [cmesh_node(h, k) for h in hot]
        hot_keys = {"hotspot_fraction": 1.0, "hotspot_nodes": hot, "hotspot_weights": rates}
    sizes, weights = _packet_sizes(v, source)
    rate = _number(v, "injection_rate", source, float)
    if v["injection_rate_uses_flits"]:
        w = weights or [1.0] * len(sizes)
        rate /= sum(s * x for s, x in zip(sizes, w)) / sum(w)
    if not 0 < rate <= 1:
        raise _refuse(source, "injection_rate", v["injection_rate"], "the packet rate must be in (0, 1] "
                      "packets/node/cycle (0 sends nothing)")
    proc = v["injection_process"]
    if proc == "bernoulli":
        burst = {}
    elif isinstance(proc, str) and (proc == "on_off" or proc.startswith("on_off(")):
        burst = _on_off(v, rate, source, notes)
    else:
        raise _refuse(source, "injection_process", proc, "allowed here: bernoulli, on_off, on_off(alpha,beta,r1)")
    if v["seed"] == "time" or not isinstance(v["seed"], int) or v["seed"] < 0:
        raise _refuse(source, "seed", v["seed"], "must be a non-negative integer (runs here are reproducible)")
    method = {ours: (_number(v, key, source, float) if ours.endswith(("thres", "thres_cycles"))
                     else _number(v, key, source)) for key, ours in _METHOD_KEYS.items()}
    if 0 < method["warmup_periods"] >= method["max_samples"]:
        # BookSim2's sample loop stops after max_samples periods. At max_samples ==
        # warmup_periods the warm-up has just ended: it prints the last warm-up period's figures
        # as if they were measured. Below, the run is still warming up: it prints "Too many
        # sample periods needed to converge" and "Simulation unstable, ending ...".
        then = ("BookSim2 prints the last warm-up period's figures as measured"
                if method["max_samples"] == method["warmup_periods"]
                else "BookSim2 ends it as 'Simulation unstable'")
        raise _refuse(source, "max_samples", method["max_samples"], f"with warmup_periods = "
                      f"{method['warmup_periods']} no sample period is measured ({then}); set max_samples "
                      f"above warmup_periods, e.g. max_samples = {method['warmup_periods'] + 10}")
    traffic = validate({
        "pattern": "hotspot" if name == "hotspot" else _PATTERNS[pattern], **hot_keys, "rate_packets": rate, **burst, "packet_flits": sizes, "packet_weights": weights,
        "self_packets": True, "inject_during_drain": True, "methodology": "booksim", **method,
        "perm_seed": _number(v, "perm_seed", source),
    }, TrafficConfig, source=f"{source} (as traffic keys)")
    return BookSimRun(topology=t, network=router, traffic=traffic, values=v, notes=notes)
