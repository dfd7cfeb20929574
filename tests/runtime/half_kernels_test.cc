// F16 and BF16 CPU kernels (runtime/cpu/kernels/low_precision.h): the emulation rule is "compute
// in FP32, round each output element once to the 16-bit storage type".
//   1. coverage: every op with an F32 CPU kernel has F16 and BF16 kernels, except the FP32-only
//      optimizer / loss-scaling ops (listed below), and every such op has a case in the table;
//   2. one table of cases, forward and gradient ops: the F16 (BF16) kernel on inputs rounded to
//      F16 (BF16) against the F32 kernel on the same rounded values, its float outputs rounded
//      once: at most 1 ulp of the 16-bit type apart (elementwise ops may differ in the last float
//      bit between Eigen's packet and scalar paths; on at most 0.5% of the elements), bit-exact
//      for data movement; integer and bool outputs equal; outputs that stay FP32
//      (BatchNormalization statistics) equal in FP32;
//   3. emulation facts: FP16 overflow to Inf, 1e-8 flushes to 0 in FP16 but not in BF16, Cast
//      rounds to nearest even (also from double, in one rounding), GEMM of K = 4096 ones is 4096
//      (FP32 accumulation; naive FP16 accumulation sticks at 2048), no overflow of intermediate
//      sums that fit once rounded.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/registry.h"
#include "single_node.h"

using namespace oat;
using namespace oat_test;

namespace {

// ---- inputs ------------------------------------------------------------------------------------

// How an input is made. Float kinds are drawn in F32, then rounded to the 16-bit type under test;
// the F32 reference gets the rounded values back in F32.
struct In {
  enum Kind { Uniform, Positive, Small, Fixed, Fp32, Ints, Bools } kind = Uniform;
  Shape shape;
  std::vector<double> values;  // Fixed, Fp32 (when not empty), Ints
};
In U(Shape s) { return {In::Uniform, std::move(s), {}}; }   // [-3, 3]
In P(Shape s) { return {In::Positive, std::move(s), {}}; }  // [0.1, 3]
In Sm(Shape s) { return {In::Small, std::move(s), {}}; }    // integers in [-2, 2] (ties)
In Fx(Shape s, std::vector<double> v) { return {In::Fixed, std::move(s), std::move(v)}; }
// Stays FP32 in the low-precision run (BatchNormalization's scale/B/mean/var, Dropout's ratio).
In F32(Shape s, std::vector<double> v = {}) { return {In::Fp32, std::move(s), std::move(v)}; }
In I(Shape s, std::vector<double> v) { return {In::Ints, std::move(s), std::move(v)}; }
In I(std::vector<double> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return {In::Ints, {n}, std::move(v)};
}
In Bo(Shape s) { return {In::Bools, std::move(s), {}}; }
// n evenly spaced values in [lo, hi] (a function's domain: Asin's [-1, 1], Acosh's [1, ∞)).
In Span(int64_t n, double lo, double hi) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * static_cast<double>(i) / (n - 1);
  return Fx({n}, std::move(v));
}

struct Case {
  std::string op;
  int64_t opset;
  std::map<std::string, Attribute> attrs;
  std::vector<In> ins;
  int n_out = 1;
  bool exact = false;  // data movement: bit-exact
};

bool is_internal(const std::string& op) {
  return oat::op_from_name(op) >= OpId::SumToShape;  // ops.def lists gradient ops last
}

// Runs one node through the Executor (gradient ops in the internal domain).
std::vector<Tensor> run_case(const Case& c, const std::vector<Tensor>& inputs) {
  Graph g;
  g.opsets[""] = c.opset;
  Node n;
  n.name = "n0";
  n.op_type = c.op;
  n.op = op_from_name(c.op);
  n.opset = is_internal(c.op) ? 1 : c.opset;
  if (is_internal(c.op)) {
    n.domain = kInternalDomain;
    g.opsets[kInternalDomain] = 1;
  }
  n.attrs = c.attrs;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      n.inputs.push_back("");
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    n.inputs.push_back(name);
    g.inputs.push_back(ValueInfo{name, inputs[i].dtype(), std::nullopt});
    feeds[name] = inputs[i];
  }
  for (int o = 0; o < c.n_out; ++o) {
    n.outputs.push_back("out" + std::to_string(o));
    g.outputs.push_back(ValueInfo{n.outputs.back(), DType::Undefined, std::nullopt});
  }
  g.nodes.push_back(n);
  Executor ex(g);
  return ex.run(feeds);
}

// The inputs of case `c` for a run in `low` (F16 or BF16) and the matching F32 reference inputs.
void make_inputs(const Case& c, DType low, uint32_t seed, std::vector<Tensor>* lo,
                 std::vector<Tensor>* ref) {
  std::mt19937 gen(seed);
  for (const In& in : c.ins) {
    const int64_t n = numel(in.shape);
    if (in.kind == In::Ints) {
      Tensor t(DType::I64, in.shape);
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(in.values[i]);
      lo->push_back(t);
      ref->push_back(t);
      continue;
    }
    if (in.kind == In::Bools) {
      Tensor t(DType::Bool, in.shape);
      for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = (gen() & 1) != 0;
      lo->push_back(t);
      ref->push_back(t);
      continue;
    }
    Tensor f(DType::F32, in.shape);
    float* p = f.data<float>();
    std::uniform_real_distribution<float> uni(-3.0f, 3.0f), pos(0.1f, 3.0f);
    for (int64_t i = 0; i < n; ++i) {
      switch (in.kind) {
        case In::Uniform:
          p[i] = uni(gen);
          break;
        case In::Positive:
          p[i] = pos(gen);
          break;
        case In::Small:
          p[i] = static_cast<float>(static_cast<int>(gen() % 5) - 2);
          break;
        case In::Fixed:
          p[i] = static_cast<float>(in.values[i]);
          break;
        case In::Fp32:
          p[i] = in.values.empty() ? pos(gen) : static_cast<float>(in.values[i]);
          break;
        default:
          break;
      }
    }
    if (in.kind == In::Fp32) {
      lo->push_back(f);
      ref->push_back(f);
      continue;
    }
    Tensor l = cast_tensor(f, low);
    lo->push_back(l);
    ref->push_back(cast_tensor(l, DType::F32));
  }
}

