// LpNormalization's attributes, shared by the CPU kernels (lp_norm.cc) and the CUDA ones
// (runtime/cuda/kernels/lp_norm.cc), for the forward op and its gradient LpNormalizationGrad:
// axis (default -1) in [-rank, rank), p (default 2) 1 or 2. X is viewed as [outer, len, inner]
// around the axis.
#pragma once

#include "runtime/error.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace oat::cpu {

struct LpNormArgs {
  int p = 2;
  int64_t outer = 1, len = 1, inner = 1;
};

inline LpNormArgs lp_norm_args(const KernelContext& ctx, const Shape& xs) {
  const Node& n = ctx.node();
  LpNormArgs a;
  const int64_t p = n.attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail(cat("p must be 1 or 2, got ", p));
  a.p = static_cast<int>(p);
  const int r = static_cast<int>(xs.size());
  const int64_t axis = n.attr_int("axis", -1);
  if (axis < -r || axis >= r)
    ctx.fail(cat("axis ", axis, " is out of range for input ", shape_str(xs)));
  const int ax = static_cast<int>(axis < 0 ? axis + r : axis);
  a.len = xs[ax];
  for (int d = 0; d < ax; ++d) a.outer *= xs[d];
  for (int d = ax + 1; d < r; ++d) a.inner *= xs[d];
  return a;
}

}  // namespace oat::cpu
