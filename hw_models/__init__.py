"""hw_models: workloads, training-iteration simulator, sweeps, reports and the ``hw-models`` CLI."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hw-models")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"