// Distance in units in the last place between two 16-bit floats of the same format (sign and
// magnitude mapped onto a line); NaN matches only NaN.
int64_t ulps16(const Tensor& t, int64_t i, uint16_t other) {
  uint16_t a;
  std::memcpy(&a, static_cast<const char*>(t.raw_data()) + 2 * i, 2);
  const bool f16 = t.dtype() == DType::F16;
  auto is_nan = [&](uint16_t b) { return f16 ? (b & 0x7fff) > 0x7c00 : (b & 0x7fff) > 0x7f80; };
  if (is_nan(a) || is_nan(other)) return is_nan(a) && is_nan(other) ? 0 : 1 << 20;
  auto line = [](uint16_t b) -> int64_t { return (b & 0x8000) ? -(b & 0x7fff) : b; };
  return std::abs(line(a) - line(other));
}

uint16_t bits16(const Tensor& t, int64_t i) {
  uint16_t b;
  std::memcpy(&b, static_cast<const char*>(t.raw_data()) + 2 * i, 2);
  return b;
}

// Checks the low-precision outputs against the F32 ones, as the file comment says.
void compare_outputs(const Case& c, DType low, const std::vector<Tensor>& got,
                     const std::vector<Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    CAPTURE(o);
    REQUIRE(got[o].defined() == want[o].defined());
    if (!got[o].defined()) continue;
    REQUIRE(got[o].shape() == want[o].shape());
    const Tensor& w = want[o];
    if (w.dtype() != DType::F32 || got[o].dtype() == DType::F32) {
      // Integer / bool outputs, and float outputs that stay FP32: the same values.
      REQUIRE(got[o].dtype() == w.dtype());
      CHECK(std::memcmp(got[o].raw_data(), w.raw_data(), w.nbytes()) == 0);
      continue;
    }
    REQUIRE(got[o].dtype() == low);
    const Tensor rounded = cast_tensor(w, low);  // the F32 result rounded once
    int64_t worst = 0, at = -1, off = 0;
    for (int64_t i = 0; i < w.numel(); ++i) {
      const int64_t d = ulps16(got[o], i, bits16(rounded, i));
      off += d != 0;
      if (d > worst) worst = d, at = i;
    }
    CAPTURE(at);
    CAPTURE((at >= 0 ? got[o].item_as_double(at) : 0.0));
    CAPTURE((at >= 0 ? w.item_as_double(at) : 0.0));
    CHECK(worst <= (c.exact ? 0 : 1));
    // A 1-ulp difference comes only from a last-bit float difference right at a rounding tie;
    // rounding twice (an intermediate kept in 16 bits) would show up on many elements.
    CHECK(off <= 1 + w.numel() / 200);
  }
}

Attribute ints_attr(std::vector<int64_t> v) { return attr_ints(std::move(v)); }

