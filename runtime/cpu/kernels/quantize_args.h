// The layout of ONNX's affine quantization parameters, shared by the CPU kernels (quantize.cc)
// and the CUDA ones (runtime/cuda/kernels/quantize.cc) of QuantizeLinear, DequantizeLinear and
// QuantizeLinearGrad:
//   per tensor: scale (and zero_point) hold one element (a scalar, or [1]);
//   per axis:   scale is 1-D of X.shape[axis] values (axis attribute, default 1, negative counts
//               from the end), zero_point the same shape; element i of X uses channel
//               c = (i / inner) % channels, inner = the product of X's dims after axis.
// The quantized range is that of zero_point's type: uint8 [0, 255] (also without a zero point),
// int8 [-128, 127].
#pragma once

#include <cstdint>

#include "runtime/cpu/kernels/movement.h"
#include "runtime/kernel.h"

namespace oat::cpu {

struct QuantLayout {
  int64_t channels = 1;  // 1: per tensor
  int64_t inner = 1;     // elements of X per channel step (per tensor: X's size, unused)
};

struct QuantRange {
  int32_t lo = 0, hi = 255;
};

// The range of the quantized type `t` (uint8, int8); fails naming the node for another type.
inline QuantRange quant_range(const KernelContext& ctx, DType t, const char* what) {
  if (t == DType::U8) return {0, 255};
  if (t == DType::I8) return {-128, 127};
  ctx.fail(cat(what, " has dtype ", dtype_name(t), ": quantized values are uint8 or int8"));
}

// Checks scale / zero_point against X's shape and returns the layout. `zp` may be null.
inline QuantLayout quant_layout(const KernelContext& ctx, const Shape& x, const Tensor& scale,
                                const Tensor* zp) {
  if (!is_floating(scale.dtype()) || scale.dtype() == DType::F64)
    ctx.fail(cat("scale has dtype ", dtype_name(scale.dtype()),
                 ", expected float32 (float16 or bfloat16 in mixed precision)"));
  if (zp && zp->shape() != scale.shape() && !(zp->numel() == 1 && scale.numel() == 1))
    ctx.fail(cat("zero_point ", shape_str(zp->shape()), " must have scale's shape ",
                 shape_str(scale.shape())));
  QuantLayout l;
  if (scale.numel() == 1 && scale.rank() <= 1) {  // per tensor
    l.inner = numel(x);
    return l;
  }
  const int rank = static_cast<int>(x.size());
  if (scale.rank() != 1 || rank == 0)
    ctx.fail(cat("scale ", shape_str(scale.shape()), " must be a scalar (per tensor) or 1-D (per ",
                 "axis) for X ", shape_str(x)));
  const int axis = normalize_axis(ctx, ctx.node().attr_int("axis", 1), rank);
  if (scale.dim(0) != x[static_cast<size_t>(axis)])
    ctx.fail(cat("per-axis scale ", shape_str(scale.shape()), " must have X's dimension ", axis,
                 " (", x[static_cast<size_t>(axis)], ") for X ", shape_str(x)));
  l.channels = scale.dim(0);
  for (int d = axis + 1; d < rank; ++d) l.inner *= x[static_cast<size_t>(d)];
  return l;
}

}  // namespace oat::cpu
