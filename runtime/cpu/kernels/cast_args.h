// Cast's 'to' attribute, shared by the CPU kernel (cast.cc), the CUDA one
// (runtime/cuda/kernels/elementwise.cc) and the CUDA placement (runtime/cuda/context.cc), so all
// read it alike and fail with the same messages: a TensorProto.DataType code from opset 6, a type
// name string ("FLOAT16") before.
#pragma once

#include <optional>

#include "runtime/error.h"
#include "runtime/graph.h"
#include "runtime/onnx_type_code.h"

namespace oat::cpu {

// The type 'to' names, nothing when it names one the runtime does not store (or is neither).
inline std::optional<DType> cast_to_dtype(const Attribute& a) {
  if (a.kind == Attribute::Kind::String) return dtype_of_onnx_name(a.s);
  if (a.kind == Attribute::Kind::Int) return dtype_of_onnx_code(a.i);
  return std::nullopt;
}

// The type a Cast node converts to; throws naming the node when 'to' is missing or names a type
// the runtime does not store.
inline DType cast_target(const Node& n) {
  const Attribute* a = n.attr("to");
  if (!a) throw Error(cat(n.describe(), ": missing attribute 'to'"));
  if (const std::optional<DType> t = cast_to_dtype(*a)) return *t;
  if (a->kind == Attribute::Kind::String)
    throw Unsupported(cat(n.describe(), ": cast to ", a->s, " is not supported"),
                      cat(n.op_type, "(to=", a->s, ")"));
  if (a->kind != Attribute::Kind::Int)
    throw Error(cat(n.describe(), ": 'to' must be an integer TensorProto data type"));
  throw Unsupported(cat(n.describe(), ": cast to ONNX element type ", a->i, " is not supported"),
                    cat(n.op_type, "(to=", a->i, ")"));
}

}  // namespace oat::cpu
