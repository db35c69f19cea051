"""noc: the network floor of hw-models: topologies, routing and network simulators.

``noc`` imports nothing else of ours; its subpackage :mod:`noc.base` is the floor under
every package (docs/architecture.md).
"""

import noc.base  # noqa: F401  (first: it points numba's cache at a source-keyed directory)
from noc.base.errors import ConfigError, DeadlockError, HwModelsError, SpecError  # noqa: E402

__all__ = ["ConfigError", "DeadlockError", "HwModelsError", "SpecError"]
