"""One registry per extension point: the config schema, the commands' help and choices, the
error messages and the docs' tables all read it.

A dummy all-reduce algorithm added to the registry (and removed again) is accepted by the
experiment config and its JSON schema, named in its errors, built by ``nic.collectives.build`` and listed in the
help of every command that takes an algorithm; the docs' tables of algorithms, NIC variants,
policies, workloads, devices, training systems and sweep kinds hold exactly the registry's
names.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import nic.collectives as collectives
from hw_models.config import ExperimentConfig
from noc.base.config import validate
from noc.base.errors import ConfigError

DOCS = Path(__file__).resolve().parents[2] / "docs"
DUMMY = "dummy_ring"
# what a plugin does: register before the commands are imported (their help is built then)
REGISTER_DUMMY = (f"import nic.collectives as c; c.register_algorithm({DUMMY!r}, 'nic.collectives.baselines:ring', "
                  "aliases=('dummy-alias',), calibrated=False)")


@pytest.fixture
def dummy_algorithm():
    """The registry with :data:`DUMMY` (a ring under another name) added; restored after."""
    saved = (dict(collectives.ALGORITHMS), dict(collectives.ALIASES), set(collectives.UNCALIBRATED))
    collectives.register_algorithm(DUMMY, "nic.collectives.baselines:ring", aliases=("dummy-alias",),
                                   calibrated=False)
    yield DUMMY
    for registry, old in zip((collectives.ALGORITHMS, collectives.ALIASES, collectives.UNCALIBRATED), saved):
        registry.clear()
        registry.update(old)


def _schema_algorithms() -> list[str]:
    """The algorithm names the config's JSON schema allows."""
    return ExperimentConfig.model_json_schema()["$defs"]["AllreduceConfig"]["properties"]["algorithms"]["items"]["enum"]


def test_a_registered_algorithm_is_valid_in_the_config_and_named_in_its_errors(dummy_algorithm):
    assert _schema_algorithms() == list(collectives.ALGORITHMS) and _schema_algorithms()[-1] == dummy_algorithm
    cfg = validate({"allreduce": {"algorithms": ["ring", dummy_algorithm]}}, ExperimentConfig)
    assert cfg.allreduce.algorithms == ["ring", dummy_algorithm]
    with pytest.raises(ConfigError) as info:
        validate({"allreduce": {"algorithms": ["nope"]}}, ExperimentConfig)
    assert str(info.value) == ("config: key 'allreduce.algorithms.0' = 'nope': Input should be 'ring', 'bidir_ring', "
                               "'ring2d', 'ring2d_4dir', 'dbtree', 'halving_doubling', 'multitree', 'forest' or "
                               "'dummy_ring'")


def test_without_the_dummy_the_config_refuses_it():
    assert DUMMY not in _schema_algorithms() and "multitree" in _schema_algorithms()
    with pytest.raises(ConfigError, match="'dummy_ring': Input should be 'ring', .*, 'multitree' or 'forest'$"):
        validate({"allreduce": {"algorithms": [DUMMY]}}, ExperimentConfig)


def test_a_registered_algorithm_is_built_and_found_by_its_alias(dummy_algorithm):
    from noc.topology import parse_spec

    t = parse_spec("torus:4x4")
    dummy, ring = collectives.build(t, "Dummy-Alias"), collectives.build(t, "ring")
    assert collectives.algorithm_name("dummy-alias") == dummy_algorithm
    assert dummy == ring  # the same builder: the same schedule
    with pytest.raises(collectives.ScheduleError, match=r"choose one of ring, .*, multitree, forest, dummy_ring$"):
        collectives.algorithm_name("nope")


def test_the_calibration_matrix_reads_the_registry(dummy_algorithm):
    from nic import calibration

    algorithms = list(dict.fromkeys(a for _, a, _ in calibration.cases()))
    # every registered algorithm but those registered as uncalibrated (the 4-direction 2D ring, the dummy)
    assert algorithms == ["ring", "bidir_ring", "ring2d", "dbtree", "halving_doubling", "multitree"]
    assert len(list(calibration.cases())) == 46
    collectives.UNCALIBRATED.discard(dummy_algorithm)
    assert dummy_algorithm in {a for _, a, _ in calibration.cases()}


