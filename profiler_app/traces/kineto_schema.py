"""msgspec types for Kineto's Chrome-trace events (the fields the ingest uses; others are skipped).

Decoding is two-stage: every event is decoded with ``args`` kept as raw JSON text, then the args
of each kind of event are joined into one JSON array and decoded in a single call with a small
struct holding only that kind's fields (each event's args are decoded once). A single wide struct for all args costs far more: most
of the decoder's time goes into matching keys against many fields.

Fields whose JSON type differs between PyTorch/ROCm versions accept both forms.
"""

from __future__ import annotations

import msgspec


class Event(msgspec.Struct, frozen=True, gc=False):
    """One element of ``traceEvents``; ``ts`` stays JSON text so it converts to ns exactly."""

    ph: str
    name: str = ""
    cat: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: msgspec.Raw = msgspec.Raw(b"")
    dur: float = 0.0
    id: int | str = -1
    args: msgspec.Raw = msgspec.Raw(b"{}")


_ARG_NAMES = {
    "external_id": "External id",
    "external_id_lower": "external id",  # PyTorch 1.8-1.9 kernels and runtime calls
    "collective": "Collective name",
    "in_nelems": "In msg nelems",
    "out_nelems": "Out msg nelems",
    "group_size": "Group size",
    "pg_name": "Process Group Name",
    "pg_id": "Process Group ID",
    "registers": "registers per thread",
    "shared_memory": "shared memory",
    "occupancy": "est. achieved occupancy %",
    "bandwidth_gbps": "memory bandwidth (GB/s)",
    "input_type": "Input type",
    "input_dims": "Input Dims",
}


def _arg_name(field: str) -> str | None:
    return _ARG_NAMES.get(field)


class CommonArgs(msgspec.Struct, frozen=True, gc=False, rename=_arg_name):
    """What every kind needs: the links between CPU launches and GPU work, and placement."""

    external_id: int = -1
    external_id_lower: int = -1
    correlation: int = -1
    device: int | str = -1
    stream: int | str = -1  # ROCm runtime events write "0x0"


class LaunchArgs(CommonArgs, frozen=True, gc=False, rename=_arg_name):
    """CPU-side events. ROCm states a copy's size only on its runtime call (hipMemcpy*)."""

    size: int | str = -1


class CollectiveArgs(CommonArgs, frozen=True, gc=False, rename=_arg_name):
    """NCCL metadata that PyTorch records on collective kernels and ``record_param_comms``."""

    collective: str = ""
    dtype: str = ""
    in_nelems: int = -1
    out_nelems: int = -1
    group_size: int = -1
    pg_name: str | int | None = None
    pg_id: str | int | None = None


class KernelArgs(CollectiveArgs, frozen=True, gc=False, rename=_arg_name):
    grid: list[int] | None = None
    block: list[int] | None = None
    registers: int = -1
    shared_memory: int | str = -1
    occupancy: float = float("nan")


class MemoryArgs(CommonArgs, frozen=True, gc=False, rename=_arg_name):
    bytes: int = -1
    kind: str | int = ""  # ROCm states the direction here ("HtoD")
    bandwidth_gbps: float = float("nan")  # Kineto's, from the ns-precise duration


class OperatorArgs(CollectiveArgs, frozen=True, gc=False, rename=_arg_name):
    input_type: msgspec.Raw = msgspec.Raw(b"")
    input_dims: msgspec.Raw = msgspec.Raw(b"")


class MemoryEventArgs(
    msgspec.Struct, frozen=True, gc=False, rename=lambda f: f.replace("_", " ").title()
):
    """``args`` of Kineto's ``[memory]`` instants (``profile_memory=True``): one allocation
    (positive ``Bytes``) or free (negative) and the allocator's totals on that device after it."""

    addr: int = 0
    bytes: int = 0
    total_allocated: int = -1
    total_reserved: int = -1
    device_type: int = -1
    device_id: int = -1


class MetadataArgs(msgspec.Struct, frozen=True, gc=False):
    """``args`` of "M" events: process/thread names and labels."""

    name: str = ""
    labels: str = ""


class Header(msgspec.Struct, frozen=True):
    """Top-level keys before or after ``traceEvents`` that the ingest records."""

    schemaVersion: int | None = None  # noqa: N815 (Kineto's key)
    baseTimeNanoseconds: int | None = None  # noqa: N815
    displayTimeUnit: str | None = None  # noqa: N815
    distributedInfo: dict | None = None  # noqa: N815
    deviceProperties: list[dict] | None = None  # noqa: N815
    traceName: str | None = None  # noqa: N815


EVENTS_DECODER = msgspec.json.Decoder(list[Event])
RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw])
LAUNCH_ARGS_DECODER = msgspec.json.Decoder(list[LaunchArgs])
KERNEL_ARGS_DECODER = msgspec.json.Decoder(list[KernelArgs])
MEMORY_ARGS_DECODER = msgspec.json.Decoder(list[MemoryArgs])
OPERATOR_ARGS_DECODER = msgspec.json.Decoder(list[OperatorArgs])
MEMORY_EVENT_ARGS_DECODER = msgspec.json.Decoder(list[MemoryEventArgs])
METADATA_ARGS_DECODER = msgspec.json.Decoder(MetadataArgs)
COUNTER_ARGS_DECODER = msgspec.json.Decoder(dict[str, float])
HEADER_DECODER = msgspec.json.Decoder(Header)
