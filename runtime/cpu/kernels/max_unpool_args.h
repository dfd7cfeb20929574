// MaxUnpool's attributes and operand checks, shared by the CPU kernel (max_unpool.cc) and the
// CUDA one (runtime/cuda/kernels/index_ops.cc), so both fail with the same messages and size Y
// the same way (formulas in max_unpool.cc).
//   X [N, C, D1, ...] float; I int64 of X's shape; optional output_shape int64 [rank(X)];
//   kernel_shape (required), strides (default 1), pads (begin..., end...; default 0).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/error.h"
#include "runtime/graph.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace oat::cpu {

struct MaxUnpoolAttrs {
  std::vector<int64_t> kernel, strides, pads;

  explicit MaxUnpoolAttrs(const Node& n)
      : kernel(n.attr_ints("kernel_shape")), strides(n.attr_ints("strides")),
        pads(n.attr_ints("pads")) {
    if (kernel.empty()) throw Error(cat(n.describe(), ": attribute kernel_shape is required"));
  }

  // Checks X, I and output_shape (nullptr when omitted; a host tensor) and returns Y's shape:
  // output_shape when given, else (D_i − 1)·stride_i + kernel_i − pad_begin_i − pad_end_i.
  Shape output_shape(KernelContext& ctx, const Tensor& x, const Tensor& idx,
                     const Tensor* given) const {
    const int64_t k = static_cast<int64_t>(kernel.size());
    if (x.rank() != k + 2)
      ctx.fail(cat("X must be [N, C] plus ", k, " spatial dims (kernel_shape has ", k,
                   "), got ", shape_str(x.shape())));
    if (idx.dtype() != DType::I64) ctx.fail(cat("I must be int64, got ", dtype_name(idx.dtype())));
    if (idx.shape() != x.shape())
      ctx.fail(cat("I must have X's shape ", shape_str(x.shape()), ", got ",
                   shape_str(idx.shape())));
    if (!strides.empty() && static_cast<int64_t>(strides.size()) != k)
      ctx.fail(cat("strides must have ", k, " values, got ", strides.size()));
    if (!pads.empty() && static_cast<int64_t>(pads.size()) != 2 * k)
      ctx.fail(cat("pads must have ", 2 * k, " values, got ", pads.size()));
    Shape ys;
    if (given) {
      if (given->dtype() != DType::I64 || given->rank() != 1 || given->numel() != x.rank())
        ctx.fail(cat("output_shape must be int64 [", x.rank(), "], got ",
                     dtype_name(given->dtype()), " ", shape_str(given->shape())));
      ys = Shape(given->data<int64_t>(), given->data<int64_t>() + given->numel());
      for (int64_t d : ys)
        if (d < 0) ctx.fail(cat("output_shape must not be negative, got ", shape_str(ys)));
      return ys;
    }
    ys = {x.dim(0), x.dim(1)};
    for (int64_t i = 0; i < k; ++i) {
      const int64_t s = strides.empty() ? 1 : strides[i];
      const int64_t pb = pads.empty() ? 0 : pads[i], pe = pads.empty() ? 0 : pads[k + i];
      ys.push_back((x.dim(static_cast<int>(i + 2)) - 1) * s + kernel[i] - pb - pe);
    }
    return ys;
  }
};

}  // namespace oat::cpu
