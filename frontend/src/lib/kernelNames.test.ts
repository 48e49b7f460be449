import { describe, expect, it } from "vitest";
import { middleEllipsis, shortKernelName } from "./kernelNames";

describe("kernel names in legends", () => {
  it("drops void, namespaces, parameter lists and lambda paths", () => {
    expect(
      shortKernelName(
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, " +
          "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
        80,
      ),
    ).toBe("vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, Array<char*, 3> >");
    expect(
      shortKernelName(
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<int>(int)",
      ),
    ).toBe("multi_tensor_apply_kernel<int>");
    expect(
      shortKernelName(
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::" +
          "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, " +
          "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::" +
          "operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, " +
          "at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, " +
          "c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::" +
          "{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
      ),
    ).toBe("vectorized_elementwise_kernel<4, launch_clamp_scalar, Array<char*, 2> >");
  });

  it("keeps both ends of what stays too long, so similar kernels stay apart", () => {
    const name =
      "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float, float, " +
      "float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, cudnnTensorStruct)";
    const short = shortKernelName(name, 40);
    expect(short).toHaveLength(40);
    expect(short).toBe("bn_bw_1C11_kernel_new<float,…8, true, 1>");
    expect(shortKernelName(name.replace("128", "32"), 40)).not.toBe(short);
  });

  it("leaves short names alone", () => {
    expect(shortKernelName("volta_sgemm_64x64_nt")).toBe("volta_sgemm_64x64_nt");
    expect(middleEllipsis("abcdefghij", 5)).toBe("abc…j");
    expect(shortKernelName("volta_sgemm_64x64_nt(float)")).toBe("volta_sgemm_64x64_nt");
  });
});
