"""A part's timeline store as files on this machine: the store's own files (``folder()``) and
any one of them (``file()``, an index array say). This one is a folder that holds them all;
``profiler_app.core.storage`` has one that fetches them from a bucket as they are asked for."""

from __future__ import annotations

from pathlib import Path


class StoreFiles:
    # Kept in a bucket under a key of its own: the store never changes once it is indexed.
    key: str | None = None

    def __init__(self, local: str | Path) -> None:
        self.local = Path(local)

    def folder(self) -> Path:
        return self.local

    def file(self, name: str) -> Path:
        return self.local / name

    def fetch(self, names: list[str]) -> None:
        """Brings several files to this machine at once, ahead of their use (here already)."""

    def on_disk(self, name: str) -> Path | None:
        """The file when this machine has it, without fetching it."""
        path = self.local / name
        return path if path.exists() else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key or str(self.local)!r})"
