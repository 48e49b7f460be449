"""A kernel's precision from its name: cuBLAS, cuDNN, CUTLASS, xmma and PyTorch naming, checked
against every distinct kernel name of the shared traces."""

import re
from collections import Counter

import pytest

from tests.traces.expected import raw_trace
from tracefmt.names import kernel_category, precision_from_name, runs_on_tensor_cores

TRACES = [
    "amd_mi250_small.json.gz",
    "gpu_training_rank0.pt.trace.json.gz",
    "h100_cnn_kineto.json.gz",
    "multirank_sampled/rank-0.json.gz",
    "multirank_sampled/rank-1.json.gz",
    "nccl_rank0.json.gz",
    "resnet50_pt18_workers4.pt.trace.json.gz",
]

# Real names from the shared traces (trace in the comment) and the precision each must get.
SHARED_NAMES = [
    # TF32 tensor-op GEMMs: cuBLAS's CUTLASS kernels read FP32 and multiply in TF32 (multirank).
    (
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nt_align4>"
        "(cutlass_80_tensorop_s1688gemm_256x128_32x3_nt_align4::Params)",
        "TF32",
    ),
    (
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>"
        "(cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4::Params)",
        "TF32",
    ),
    # TF32 convolutions: cuDNN's xmma and CUTLASS kernels (nccl_rank0, h100_cnn_kineto).
    (
        "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x64x32_stage5_"
        "warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn",
        "TF32",
    ),
    (
        "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x64_"
        "stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_train",
        "TF32",
    ),
    (
        "sm90_xmma_dgrad_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x64x32_"
        "warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
        "TF32",
    ),
    (
        "void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_128x128_16x4_"
        "nhwc_align4>(cutlass_tensorop_s1688fprop_optimized_tf32_128x128_16x4_nhwc_align4::Params)",
        "TF32",
    ),
    # FP32 on the FP32 cores: SIMT GEMMs, FFMA xmma kernels, cuDNN's scudnn and sgemm.
    ("volta_sgemm_128x64_nn", "FP32"),
    ("ampere_sgemm_128x64_nn", "FP32"),
    (
        "void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>"
        "(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)",
        "FP32",
    ),
    (
        "sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_"
        "alignc4_execute_kernel__5x_cublas",
        "FP32",
    ),
    (
        "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x32x8_stage3_"
        "warpsize2x2x1_g1_ffma_aligna4_alignc4_execute_kernel__5x_cudnn",
        "FP32",
    ),
    ("volta_scudnn_128x64_relu_interior_nn_v1", "FP32"),
    ("cudnn_infer_ampere_scudnn_128x64_relu_xregs_large_nn_v1", "FP32"),
    (
        "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, true, true>(int, "
        "int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, "
        "int, float, float, int, float const*, float const*, bool, int, int)",
        "FP32",
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*,"
        " 1>)",
        "FP32",
    ),
    # PyTorch templates spell the C++ type (multirank).
    (
        "void split_embedding_codegen_forward_weighted_kernel<c10::Half, c10::Half, float, false, lon"
        "g, 2ul, 32ul>(at::GenericPackedTensorAccessor<c10::Half, 1ul, at::RestrictPtrTraits, long>, "
        "at::GenericPackedTensorAccessor<c10::Half, 1ul, at::RestrictPtrTraits, long>, at::GenericPac"
        "kedTensorAccessor<c10::Half, 2ul, at::RestrictPtrTraits, long>, at::GenericPackedTensorAcces"
        "sor<int, 1ul, at::RestrictPtrTraits, int>, at::GenericPackedTensorAccessor<long, 1ul, at::Re"
        "strictPtrTraits, int>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>"
        ", fbgemm_gpu::FixedDivisor, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits"
        ", int>, at::GenericPackedTensorAccessor<long, 1ul, at::RestrictPtrTraits, int>, long, at::Ge"
        "nericPackedTensorAccessor<at::AccumulateType<c10::Half, true>::type, 1ul, at::RestrictPtrTra"
        "its, int>, at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>, at::Generi"
        "cPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, long>)",
        "FP16",
    ),
    (
        "void fbgemm_gpu::(anonymous namespace)::_FP8rowwise_to_float_cuda_kernel<float>(unsigned "
        "char const*, int, int, float*, bool)",
        "FP8",
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<double>, "
        "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<double>, at::detail::Array<char*"
        ", 1>)",
        "FP64",
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>, "
        "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<long>, at::detail::Array<char*, "
        "1>)",
        "unknown",
    ),
    ("cask_cudnn_infer::computeBOffsetsKernel(cask_cudnn_infer::ComputeBOffsetsParams)", "unknown"),
]

