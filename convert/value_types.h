// Internal to convert/: the element type of every value in a Graph, and the few type facts the
// painting pass and the Cast rewrite share.
//
// Types come from initializers, graph inputs and value_info when those say them, else from the op
// that produces the value (Cast's `to`, Shape -> int64, comparisons -> bool, BatchNormalization's
// statistics like its mean input, ...), else the producer's first input. Training graphs carry no
// value_info for the values autodiff adds, so value_info alone is not enough.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/graph.h"

namespace oat::convert {

using ValueTypes = std::map<std::string, DType>;

// Every named value of `g`'s top level: initializers, inputs, node outputs.
ValueTypes infer_value_types(const Graph& g);

// A node's output types from its input types alone (value_info not consulted).
std::vector<DType> infer_output_types(const Node& n, const std::vector<DType>& input_types);

// F32, F16 and BF16: the types precision conversion moves values between. F64 and integers are
// never converted.
inline bool is_convertible(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

// "fp32", "fp16", "bf16" (dtype_name() for other types).
const char* precision_name(DType t);

// ONNX TensorProto.DataType codes (FLOAT = 1, FLOAT16 = 10, BFLOAT16 = 16, ...).
int64_t onnx_type_code(DType t);
DType dtype_from_onnx_code(int64_t code);  // Undefined for codes the runtime does not store

// The `to` of a Cast node (an int code, or a type name such as "FLOAT16"); Undefined when absent.
DType cast_target(const Node& cast);

// Whether every value of type `from` is exactly representable in `to`, so that a cast from `from`
// to `to` changes no value (f16 -> f32, bf16 -> f32, f32 -> f64, bool/u8/i8 -> any float).
bool widening_is_exact(DType from, DType to);

// Whether a node holds a subgraph attribute (If, Loop, Scan bodies).
bool has_subgraph(const Node& n);

// Names a subgraph reads from the enclosing scope (recursively), for a node with subgraphs.
std::vector<std::string> outer_scope_reads(const Node& n);

}  // namespace oat::convert