// One case per op (several for ops with distinct paths), forward and gradient ops.
std::vector<Case> cases() {
  const auto none = std::map<std::string, Attribute>{};
  const In x1k = U({1000});  // elementwise: several float blocks and a tail
  std::vector<Case> v = {
      // elementwise arithmetic (broadcasting, a scalar, variadic)
      {"Add", 14, none, {U({2, 3, 40}), U({3, 40})}},
      {"Sub", 14, none, {U({2, 3, 40}), U({1})}},
      {"Mul", 14, none, {U({2, 3, 40}), U({3, 1})}},
      {"Div", 14, none, {U({2, 3, 40}), P({40})}},
      {"Pow", 15, none, {P({300}), U({300})}},
      {"Pow", 15, none, {U({300}), F32({}, {3.0})}},
      {"Mod", 13, {{"fmod", attr_i(1)}}, {U({300}), P({300})}},
      {"Mod", 13, none, {U({300}), P({300})}},
      {"Sum", 13, none, {U({4, 50}), U({50}), U({4, 50})}},
      {"Mean", 13, none, {U({4, 50}), U({50}), U({4, 50})}},
      {"Max", 13, none, {Sm({4, 50}), Sm({50}), U({4, 1})}},
      {"Min", 13, none, {Sm({4, 50}), Sm({4, 50})}},
      // unary math
      {"Sqrt", 13, none, {P({1000})}},
      {"Exp", 13, none, {x1k}},
      {"Log", 13, none, {P({1000})}},
      {"Neg", 13, none, {x1k}},
      {"Abs", 13, none, {x1k}},
      {"Reciprocal", 13, none, {x1k}},
      {"Floor", 13, none, {x1k}},
      {"Ceil", 13, none, {x1k}},
      {"Sign", 13, none, {Sm({100})}},
      {"Round", 11, none, {Fx({6}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.75})}},
      {"Sin", 7, none, {x1k}},
      {"Cos", 7, none, {x1k}},
      {"Tan", 7, none, {x1k}},
      {"Asin", 7, none, {Span(1000, -0.99, 0.99)}},
      {"Acos", 7, none, {Span(1000, -0.99, 0.99)}},
      {"Atan", 7, none, {x1k}},
      {"Sinh", 9, none, {x1k}},
      {"Cosh", 9, none, {x1k}},
      {"Asinh", 9, none, {x1k}},
      {"Acosh", 9, none, {Span(1000, 1.0, 8.0)}},
      {"Atanh", 9, none, {Span(1000, -0.99, 0.99)}},
      {"IsNaN", 13, none, {x1k}},
      {"IsInf", 10, none, {Fx({3}, {1.0, 1e30, -1e30})}},  // ±1e30 round to ±Inf in F16
      // activations
      {"Relu", 14, none, {x1k}},
      {"LeakyRelu", 16, {{"alpha", attr_f(0.1f)}}, {x1k}},
      {"Sigmoid", 13, none, {x1k}},
      {"HardSigmoid", 6, none, {x1k}},
      {"HardSwish", 14, none, {x1k}},
      {"Tanh", 13, none, {x1k}},
      {"Clip", 13, none, {x1k, Fx({}, {-1.0}), Fx({}, {2.0})}},
      {"Clip", 6, {{"min", attr_f(-0.5f)}}, {x1k}},
      {"Erf", 13, none, {x1k}},
      {"Gelu", 20, none, {x1k}},
      {"Gelu", 20, {{"approximate", attr_s("tanh")}}, {x1k}},
      {"Elu", 6, none, {x1k}},
      {"Selu", 6, none, {x1k}},
      {"Celu", 12, {{"alpha", attr_f(0.7f)}}, {x1k}},
      {"Softplus", 1, none, {x1k}},
      {"Softsign", 1, none, {x1k}},
      {"PRelu", 16, none, {U({2, 4, 25}), U({4, 1})}},
      {"ThresholdedRelu", 10, none, {x1k}},
      {"Mish", 18, none, {x1k}},
      {"Shrink", 9, {{"lambd", attr_f(1.0f)}, {"bias", attr_f(0.5f)}}, {x1k}},
      // comparison and selection
      {"Equal", 13, none, {Sm({4, 25}), Sm({25})}},
      {"Less", 13, none, {Sm({4, 25}), Sm({25})}},
      {"Greater", 13, none, {Sm({4, 25}), Sm({25})}},
      {"LessOrEqual", 16, none, {Sm({4, 25}), Sm({25})}},
      {"GreaterOrEqual", 16, none, {Sm({4, 25}), Sm({25})}},
      {"Where", 16, none, {Bo({4, 25}), U({4, 25}), U({25})}, 1, true},
      // GEMM and convolution: FP32 accumulation, one rounding
      {"MatMul", 13, none, {U({2, 3, 64}), U({64, 5})}},
      {"MatMul", 13, none, {U({64}), U({2, 64, 3})}},
      {"Gemm",
       13,
       {{"transB", attr_i(1)}, {"alpha", attr_f(0.5f)}},
       {U({3, 40}), U({6, 40}), U({6})}},
      {"Conv", 11, {{"pads", ints_attr({1, 1, 1, 1})}}, {U({2, 3, 9, 9}), U({4, 3, 3, 3}), U({4})}},
      {"Conv",
       11,
       {{"group", attr_i(3)}, {"strides", ints_attr({2, 2})}},
       {U({1, 3, 9, 9}), U({6, 1, 3, 3})}},
      {"Conv", 11, none, {U({2, 16, 5, 5}), U({8, 16, 1, 1}), U({8})}},
      {"ConvTranspose",
       11,
       {{"strides", ints_attr({2, 2})}},
       {U({1, 2, 4, 4}), U({2, 3, 3, 3}), U({3})}},
      // pooling
      {"MaxPool",
       12,
       {{"kernel_shape", ints_attr({2, 2})}, {"strides", ints_attr({2, 2})}},
       {U({2, 3, 6, 6})},
       2},
      {"AveragePool",
       11,
       {{"kernel_shape", ints_attr({3, 3})}, {"pads", ints_attr({1, 1, 1, 1})}},
       {U({2, 3, 6, 6})}},
      {"GlobalAveragePool", 1, none, {U({2, 3, 6, 6})}},
      {"GlobalMaxPool", 1, none, {U({2, 3, 6, 6})}},
      // normalisation: BatchNormalization keeps scale, B, mean, var and its statistics in FP32
      {"BatchNormalization", 15, none, {U({2, 3, 4, 4}), F32({3}), F32({3}), F32({3}), F32({3})}},
      {"BatchNormalization",
       15,
       {{"training_mode", attr_i(1)}},
       {U({2, 3, 4, 4}), F32({3}), F32({3}), F32({3}), F32({3})},
       3},
      {"LayerNormalization", 17, none, {U({2, 3, 16}), U({16}), U({16})}, 3},
      {"InstanceNormalization", 6, none, {U({2, 3, 5, 5}), U({3}), U({3})}},
      {"LpNormalization", 1, none, {U({4, 50})}},
      {"LpNormalization", 1, {{"axis", attr_i(0)}, {"p", attr_i(1)}}, {U({6, 3, 5})}},
      // softmax family and losses
      {"Softmax", 13, none, {U({4, 30})}},
      {"LogSoftmax", 13, none, {U({4, 30})}},
      {"Hardmax", 13, none, {U({4, 30})}},
      {"NegativeLogLikelihoodLoss", 13, none, {U({4, 5}), I({2, 0, 4, 1})}},
      {"SoftmaxCrossEntropyLoss",
       13,
       {{"reduction", attr_s("sum")}},
       {U({4, 5}), I({2, 0, 4, 1}), P({5})},
       2},
      // reductions
      {"ReduceSum", 13, none, {U({3, 4, 50}), I({1})}},
      {"ReduceMean", 13, {{"axes", ints_attr({2})}}, {U({3, 4, 50})}},
      {"ReduceMax", 13, {{"axes", ints_attr({0, 2})}}, {U({3, 4, 50})}},
      {"ReduceMin", 13, {{"keepdims", attr_i(0)}}, {U({3, 4, 50})}},
      {"ReduceProd", 13, {{"axes", ints_attr({1})}}, {P({3, 4, 5})}},
      {"ReduceSumSquare", 13, {{"axes", ints_attr({2})}}, {U({3, 4, 50})}},
      {"ReduceL1", 13, {{"axes", ints_attr({2})}}, {U({3, 4, 50})}},
      {"ReduceL2", 13, {{"axes", ints_attr({2})}}, {U({3, 4, 50})}},
      {"ReduceLogSum", 13, {{"axes", ints_attr({2})}}, {P({3, 4, 50})}},
      {"ReduceLogSumExp", 13, {{"axes", ints_attr({2})}}, {U({3, 4, 50})}},
      {"ArgMax", 13, {{"axis", attr_i(1)}}, {U({3, 40, 5})}},
      {"ArgMin", 13, {{"axis", attr_i(2)}, {"select_last_index", attr_i(1)}}, {Sm({3, 4, 50})}},
      {"CumSum", 14, none, {U({3, 200}), I({}, {1})}},
      // TopK: small integers (many ties); values and indices exact.
      {"TopK", 11, none, {Sm({3, 40}), I({5})}, 2, true},
      {"TopK", 11, {{"axis", attr_i(1)}, {"largest", attr_i(0)}}, {U({2, 30, 3}), I({7})}, 2, true},
      // shape and data movement: bit-exact
      {"Flatten", 13, none, {U({2, 3, 4})}, 1, true},
      {"Reshape", 14, none, {U({2, 3, 4}), I({4, 6})}, 1, true},
      {"Transpose", 13, {{"perm", ints_attr({2, 0, 1})}}, {U({2, 3, 4})}, 1, true},
      {"Concat", 13, {{"axis", attr_i(1)}}, {U({2, 3, 4}), U({2, 1, 4})}, 1, true},
      {"Split", 13, {{"axis", attr_i(2)}}, {U({2, 3, 4}), I({1, 3})}, 2, true},
      {"Slice", 13, none, {U({5, 6}), I({1, 0}), I({4, 6}), I({0, 1}), I({2, 2})}, 1, true},
      {"Gather", 13, {{"axis", attr_i(1)}}, {U({3, 5}), I({2, 2}, {4, 0, 1, 4})}, 1, true},
      {"Shape", 15, none, {U({2, 3, 4})}, 1, true},
      {"Squeeze", 13, none, {U({2, 1, 4}), I({1})}, 1, true},
      {"Unsqueeze", 13, none, {U({2, 4}), I({0})}, 1, true},
      {"Expand", 13, none, {U({3, 1}), I({2, 3, 4})}, 1, true},
      {"Tile", 13, none, {U({2, 3}), I({2, 2})}, 1, true},
      {"Pad", 13, {{"mode", attr_s("reflect")}}, {U({3, 4}), I({1, 2, 1, 2})}, 1, true},
      {"Pad", 13, none, {U({3, 4}), I({1, 0, 0, 1}), Fx({}, {0.3})}, 1, true},
      {"Identity", 16, none, {U({2, 3})}, 1, true},
      {"Size", 13, none, {U({2, 3})}, 1, true},
      {"GatherElements",
       13,
       {{"axis", attr_i(0)}},
       {U({3, 4}), I({2, 4}, {2, 0, 1, 2, 0, 0, 1, 1})},
       1,
       true},
      {"DepthToSpace", 13, {{"blocksize", attr_i(2)}}, {U({1, 8, 2, 3})}, 1, true},
      {"SpaceToDepth", 13, {{"blocksize", attr_i(2)}}, {U({1, 2, 4, 6})}, 1, true},
      {"Resize",
       13,
       {{"mode", attr_s("linear")}},
       {U({1, 2, 3, 4}), F32({0}), F32({4}, {1, 1, 1.5, 2})}},
      {"Resize",
       13,
       {{"mode", attr_s("nearest")}},
       {U({1, 2, 3, 4}), F32({0}), F32({0}), I({1, 2, 5, 3})},
       1,
       true},
      {"Resize",
       11,
       {{"mode", attr_s("cubic")}},
       {U({1, 2, 5, 4}), F32({0}), F32({4}, {1, 1, 0.6, 1.5})}},
      {"Upsample",
       9,
       {{"mode", attr_s("nearest")}},
       {U({1, 1, 2, 3}), F32({4}, {1, 1, 2, 2})},
       1,
       true},
      {"Trilu", 14, none, {U({2, 5, 6}), I({}, {1})}, 1, true},
      {"Trilu", 14, {{"upper", attr_i(0)}}, {U({3, 4})}, 1, true},
      // generators
      {"Range", 11, none, {Fx({}, {0.5}), Fx({}, {7.25}), Fx({}, {0.75})}},
      {"Dropout", 13, none, {x1k}, 2},
      {"Dropout", 13, {{"seed", attr_i(3)}}, {x1k, F32({}, {0.3}), I({}, {1})}, 2},
      // ---- gradient ops ----
      {"SumToShape", 1, none, {U({4, 3, 50}), I({3, 1})}},
      {"ReluGrad", 1, none, {x1k, x1k}},
      {"LeakyReluGrad", 1, {{"alpha", attr_f(0.2f)}}, {x1k, x1k}},
      {"SigmoidGrad", 1, none, {x1k, x1k}},
      {"TanhGrad", 1, none, {x1k, x1k}},
      {"GeluGrad", 1, none, {x1k, x1k}},
      {"ClipGrad", 1, {{"min", attr_f(-1.0f)}, {"max", attr_f(1.5f)}}, {x1k, x1k}},
      {"EluGrad", 1, none, {x1k, x1k}},
      {"SoftplusGrad", 1, none, {x1k, x1k}},
      {"HardSigmoidGrad", 1, none, {x1k, x1k}},
      {"HardSwishGrad", 1, none, {x1k, x1k}},
      {"PReluGrad", 1, none, {U({2, 4, 25}), U({2, 4, 25}), U({4, 1})}, 2},
      {"SoftmaxGrad", 1, {{"axis", attr_i(-1)}}, {U({4, 30}), P({4, 30})}},
      {"LogSoftmaxGrad", 1, {{"axis", attr_i(-1)}}, {U({4, 30}), U({4, 30})}},
      {"SoftmaxCrossEntropyLossGrad", 1, none, {U({}), U({4, 5}), I({2, 0, 4, 1})}},
      {"NegativeLogLikelihoodLossGrad", 1, none, {U({}), I({4, 5}), I({2, 0, 4, 1})}},
      {"MatMulGrad", 1, none, {U({2, 3, 5}), U({2, 3, 64}), U({64, 5})}, 2},
      {"GemmGrad", 1, {{"transB", attr_i(1)}}, {U({3, 6}), U({3, 40}), U({6, 40}), U({6})}, 3},
      {"ConvGrad",
       1,
       {{"pads", ints_attr({1, 1, 1, 1})}},
       {U({2, 4, 9, 9}), U({2, 3, 9, 9}), U({4, 3, 3, 3})},
       3},
      {"ConvTransposeGrad",
       1,
       {{"strides", ints_attr({2, 2})}},
       {U({1, 3, 9, 9}), U({1, 2, 4, 4}), U({2, 3, 3, 3})},
       3},
      {"MaxPoolGrad",
       1,
       {{"kernel_shape", ints_attr({2, 2})}, {"strides", ints_attr({1, 1})}},
       {U({2, 3, 5, 5}), U({2, 3, 6, 6})}},
      {"AveragePoolGrad",
       1,
       {{"kernel_shape", ints_attr({3, 3})}, {"pads", ints_attr({1, 1, 1, 1})}},
       {U({2, 3, 6, 6}), I({2, 3, 6, 6})}},
      {"GlobalAveragePoolGrad", 1, none, {U({2, 3, 1, 1}), I({2, 3, 6, 6})}},
      {"GlobalMaxPoolGrad", 1, none, {U({2, 3, 1, 1}), U({2, 3, 6, 6})}},
      {"BatchNormalizationGrad",
       1,
       {{"training_mode", attr_i(1)}},
       {U({2, 3, 4, 4}), U({2, 3, 4, 4}), F32({3})},
       3},
      {"BatchNormalizationGrad",
       1,
       none,
       {U({2, 3, 4, 4}), U({2, 3, 4, 4}), F32({3}), F32({3}), F32({3})},
       3},
      {"LayerNormalizationGrad", 1, none, {U({2, 3, 16}), U({2, 3, 16}), U({16})}, 3},
      {"LpNormalizationGrad", 1, none, {U({3, 40}), U({3, 40})}},
      {"LpNormalizationGrad",
       1,
       {{"axis", attr_i(1)}, {"p", attr_i(1)}},
       {U({2, 9, 4}), U({2, 9, 4})}},
      {"GatherGrad", 1, {{"axis", attr_i(0)}}, {U({2, 2, 3}), I({5, 3}), I({2, 2}, {1, 1, 4, 1})}},
      {"GatherElementsGrad",
       1,
       {{"axis", attr_i(0)}},
       {U({2, 4}), I({3, 4}), I({2, 4}, {2, 0, 1, 2, 2, 0, 1, 2})}},
      {"ScatterReduce",
       1,
       {{"axis", attr_i(1)}, {"reduction", attr_s("mul")}},
       {U({2, 4}), I({2, 5}, {0, 0, 3, 1, 0, 2, 2, 2, -1, 3}), U({2, 5})}},
      {"ScatterReduce",
       1,
       {{"reduction", attr_s("max")}},
       {U({3, 2}), I({4, 2}, {0, 1, 2, 2, 0, 1, -1, 0}), U({4, 2})}},
      {"SliceGrad",
       1,
       none,
       {U({3, 6}), I({5, 6}), I({1, 0}), I({4, 6}), I({0, 1}), I({1, 1})},
       1,
       true},
      {"PadGrad", 1, {{"mode", attr_s("reflect")}}, {U({5, 8}), I({3, 4}), I({1, 2, 1, 2})}},
      {"CumSumGrad", 1, {{"exclusive", attr_i(1)}}, {U({3, 200}), I({}, {1})}},
      {"ReduceGrad", 1, {{"axes", ints_attr({1})}, {"mean", attr_i(1)}}, {U({3, 1}), I({3, 7})}},
      {"DropoutGrad", 1, none, {x1k, Bo({1000}), F32({}, {0.25})}},
      {"ConcatGrad", 1, {{"axis", attr_i(1)}}, {U({2, 5}), I({2, 2}), I({2, 3})}, 2, true},
      {"TileGrad", 1, none, {U({4, 9}), I({2, 3})}},
      {"ResizeGrad",
       1,
       {{"mode", attr_s("linear")}},
       {U({1, 2, 6, 8}), I({1, 2, 3, 4}), F32({0}), F32({4}, {1, 1, 2, 2})}},
      {"ReduceXYGrad",
       1,
       {{"reduce", attr_s("ReduceL2")}, {"axes", ints_attr({1})}},
       {U({3, 1}), U({3, 7}), P({3, 1})}},
      {"ReduceXYGrad",
       1,
       {{"reduce", attr_s("ReduceSumSquare")}, {"axes", ints_attr({1})}},
       {U({3, 1}), U({3, 7}), U({3, 1})}},
      // quantization: integer outputs equal, the gradient's mask bit-exact (x / scale in float)
      {"QuantizeLinear", 13, none, {U({4, 50}), P({})}},
      {"QuantizeLinear", 13, {{"axis", attr_i(0)}}, {U({4, 50}), P({4})}},
      {"DynamicQuantizeLinear", 11, none, {U({4, 50})}, 3},
      {"QuantizeLinearGrad", 1, none, {U({4, 50}), U({4, 50}), P({})}, 1, true},
      // detection and data-dependent selection (nms.cc, ...)
      {"NonMaxSuppression",
       11,
       none,
       {U({2, 6, 4}), U({2, 3, 6}), I({}, {4}), F32({}, {0.3}), F32({}, {-1.0})},
       1,
       true},
      {"NonMaxSuppression",
       11,
       {{"center_point_box", attr_i(1)}},
       {U({1, 8, 4}), U({1, 1, 8}), I({1}, {8}), F32({1}, {0.5})},
       1,
       true},
      {"RoiAlign",
       16,
       {{"output_height", attr_i(3)}, {"output_width", attr_i(2)}},
       {U({2, 3, 6, 5}), P({4, 4}), I({4}, {1, 0, 0, 1})}},
      {"RoiAlign",
       10,
       {{"mode", attr_s("max")}, {"sampling_ratio", attr_i(2)}},
       {U({1, 2, 5, 5}), P({2, 4}), I({2}, {0, 0})}},
      {"MaxUnpool",
       11,
       {{"kernel_shape", ints_attr({2, 2})}, {"strides", ints_attr({2, 2})}},
       {U({1, 1, 2, 2}), I({1, 1, 2, 2}, {5, 7, 13, 15})},
       1,
       true},
      {"Compress", 11, {{"axis", attr_i(1)}}, {U({3, 5}), Bo({5})}, 1, true},
      {"Unique", 11, none, {Sm({4, 6})}, 4, true},
      {"Unique", 11, {{"axis", attr_i(0)}, {"sorted", attr_i(0)}}, {Sm({7, 2})}, 4, true},
      {"Det", 11, none, {U({3, 4, 4})}},
      {"NonZero", 13, none, {Sm({3, 5})}, 1, true},
      {"RoiAlignGrad",
       1,
       {{"output_height", attr_i(3)}, {"output_width", attr_i(2)}},
       {U({4, 3, 3, 2}), I({2, 3, 6, 5}), P({4, 4}), I({4}, {1, 0, 0, 1})}},
      // signal processing (opset 17)
      {"DFT", 17, {{"axis", attr_i(1)}}, {U({2, 12, 2})}},
      {"DFT", 17, {{"onesided", attr_i(1)}}, {U({3, 8, 1}), I({}, {6})}},
      {"STFT", 17, none, {U({2, 24, 1}), I({}, {4}), U({8})}},
      {"DFTGrad", 1, {{"axis", attr_i(1)}}, {U({2, 12, 2}), U({2, 12, 1})}},
      {"STFTGrad", 1, none, {U({2, 5, 5, 2}), U({2, 24, 1}), I({}, {4}), U({8})}, 2},
  };
  return v;
}

