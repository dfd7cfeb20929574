// Double-precision finite-difference checks of the activation gradient builders
// (train/autodiff/grads/activation.cc) and their kernels (runtime/cpu/kernels/grad_activation.cc),
// plus a float32-vs-float64 agreement check of the same kernels (training runs them in float32).
#include <cmath>

#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::GradCheckInput;
using oat::test::fixed;
using oat::test::omitted;

namespace {

GradCheckInput in(Shape s, double lo = -2.0, double hi = 2.0) {
  return oat::test::in(std::move(s), lo, hi);
}

GradCheckCase unary(const std::string& op, std::map<std::string, Attribute> attrs = {},
                    std::vector<double> kinks = {}, double lo = -2.0, double hi = 2.0) {
  GradCheckCase c;
  c.op = op;
  c.attrs = std::move(attrs);
  c.inputs = {in({2, 3, 4}, lo, hi)};
  c.kinks = std::move(kinks);
  return c;
}

Attribute f(float v) { return train::GradientContext::attr_float(v); }
Attribute str(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = s;
  return a;
}

// Builds op + L = Σ_k ΣY_k⊙R_k in `dtype`, runs the backward pass and returns dL/dX_i for each
// differentiable input (as float64). Inputs and weights are the same float64 draws, rounded.
std::vector<Tensor> backward_in(const GradCheckCase& c, DType dtype) {
  std::mt19937 rng(c.seed);
  Graph g;
  g.opsets[""] = c.opset;
  Node n;
  n.name = "op";
  n.op_type = c.op;
  n.op = op_from_name(c.op);
  n.opset = c.opset;
  n.attrs = c.attrs;
  std::map<std::string, Tensor> feeds;
  std::vector<std::string> wrt;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const auto& ci = c.inputs[i];
    if (ci.shape.empty() && !ci.value.defined() && !ci.differentiable) {
      n.inputs.push_back("");
      continue;
    }
    const std::string name = "x" + std::to_string(i);
    n.inputs.push_back(name);
    Tensor v =
        ci.differentiable ? test::random_tensor(ci.shape, ci.lo, ci.hi, rng, c.kinks) : ci.value;
    if (is_floating(v.dtype())) v = cast_tensor(v, dtype);
    ValueInfo vi;
    vi.name = name;
    vi.dtype = v.dtype();
    g.inputs.push_back(vi);
    feeds[name] = v;
    if (ci.differentiable) wrt.push_back(name);
  }
  for (int k = 0; k < c.num_outputs; ++k) n.outputs.push_back("y" + std::to_string(k));
  g.nodes.push_back(n);
  auto y = Executor(g).run(feeds, n.outputs);
  std::vector<std::string> terms;
  for (int k : c.checked_outputs) {
    const std::string ks = std::to_string(k);
    g.initializers["r" + ks] =
        cast_tensor(test::random_tensor(y.at("y" + ks).shape(), -1.0, 1.0, rng, {}), dtype);
    Node mul;
    mul.name = "mul" + ks;
    mul.op_type = "Mul";
    mul.op = OpId::Mul;
    mul.opset = 17;
    mul.inputs = {"y" + ks, "r" + ks};
    mul.outputs = {"wy" + ks};
    Node red;
    red.name = "sum" + ks;
    red.op_type = "ReduceSum";
    red.op = OpId::ReduceSum;
    red.opset = 17;
    red.attrs["keepdims"] = train::GradientContext::attr_int(0);
    red.inputs = {"wy" + ks};
    red.outputs = {"l" + ks};
    terms.push_back("l" + ks);
    g.nodes.push_back(mul);
    g.nodes.push_back(red);
  }
  Node sum;
  sum.name = "loss";
  sum.op_type = "Sum";
  sum.op = OpId::Sum;
  sum.opset = 17;
  sum.inputs = terms;
  sum.outputs = {"loss"};
  g.nodes.push_back(sum);
  ValueInfo lv;
  lv.name = "loss";
  lv.dtype = dtype;
  g.value_info["loss"] = lv;
  auto bw = train::build_backward(g, "loss", wrt);
  feeds[bw.seed] = cast_tensor(Tensor::scalar<double>(1.0), dtype);
  std::vector<std::string> fetch;
  for (const auto& w : wrt) fetch.push_back(bw.grads.at(w));
  auto got = Executor(g).run(feeds, fetch);
  std::vector<Tensor> out;
  for (const auto& name : fetch) out.push_back(cast_tensor(got.at(name), DType::F64));
  return out;
}

