// The project's own IR. onnx_loader/ converts ModelProto to this and back; nothing outside
// onnx_loader/ sees protobuf types.
//
// A Graph is a list of Nodes in topological order, named values connect them, initializers are
// constant tensors, and value_info records what shape inference knows about each value.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ops.h"
#include "runtime/tensor.h"

namespace oat {

struct Graph;

// One ONNX attribute with its type kept. Only the member matching `kind` is meaningful.
struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs,
                    SparseTensor, TypeProto, TypeProtos, SparseTensors };
  Kind kind = Kind::Int;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  oat::Tensor t;
  std::shared_ptr<oat::Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<oat::Tensor> tensors;
  std::vector<std::shared_ptr<oat::Graph>> graphs;
  // A TypeProto attribute (Optional's `type`): tensor, sequence(tensor) or optional(...), with
  // the element type (Undefined when not stored by this runtime).
  ValueKind type_kind = ValueKind::Tensor, type_inner = ValueKind::Tensor;
  DType type_elem = DType::Undefined;
};
const char* attribute_kind_name(Attribute::Kind k);

// Attribute values, for the passes that write nodes (autodiff, composite expansions, the zoo).
Attribute int_attribute(int64_t v);
Attribute ints_attribute(std::vector<int64_t> v);
Attribute float_attribute(float v);
Attribute string_attribute(std::string v);

// A dimension from the model's declared types: a fixed size, a symbolic name, or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when fixed
  std::string param;   // symbolic name (e.g. "batch"), when value < 0
  bool fixed() const { return value >= 0; }
};

struct ValueInfo {
  std::string name;
  // a tensor's type; a sequence's or optional's element type; a map's value type
  DType dtype = DType::Undefined;
  std::optional<std::vector<Dim>> shape;  // nullopt: rank unknown (always for non-tensors)
  // sequence(tensor | map), optional(tensor | sequence), map
  ValueKind kind = ValueKind::Tensor;
  ValueKind inner = ValueKind::Tensor;  // an optional's element kind; a sequence's item kind
  DType key = DType::Undefined;         // map(key, dtype), sequence(map(key, dtype))
  std::string shape_string() const;     // "[batch, 3, 224, 224]" or "?"
  // "float32 [batch, 3, 224, 224]", "sequence(int64)", "optional(sequence(float32))",
  // "map(string, float32)", "sequence(map(int64, float32))"
  std::string type_string() const;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  OpId op = OpId::Unknown;
  int64_t opset = 0;   // the opset version the model imports for this node's domain
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::map<std::string, Attribute> attrs;
  std::string doc_string;

  bool has_attr(const std::string& k) const { return attrs.count(k) != 0; }
  // Typed accessors: throw Error naming the node when the attribute has the wrong kind.
  int64_t attr_int(const std::string& k, int64_t def) const;
  float attr_float(const std::string& k, float def) const;
  std::string attr_string(const std::string& k, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& k, std::vector<int64_t> def = {}) const;
  std::vector<float> attr_floats(const std::string& k, std::vector<float> def = {}) const;
  const Attribute* attr(const std::string& k) const;
  // "node 'conv1' (Conv, opset 13)" — the prefix every error about this node starts with.
  std::string describe() const;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;                     // topological order
  std::map<std::string, Tensor> initializers;  // constant tensors by value name
  std::vector<ValueInfo> inputs;               // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  std::map<std::string, ValueInfo> value_info;  // from the model and from shape inference
  std::map<std::string, int64_t> opsets;        // domain -> version ("" is ai.onnx)
  // The model's producer_name ("pytorch", "tf2onnx", ...; "" for graphs built in memory). Training
  // reads it where exporters differ in how they write parameters (train/initializer_aliases.h).
  std::string producer;

  const ValueInfo* find_value_info(const std::string& name) const;
};

// Sorts nodes so every value is produced before it is consumed (Kahn's algorithm, keeping the
// original order among ready nodes). `known` are values available before any node runs (graph
// inputs, initializers, and for subgraphs the outer scope). Throws Error naming a node on a cycle
// or on an input that nothing produces.
void topological_sort(std::vector<Node>& nodes, const std::vector<std::string>& known,
                      bool allow_outer_scope = false);

}  // namespace oat
