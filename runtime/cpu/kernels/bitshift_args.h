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

inline bool is_unsigned_dtype(DType t) {
  return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64;
}

// Checks X and Y (one unsigned integer type) and returns their broadcast shape.
inline Shape bitshift_output_shape(KernelContext& ctx, const Tensor& x, const Tensor& y) {
  if (!is_unsigned_dtype(x.dtype()) || x.dtype() != y.dtype())
    ctx.fail(
        cat("X and Y must be of one unsigned integer type (uint8, uint16, uint32, uint64), "
            "got ",
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