// The float32 kernels compute what the float64 ones do, to float precision.
void check_f32_matches_f64(const GradCheckCase& c) {
  const auto g64 = backward_in(c, DType::F64);
  const auto g32 = backward_in(c, DType::F32);
  REQUIRE(g64.size() == g32.size());
  for (size_t i = 0; i < g64.size(); ++i) {
    REQUIRE(g64[i].shape() == g32[i].shape());
    double worst = 0;
    for (int64_t j = 0; j < g64[i].numel(); ++j) {
      const double a = g64[i].item_as_double(j), b = g32[i].item_as_double(j);
      worst = std::max(worst, std::abs(a - b) / (1e-5 + 1e-4 * std::abs(a)));
    }
    INFO(c.op, " input ", i, " float32 vs float64, worst scaled error ", worst);
    CHECK(worst <= 1.0);
  }
}

}  // namespace

TEST_CASE("gradients: ReLU family") {
  SUBCASE("Relu") { test::check_gradients(unary("Relu", {}, {0.0})); }
  SUBCASE("LeakyRelu") {
    test::check_gradients(unary("LeakyRelu", {}, {0.0}));  // default α = 0.01
    test::check_gradients(unary("LeakyRelu", {{"alpha", f(0.3f)}}, {0.0}));
  }
  SUBCASE("PRelu: slope per channel [C,1,1], scalar, full shape, legacy per-channel [C]") {
    GradCheckCase c;
    c.op = "PRelu";
    c.kinks = {0.0};
    c.inputs = {in({2, 3, 2, 2}), in({3, 1, 1}, 0.1, 0.5)};
    test::check_gradients(c);
    c.inputs = {in({2, 3, 2, 2}), in({1}, 0.1, 0.5)};
    test::check_gradients(c);
    c.inputs = {in({2, 3}), in({2, 3}, 0.1, 0.5)};
    test::check_gradients(c);
    c.inputs = {in({2, 3, 4}), in({4}, 0.1, 0.5)};  // numpy broadcast over the last axis
    test::check_gradients(c);
    c.opset = 6;  // a 1-D slope of size C is per channel (axis 1) before opset 7
    c.inputs = {in({2, 3, 2}), in({3}, 0.1, 0.5)};
    test::check_gradients(c);
  }
  SUBCASE("Shrink") {
    test::check_gradients(unary("Shrink", {}, {-0.5, 0.5}));
    test::check_gradients(unary("Shrink", {{"lambd", f(1.0f)}, {"bias", f(0.25f)}}, {-1.0, 1.0}));
  }
  SUBCASE("ThresholdedRelu") {
    test::check_gradients(unary("ThresholdedRelu", {}, {1.0}));
    test::check_gradients(unary("ThresholdedRelu", {{"alpha", f(0.5f)}}, {0.5}));
  }
}

TEST_CASE("gradients: sigmoid, tanh and the smooth activations") {
  test::check_gradients(unary("Sigmoid", {}, {}, -4.0, 4.0));
  test::check_gradients(unary("Tanh", {}, {}, -3.0, 3.0));
  test::check_gradients(unary("Erf"));
  test::check_gradients(unary("Softplus", {}, {}, -5.0, 5.0));
  test::check_gradients(unary("Softsign", {}, {0.0}));
  test::check_gradients(unary("Mish", {}, {}, -4.0, 4.0));
  SUBCASE("Gelu, exact and tanh approximation") {
    test::check_gradients(unary("Gelu", {}, {}, -4.0, 4.0));
    test::check_gradients(unary("Gelu", {{"approximate", str("none")}}, {}, -4.0, 4.0));
    test::check_gradients(unary("Gelu", {{"approximate", str("tanh")}}, {}, -4.0, 4.0));
  }
}

TEST_CASE("gradients: ELU family") {
  test::check_gradients(unary("Elu", {}, {0.0}));
  test::check_gradients(unary("Elu", {{"alpha", f(0.5f)}}, {0.0}));
  test::check_gradients(unary("Selu", {}, {0.0}));
  test::check_gradients(unary("Selu", {{"alpha", f(1.5f)}, {"gamma", f(2.0f)}}, {0.0}));
  test::check_gradients(unary("Celu", {}, {0.0}));
  test::check_gradients(unary("Celu", {{"alpha", f(2.0f)}}, {0.0}));
}

