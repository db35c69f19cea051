"""noc: the network floor of hw-models: topologies, routing and network simulators.

``noc`` imports nothing else of ours (see shared/ARCHITECTURE.md).
"""

from noc.errors import ConfigError, DeadlockError, HwModelsError, SpecError

__all__ = ["ConfigError", "DeadlockError", "HwModelsError", "SpecError"]
