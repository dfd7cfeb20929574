// The "every backend agrees with the CPU reference" table (backends_agree_test.cc): how a case
// and its inputs are described. The cases themselves live in agreement_*_cases.cc, one family
// of ops per file; the harness that runs them on each backend is backends_agree_test.cc.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "runtime/graph.h"
#include "runtime/tensor.h"
#include "tests/runtime/single_node.h"

namespace oat_agree {

using namespace oat;
using oat_test::attr_f;
using oat_test::attr_i;
using oat_test::attr_ints;
using oat_test::attr_s;

// How one input is made.
struct In {
  enum Kind { Float, Positive, Unit, NegUnit, Huge, Ints, Bools, True, Values, Absent };
  In(Kind k, Shape s) : kind(k), shape(std::move(s)) {}
  Kind kind = Float;
  Shape shape;
  std::vector<int64_t> ints;  // Ints: the values (shape = {size} unless given)
  std::vector<float> values;  // Values: the float values (ties, zeros, Y = reduce(X))
  bool keep_f32 = false;      // stays F32 whatever the case dtype (BN statistics, lr, masters)
  DType int_type = DType::I64;
};
inline In flt(Shape s) { return In{In::Float, std::move(s)}; }
inline In absent() { return In{In::Absent, {}}; }  // an optional input left out ("")
inline In pos(Shape s) { return In{In::Positive, std::move(s)}; }
inline In f32(Shape s, In::Kind k = In::Float) {
  In i{k, std::move(s)};
  i.keep_f32 = true;
  return i;
}
inline In ints(std::vector<int64_t> v, Shape s = {}) {
  In i{In::Ints, s.empty() ? Shape{static_cast<int64_t>(v.size())} : std::move(s)};
  i.ints = std::move(v);
  return i;
}
inline In bools(Shape s) { return In{In::Bools, std::move(s)}; }
// Given float values (exact in F16 and BF16 where a case needs exact ties or zeros).
inline In vals(Shape s, std::vector<float> v) {
  In i{In::Values, std::move(s)};
  i.values = std::move(v);
  return i;
}
inline In all_true(Shape s) { return In{In::True, std::move(s)}; }
// n evenly spaced values in [lo, hi], for ops with a domain (Asin, Acosh) or poles (Tan).
inline In spread(int64_t n, float lo, float hi) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * static_cast<float>(i) / (n - 1);
  return vals({n}, std::move(v));
}
inline In huge(Shape s) { return In{In::Huge, std::move(s)}; }

struct Case {
  Case(std::string op_, int64_t opset_, std::map<std::string, Attribute> attrs_,
       std::vector<In> inputs_, int outputs_ = 1,
       std::vector<DType> dtypes_ = {DType::F32, DType::F16, DType::BF16}, std::string label_ = "")
      : op(std::move(op_)),
        opset(opset_),
        attrs(std::move(attrs_)),
        inputs(std::move(inputs_)),
        outputs(outputs_),
        dtypes(std::move(dtypes_)),
        label(std::move(label_)) {}
  std::string op;
  int64_t opset;
  std::map<std::string, Attribute> attrs;
  std::vector<In> inputs;
  int outputs;
  std::vector<DType> dtypes;
  std::string label;
  // The graph inputs' shapes in value_info (composite expansions read them; without, Einsum's
  // reshape targets come from Shape/ReduceProd/Concat at run time).
  bool declare_shapes = true;
  // The node's domain ("" is ai.onnx; "ai.onnx.preview.training" for the optimizer ops), imported
  // at `opset`.
  std::string domain;
};

// The case lists, by family (each appends to v).
void add_elementwise_cases(std::vector<Case>& v);   // agreement_elementwise_cases.cc
void add_reduce_shape_cases(std::vector<Case>& v);  // agreement_reduce_shape_cases.cc
void add_nn_cases(std::vector<Case>& v);            // agreement_nn_cases.cc
void add_gradient_cases(std::vector<Case>& v);      // agreement_gradient_cases.cc
void add_model_op_cases(std::vector<Case>& v);      // agreement_model_op_cases.cc

}  // namespace oat_agree
