// Test helpers for one-node graphs (shape_test.cc, movement_test.cc, generator_test.cc): attribute
// builders and run_node(), which runs a single op through the Executor.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/executor.h"

namespace oat_test {

using oat::Attribute;
using oat::Tensor;

inline Attribute attr_i(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}
inline Attribute attr_f(float v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  return a;
}
inline Attribute attr_s(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = s;
  return a;
}
inline Attribute attr_ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
inline Attribute attr_floats(std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::Kind::Floats;
  a.floats = std::move(v);
  return a;
}
inline Attribute attr_strings(std::vector<std::string> v) {
  Attribute a;
  a.kind = Attribute::Kind::Strings;
  a.strings = std::move(v);
  return a;
}
inline Attribute attr_t(Tensor t) {
  Attribute a;
  a.kind = Attribute::Kind::Tensor;
  a.t = std::move(t);
  return a;
}

// Runs one `op` node at `opset`; an undefined Tensor in `inputs` is an omitted optional input.
// `domain`: the node's domain ("" is ai.onnx), imported at `opset`.
inline std::vector<Tensor> run_node(const std::string& op, int64_t opset,
                                    const std::map<std::string, Attribute>& attrs,
                                    const std::vector<Tensor>& inputs, int n_outputs = 1,
                                    const std::string& domain = "") {
  oat::Graph g;
  g.opsets[domain] = opset;
  oat::Node n;
  n.name = "n0";
  n.op_type = op;
  n.domain = domain;
  n.op = oat::op_from_domain(domain, op);
  n.opset = opset;
  n.attrs = attrs;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      n.inputs.push_back("");
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    n.inputs.push_back(name);
    std::vector<oat::Dim> dims;  // composite ops' expansions read ranks and sizes from here
    for (int64_t d : inputs[i].shape()) dims.push_back(oat::Dim{d, ""});
    g.inputs.push_back(oat::ValueInfo{name, inputs[i].dtype(), dims});
    if (!inputs[i].is_tensor()) {  // a sequence, optional or map: declared as what it is
      g.inputs.back().shape.reset();
      g.inputs.back().kind = inputs[i].kind();
      g.inputs.back().inner = inputs[i].inner_kind();
      g.inputs.back().key = inputs[i].key_dtype();
    }
    feeds[name] = inputs[i];
  }
  for (int o = 0; o < n_outputs; ++o) {
    n.outputs.push_back("out" + std::to_string(o));
    g.outputs.push_back(oat::ValueInfo{n.outputs.back(), oat::DType::Undefined, std::nullopt});
  }
  g.nodes.push_back(n);
  oat::Executor ex(g);
  return ex.run(feeds);
}

inline Tensor run1(const std::string& op, int64_t opset,
                   const std::map<std::string, Attribute>& attrs,
                   const std::vector<Tensor>& inputs) {
  return run_node(op, opset, attrs, inputs).at(0);
}

inline Tensor i64(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>({n}, v);
}

// 0, 1, 2, ... as float32 in `shape`.
inline Tensor iota_f(oat::Shape shape) {
  Tensor t(oat::DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

inline std::vector<float> fvec(const Tensor& t) { return t.to_float_vector(); }
inline std::vector<int64_t> ivec(const Tensor& t) { return t.to_int_vector(); }

}  // namespace oat_test
