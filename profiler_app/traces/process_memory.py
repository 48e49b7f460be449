"""The cyclic garbage collector kept off the millions of objects a parse or a tree makes
(what a parse frees goes back to the system through ``lib.memory.hand_back_freed``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
