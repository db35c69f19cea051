"""noc.base: the floor every package of hw-models stands on.

Errors a user can act on (:mod:`~noc.base.errors`), the strict config base with TOML reading
and the seed rule (:mod:`~noc.base.config`), files written whole or not at all
(:mod:`~noc.base.files`), Ctrl-C held back around Numba's boxing
(:mod:`~noc.base.interrupts`), the Numba cache set-up (:mod:`~noc.base.numba_cache`), sizes
with units (:mod:`~noc.base.units`) and figure saving (:mod:`~noc.base.figures`).

It imports nothing else of ours, so ``noc``, ``nic``, ``maddpg`` and ``hw_models`` may all
use it (the import contracts in ``pyproject.toml`` check this). Importing it points Numba's
on-disk cache at a directory keyed by the kernels' sources; it must be imported before
``numba`` (``noc/__init__.py`` does, so ``import noc`` suffices).
"""

from noc.base.numba_cache import configure as _configure_numba_cache

_configure_numba_cache()  # before anything imports numba