# Names the shared traces lack (no BF16, FP16 tensor-op or FP8 GEMM was recorded), as cuBLAS,
# cuBLASLt and CUTLASS name them in public PyTorch traces.
VENDOR_NAMES = [
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x3_tn", "BF16"),
    ("ampere_bf16_s1688gemm_bf16_128x128_ldg8_f2f_stages_32x1_nn", "BF16"),
    (
        "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
        "tensor16x8x16_execute_kernel__5x_cublas",
        "BF16",
    ),
    (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
        "execute_segment_k_off_kernel__5x_cublas",
        "BF16",
    ),
    (
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
        "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)",
        "BF16",
    ),
    (
        "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, "
        "__nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, "
        "__nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*)",
        "BF16",
    ),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", "FP16"),
    ("turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_tn", "FP16"),
    ("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", "FP16"),
    ("volta_h884gemm_64x128_ldg8_nn", "FP16"),
    ("ampere_h16816gemm_128x128_ldg8_stages_32x5_tn", "FP16"),
    (
        "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize96x128x32_stage4_warpsize2x2x1_"
        "tensor16x8x16_execute_kernel__5x_cublas",
        "FP16",
    ),
    (
        "void cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_relu_f16_128x128_32x3_nn_align8>"
        "(cutlass_80_tensorop_f16_s16816gemm_relu_f16_128x128_32x3_nn_align8::Params)",
        "FP16",
    ),
    # An FP8 GEMM names its BF16 output too; its tensor cores read E4M3.
    (
        "sm89_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x64_stage3_warpsize2x2x1_"
        "tensor16x8x32_execute_kernel__5x_cublas",
        "FP8",
    ),
    (
        "sm90_xmma_gemm_e5m2e4m3_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_"
        "execute_segment_k_off_kernel__5x_cublas",
        "FP8",
    ),
    (
        "sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_"
        "tensor16x8x8_execute_kernel__5x_cublas",
        "TF32",
    ),
    (
        "void cutlass::Kernel<cutlass_80_tensorop_d884gemm_64x32_16x4_nn_align1>"
        "(cutlass_80_tensorop_d884gemm_64x32_16x4_nn_align1::Params)",
        "FP64",
    ),
    ("volta_dgemm_64x64_nn", "FP64"),
]


@pytest.mark.parametrize(("name", "precision"), SHARED_NAMES + VENDOR_NAMES)
def test_it_reads_the_precision_from_the_name(name, precision):
    assert precision_from_name(name) == precision


def kernel_names(trace: str) -> dict[str, float]:
    """Each GPU kernel name of a trace with its total duration (µs), straight from the JSON."""
    events = raw_trace(trace, exact=False)["traceEvents"]
    totals: Counter[str] = Counter()
    for e in events:
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel":
            totals[e["name"]] += float(e["dur"])
    return totals


def test_the_shared_names_are_in_the_shared_traces():
    every = set().union(*(kernel_names(t) for t in TRACES))
    assert [name for name, _ in SHARED_NAMES if name not in every] == []


# Distinct kernel names per precision in each shared trace, each name checked by hand.
NAMES_BY_PRECISION = {
    "amd_mi250_small.json.gz": {"FP32": 10, "unknown": 2},
    "gpu_training_rank0.pt.trace.json.gz": {"FP32": 68, "unknown": 9},
    "h100_cnn_kineto.json.gz": {"FP32": 38, "TF32": 4, "unknown": 1},
    "multirank_sampled/rank-0.json.gz": {
        "FP32": 80,
        "TF32": 53,
        "unknown": 38,
        "FP64": 10,
        "FP16": 7,
        "FP8": 5,
        "INT8": 1,
    },
    "multirank_sampled/rank-1.json.gz": {
        "FP32": 76,
        "TF32": 53,
        "unknown": 35,
        "FP64": 10,
        "FP8": 5,
        "FP16": 3,
        "INT8": 1,
    },
    # INT8: NCCL's int8_t buffers, a communication kernel (no compute precision on the Dashboard).
    "nccl_rank0.json.gz": {"FP32": 38, "TF32": 27, "unknown": 4, "INT8": 1},
    "resnet50_pt18_workers4.pt.trace.json.gz": {"FP32": 57, "unknown": 5},
}

# What a reader of the name calls TF32: a TF32 type token, or a tensor-op kernel (CUTLASS's
# "tensorop", the "s1688" MMA shape) that names no 16- or 8-bit type.
_TF32_TOKEN = re.compile(r"tf32|tfloat32", re.I)
_TENSOR_OP = re.compile(r"tensorop|s1688", re.I)
_NARROW = re.compile(r"bf16|bfloat16|fp16|f16_|half|e4m3|e5m2|fp8|int8", re.I)


@pytest.mark.parametrize("trace", TRACES)
def test_every_kernel_name_of_a_shared_trace_gets_its_precision(trace):
    names = kernel_names(trace)
    assert Counter(precision_from_name(n) for n in names) == NAMES_BY_PRECISION[trace]
    tensor_op = {n for n in names if _TENSOR_OP.search(n) and not _NARROW.search(n)}
    tf32 = {n for n in names if _TF32_TOKEN.search(n)} | tensor_op
    assert {n for n in names if precision_from_name(n) == "TF32"} == tf32


@pytest.mark.parametrize("trace", TRACES)
def test_no_tensor_core_kernel_is_labelled_fp32(trace):
    """The TensorCores rule's idea of a tensor-core kernel and the precision agree."""
    on_tensor_cores = [n for n in kernel_names(trace) if runs_on_tensor_cores(n)]
    assert all(kernel_category(n) == "COMP" for n in on_tensor_cores)
    assert {
        n: precision_from_name(n) for n in on_tensor_cores if precision_from_name(n) == "FP32"
    } == {}


def test_ffma_and_simt_kernels_do_not_run_on_tensor_cores():
    assert not runs_on_tensor_cores(SHARED_NAMES[9][0])  # sm80_xmma_gemm_f32f32…_ffma
    assert not runs_on_tensor_cores(SHARED_NAMES[8][0])  # cutlass_80_simt_sgemm
    assert not runs_on_tensor_cores("volta_sgemm_128x64_nn")
    assert runs_on_tensor_cores(SHARED_NAMES[0][0])  # cutlass_80_tensorop_s1688gemm
    assert runs_on_tensor_cores(VENDOR_NAMES[3][0])  # sm90 xmma bf16 (wgmma, no "tensor" token)
