"""nic: the network interface and the collectives it runs (imports ``noc`` only)."""

import noc  # noqa: F401,E402  (first: it points numba's cache at a source-keyed directory)
