"""The one build step pyproject.toml cannot declare: the Verilog of ``rtl/`` (a top-level
folder of the repository) goes into the wheel as ``hw_models/verilog/``, where
``hw_models.toolchain`` finds it in an installed copy. An editable install (``pip install -e``)
copies nothing and reads ``rtl/`` in place, so an edit of ``rtl/*.v`` is seen at once.
Everything else about the build is in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

RTL_DIR = Path("rtl")  # setuptools builds from the project's root
SHIPPED_AS = Path("hw_models", "verilog")


class BuildPyWithVerilog(build_py):
    """``build_py`` that also copies ``rtl/*.v`` to ``hw_models/verilog/`` in the build tree."""

    def _verilog(self) -> list[tuple[Path, Path]]:
        if self.editable_mode:
            return []
        return [(src, Path(self.build_lib) / SHIPPED_AS / src.name) for src in sorted(RTL_DIR.glob("*.v"))]

    def run(self) -> None:
        super().run()
        pairs = self._verilog()
        if not self.editable_mode and not pairs:
            raise SystemExit(f"setup.py: no Verilog found in {RTL_DIR.resolve()}")
        for src, dest in pairs:
            self.mkpath(str(dest.parent))
            self.copy_file(str(src), str(dest))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return super().get_outputs(include_bytecode) + [str(dest) for _, dest in self._verilog()]


setup(cmdclass={"build_py": BuildPyWithVerilog})