def _help(*argv: str) -> str:
    """``hw-models ARGV --help`` in a fresh interpreter that registered the dummy first."""
    code = f"{REGISTER_DUMMY}; from hw_models.cli import main; main({list(argv) + ['--help']!r})"
    env = {**os.environ, "COLUMNS": "400", "TERMINAL_WIDTH": "400", "NO_COLOR": "1"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("command", [("allreduce",), ("schedule",), ("train",), ("train-system",)])
def test_every_command_that_takes_an_algorithm_lists_a_registered_one_in_its_help(command):
    out = _help(*command)
    if command == ("train-system",) and "--algorithm" not in out:  # one subcommand per system
        out = _help("train-system", "ps")
    assert re.search(rf"\bmultitree, forest, {DUMMY}\b", out), out


def test_a_registered_algorithm_runs_through_the_command(tmp_path):
    """``config show`` of a config naming the dummy: validated and resolved (its schedule
    built on the topology) by the command, printed back."""
    f = tmp_path / "exp.toml"
    f.write_text(f'[allreduce]\nalgorithms = ["{DUMMY}"]\nsizes = "64KiB"\n')
    code = f"{REGISTER_DUMMY}; from hw_models.cli import main; main(['config', 'show', {str(f)!r}])"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert f'algorithms = [\n    "{DUMMY}",\n]' in p.stdout, p.stdout


# ---- the docs' tables hold the registries' names ---------------------------------------

def _first_column(doc: str, header: str) -> list[str]:
    """The first column of the table in ``docs/doc`` whose header row starts with ``header``."""
    lines = (DOCS / doc).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    names = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        names.append(line.split("|")[1].strip().strip("`"))
    return names


def test_the_docs_tables_list_each_registry():
    from hw_models.sweep.kinds import kind_names
    from hw_models.training.compute import DEVICES
    from hw_models.training.policies import POLICIES
    from hw_models.training.workloads import WORKLOADS
    from nic.variants import VARIANTS

    assert _first_column("collectives.md", "| name | flows | steps |") == list(collectives.ALGORITHMS)
    assert _first_column("allreduce.md", "| variant | NIs per node |") == list(VARIANTS)
    assert _first_column("training_timeline.md", "| name | class | rule |") == list(POLICIES)
    assert _first_column("training_workloads.md", "| name | configuration modelled |") == list(WORKLOADS)
    assert _first_column("training_workloads.md", "| name | device | values |") == list(DEVICES)
    assert sorted(_first_column("sweeps.md", "| kind | a point is |")) == kind_names()


def test_the_maddpg_docs_tables_list_the_scenario_and_part_registries():
    from maddpg.accel.parts import PARTS
    from maddpg.env import SCENARIOS

    names = [n.split("`")[0].strip() for n in _first_column("maddpg_env.md", "| `name` (`_v3` optional) |")]
    assert sorted(names) == sorted(SCENARIOS)  # the docs order them by size
    assert _first_column("maddpg_accel.md", "| part | device | DSP |") == list(PARTS)


@pytest.mark.parametrize("command, registry", [(("maddpg", "train"), "maddpg.env:SCENARIOS"),
                                               (("maddpg", "accel"), "maddpg.accel.parts:PARTS")])
def test_the_maddpg_commands_help_lists_their_registries(command, registry):
    import importlib

    module, _, name = registry.partition(":")
    out = _help(*command)
    assert ", ".join(getattr(importlib.import_module(module), name)) in out


def test_the_training_systems_doc_has_a_section_per_system():
    from hw_models.training.systems import SYSTEMS

    headings = [line[3:].lower() for line in (DOCS / "training_systems.md").read_text().splitlines()
                if line.startswith("## ")]
    for name, system in SYSTEMS.items():
        assert system.what.lower().removeprefix("the ") in " ".join(headings), (name, system.what, headings)


def test_the_docs_cost_table_shows_the_registrys_estimate_figures():
    from hw_models.training.systems import SYSTEMS

    lines = (DOCS / "training_systems.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| system | runs | CPU s at"))
    column = lines[start].split("|").index(" estimate's figure ")
    rows = {r.split("|")[1].strip(): float(r.split("|")[column]) for r in _rows(lines, start)}
    assert rows == {name: s.seconds_per_iteration for name, s in SYSTEMS.items()}


def _rows(lines: list[str], start: int) -> list[str]:
    out = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        out.append(line)
    return out


REGISTER_SYSTEM = ("from hw_models.training.systems import SYSTEMS, System; "
                   "SYSTEMS['dummysys'] = System('a dummy', 'Dummy: a system only the registry knows.', 0.004)")


