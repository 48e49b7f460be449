"""What each Kineto (PyTorch profiler) event category means, in every generation of the format.

PyTorch 1.8–1.9 wrote capitalised names (``Operator``, ``Kernel``, ``Runtime``, ``Memcpy``,
``Memset``, ``DataLoader``, ``Python``) and ``async`` launch flows; 1.10 and later write
``cpu_op``, ``kernel``, ``cuda_runtime``, ``gpu_memcpy``… with ``ac2g`` flows (briefly
``async_gpu``). ROCm builds write the CUDA names; other accelerators have their own
(``mtia_ccp_events``, ``xpu_runtime``, ``privateuse1_runtime``). Lookups ignore case.
"""

from __future__ import annotations

import re

from tracefmt.kinds import EventKind
from tracefmt.names import PROFILER_STEP_RE

CATEGORY_KINDS: dict[str, EventKind] = {
    # CPU operators; the 1.9 data loader's own category is one too.
    "cpu_op": EventKind.CPU_OP,
    "operator": EventKind.CPU_OP,
    "dataloader": EventKind.CPU_OP,
    "user_annotation": EventKind.USER_ANNOTATION,
    "gpu_user_annotation": EventKind.GPU_USER_ANNOTATION,
    "gcu_user_annotation": EventKind.GPU_USER_ANNOTATION,
    # Host-side calls into a device runtime, whichever device.
    "cuda_runtime": EventKind.CUDA_RUNTIME,
    "runtime": EventKind.CUDA_RUNTIME,
    "privateuse1_runtime": EventKind.CUDA_RUNTIME,
    "mtia_runtime": EventKind.CUDA_RUNTIME,
    "xpu_runtime": EventKind.CUDA_RUNTIME,
    "hpu_op": EventKind.CUDA_RUNTIME,
    "glow_runtime": EventKind.CUDA_RUNTIME,
    "gcu_runtime": EventKind.CUDA_RUNTIME,
    "cuda_driver": EventKind.CUDA_DRIVER,
    "driver": EventKind.CUDA_DRIVER,
    "privateuse1_driver": EventKind.CUDA_DRIVER,
    "xpu_driver": EventKind.CUDA_DRIVER,
    "gcu_driver": EventKind.CUDA_DRIVER,
    # Work on the device: kernels of any accelerator.
    "kernel": EventKind.KERNEL,
    "mtia_ccp_events": EventKind.KERNEL,
    "concurrent_kernel": EventKind.KERNEL,
    "gpu_memcpy": EventKind.GPU_MEMCPY,
    "memcpy": EventKind.GPU_MEMCPY,
    "gcu_memcpy": EventKind.GPU_MEMCPY,
    "gpu_memset": EventKind.GPU_MEMSET,
    "memset": EventKind.GPU_MEMSET,
    "gcu_memset": EventKind.GPU_MEMSET,
    "cuda_sync": EventKind.CUDA_SYNC,
    "gcu_sync": EventKind.CUDA_SYNC,
    "python_function": EventKind.PYTHON_FUNCTION,
    "python": EventKind.PYTHON_FUNCTION,
    "cpu_instant_event": EventKind.INSTANT,
}

# Categories Kineto writes that are not work of a modelled kind; they are read (as "other")
# without a warning: the profiler's own span, CUPTI overhead and profiler ranges.
KNOWN_OTHER_CATEGORIES = frozenset(
    {
        "trace",
        "overhead",
        "cuda_profiler_range",
        "gcu_profiler_range",
        "external_correlation",
        "cuda_event",
        "collective_comm",
        "mtia_insight",
        "mtia_counters",
        "mtia_workloadd",
        "",
    }
)

# Accelerators whose profiler writes every device op in one category (MTIA's CCP events): the
# op's name says whether it is a copy (DMA) or a set, as the vendor's own tools and HTA show
# them; whatever else runs there is a kernel, a wait on an event ("event_wait") too: HTA lists it
# among the GPU kernels (and its idle breakdown), typed by name (COMP).
ONE_CATEGORY_DEVICE_OPS = frozenset({"mtia_ccp_events"})
_DEVICE_COPY = re.compile(r"^dma|memcpy", re.IGNORECASE)
_DEVICE_SET = re.compile(r"memset", re.IGNORECASE)

# Flows linking a launch on the host to its work on the device. The device event carries the
# same link in ``args.correlation`` (the flow id is the correlation id), so they are redundant.
LAUNCH_FLOW_CATEGORIES = frozenset({"ac2g", "async", "async_gpu", "async_cpu_to_gpu"})
# Flows that are kept as flows: forward-to-backward links of autograd.
OTHER_FLOW_CATEGORIES = frozenset({"fwdbwd"})


def kind_of(category: str) -> EventKind:
    """The kind of an event of ``category``; ``OTHER`` for anything else."""
    found = CATEGORY_KINDS.get(category)
    if found is None:
        found = CATEGORY_KINDS.get(category.lower(), EventKind.OTHER)
    return found


def kind_of_event(category: str, name: str) -> EventKind:
    """``kind_of``, and PyTorch 1.8–1.9's ``ProfilerStep#<n>`` operator read as the annotation
    that later versions record it as."""
    kind = kind_of(category)
    if kind == EventKind.CPU_OP and PROFILER_STEP_RE.match(name):
        return EventKind.USER_ANNOTATION
    return kind


def device_op_kind(category: str, name: str) -> EventKind:
    """The kind of a device op of a ``ONE_CATEGORY_DEVICE_OPS`` category, from its name: a
    DMA is a copy, a memset a set, anything else a kernel."""
    if _DEVICE_COPY.search(name):
        return EventKind.GPU_MEMCPY
    if _DEVICE_SET.search(name):
        return EventKind.GPU_MEMSET
    return kind_of(category)


def is_recognised(category: str) -> bool:
    lowered = category.lower()
    return lowered in CATEGORY_KINDS or lowered in KNOWN_OTHER_CATEGORIES


def is_launch_flow(category: str) -> bool:
    return category.lower() in LAUNCH_FLOW_CATEGORIES


def is_recognised_flow(category: str) -> bool:
    lowered = category.lower()
    return lowered in LAUNCH_FLOW_CATEGORIES or lowered in OTHER_FLOW_CATEGORIES


# An event of an unknown category that looks like device work: a kernel-like name, or recorded
# on a "stream" thread. Such a part must not be presented as a profile without GPU activity.
_DEVICE_NAME = re.compile(
    r"kernel|gemm|memcpy|memset|nccl|rccl|cudnn|cutlass|triton|^void |<<<", re.IGNORECASE
)
_STREAM_THREAD = re.compile(r"^\s*stream\b", re.IGNORECASE)


def looks_like_device_work(name: str, tid: object) -> bool:
    return bool(_DEVICE_NAME.search(name)) or (
        isinstance(tid, str) and bool(_STREAM_THREAD.match(tid))
    )
