#include "runtime/graph.h"

#include <set>
#include <unordered_map>
#include <unordered_set>

namespace oat {

Attribute int_attribute(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}

Attribute ints_attribute(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}

Attribute float_attribute(float v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  return a;
}

Attribute string_attribute(std::string v) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = std::move(v);
  return a;
}

const char* attribute_kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::Float: return "float";
    case Attribute::Kind::Int: return "int";
    case Attribute::Kind::String: return "string";
    case Attribute::Kind::Tensor: return "tensor";
    case Attribute::Kind::Graph: return "graph";
    case Attribute::Kind::Floats: return "floats";
    case Attribute::Kind::Ints: return "ints";
    case Attribute::Kind::Strings: return "strings";
    case Attribute::Kind::Tensors: return "tensors";
    case Attribute::Kind::Graphs: return "graphs";
    case Attribute::Kind::SparseTensor: return "sparse_tensor";
    case Attribute::Kind::TypeProto: return "type_proto";
    case Attribute::Kind::TypeProtos: return "type_protos";
    case Attribute::Kind::SparseTensors: return "sparse_tensors";
  }
  return "?";
}

std::string ValueInfo::shape_string() const {
  if (!shape) return "?";
  std::string r = "[";
  for (size_t i = 0; i < shape->size(); ++i) {
    if (i) r += ", ";
    const Dim& d = (*shape)[i];
    r += d.fixed() ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param);
  }
  return r + "]";
}

std::string ValueInfo::type_string() const {
  const std::string elem = dtype_name(dtype);
  switch (kind) {
    case ValueKind::Sequence:
      if (inner == ValueKind::Map) return cat("sequence(map(", dtype_name(key), ", ", elem, "))");
      return cat("sequence(", elem, ")");
    case ValueKind::Map:
      return cat("map(", dtype_name(key), ", ", elem, ")");
    case ValueKind::Optional:
      return inner == ValueKind::Sequence ? cat("optional(sequence(", elem, "))")
                                          : cat("optional(", elem, ")");
    case ValueKind::Tensor:
      break;
  }
  return cat(elem, " ", shape_string());
}

const Attribute* Node::attr(const std::string& k) const {
  auto it = attrs.find(k);
  return it == attrs.end() ? nullptr : &it->second;
}

std::string Node::describe() const {
  return cat("node '", name, "' (", domain.empty() ? "" : domain + ".", op_type, ", opset ", opset,
             ")");
}

namespace {
const Attribute* typed(const Node& n, const std::string& k, Attribute::Kind kind) {
  const Attribute* a = n.attr(k);
  if (a && a->kind != kind)
    throw Error(cat(n.describe(), ": attribute '", k, "' is ", attribute_kind_name(a->kind),
                    ", expected ", attribute_kind_name(kind)));
  return a;
}
}  // namespace

int64_t Node::attr_int(const std::string& k, int64_t def) const {
  const Attribute* a = typed(*this, k, Attribute::Kind::Int);
  return a ? a->i : def;
}
float Node::attr_float(const std::string& k, float def) const {
  const Attribute* a = attr(k);
  if (a && a->kind == Attribute::Kind::Int) return static_cast<float>(a->i);  // lenient exporters
  a = typed(*this, k, Attribute::Kind::Float);
  return a ? a->f : def;
}
std::string Node::attr_string(const std::string& k, const std::string& def) const {
  const Attribute* a = typed(*this, k, Attribute::Kind::String);
  return a ? a->s : def;
}
std::vector<int64_t> Node::attr_ints(const std::string& k, std::vector<int64_t> def) const {
  const Attribute* a = typed(*this, k, Attribute::Kind::Ints);
  return a ? a->ints : def;
}
std::vector<float> Node::attr_floats(const std::string& k, std::vector<float> def) const {
  const Attribute* a = typed(*this, k, Attribute::Kind::Floats);
  return a ? a->floats : def;
}

const ValueInfo* Graph::find_value_info(const std::string& name) const {
  for (const auto& v : inputs)
    if (v.name == name) return &v;
  for (const auto& v : outputs)
    if (v.name == name) return &v;
  auto it = value_info.find(name);
  return it == value_info.end() ? nullptr : &it->second;
}

void topological_sort(std::vector<Node>& nodes, const std::vector<std::string>& known,
                      bool allow_outer_scope) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& o : nodes[i].outputs)
      if (!o.empty()) {
        if (!producer.emplace(o, i).second)
          throw Error(cat(nodes[i].describe(), ": output '", o,
                          "' is already produced by another node"));
      }
  std::unordered_set<std::string> available(known.begin(), known.end());
  std::vector<int> missing(nodes.size(), 0);
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::set<std::string> seen;
    for (const auto& in : nodes[i].inputs) {
      if (in.empty() || available.count(in) || !seen.insert(in).second) continue;
      if (!producer.count(in)) {
        if (allow_outer_scope) continue;
        throw Error(cat(nodes[i].describe(), ": input '", in,
                        "' is not a graph input, an initializer, or any node's output"));
      }
      ++missing[i];
      consumers[in].push_back(i);
    }
  }
  // A min-ordered ready set keeps the model's own order when it is already valid.
  std::set<size_t> ready_set;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (missing[i] == 0) ready_set.insert(i);
  std::vector<size_t> order;
  order.reserve(nodes.size());
  while (!ready_set.empty()) {
    size_t i = *ready_set.begin();
    ready_set.erase(ready_set.begin());
    order.push_back(i);
    for (const auto& o : nodes[i].outputs) {
      auto it = consumers.find(o);
      if (it == consumers.end()) continue;
      for (size_t c : it->second)
        if (--missing[c] == 0) ready_set.insert(c);
    }
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (missing[i] > 0)
        throw Error(cat("graph has a cycle: ", nodes[i].describe(),
                        " waits on a value that depends on its own outputs"));
  }
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  for (size_t i : order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
}

}  // namespace oat
