"""Giving memory that a parse freed back to the system, so a worker's footprint follows what it
still holds."""

from __future__ import annotations

import ctypes
import ctypes.util

import pyarrow as pa

_libc_name = ctypes.util.find_library("c")
_LIBC = ctypes.CDLL(_libc_name) if _libc_name else None
_MALLOC_TRIM = getattr(_LIBC, "malloc_trim", None)  # glibc only


def release_free_memory() -> None:
    """Arrow's pool and C's malloc keep freed pages for reuse: after a large part's parse that
    is about 100 MB (2.8 million events), which the next step would otherwise sit on top of."""
    pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
