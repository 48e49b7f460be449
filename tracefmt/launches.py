"""Which host calls are launches, as Holistic Trace Analysis 0.5 counts them.

HTA has two lists, and the product keeps both so that its figures equal HTA's:

- ``HTA_LAUNCH_CALLS``: the launch statistics (``CudaKernelAnalysis.cuda_kernel_launch_stats``
  with its default ``include_memory_events=True``): CUDA's runtime kernel launches, the async copy
  and set, and MTIA's ``runFunction``. A CUDA graph launch, a driver-API launch (cuDNN calls
  ``cuLaunchKernel``) and every ROCm call are not in it, so HTA counts no launch on ROCm.
- ``HTA_ENQUEUE_CALLS``: the queue length (``TraceSymbolTable.get_runtime_launch_events_query``),
  the launch statistics' calls and the driver API's and ROCm's kernel launches, copies and sets.

A call counts only when a GPU op carries its correlation id. Every other host call that enqueued
a GPU op (a graph launch, another accelerator's runtime) is a launch in the wider count the
launch findings show beside HTA's, labelled as such.
"""

from __future__ import annotations

MTIA_LAUNCH_CALL = "runFunction - job_prep_and_submit_for_execution"

HTA_LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        MTIA_LAUNCH_CALL,
    }
)

HTA_ENQUEUE_CALLS = HTA_LAUNCH_CALLS | {
    "cuLaunchKernel",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemcpyAsync",
    "hipMemsetAsync",
    "hipMemcpyWithStream",
}
