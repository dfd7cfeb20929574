// BitShift's attribute and operand checks, shared by the CPU kernel (bitshift.cc) and the CUDA
// one (runtime/cuda/kernels/index_ops.cc), so both fail with the same messages.
#pragma once

#include <string>

#include "runtime/cpu/broadcast.h"
#include "runtime/error.h"
#include "runtime/graph.h"
#include "runtime/kernel.h"

namespace oat::cpu {

// direction "LEFT" (true) or "RIGHT" (false); anything else throws naming the node.
inline bool bitshift_left(const Node& n) {
  const std::string d = n.attr_string("direction", "");
  if (d != "LEFT" && d != "RIGHT")
    throw Error(cat(n.describe(), ": direction must be \"LEFT\" or \"RIGHT\", got \"", d, "\""));
  return d == "LEFT";
}

// Checks X and Y (uint8) and returns their broadcast shape.
inline Shape bitshift_output_shape(KernelContext& ctx, const Tensor& x, const Tensor& y) {
  if (x.dtype() != DType::U8 || y.dtype() != DType::U8)
    ctx.fail(cat("X and Y must be uint8 (the unsigned type this runtime stores), got ",
                 dtype_name(x.dtype()), " and ", dtype_name(y.dtype())));
  Shape out;
  try {
    out = broadcast_shapes({x.shape(), y.shape()});
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  return out;
}

}  // namespace oat::cpu
