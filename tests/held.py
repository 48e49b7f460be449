"""Which of the objects a test made are still alive at a point: for tests of what a computation
holds in memory while it runs (each is held through a weak reference, never kept alive by it)."""

import gc
import weakref


class Made:
    def __init__(self) -> None:
        self._refs: list[weakref.ref] = []

    def add(self, thing):
        """``thing``, remembered without holding it."""
        self._refs.append(weakref.ref(thing))
        return thing

    def alive_besides(self, thing) -> set[int]:
        """The ids of those still alive, after a collection, other than ``thing``."""
        gc.collect()
        return {id(t) for ref in self._refs if (t := ref()) is not None} - {id(thing)}
