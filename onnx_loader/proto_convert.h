// Internal to onnx_loader/: conversions between ONNX protobuf messages and the project's IR.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "runtime/graph.h"

namespace oat::onnx_loader {

// ONNX TensorProto.DataType <-> DType. dtype_from_onnx throws Unsupported for types the runtime
// does not store (complex, float8, ...), naming the type.
DType dtype_from_onnx(int32_t onnx_type, const std::string& what);
int32_t dtype_to_onnx(DType t);
const char* onnx_type_name(int32_t onnx_type);

// Where tensor data outside the proto lives, and whether to read it.
struct TensorSource {
  std::string base_dir;       // external data locations are relative to this folder
  bool load_external = true;  // false: external tensors come back undefined
};

// Reads every storage form: raw_data (little-endian), float_data, int32_data (also FP16/BF16 bit
// patterns, int8/uint8/bool), int64_data, double_data, and external data files (location, offset,
// length) relative to base_dir. Sizes are checked before anything is allocated, so a corrupt
// header cannot ask for terabytes. Throws Error naming the tensor (and the file for external
// data) when the data is short, long or missing.
Tensor tensor_from_proto(const onnx::TensorProto& p, const TensorSource& src);
inline Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  return tensor_from_proto(p, TensorSource{base_dir, true});
}
// Fills dims, data_type and raw_data (clears every other data field; keeps nothing of `p`).
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p);

// Converts a GraphProto. `opsets` maps domain -> version; `outer_scope` names values visible from
// an enclosing graph (subgraphs of If/Loop/Scan).
Graph graph_from_proto(const onnx::GraphProto& g, const std::map<std::string, int64_t>& opsets,
                       const TensorSource& src, const std::vector<std::string>& outer_scope,
                       bool is_subgraph);

ValueInfo value_info_from_proto(const onnx::ValueInfoProto& v);
void value_info_to_proto(const ValueInfo& v, onnx::ValueInfoProto* p);

// Graph -> GraphProto (graph_writer.cc): initializers inline as raw_data, inputs, outputs,
// value_info, nodes with their attributes and subgraphs. Throws Error naming the node for an
// attribute kind that cannot be written (sparse tensors, type protos).
void graph_to_proto(const Graph& g, onnx::GraphProto* gp);

}  // namespace oat::onnx_loader
