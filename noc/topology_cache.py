"""A per-process cache of arrays computed from a topology and a few plain parameters.

Route tables are a pure function of the topology and the routing keys, yet every run used
to rebuild them: a load sweep, ``hw-models noc sweep-load``'s points, the speed bench run
one network many times in one process. :func:`cached` keeps the most recently used results,
keyed by :func:`topology_digest` (every field of the topology, its arrays byte for byte)
and the parameters the caller names. A cached array is read-only: a caller copies what it
hands out, so nothing done to one run's arrays reaches the next.

At most :data:`MAX_CACHE_BYTES` of arrays are kept (least recently used dropped first); a
result larger than that is returned without being kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

from noc.topology import Topology

MAX_CACHE_BYTES = 256 << 20

_entries: OrderedDict[tuple, tuple] = OrderedDict()
_sizes: dict[tuple, int] = {}


def topology_digest(topology: Topology) -> bytes:
    """A digest of every field of ``topology``: equal for two topologies only when their
    names, families, sizes, parameters and arrays (dtype, shape and bytes) are equal."""
    h = hashlib.blake2b(digest_size=20)
    for f in dataclasses.fields(topology):
        value = getattr(topology, f.name)
        h.update(f.name.encode() + b"\0")
        if isinstance(value, np.ndarray):
            a = np.ascontiguousarray(value)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        else:
            h.update(json.dumps(value, sort_keys=True, default=repr).encode())
        h.update(b"\1")
    return h.digest()


def cached(kind: str, topology: Topology, params: tuple[Hashable, ...],
           build: Callable[[], tuple]) -> tuple:
    """``build()``'s result (a tuple of arrays and plain values) for ``topology`` and
    ``params``, built once per process while it stays cached. ``kind`` names the function
    (one cache serves several); ``params`` must hold everything besides the topology that
    the result depends on. The arrays returned are read-only."""
    key = (kind, topology_digest(topology), params)
    hit = _entries.get(key)
    if hit is not None:
        _entries.move_to_end(key)
        return hit
    value = build()
    for v in value:
        if isinstance(v, np.ndarray):
            v.flags.writeable = False
    size = sum(v.nbytes for v in value if isinstance(v, np.ndarray))
    if size <= MAX_CACHE_BYTES:
        _entries[key] = value
        _sizes[key] = size
        while sum(_sizes.values()) > MAX_CACHE_BYTES:
            old, _ = _entries.popitem(last=False)
            del _sizes[old]
    return value


def clear() -> None:
    """Drop every cached result."""
    _entries.clear()
    _sizes.clear()


def cached_count() -> int:
    """How many results are cached."""
    return len(_entries)
