"""Rules over event names: kernel type, precision, memory-copy direction, training steps.

Every rule works on the (few thousand) distinct names of a trace, never on events one by one;
callers map the answers back to events through the interned name ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import numpy as np

from tracefmt.kinds import MemcpyKind

# Kernel categories, as Holistic Trace Analysis (hta/utils/utils.py, get_kernel_type) defines
# them: communication first, then memory, then computation; names that are none of these
# (they mention Memcpy/Memset/Sync in the middle) are "OTHER". RCCL (ROCm) kernels are named
# like NCCL's but may start with "rccl"; HTA predates them, we count them as communication too.
COMM, MEM, COMP, OTHER = "COMM", "MEM", "COMP", "OTHER"
_COMM_RE = re.compile(r"^(nccl|rccl).*Kernel")
_MEMORY_RE = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_NOT_COMPUTE_RE = re.compile(r"(^(nccl|rccl).*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")


def kernel_category(name: str) -> str:
    if _COMM_RE.match(name):
        return COMM
    if _MEMORY_RE.match(name):
        return MEM
    if not _NOT_COMPUTE_RE.match(name):
        return COMP
    return OTHER


# Precision heuristic, in order; the first rule that matches wins.
#  1. Type tokens in the kernel name, narrowest first: a mixed-precision GEMM names its input and
#     its output ("e4m3bf16_e4m3f32", "bf16bf16_bf16f32") and its tensor cores run the input
#     type. cuBLAS/cuDNN/xmma names spell the type ("bf16", "fp16", "tf32", "f16f16_f16f32"),
#     CUTLASS spells its C++ type ("cutlass::half_t", "tfloat32_t", "float_e4m3_t"), PyTorch and
#     cuBLASLt templates spell theirs ("c10::BFloat16", "__nv_bfloat16", "float", "double").
#  2. Tensor-core MMA shapes: the first letter is the accumulator, the operand type follows from
#     the shape ("h884"/"h1688"/"h16816": FP16, "s884": Volta's FP16 with an FP32 accumulator,
#     "d884": FP64, "i8816"/"i16832": INT8).
#  3. A tensor-op kernel that names no narrower type reads FP32 and multiplies in TF32: tensor
#     cores have no FP32 mode ("cutlass_80_tensorop_s1688gemm_…", cuBLAS's TF32 GEMMs).
#  4. BLAS and cuDNN prefixes: "sgemm"/"dgemm"/"scudnn" (single, double); xmma "f32f32_f32f32"
#     FFMA kernels (no tensor op) are FP32.
#  5. Otherwise the dtype of the first tensor input of the CPU operator that launched the kernel
#     (linked by External id), when the trace recorded shapes.
#  6. Otherwise "unknown". Memory copies and NCCL kernels take their dtype the same way.
UNKNOWN = "unknown"
# A type word stands alone when no letter or digit touches it ("Sum_float(" counts).
_W, _E = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"
_NAME_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"fp8|e4m3|e5m2|Float8", re.I), "FP8"),
    (re.compile(r"bf16|bfloat16", re.I), "BF16"),
    (re.compile(r"tf32|tfloat32", re.I), "TF32"),
    (
        re.compile(
            rf"fp16|f16_|_f16|c10::Half|__half|half_t|{_W}half{_E}|[hs]884|h1688|h16816|hgemm",
            re.I,
        ),
        "FP16",
    ),
    (re.compile(r"i8816|i16832|imma|int8|c10::qint8", re.I), "INT8"),
    (re.compile(r"[dz]884|dmma", re.I), "FP64"),
    (re.compile(r"tensorop|[cs]1688|[cs]16816", re.I), "TF32"),
    # float before double: a float kernel often takes a double scalar, rarely the reverse.
    (re.compile(rf"fp32|{_W}float{_E}|sgemm|f32|scudnn", re.I), "FP32"),
    (re.compile(rf"fp64|{_W}double{_E}|dgemm|f64", re.I), "FP64"),
]
# Integer types are not guessed from names: nearly every kernel signature has int parameters.

# PyTorch's "Input type" strings -> precision.
_INPUT_TYPES = {
    "float": "FP32",
    "double": "FP64",
    "c10::Half": "FP16",
    "c10::BFloat16": "BF16",
    "c10::Float8_e4m3fn": "FP8",
    "c10::Float8_e5m2": "FP8",
    "long int": "INT64",
    "long": "INT64",
    "int": "INT32",
    "short int": "INT16",
    "signed char": "INT8",
    "unsigned char": "UINT8",
    "bool": "BOOL",
    "c10::complex<float>": "COMPLEX64",
    "c10::complex<double>": "COMPLEX128",
}


def precision_from_name(name: str) -> str:
    for pattern, precision in _NAME_RULES:
        if pattern.search(name):
            return precision
    return UNKNOWN


# Tensor-core kernels by name: a CUTLASS tensor-op kernel, an MMA instruction shape, an xmma
# kernel (the generator behind cuBLAS's and cuDNN's tensor-core kernels) or a TF32 one, unless the
# name says it runs on the FP32 cores ("_ffma_" xmma kernels, "simt" CUTLASS kernels).
_TENSOR_CORE_RE = re.compile(
    r"tensorop|xmma|imma|hmma|gmma|tf32|tfloat32|[hsdzc](?:884|1688|16816)|i8816|i16832", re.I
)
_SIMT_RE = re.compile(r"ffma|simt", re.I)


def runs_on_tensor_cores(name: str) -> bool:
    return bool(_TENSOR_CORE_RE.search(name)) and not _SIMT_RE.search(name)


def precision_from_input_types(input_types_json: str) -> str:
    """Precision of an operator from its recorded ``Input type`` list (JSON text)."""
    try:
        types = json.loads(input_types_json)
    except (ValueError, RecursionError):
        return UNKNOWN
    if not isinstance(types, list):
        return UNKNOWN
    for entry in types:
        if isinstance(entry, str) and entry in _INPUT_TYPES:
            return _INPUT_TYPES[entry]
    return UNKNOWN


# Copy directions: in names ("Memcpy HtoD (Pageable -> Device)", "Memcpy PtoP ...", an
# accelerator's DMA "dma_h2d", Intel XPU's "Memcpy M2D" where M is host memory) and in ROCm's
# ``args.kind`` ("HtoD").
_MEMCPY_RE = re.compile(r"(?<![A-Za-z0-9])([HDPM])(?:to|2)([HDPM])(?![A-Za-z0-9])", re.IGNORECASE)
_HOST_MEMORY = str.maketrans("M", "H")
_MEMCPY_KINDS = {
    "HD": MemcpyKind.HTOD,
    "DH": MemcpyKind.DTOH,
    "DD": MemcpyKind.DTOD,
    "HH": MemcpyKind.HTOH,
    "PP": MemcpyKind.PTOP,
}


def memcpy_kind(text: str) -> MemcpyKind:
    found = _MEMCPY_RE.search(text)
    if not found:
        return MemcpyKind.NONE
    ends = (found.group(1) + found.group(2)).upper().translate(_HOST_MEMORY)
    return _MEMCPY_KINDS.get(ends, MemcpyKind.NONE)


# Training steps: PyTorch's "ProfilerStep#12" and the collector's "step_12".
_STEP_RE = re.compile(r"^(?:ProfilerStep#|step_)(\d+)$")
# torch.profiler marks each ``prof.step()`` with this annotation.
PROFILER_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


def step_number(name: str) -> int | None:
    found = _STEP_RE.match(name)
    return int(found.group(1)) if found else None


def step_wildcard(name: str) -> str:
    """A step's name with its number as "*" ("step_57" -> "step_*"), and "ProfilerStep#12" ->
    "ProfilerStep*" as ``key_averages()`` lists torch.profiler's steps: one row for them all."""
    if PROFILER_STEP_RE.match(name):
        return "ProfilerStep*"
    return re.sub(r"\d+$", "*", name)


def steps_as_one(
    name_ids: np.ndarray, is_step: np.ndarray, strings: Sequence[str]
) -> tuple[np.ndarray, list[str]]:
    """Name ids with every step's name as its ``step_wildcard`` (names past ``strings``, listed
    in the names returned), so a table or tree sums what the steps did as one entry."""
    if not is_step.any():
        return name_ids, list(strings)
    ids = np.unique(name_ids[is_step])
    wildcards = [step_wildcard(strings[i]) for i in ids.tolist()]
    extra = sorted(set(wildcards))
    mapping = np.arange(len(strings), dtype=np.int64)
    mapping[ids] = [len(strings) + extra.index(w) for w in wildcards]
    return np.where(is_step, mapping[name_ids], name_ids), [*strings, *extra]
