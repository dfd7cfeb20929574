// tf2onnx writes Keras' LayerNormalization as a BatchNormalization over [1, rows, D] whose mean
// and var inputs are ReduceMeans of the input (not initializers). Training keeps such a node as
// a normalisation by given statistics and differentiates through them
// (train/autodiff/grads/norm.cc), so its gradients equal LayerNormalization's.
#include <doctest/doctest.h>

#include "test_tensors.h"
#include "convert/graph_build.h"
#include "runtime/executor.h"
#include "train/autodiff/gradient_builder.h"
#include "train/training_graph.h"

using namespace oat;
using oat_test::GraphBuild;
using oat_test::int_attr;

namespace {

Tensor uniform(Shape s, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  return oat_test::uniform_tensor(std::move(s), seed, lo, hi);
}

Tensor ints(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>({n}, v);
}

Tensor filled(int64_t n, float v) {
  Tensor t(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = v;
  return t;
}

Attribute tensor_attr(Tensor t) { return oat_test::tensor_attr(std::move(t)); }
Attribute ints_attr(std::vector<int64_t> v) { return train::GradientContext::attr_ints(std::move(v)); }
Attribute float_attr(float v) { return train::GradientContext::attr_float(v); }

constexpr int64_t kRows = 4, kD = 6;
constexpr float kEps = 1e-3f;

// x [4, 6] → normalise each row (eps 1e-3) → ·γ + β (γ, β [6] parameters) → y; loss = Σ y ⊙ r.
// `as_batchnorm`: tf2onnx's form; else LayerNormalization(axis -1).
Graph model(bool as_batchnorm) {
  GraphBuild b;
  b.g.opsets[""] = 15;
  b.input("x", DType::F32, {kRows, kD});
  b.input("r", DType::F32, {kRows, kD});
  b.init("gamma", uniform({kD}, 1, 0.5f, 1.5f)).init("beta", uniform({kD}, 2));
  std::string normed;
  if (as_batchnorm) {
    b.init("shape3", ints({1, kRows, kD})).init("shape2", ints({kRows, kD}));
    b.node("Reshape", {"x", "shape3"}, {"x3"}, "reshape");
    b.node("ReduceMean", {"x3"}, {"m_keep"}, "mean_keep").attrs["axes"] = ints_attr({2});
    b.node("Sub", {"x3", "m_keep"}, {"d"}, "sub");
    b.node("Mul", {"d", "d"}, {"d2"}, "sq");
    b.node("ReduceMean", {"d2"}, {"v_keep"}, "var_keep").attrs["axes"] = ints_attr({2});
    b.init("shape_rows", ints({kRows}));
    b.node("Reshape", {"m_keep", "shape_rows"}, {"mean"}, "mean_rows");
    b.node("Reshape", {"v_keep", "shape_rows"}, {"var"}, "var_rows");
    Node& ones = b.node("Constant", {}, {"ones"}, "ones");
    ones.attrs["value"] = tensor_attr(filled(kRows, 1.0f));
    Node& zeros = b.node("Constant", {}, {"zeros"}, "zeros");
    zeros.attrs["value"] = tensor_attr(filled(kRows, 0.0f));
    Node& bn = b.node("BatchNormalization", {"x3", "ones", "zeros", "mean", "var"}, {"n3"}, "bn");
    bn.opset = 15;
    bn.attrs["epsilon"] = float_attr(kEps);
    b.node("Reshape", {"n3", "shape2"}, {"n"}, "back");
    b.node("Mul", {"n", "gamma"}, {"g"}, "scale");
    b.node("Add", {"g", "beta"}, {"y"}, "shift");
    normed = "y";
  } else {
    Node& ln = b.node("LayerNormalization", {"x", "gamma", "beta"}, {"y"}, "ln");
    ln.opset = 17;
    ln.attrs["axis"] = int_attr(-1);
    ln.attrs["epsilon"] = float_attr(kEps);
    normed = "y";
  }
  b.node("Mul", {normed, "r"}, {"yr"}, "weigh");
  Node& s = b.node("ReduceSum", {"yr"}, {"loss"}, "loss");
  s.attrs["keepdims"] = int_attr(0);
  b.output("loss");
  return b.g;
}

// dLoss/d{x, gamma, beta} of a model at fixed x and r.
std::map<std::string, Tensor> gradients(Graph g) {
  const train::BackwardResult bw = train::build_backward(g, "loss", {"x", "gamma", "beta"});
  for (const char* v : {"x", "gamma", "beta"}) g.outputs.push_back(ValueInfo{bw.grads.at(v), DType::F32, {}});
  Executor exec(g, ExecutorOptions{});
  const std::vector<Tensor> out = exec.run({{"x", uniform({kRows, kD}, 3, -2.0f, 2.0f)},
                                            {"r", uniform({kRows, kD}, 4)},
                                            {bw.seed, Tensor::scalar<float>(1.0f)}});
  return {{"x", out[1]}, {"gamma", out[2]}, {"beta", out[3]}};
}

double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double d = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    d = std::max(d, std::fabs(static_cast<double>(a.data<float>()[i]) - b.data<float>()[i]));
  return d;
}

}  // namespace

TEST_CASE("a BatchNormalization with computed mean/var (tf2onnx's LayerNorm) has LayerNorm's gradients") {
  const auto bn = gradients(model(true));
  const auto ln = gradients(model(false));
  for (const char* v : {"x", "gamma", "beta"}) {
    INFO(v);
    CHECK(max_diff(bn.at(v), ln.at(v)) < 2e-5);
  }
  double norm = 0;
  for (int64_t i = 0; i < ln.at("x").numel(); ++i) norm = std::max(norm, std::fabs(double(ln.at("x").data<float>()[i])));
  CHECK(norm > 0.1);  // the comparison is not between zeros
}

TEST_CASE("the training graph keeps such a BatchNormalization as it is (no running statistics)") {
  train::TrainingGraphOptions o;
  o.loss = train::LossKind::Model;
  const train::TrainingGraph tg = train::build_training_graph(model(true), o);
  CHECK(tg.bn_stats.empty());
  for (const Node& n : tg.graph.nodes)
    if (n.name == "bn") {
      CHECK(n.attr_int("training_mode", 0) == 0);
      CHECK(n.outputs.size() == 1);
    }
  CHECK(std::count(tg.params.begin(), tg.params.end(), "gamma") == 1);
}
