"""Run the ``hw-models`` command in-process: (exit code, stdout, stderr)."""

from __future__ import annotations

import pytest

from hw_models.cli import main


def run(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err
