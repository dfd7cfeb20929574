// Test helpers for convert_tests: small Graphs built directly in the IR (typed inputs and
// initializers; node outputs take their types from the converter's own inference, as training
// graphs do), and look-ups into the result of a rewrite.
#pragma once

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "convert/precision.h"

namespace oat_test {

using namespace oat;

struct GraphBuild {
  Graph g;
  GraphBuild() {
    g.name = "test";
    g.opsets[""] = 13;
  }
  GraphBuild& input(const std::string& name, DType t = DType::F32, Shape shape = {2, 4}) {
    ValueInfo v;
    v.name = name;
    v.dtype = t;
    std::vector<Dim> dims;
    for (int64_t d : shape) dims.push_back(Dim{d, ""});
    v.shape = dims;
    g.inputs.push_back(v);
    return *this;
  }
  GraphBuild& init(const std::string& name, Tensor t) {
    g.initializers[name] = std::move(t);
    return *this;
  }
  GraphBuild& weight(const std::string& name, Shape shape = {4, 4}, float value = 0.5f) {
    Tensor t(DType::F32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = value;
    return init(name, t);
  }
  Node& node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
             const std::string& name, const std::string& domain = "") {
    Node n;
    n.name = name;
    n.op_type = op;
    n.domain = domain;
    n.op = op_from_name(op);
    n.opset = domain.empty() ? 13 : 1;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    g.nodes.push_back(std::move(n));
    return g.nodes.back();
  }
  GraphBuild& output(const std::string& name, DType t = DType::F32) {
    ValueInfo v;
    v.name = name;
    v.dtype = t;
    g.outputs.push_back(v);
    return *this;
  }
};

inline Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}

inline Attribute tensor_attr(Tensor t) {
  Attribute a;
  a.kind = Attribute::Kind::Tensor;
  a.t = std::move(t);
  return a;
}

// The plan entry of `node`; fails the test when absent.
inline const convert::NodePrecision& entry(const convert::PrecisionPlan& p,
                                           const std::string& node) {
  const convert::NodePrecision* e = p.find(node);
  REQUIRE_MESSAGE(e != nullptr, "no plan entry for node '" << node << "'");
  return *e;
}

inline const Node* find_node(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

inline const Node* producer_of(const Graph& g, const std::string& value) {
  for (const Node& n : g.nodes)
    for (const auto& o : n.outputs)
      if (o == value) return &n;
  return nullptr;
}

inline std::vector<const Node*> casts(const Graph& g) {
  std::vector<const Node*> r;
  for (const Node& n : g.nodes)
    if (n.op_type == "Cast") r.push_back(&n);
  return r;
}

// Every value is produced before it is read (inputs, initializers or an earlier node).
inline bool topologically_sorted(const Graph& g) {
  std::set<std::string> known;
  for (const auto& v : g.inputs) known.insert(v.name);
  for (const auto& [name, t] : g.initializers) known.insert(name);
  for (const Node& n : g.nodes) {
    for (const auto& i : n.inputs)
      if (!i.empty() && !known.count(i)) return false;
    for (const auto& o : n.outputs) known.insert(o);
  }
  for (const auto& v : g.outputs)
    if (!known.count(v.name)) return false;
  return true;
}

}  // namespace oat_test
