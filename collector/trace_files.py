"""Finding existing profiler traces on disk and telling which rank wrote each: PyTorch's
Kineto traces, and the XPlane profiles (``<host>.xplane.pb``) TensorFlow and JAX write."""

from __future__ import annotations

import gzip
import json
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEAD_BYTES = 1 << 20
XPLANE_SUFFIX = ".xplane.pb"
TRACE_SUFFIXES = (".json", ".json.gz", XPLANE_SUFFIX)
# What JAX writes beside <host>.xplane.pb: the same events as a trace-viewer file.
_XPLANE_COPY_SUFFIX = ".trace.json.gz"
_RANK_IN_NAME = re.compile(r"(?:^|[^a-z])rank[-_]?(\d+)", re.IGNORECASE)
_DIST_INFO = re.compile(r'"distributedInfo"\s*:\s*')
_HOST_NAME = re.compile(r'"host_name"\s*:\s*"([^"]*)"')


@dataclass(frozen=True)
class TraceFile:
    path: Path
    rank: int | None
    rank_from: str  # "distributedInfo", "file name" or "" (unknown)
    world_size: int | None
    host_name: str | None


def find_traces(paths: list[Path]) -> list[Path]:
    """The given files, plus every ``*.json[.gz]`` and ``*.xplane.pb`` under the given
    directories, sorted; a ``<host>.trace.json.gz`` beside ``<host>.xplane.pb`` (JAX writes both
    of one profile) is left out."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            files = {p for p in path.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES)}
            found.extend(sorted(p for p in files if _xplane_of(p) not in files))
        elif path.is_file():
            found.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file or directory")
    return list(dict.fromkeys(found))


def _xplane_of(path: Path) -> Path | None:
    if not path.name.endswith(_XPLANE_COPY_SUFFIX):
        return None
    return path.with_name(path.name.removesuffix(_XPLANE_COPY_SUFFIX) + XPLANE_SUFFIX)


def describe(path: Path) -> TraceFile:
    """Rank from the trace's ``distributedInfo`` (Kineto writes it first), else the file name.
    An XPlane profile is named after its host and says no rank."""
    if path.name.endswith(XPLANE_SUFFIX):
        named = _RANK_IN_NAME.search(path.name)
        rank = int(named.group(1)) if named else None
        host_name = path.name.removesuffix(XPLANE_SUFFIX)
        return TraceFile(path, rank, "file name" if named else "", None, host_name)
    head = _read_head(path)
    info = _distributed_info(head) or _distributed_info(_read_tail(path))
    rank = _int(info.get("rank")) if info else None
    world = _int(info.get("world_size")) if info else None
    rank_from = "distributedInfo" if rank is not None else ""
    if rank is None:
        match = _RANK_IN_NAME.search(path.name)
        if match:
            rank, rank_from = int(match.group(1)), "file name"
    host = _HOST_NAME.search(head)
    return TraceFile(path, rank, rank_from, world, host.group(1) if host else None)


def _open(path: Path) -> Any:
    return gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb")


def _read_head(path: Path) -> str:
    with _open(path) as fh:
        return fh.read(HEAD_BYTES).decode("utf-8", "replace")


def _read_tail(path: Path) -> str:
    blocks: deque[bytes] = deque()
    size = 0
    with _open(path) as fh:
        while block := fh.read(HEAD_BYTES):
            blocks.append(block)
            size += len(block)
            while size - len(blocks[0]) >= HEAD_BYTES:
                size -= len(blocks.popleft())
    return b"".join(blocks).decode("utf-8", "replace")


def _distributed_info(text: str) -> dict[str, Any] | None:
    match = _DIST_INFO.search(text)
    if not match:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text, match.end())
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