def test_a_registered_training_system_is_a_subcommand_a_sweep_kind_value_and_estimated():
    """Registered before the commands are imported (as a plugin would): ``train-system``
    has its subcommand with its summary, ``sweep kinds`` names it, the kind's validation
    error lists it, and the long-run estimate has its cost; without its options and runner
    in ``setup`` a point of it is refused, not run as another system."""
    code = (f"{REGISTER_SYSTEM}\n"
            "import contextlib, io\n"
            "from hw_models.cli import main\n"
            "from hw_models.sweep.kinds import get_kind\n"
            "from noc.base.errors import ConfigError\n"
            "for argv in (['train-system', '--help'], ['train-system', 'dummysys', '--help'], ['sweep', 'kinds']):\n"
            "    try:\n"
            "        main(argv)\n"
            "    except SystemExit as exc:\n"
            "        assert exc.code in (0, None), exc.code\n"
            "for system in ('nope', 'dummysys'):\n"
            "    try:\n"
            "        get_kind('train_system').validate({'system': system, 'topology': 'torus:2x2', 'nis': 1,\n"
            "                                           'workload': 'alexnet'}, 'point')\n"
            "    except ConfigError as exc:\n"
            "        print('ERROR', exc)\n"
            "print('ESTIMATE', SYSTEMS['dummysys'].seconds(5, 200, 32))\n")
    env = {**os.environ, "COLUMNS": "400", "TERMINAL_WIDTH": "400", "NO_COLOR": "1"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert re.search(r"dummysys\s+Dummy: a system only the registry knows\.", p.stdout), p.stdout
    assert "--max-iterations" in p.stdout.split("Dummy: a system only the registry knows.")[-1]
    assert "(compression, ps, ssd, easgd, kfac, dlion, dummysys)" in p.stdout  # sweep kinds
    assert ("ERROR point: key 'system' = 'nope': choose one of compression, ps, ssd, easgd, kfac, dlion, dummysys"
            in p.stdout)
    # registered, but without its code in setup: refused in one line, never run as another system
    assert ("ERROR point: system 'dummysys' has no options, runs or runner in hw_models.training.systems.setup"
            in p.stdout)
    assert "ESTIMATE 8.0" in p.stdout  # 0.004 s x 5 runs x 200 iterations x 32/16 workers


REGISTER_SYSTEM_CHOICES = (
    "import hw_models.training.systems.tasks as m; m.MODELS += ('dummy_task',)\n"
    "import hw_models.training.systems.compression as m; m.FIXES += ('dummy_fix',)\n"
    "import hw_models.training.systems.easgd as m; m.VARIANTS += ('dummy_variant',)\n"
    "import hw_models.training.systems.ps as m; m.MODES += ('dummy_mode',)\n"
    "import hw_models.training.systems.dlion as m; m.TECHNIQUES += ('dummy_technique',)\n")
_CHECK_SYSTEM_CHOICES = """
from hw_models.cli import main
from hw_models.training.systems.setup import OPTIONS, system_params
for system in ('compression', 'ps', 'easgd', 'dlion'):
    print('HELP', system)
    try:
        main(['train-system', system, '--help'])
    except SystemExit as exc:
        assert exc.code in (0, None), exc.code
for system, key in (('compression', 'fix'), ('easgd', 'variants'), ('ps', 'modes'), ('dlion', 'techniques')):
    try:
        system_params(system, 4, *('nope' if k == key else None for k in OPTIONS))
    except Exception as exc:
        print('ERROR', exc)
try:
    main(['train-system', 'ssd', '--task', 'nope'])
except SystemExit as exc:
    print('EXIT', exc.code)
"""


def test_a_registered_task_fix_variant_mode_and_technique_are_in_help_and_errors():
    """Each registered before the commands are imported: ``train-system``'s help of the
    systems that take it names it (--task, --fix, --variants, --modes, --techniques), and so
    does the error refusing an unknown value."""
    env = {**os.environ, "COLUMNS": "400", "TERMINAL_WIDTH": "400", "NO_COLOR": "1"}
    p = subprocess.run([sys.executable, "-c", REGISTER_SYSTEM_CHOICES + _CHECK_SYSTEM_CHOICES], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    helps = dict(part.split("\n", 1) for part in p.stdout.split("HELP ")[1:])
    for system, text in helps.items():
        assert "Convergence task on digits: logreg, mlp, dummy_task, or none" in text, (system, text)
    assert "compression: none, step_ahead, error_averaging, both, dummy_fix (also run" in helps["compression"]
    assert "ps: comma-separated sync, async, ssp:BOUND, dummy_mode (default" in helps["ps"]
    assert "easgd: comma-separated sync, async, measgd, hogwild, dummy_variant (default" in helps["easgd"]
    assert "sets of batching, priority, transfer, dummy_technique joined" in helps["dlion"]
    errors = [line[6:] for line in p.stdout.splitlines() if line.startswith("ERROR ")]
    assert errors == ["--fix 'nope': choose one of none, step_ahead, error_averaging, both, dummy_fix",
                      "--variants 'nope': allowed sync, async, measgd, hogwild, dummy_variant",
                      "--modes: mode = 'nope': must be sync, async, ssp:BOUND or dummy_mode (BOUND an integer >= 0)",
                      "--techniques: techniques = 'nope': 'nope' unknown (allowed: all, none, or batching, priority, "
                      "transfer, dummy_technique joined with +, sets separated by commas)"]
    assert "--task 'nope': choose one of logreg, mlp, dummy_task, none" in p.stderr and "EXIT 2" in p.stdout


REGISTER_LISTS = ("import hw_models.presets as m; m.PRESETS += ('dummy_preset',)\n"
                  "import hw_models.report.figures as m; m.PRESETS += ('dummy_figure',)\n"
                  "import maddpg.accel as m; m.INTERCONNECTS += ('dummy_ic',)\n")


def test_a_registered_preset_figure_and_interconnect_are_in_the_help():
    """Registered before the commands are imported: ``--preset``'s help (the configs), ``plot
    --preset``'s (the figures) and ``maddpg accel --interconnect``'s name them."""
    code = (REGISTER_LISTS + "from hw_models.cli import main\n"
            "for argv in (['train'], ['plot'], ['maddpg', 'accel']):\n"
            "    print('HELP', argv[0])\n"
            "    try:\n"
            "        main([*argv, '--help'])\n"
            "    except SystemExit as exc:\n"
            "        assert exc.code in (0, None), exc.code\n")
    env = {**os.environ, "COLUMNS": "400", "TERMINAL_WIDTH": "400", "NO_COLOR": "1"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    helps = dict(part.split("\n", 1) for part in p.stdout.split("HELP ")[1:])
    assert "A named config instead of a file: isca2021, isca2021_mesh, dummy_preset." in helps["train"]
    assert "bandwidth, speedup, load-latency, training or dummy_figure (instead of --x/--y)" in helps["plot"]
    assert "comma-separated: ring, mesh, crossbar, dummy_ic or any noc topology spec" in helps["maddpg"]


# ---- no hand-written list of a registry's names that misses some -------------------------

def _registries() -> dict[str, list[str]]:
    from hw_models.sweep.kinds import kind_names
    from hw_models.training.compute import DEVICES
    from hw_models.training.policies import POLICIES
    from hw_models.training.systems import SYSTEMS
    from hw_models.training.workloads import WORKLOADS
    from nic.variants import VARIANTS

    return {"algorithms": list(collectives.ALGORITHMS), "NIC variants": list(VARIANTS), "policies": list(POLICIES),
            "workloads": list(WORKLOADS), "training systems": list(SYSTEMS), "devices": list(DEVICES),
            "sweep kinds": kind_names()}


ROOT = DOCS.parent
# a line listing the choices: a flag or key table row, an error's or help's list, "or ..."
_CHOICES = re.compile(r"^\s*\| `-|allowed|choose one of|one of|Comma-separated|\(or |# or |lists them|also ")


def _text_lines():
    """(file, line number, line) of the docs, the README and the library's sources."""
    files = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    files += [p for d in ("hw_models", "nic", "noc", "maddpg") for p in sorted((ROOT / d).rglob("*.py"))]
    for path in files:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            yield path.relative_to(ROOT).as_posix(), i, line


def test_every_written_list_of_a_registrys_choices_names_all_of_them():
    """A line that lists most of a registry's names as the choices (a flag table row, an
    error's "choose one of", a help's "comma-separated") lists every one: a list written by
    hand beside a registry drifts when an entry is added (ring2d_4dir and forest were left
    out that way). Lists of examples (a command line, a table's columns) are not choices."""
    bad = []
    for what, names in _registries().items():
        pats = [re.compile(rf"(?<![\w-]){re.escape(n)}(?![\w-])") for n in names]
        need = max(3, len(names) - 2)
        for where, i, line in _text_lines():
            found = [n for n, p in zip(names, pats) if p.search(line)]
            if len(found) >= need and len(found) < len(names) and _CHOICES.search(line):
                bad.append(f"{where}:{i}: {what} without {sorted(set(names) - set(found))}: {line.strip()[:120]}")
    assert not bad, "\n".join(bad)


REGISTER_OTHERS = (
    "from hw_models.training.policies import POLICIES; POLICIES['dummy_policy'] = POLICIES['wfbp']\n"
    "from hw_models.training.workloads import WORKLOADS; WORKLOADS['dummy_net'] = WORKLOADS['alexnet']\n"
    "from hw_models.training.compute import DEVICES; DEVICES['dummy-dev'] = DEVICES['v100-fp32']\n"
    "from nic.variants import VARIANTS; VARIANTS['epsilon'] = {'nis': 2, 'flow_control': 'bulk'}\n")
_CHECK_OTHERS = """
import contextlib
from hw_models.cli import main
from hw_models.flags import nic_choices
from hw_models.sweep.kinds import get_kind
from hw_models.training.compute import get_device
from hw_models.training.endtoend import make_policies, resolve_workloads
for argv in (['train', '--help'], ['allreduce', '--help'], ['train-system', 'ps', '--help']):
    print('HELP', argv[0])
    try:
        main(argv)
    except SystemExit as exc:
        assert exc.code in (0, None), exc.code
checks = [lambda: make_policies('nope'), lambda: resolve_workloads('nope', '--workloads'),
          lambda: get_device('nope'), lambda: nic_choices(None, 'nope'),
          lambda: get_kind('training').validate({'training': {'workload': 'alexnet', 'algorithm': 'ring',
                                                             'policy': 'all'}}, 'point')]
for check in checks:
    try:
        check()
    except Exception as exc:
        print('ERROR', exc)
"""


def test_a_registered_policy_workload_device_and_variant_are_in_help_and_errors():
    """Each registered before the commands are imported: named in the help of the commands
    that take it and in the error that refuses an unknown name."""
    env = {**os.environ, "COLUMNS": "400", "TERMINAL_WIDTH": "400", "NO_COLOR": "1"}
    p = subprocess.run([sys.executable, "-c", REGISTER_OTHERS + _CHECK_OTHERS], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    helps = dict(part.split("\n", 1) for part in p.stdout.split("HELP ")[1:])
    train, allreduce, train_system = helps["train"], helps["allreduce"], helps["train-system"]
    assert re.search(r"prophet, dear, dummy_policy, a comma-separated list", train), train
    assert re.search(r"alphago_zero, faster_rcnn, dummy_net, a \.json", train), train
    assert re.search(r"v100-fp32 \([^)]*\), dummy-dev \(", train) and re.search(r"v100-fp32 \([^)]*\), dummy-dev \(",
                                                                                 train_system)
    assert "alpha, beta, gamma, delta, epsilon (sets --nis" in train
    assert "delta (4 NIs, whole-chunk transfers), epsilon (2 NIs, whole-chunk transfers)" in allreduce
    errors = [line[6:] for line in p.stdout.splitlines() if line.startswith("ERROR ")]
    assert errors[0].endswith("prophet, dear, dummy_policy)")
    assert "faster_rcnn, dummy_net;" in errors[1]
    assert errors[2].endswith("v100-fp32, dummy-dev)")
    assert errors[3].endswith("choose one of alpha, beta, gamma, delta, epsilon")
    assert "prophet, dear, dummy_policy); sweep over policies" in errors[4]
    assert len(errors) == 5


def test_each_systems_option_help_names_the_systems_it_is_for():
    """``--servers``'s help starts ``ps:`` because setup.OWN gives it to that system (``Every
    system:`` where it gives it to all): the help's owners and the registry of options agree."""
    import typer

    from hw_models.cli import app
    from hw_models.training.systems import SYSTEMS
    from hw_models.training.systems.setup import OWN

    group = typer.main.get_command(app).commands["train-system"]
    for flag, owners in OWN.items():
        (option,) = [p for p in group.commands[owners[0]].params if flag in p.opts]
        head = option.help.split(":")[0]
        named = list(SYSTEMS) if head == "Every system" else [s for s in SYSTEMS if re.search(rf"\b{s}\b", head)]
        assert named == list(owners), (flag, head)
