"""maddpg: HLS-style MADDPG kernels, MPE environments, trainer and accelerator model (imports ``noc`` only)."""

import noc  # noqa: F401,E402  (first: it points numba's cache at a source-keyed directory)
