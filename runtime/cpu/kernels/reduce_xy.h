// The reductions whose gradient ReduceXYGrad computes from X and Y (its 'reduce' attribute names
// the forward op), shared by the CPU kernel (grad_reduce.cc) and the CUDA one
// (runtime/cuda/kernels/grad_reduce.cc, whose device enum XYGrad has the same order).
#pragma once

#include <string>
#include <utility>

#include "runtime/error.h"
#include "runtime/graph.h"

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

}  // namespace oat::cpu