// Ops whose F16/BF16 behaviour is checked by the named TEST_CASEs below instead of the table.
// Control flow (If, Loop, Scan) registers for every dtype and runs its subgraph's own kernels:
// tests/runtime/control_flow_test.cc and the ONNX conformance cases.
// The random generators draw in float and round once: their F16/BF16 outputs are checked for
// distribution and range in tests/runtime/random_test.cc (values cannot equal an F32 draw's).
// The signal generators take integer sizes and write output_datatype (F16/BF16 included):
// tests/runtime/signal_test.cc.
const std::set<std::string> kTestedApart = {
    "Cast", "CastLike", "Constant", "ConstantOfShape", "If", "Loop", "Scan", "RandomNormal",
    "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial",
    "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix",
    // type-generic (kAnyDType; sequence_test.cc)
    "SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceAt", "SequenceErase",
    "SequenceLength", "SplitToSequence", "ConcatFromSequence", "SequenceMap", "Optional",
    "OptionalHasElement", "OptionalGetElement"};
// The optimizer and loss-scaling ops always run in FP32 (master weights, FP32 gradients).
// LSTMSequence and GRUSequence are the CPU lowering's fused form of F32 LSTMs and GRUs only
// (F16/BF16 ones run unrolled).
const std::set<std::string> kFp32Only = {"SGDUpdate",       "AdamUpdate",      "MultiSGDUpdate",
                                         "MultiAdamUpdate", "UnscaleAndCheck", "GlobalNormClip",
                                         "LSTMSequence",    "GRUSequence"};

