// Launchers of the quantization kernels (quantize_impl.cu); formulas in quantize.cc and
// runtime/cpu/kernels/quantize.cc. Element i of X uses channel c = (i / inner) % channels
// (channels = 1: per tensor). Zero points are uint8 or int8 (zp_signed), or absent (null: 0).
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

struct QuantArgs {
  int64_t n = 0, channels = 1, inner = 1;
  ElemType scale_type = ElemType::F32;
  const void* scale = nullptr;
  const void* zero_point = nullptr;  // null: 0
  bool zp_signed = false;            // int8 zero point / output; else uint8
};

// y = saturate(rint(x / s) + zp) in [0, 255] (uint8) or [−128, 127] (int8, a.zp_signed); a NaN
// x gives zp. x in F32/F16/BF16.
void launch_quantize_linear(ElemType x_type, const void* x, void* y, const QuantArgs& a,
                            cudaStream_t s);

// y = (x − zp) · s, in the scale's type; x uint8, int8 or int32 (x_type), zp of x's type.
void launch_dequantize_linear(ElemType x_type, const void* x, void* y, const QuantArgs& a,
                              cudaStream_t s);

// dX = dY where qmin <= rint(X / s) + zp <= qmax, else 0 (the straight-through estimator);
// dY, X and dX in `t`.
void launch_quantize_linear_grad(ElemType t, const void* dy, const void* x, void* dx,
                                 const QuantArgs& a, cudaStream_t s);

}  // namespace oat::cuda