TEST_CASE("gradients: hard sigmoid and hard swish") {
  test::check_gradients(unary("HardSigmoid", {}, {-2.5, 2.5}, -4.0, 4.0));
  // α = 0.5, β = 0.25: kinks at −β/α and (1 − β)/α
  test::check_gradients(
      unary("HardSigmoid", {{"alpha", f(0.5f)}, {"beta", f(0.25f)}}, {-0.5, 1.5}, -3.0, 3.0));
  test::check_gradients(unary("HardSwish", {}, {-3.0, 3.0}, -5.0, 5.0));
}

TEST_CASE("gradients: Clip with attribute bounds (opset 6) and input bounds (opset 13)") {
  SUBCASE("attributes") {
    GradCheckCase c = unary("Clip", {{"min", f(-0.5f)}, {"max", f(0.75f)}}, {-0.5, 0.75});
    c.opset = 6;
    test::check_gradients(c);
    c.attrs = {{"max", f(0.25f)}};  // only an upper bound
    c.kinks = {0.25};
    test::check_gradients(c);
  }
  SUBCASE("inputs") {
    GradCheckCase c = unary("Clip", {}, {-0.5, 0.75});
    c.opset = 13;
    c.inputs.push_back(fixed(Tensor::scalar<double>(-0.5)));
    c.inputs.push_back(fixed(Tensor::scalar<double>(0.75)));
    test::check_gradients(c);
    c.inputs = {in({2, 3, 4}), omitted(), fixed(Tensor::scalar<double>(0.75))};  // max only
    c.kinks = {0.75};
    test::check_gradients(c);
    c.inputs = {in({2, 3, 4}), fixed(Tensor::scalar<double>(-0.5))};  // min only
    c.kinks = {-0.5};
    test::check_gradients(c);
    c.inputs = {in({2, 3, 4})};  // no bounds: the identity
    test::check_gradients(c);
  }
}

TEST_CASE("activation gradient kernels: float32 agrees with float64") {
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Gelu", "Elu", "Selu", "Softplus",
                         "HardSigmoid", "HardSwish"}) {
    CAPTURE(op);
    GradCheckCase c = unary(op, {}, {-3.0, -2.5, 0.0, 2.5, 3.0}, -4.0, 4.0);
    c.inputs = {in({3, 40000}, -4.0, 4.0)};  // large enough to take the OpenMP path
    check_f32_matches_f64(c);
  }
  GradCheckCase gelu_tanh = unary("Gelu", {{"approximate", str("tanh")}});
  check_f32_matches_f64(gelu_tanh);
  GradCheckCase clip = unary("Clip", {}, {-0.5, 0.75});
  clip.inputs.push_back(fixed(Tensor::scalar<double>(-0.5)));
  clip.inputs.push_back(fixed(Tensor::scalar<double>(0.75)));
  check_f32_matches_f64(clip);
  GradCheckCase prelu;
  prelu.op = "PRelu";
  prelu.kinks = {0.0};
  prelu.inputs = {in({4, 3, 5, 5}), in({3, 1, 1}, 0.1, 0.5)};
  check_f32_matches_f64(prelu);
}

TEST_CASE("activation gradient kernels: mismatched operands are named") {
  Graph g;
  g.opsets[""] = 17;
  Node n;
  n.name = "relu_grad";
  n.op_type = "ReluGrad";
  n.domain = kInternalDomain;
  n.op = OpId::ReluGrad;
  n.opset = 1;
  n.inputs = {"dy", "y"};
  n.outputs = {"dx"};
  g.nodes.push_back(n);
  for (const char* name : {"dy", "y"}) {
    ValueInfo vi;
    vi.name = name;
    vi.dtype = DType::F32;
    g.inputs.push_back(vi);
  }
  std::map<std::string, Tensor> feeds{{"dy", Tensor::zeros(DType::F32, {2, 3})},
                                      {"y", Tensor::zeros(DType::F32, {3, 2})}};
  CHECK_THROWS_WITH_AS(Executor(g).run(feeds, {"dx"}),
                       doctest::Contains("node 'relu_grad' (ai.onnx_amp_train.ReluGrad"), Error);
  CHECK_THROWS_WITH_AS(Executor(g).run(feeds, {"dx"}),
                       doctest::Contains("[3, 2] but the gradient dY is float32 [2, 3]"), Error);
}