Tensor f16(Shape s, std::vector<float> v) {
  return cast_tensor(Tensor::from_vector<float>(std::move(s), v), DType::F16);
}
Tensor bf16(Shape s, std::vector<float> v) {
  return cast_tensor(Tensor::from_vector<float>(std::move(s), v), DType::BF16);
}

}  // namespace

TEST_CASE("every op with an F32 CPU kernel has F16 and BF16 kernels, and a case here") {
  const KernelRegistry& reg = default_registry();
  std::set<std::string> in_table;
  for (const Case& c : cases()) in_table.insert(c.op);
  for (int k = 0; k < kNumOps; ++k) {
    const OpId op = static_cast<OpId>(k);
    const std::string name = op_name(op);
    if (!reg.supports(op, Device::CPU, DType::F32)) continue;
    CAPTURE(name);
    // ai.onnx.ml's schemas take float, double and integers, never float16 (convert keeps them
    // FP32): no F16/BF16 kernels; their cases are tests/runtime/ml_ops_test.cc.
    if (is_ml_op(op)) {
      CHECK_FALSE(reg.supports(op, Device::CPU, DType::F16));
      continue;
    }
    if (kFp32Only.count(name)) {
      CHECK_FALSE(reg.supports(op, Device::CPU, DType::F16));
      continue;
    }
    CHECK(reg.supports(op, Device::CPU, DType::F16));
    CHECK(reg.supports(op, Device::CPU, DType::BF16));
    CHECK((in_table.count(name) + kTestedApart.count(name)) == 1);
  }
}

