"""hw_models: workloads, training-iteration simulator, sweeps, reports and the ``hw-models`` CLI."""

import noc  # noqa: F401,E402  (first: it points numba's cache at a source-keyed directory)

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hw-models")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"
