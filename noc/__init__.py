"""noc: the network floor of hw-models: topologies, routing and network simulators.

``noc`` imports nothing else of ours (see shared/ARCHITECTURE.md).
"""

from noc.numba_cache import configure as _configure_numba_cache

_configure_numba_cache()  # before anything imports numba

from noc.errors import ConfigError, DeadlockError, HwModelsError, SpecError  # noqa: E402

__all__ = ["ConfigError", "DeadlockError", "HwModelsError", "SpecError"]