TEST_CASE("F16/BF16 kernels equal the F32 kernel on the same inputs, rounded once") {
  const std::vector<Case> all = cases();
  for (size_t k = 0; k < all.size(); ++k) {
    const Case& c = all[k];
    for (DType low : {DType::F16, DType::BF16}) {
      CAPTURE(c.op);
      CAPTURE(k);
      CAPTURE(dtype_name(low));
      std::vector<Tensor> lo, ref;
      make_inputs(c, low, static_cast<uint32_t>(1000 + k), &lo, &ref);
      std::vector<Tensor> got, want;
      REQUIRE_NOTHROW(got = run_case(c, lo));
      REQUIRE_NOTHROW(want = run_case(c, ref));
      compare_outputs(c, low, got, want);
    }
  }
}

TEST_CASE("a low-precision kernel names the input whose dtype does not fit") {
  // MatMul(F16, F32): only BatchNormalization-style statistics may stay FP32.
  Case c{"MatMul", 13, {}, {}};
  Tensor a = f16({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::from_vector<float>({2, 2}, {1, 0, 0, 1});
  CHECK_THROWS_WITH_AS(run_case(c, {a, b}),
                       doctest::Contains("input 1 has dtype float32 [2, 2], expected float16"),
                       Error);
  Tensor bb = bf16({2, 2}, {1, 0, 0, 1});
  CHECK_THROWS_WITH_AS(run_case(c, {a, bb}),
                       doctest::Contains("input 1 has dtype bfloat16 but input 0 has float16"),
                       Error);
}

TEST_CASE("FP16 overflows to Inf where BF16 does not; 1e-8 underflows in FP16 only") {
  Case mul{"Mul", 14, {}, {}};
  Tensor y16 = run_case(mul, {f16({1}, {60000}), f16({1}, {2})})[0];
  CHECK(y16.dtype() == DType::F16);
  CHECK(std::isinf(y16.item_as_double(0)));
  Tensor yb = run_case(mul, {bf16({1}, {60000}), bf16({1}, {2})})[0];
  CHECK(yb.item_as_double(0) == doctest::Approx(120000).epsilon(0.01));
  // A gradient-sized product: 1e-4 · 1e-4 = 1e-8 is below FP16's smallest subnormal / 2.
  CHECK(run_case(mul, {f16({1}, {1e-4f}), f16({1}, {1e-4f})})[0].item_as_double(0) == 0.0);
  CHECK(run_case(mul, {bf16({1}, {1e-4f}), bf16({1}, {1e-4f})})[0].item_as_double(0) ==
        doctest::Approx(1e-8).epsilon(0.02));
  // The same through a gradient op: ReluGrad passes dY = 1e-8 through, flushed in FP16.
  Case relu_grad{"ReluGrad", 1, {}, {}};
  Tensor g32 = Tensor::from_vector<float>({2}, {1e-8f, 1e-3f});
  Tensor y32 = Tensor::from_vector<float>({2}, {1, 1});
  Tensor d16 = run_case(relu_grad, {cast_tensor(g32, DType::F16), cast_tensor(y32, DType::F16)})[0];
  CHECK(d16.item_as_double(0) == 0.0);
  CHECK(d16.item_as_double(1) == doctest::Approx(1e-3).epsilon(1e-3));
  Tensor db =
      run_case(relu_grad, {cast_tensor(g32, DType::BF16), cast_tensor(y32, DType::BF16)})[0];
  CHECK(db.item_as_double(0) == doctest::Approx(1e-8).epsilon(0.01));
}

TEST_CASE("Cast to F16/BF16 rounds to nearest even; F16 overflow is Inf; F64 rounds once") {
  Case cast16{"Cast", 13, {{"to", attr_i(10)}}, {}};
  Case castbf{"Cast", 13, {{"to", attr_i(16)}}, {}};
  // F16 spacing at 1 is 2^-10: 1 + 2^-11 is a tie (to 1, even), 1 + 3·2^-11 a tie (to 1 + 2^-9).
  Tensor x = Tensor::from_vector<float>(
      {6}, {1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11), 65504.0f, 65519.0f,
            65520.0f, -70000.0f});
  std::vector<float> h = fvec(run_case(cast16, {x})[0]);
  CHECK(h[0] == 1.0f);
  CHECK(h[1] == 1.0f + std::ldexp(1.0f, -9));
  CHECK(h[2] == 65504.0f);
  CHECK(h[3] == 65504.0f);
  CHECK(std::isinf(h[4]));
  CHECK((std::isinf(h[5]) && h[5] < 0));
  // BF16 spacing at 1 is 2^-7.
  Tensor xb = Tensor::from_vector<float>(
      {3}, {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8), 70000.0f});
  std::vector<float> b = fvec(run_case(castbf, {xb})[0]);
  CHECK(b[0] == 1.0f);
  CHECK(b[1] == 1.0f + std::ldexp(1.0f, -6));
  CHECK(std::isfinite(b[2]));
  // 1 + 2^-11 + 2^-40 lies just above the F16 tie: one rounding gives 1 + 2^-10. Going through
  // float first would drop 2^-40 and round the tie to 1.
  Tensor d = Tensor::from_vector<double>({1}, {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
  CHECK(run_case(cast16, {d})[0].item_as_double(0) == 1.0 + std::ldexp(1.0, -10));
  CHECK(cast_tensor(d, DType::F16).item_as_double(0) == 1.0 + std::ldexp(1.0, -10));
  Tensor db = Tensor::from_vector<double>({1}, {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)});
  CHECK(run_case(castbf, {db})[0].item_as_double(0) == 1.0 + std::ldexp(1.0, -7));
  // Integers, bool and back: every pair through F16 and BF16.
  Tensor ints = Tensor::from_vector<int64_t>({3}, {-3, 2049, 100000});
  std::vector<float> hi = fvec(run_case(cast16, {ints})[0]);
  CHECK(hi[0] == -3.0f);
  CHECK(hi[1] == 2048.0f);  // 2049 is a tie between 2048 and 2050: even mantissa
  CHECK(std::isinf(hi[2]));
  for (int to : {1, 2, 3, 6, 7, 9, 11, 10, 16}) {
    CAPTURE(to);
    Case back{"Cast", 13, {{"to", attr_i(to)}}, {}};
    Tensor y = run_case(back, {f16({3}, {-2.5f, 0.0f, 3.75f})})[0];
    Tensor z = run_case(back, {bf16({3}, {-2.5f, 0.0f, 3.75f})})[0];
    CHECK(ivec(y) == ivec(z));
    if (to == 9) CHECK(ivec(y) == std::vector<int64_t>{1, 0, 1});
    if (to == 7) CHECK(ivec(y) == std::vector<int64_t>{-2, 0, 3});
  }
  Case like{"CastLike", 15, {}, {}};
  Tensor l = run_case(like, {x, f16({1}, {0})})[0];
  CHECK(l.dtype() == DType::F16);
  CHECK(fvec(l) == h);
}

TEST_CASE("Constant and ConstantOfShape carry F16/BF16 values bit for bit") {
  for (DType low : {DType::F16, DType::BF16}) {
    CAPTURE(dtype_name(low));
    Tensor v = cast_tensor(Tensor::from_vector<float>({1}, {0.1f}), low);
    Tensor y = run_node("ConstantOfShape", 9, {{"value", attr_t(v)}}, {i64({2, 3})}).at(0);
    REQUIRE(y.dtype() == low);
    REQUIRE(y.numel() == 6);
    for (int64_t i = 0; i < 6; ++i) CHECK(bits16(y, i) == bits16(v, 0));
    Tensor c = cast_tensor(Tensor::from_vector<float>({2}, {-1.5f, 1e-3f}), low);
    Tensor yc = run_node("Constant", 13, {{"value", attr_t(c)}}, {}).at(0);
    REQUIRE(yc.dtype() == low);
    CHECK(bits16(yc, 0) == bits16(c, 0));
    CHECK(bits16(yc, 1) == bits16(c, 1));
    // Equal / Less / Where on halves compare the stored values.
    Tensor a = cast_tensor(Tensor::from_vector<float>({3}, {0.1f, 0.2f, 0.3f}), low);
    Tensor b = cast_tensor(Tensor::from_vector<float>({3}, {0.1f, 0.3f, 0.2f}), low);
    CHECK(ivec(run1("Equal", 13, {}, {a, b})) == std::vector<int64_t>{1, 0, 0});
    CHECK(ivec(run1("Less", 13, {}, {a, b})) == std::vector<int64_t>{0, 1, 0});
  }
}

TEST_CASE("GEMM and convolution accumulate in FP32: K = 4096 ones sum to 4096, not 2048") {
  // Naive FP16 accumulation stops at 2048 (2048 + 1 rounds back to 2048); BF16 at 256.
  for (DType low : {DType::F16, DType::BF16}) {
    CAPTURE(dtype_name(low));
    Tensor a =
        cast_tensor(Tensor::from_vector<float>({1, 4096}, std::vector<float>(4096, 1.0f)), low);
    Tensor b =
        cast_tensor(Tensor::from_vector<float>({4096, 1}, std::vector<float>(4096, 1.0f)), low);
    Tensor y = run1("MatMul", 13, {}, {a, b});
    CHECK(y.dtype() == low);
    CHECK(y.item_as_double(0) == 4096.0);
    Tensor g = run_node("Gemm", 13, {{"transB", attr_i(1)}}, {a, a}).at(0);
    CHECK(g.item_as_double(0) == 4096.0);
    // A 1x1 convolution over 4096 input channels.
    Tensor x = a.reshaped({1, 4096, 1, 1});
    Tensor w = a.reshaped({1, 4096, 1, 1});
    CHECK(run1("Conv", 11, {}, {x, w}).item_as_double(0) == 4096.0);
    // The gradient: dB = Σ dY over 4096 positions; dW likewise.
    Tensor dy = a.reshaped({1, 1, 64, 64});
    Tensor xx = a.reshaped({1, 1, 64, 64});
    Tensor ww = cast_tensor(Tensor::from_vector<float>({1, 1, 1, 1}, {1.0f}), low);
    Case cg{"ConvGrad", 1, {}, {}, 3};
    std::vector<Tensor> d = run_case(cg, {dy, xx, ww});
    CHECK(d[1].item_as_double(0) == 4096.0);
    CHECK(d[2].item_as_double(0) == 4096.0);
    CHECK(run1("ReduceSum", 13, {}, {a}).item_as_double(0) == 4096.0);
  }
  // Intermediate sums beyond FP16's range do not overflow when the result fits:
  // 300·300 − 300·300 + 200·100 = 20000 (FP16 products would give Inf − Inf = NaN).
  Tensor a = f16({1, 3}, {300, -300, 200});
  Tensor b = f16({3, 1}, {300, 300, 100});
  CHECK(run1("MatMul", 13, {}, {a, b}).item_as_double(0) == 20000.0);
  // ... and a result beyond it is Inf, rounded once at the end.
  CHECK(std::isinf(run1("MatMul", 13, {}, {f16({1, 2}, {300, 300}), f16({2, 1}, {300, 300})})
                       .item_as_double(0)));
}

TEST_CASE("MatMulGrad in F16 accumulates dB over the batch in FP32") {
  // dB = Aᵀ·dY summed over a batch of 4096 rows of ones: 4096 exactly.
  Tensor dy = f16({4096, 1}, std::vector<float>(4096, 1.0f));
  Tensor a = f16({4096, 1}, std::vector<float>(4096, 1.0f));
  Tensor b = f16({1, 1}, {1.0f});
  Case c{"MatMulGrad", 1, {}, {}, 2};
  std::vector<Tensor> d = run_case(c, {dy, a, b});
  REQUIRE(d[1].dtype() == DType::F16);
  CHECK(d[1].item_as_double(0) == 4096.0);
  CHECK(d[0].item_as_double(17) == 1.0);
}

TEST_CASE("BatchNormalization in F16: data F16, statistics F32") {
  Tensor x = cast_tensor(iota_f({2, 2, 3, 3}), DType::F16);
  Tensor one = Tensor::from_vector<float>({2}, {1, 1});
  Tensor zero = Tensor::from_vector<float>({2}, {0, 0});
  std::vector<Tensor> y = run_node("BatchNormalization", 15, {{"training_mode", attr_i(1)}},
                                   {x, one, zero, zero, one}, 3);
  CHECK(y[0].dtype() == DType::F16);
  CHECK(y[1].dtype() == DType::F32);
  CHECK(y[2].dtype() == DType::F32);
  // Channel 0 holds 0..8 and 18..26: mean 13; running mean = 0.9·0 + 0.1·13.
  CHECK(y[1].item_as_double(0) == doctest::Approx(1.3));
  // scale/B/mean/var may also arrive in F16 (an all-F16 model); the statistics stay F32.
  std::vector<Tensor> y16 =
      run_node("BatchNormalization", 15, {{"training_mode", attr_i(1)}},
               {x, cast_tensor(one, DType::F16), cast_tensor(zero, DType::F16),
                cast_tensor(zero, DType::F16), cast_tensor(one, DType::F16)},
               3);
  CHECK(y16[1].dtype() == DType::F32);
  CHECK(fvec(y16[0]) == fvec(y[0]));
}
