"""Giving memory that a parse freed back to the system, so a worker's footprint follows what it
still holds; and the cyclic garbage collector kept off the millions of objects a parse or a
tree makes."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Iterator
from contextlib import contextmanager

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


@contextmanager
def collector_paused(keep: bool = False) -> Iterator[None]:
    """The cyclic collector off while a block makes millions of containers that hold no cycles:
    each few hundred new ones would set off a pass over all of them. ``keep``: what the block
    made is kept (a cache), so it is frozen out of the collector's generations afterwards, or
    every later full pass would walk it again. The freeze takes every object of the process:
    the garbage waiting for the collector is collected first, or it would be kept for ever."""
    enabled = gc.isenabled()
    if keep:
        gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        if enabled:
            gc.enable()
