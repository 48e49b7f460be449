"""A worker process's memory: a ceiling (past it, allocations fail with MemoryError, which
fails the part being parsed, instead of the machine swapping or the kernel killing a process),
and memory freed during one piece of work kept for its own next allocations (glibc's
``mallopt``; elsewhere nothing changes).

By default glibc hands large freed blocks back to the system at once, and the system zeroes
every page again when the next block is allocated: an insights run frees each rank's columns
and allocates the next rank's of the same size, and on a virtual machine a fifth of its time
went to those page faults (a 16-rank, 10M-event job: 375,000 faults, 1.7 s of system time of
6.3 s; kept, 158,000 and 0.8 s). At the end the memory is handed back.

A parse hands back what each of its steps freed before the next one (``hand_back_freed``; Arrow
allocates through glibc too, see ``profiler_app/__init__.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import resource
import sys
from collections.abc import Iterator


def limit_memory(megabytes: int) -> None:
    """Cap this process's data segment (heap and private mappings) at ``megabytes``; 0: no cap.
    Children it starts later (the parse's decoder processes) inherit the cap."""
    if megabytes <= 0:
        return
    limit = megabytes << 20
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# Blocks up to this size come from the process's heap, not from the system one at a time:
# glibc's own ceiling for the threshold it raises as a process frees large blocks.
HEAP_BLOCK_BYTES = 32 << 20
# Free memory at the heap's top kept for reuse while the work runs.
KEPT_BYTES = 1 << 30
# ...and afterwards: what glibc keeps once it has raised the threshold to its ceiling.
KEPT_AFTER_BYTES = 2 * HEAP_BLOCK_BYTES


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


@contextlib.contextmanager
def freed_memory_kept() -> Iterator[None]:
    """Within the block, freed memory stays with the process for reuse; afterwards what is
    free is handed back to the system. glibc's sliding thresholds stay off after the first
    block: blocks up to HEAP_BLOCK_BYTES keep coming from the heap, and up to KEPT_AFTER_BYTES
    stays free at its top, the values a long-running process reaches by itself."""
    libc = _glibc()
    if libc is None:
        yield
        return
    libc.mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCK_BYTES)
    libc.mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES)
    try:
        yield
    finally:
        libc.mallopt(_M_TRIM_THRESHOLD, KEPT_AFTER_BYTES)
        libc.malloc_trim(0)


def hand_back_freed() -> None:
    """Hands the free memory in the heap back to the system: glibc (and a pool of Arrow's, where
    one is used) keeps it for the process otherwise, and the next step's peak comes on top of
    it: about 100 MB after a 2.8-million-event part's parse."""
    arrow = sys.modules.get("pyarrow")  # a process that never loaded Arrow holds none of its pool
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
