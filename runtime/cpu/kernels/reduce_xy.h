// The reductions whose gradient ReduceXYGrad computes from X and Y (its 'reduce' attribute names
// the forward op), and the reduced axes of ReduceGrad and ReduceXYGrad, shared by the CPU kernels
// (grad_reduce.cc) and the CUDA ones (runtime/cuda/kernels/grad_reduce.cc, whose device enum
// XYGrad has the same order).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/graph.h"
#include "runtime/kernel.h"

namespace oat::cpu {

enum class XYKind { Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };

// The node's 'reduce' attribute as an XYKind; an unknown name is an error naming the node.
inline XYKind parse_xy_reduce(const Node& n) {
  const std::string op = n.attr_string("reduce", "");
  const std::pair<const char*, XYKind> kinds[] = {
      {"ReduceMax", XYKind::Max},       {"ReduceMin", XYKind::Min},
      {"ReduceProd", XYKind::Prod},     {"ReduceSumSquare", XYKind::SumSquare},
      {"ReduceL1", XYKind::L1},         {"ReduceL2", XYKind::L2},
      {"ReduceLogSum", XYKind::LogSum}, {"ReduceLogSumExp", XYKind::LogSumExp}};
  for (const auto& [name, k] : kinds)
    if (op == name) return k;
  throw Error(cat(n.describe(), ": unknown reduction '", op, "'"));
}

// The axes X [xs] is reduced over (flags; `axes` empty: every axis), Y's shape with keepdims,
// and how many elements of X reduce into each of Y's (Π reduced dims). Fails on an axis outside
// [-rank, rank). Shared by ReduceGrad and ReduceXYGrad on the CPU and on CUDA.
struct AxisReduction {
  std::vector<bool> reduced;
  Shape kept;
  int64_t count = 1;
};
inline AxisReduction axis_reduction(const KernelContext& ctx, const Shape& xs,
                                    const std::vector<int64_t>& axes) {
  const int rank = static_cast<int>(xs.size());
  AxisReduction r{std::vector<bool>(xs.size(), axes.empty()), xs};
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) ctx.fail(cat("axis ", a, " out of range for rank ", rank));
    r.reduced[a < 0 ? a + rank : a] = true;
  }
  for (int d = 0; d < rank; ++d)
    if (r.reduced[d]) {
      r.count *= xs[d];
      r.kept[d] = 1;
    }
  return r;
}

// axis_reduction for ReduceXYGrad, failing also unless dY and Y have Y's size.
using XYReduction = AxisReduction;
inline XYReduction xy_reduction(const KernelContext& ctx, const Shape& xs,
                                const std::vector<int64_t>& axes, const Tensor& dy,
                                const Tensor& y) {
  XYReduction r = axis_reduction(ctx, xs, axes);
  if (numel(r.kept) != dy.numel() || numel(r.kept) != y.numel())
    ctx.fail(cat("gradient ", shape_str(dy.shape()), " and output ", shape_str(y.shape()),
                 " do not match the reduction of ", shape_str(xs)));
  return r;
}

}  // namespace oat::cpu
