// Gradient checks of the softmax family and the classification losses
// (train/autodiff/grads/loss.cc, runtime/cpu/kernels/grad_loss.cc): double-precision finite
// differences for every attribute form, a hand-computed cross-entropy case, and float32 runs.
#include <cmath>

#include "grad_check.h"

using namespace oat;
using oat::test::GradCheckCase;
using oat::test::GradCheckInput;
using oat::test::fixed;

namespace {

using A = train::GradientContext;

GradCheckInput in(Shape s, double lo = -2.0, double hi = 2.0) {
  return oat::test::in(std::move(s), lo, hi);
}

Attribute str(const std::string& s) {
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = s;
  return a;
}

GradCheckCase softmax(const std::string& op, int64_t opset, Shape s,
                      std::map<std::string, Attribute> attrs = {}) {
  GradCheckCase c;
  c.op = op;
  c.opset = opset;
  c.inputs = {in(std::move(s))};
  c.attrs = std::move(attrs);
  return c;
}

// A loss case: scores/log-probs [N, C, ...], labels, optional weights.
GradCheckCase loss(const std::string& op, const std::string& reduction, Shape x, Tensor labels,
                   std::optional<Tensor> weights = std::nullopt) {
  GradCheckCase c;
  c.op = op;
  c.opset = 13;
  c.attrs["reduction"] = str(reduction);
  c.inputs = {in(std::move(x)), fixed(std::move(labels))};
  if (weights) c.inputs.push_back(fixed(*weights));
  return c;
}

Tensor labels_i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(s, v); }

// Runs one node in `dtype` with loss L = Σ Y_0 ⊙ R (R = `r`) and returns dL/dX_0.
Tensor input_gradient(const GradCheckCase& c, const Tensor& x, const Tensor& r) {
  Graph g;
  g.opsets[""] = c.opset;
  Node n;
  n.name = "op";
  n.op_type = c.op;
  n.op = op_from_name(c.op);
  n.opset = c.opset;
  n.attrs = c.attrs;
  std::map<std::string, Tensor> feeds{{"x0", x}};
  n.inputs = {"x0"};
  ValueInfo vi;
  vi.name = "x0";
  vi.dtype = x.dtype();
  g.inputs.push_back(vi);
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    const std::string name = "x" + std::to_string(i);
    Tensor v = c.inputs[i].value;
    if (is_floating(v.dtype())) v = cast_tensor(v, x.dtype());
    n.inputs.push_back(name);
    vi.name = name;
    vi.dtype = v.dtype();
    g.inputs.push_back(vi);
    feeds[name] = v;
  }
  for (int k = 0; k < c.num_outputs; ++k) n.outputs.push_back("y" + std::to_string(k));
  g.nodes.push_back(n);
  g.initializers["r"] = r;
  Node mul;
  mul.name = "mul";
  mul.op_type = "Mul";
  mul.op = OpId::Mul;
  mul.opset = 17;
  mul.inputs = {"y0", "r"};
  mul.outputs = {"wy"};
  Node red;
  red.name = "sum";
  red.op_type = "ReduceSum";
  red.op = OpId::ReduceSum;
  red.opset = 17;
  red.attrs["keepdims"] = A::attr_int(0);
  red.inputs = {"wy"};
  red.outputs = {"loss"};
  g.nodes.push_back(mul);
  g.nodes.push_back(red);
  ValueInfo lv;
  lv.name = "loss";
  lv.dtype = x.dtype();
  g.value_info["loss"] = lv;
  auto bw = train::build_backward(g, "loss", {"x0"});
  feeds[bw.seed] = cast_tensor(Tensor::scalar<double>(1.0), x.dtype());
  return Executor(g).run(feeds, {bw.grads.at("x0")}).begin()->second;
}

// Float32 and float64 runs of the same case agree to float precision (x in [-2, 2], R = ±1).
void check_f32_matches_f64(const GradCheckCase& c, const Shape& x_shape, const Shape& y_shape) {
  std::mt19937 rng(7);
  Tensor x = test::random_tensor(x_shape, -2.0, 2.0, rng, {});
  Tensor r = test::random_tensor(y_shape, -1.0, 1.0, rng, {});
  Tensor g64 = input_gradient(c, x, r);
  Tensor g32 = cast_tensor(
      input_gradient(c, cast_tensor(x, DType::F32), cast_tensor(r, DType::F32)), DType::F64);
  REQUIRE(g32.shape() == g64.shape());
  double worst = 0;
  for (int64_t j = 0; j < g64.numel(); ++j) {
    const double a = g64.item_as_double(j), b = g32.item_as_double(j);
    worst = std::max(worst, std::abs(a - b) / (1e-6 + 1e-4 * std::abs(a)));
  }
  INFO(c.op, " float32 vs float64, worst scaled error ", worst);
  CHECK(worst <= 1.0);
}

}  // namespace

TEST_CASE("gradients: Softmax and LogSoftmax along one axis (opset 13)") {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    CAPTURE(op);
    test::check_gradients(softmax(op, 13, {2, 3, 4}));  // default axis −1
    test::check_gradients(softmax(op, 13, {2, 3, 4}, {{"axis", A::attr_int(1)}}));  // strided
    test::check_gradients(softmax(op, 13, {2, 3, 4}, {{"axis", A::attr_int(0)}}));
    test::check_gradients(softmax(op, 13, {5}, {{"axis", A::attr_int(0)}}));
  }
}

TEST_CASE("gradients: Softmax and LogSoftmax with the 2-D coercion (opset 11)") {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    CAPTURE(op);
    test::check_gradients(softmax(op, 11, {2, 3, 4}));  // default axis 1: rows of 12
    test::check_gradients(softmax(op, 11, {2, 3, 4}, {{"axis", A::attr_int(2)}}));
    test::check_gradients(softmax(op, 11, {2, 3, 4}, {{"axis", A::attr_int(0)}}));  // one row
    test::check_gradients(softmax(op, 11, {2, 3, 4}, {{"axis", A::attr_int(-1)}}));
  }
}

TEST_CASE("gradients: SoftmaxCrossEntropyLoss") {
  const Tensor labels = labels_i64({4}, {2, 0, 1, 2});
  const Tensor weights = Tensor::from_vector<double>({3}, {0.5, 2.0, 1.25});
  for (const char* red : {"mean", "sum", "none"}) {
    CAPTURE(red);
    GradCheckCase c = loss("SoftmaxCrossEntropyLoss", red, {4, 3}, labels);
    test::check_gradients(c);  // no log_prob output: the kernel recomputes the softmax
    c.num_outputs = 2;         // log_prob produced: the kernel reads it
    test::check_gradients(c);
    c.checked_outputs = {0, 1};  // and a gradient flows into log_prob too
    test::check_gradients(c);
    c.checked_outputs = {1};  // only into log_prob
    test::check_gradients(c);
    c = loss("SoftmaxCrossEntropyLoss", red, {4, 3}, labels, weights);
    test::check_gradients(c);
    c.num_outputs = 2;
    test::check_gradients(c);
    // ignore_index: mean divides by the weights of the non-ignored samples only.
    c = loss("SoftmaxCrossEntropyLoss", red, {4, 3}, labels_i64({4}, {2, -1, 1, -1}), weights);
    c.attrs["ignore_index"] = A::attr_int(-1);
    test::check_gradients(c);
    c.num_outputs = 2;
    test::check_gradients(c);
    // [N, C, D1, D2] with int32 labels [N, D1, D2]
    c = loss("SoftmaxCrossEntropyLoss", red, {2, 3, 2, 2},
             Tensor::from_vector<int32_t>({2, 2, 2}, {0, 1, 2, 1, 2, 2, 0, 1}), weights);
    c.attrs["ignore_index"] = A::attr_int(1);
    test::check_gradients(c);
    c.num_outputs = 2;
    c.checked_outputs = {0, 1};
    test::check_gradients(c);
  }
}

TEST_CASE("gradients: NegativeLogLikelihoodLoss") {
  const Tensor weights = Tensor::from_vector<double>({3}, {0.5, 2.0, 1.25});
  for (const char* red : {"mean", "sum", "none"}) {
    CAPTURE(red);
    test::check_gradients(
        loss("NegativeLogLikelihoodLoss", red, {4, 3}, labels_i64({4}, {2, 0, 1, 2})));
    test::check_gradients(
        loss("NegativeLogLikelihoodLoss", red, {4, 3}, labels_i64({4}, {2, 0, 1, 2}), weights));
    GradCheckCase c = loss("NegativeLogLikelihoodLoss", red, {2, 3, 4},
                           labels_i64({2, 4}, {0, 1, 2, 5, 5, 2, 1, 0}), weights);
    c.attrs["ignore_index"] = A::attr_int(5);
    test::check_gradients(c);
    c.inputs[1] = fixed(Tensor::from_vector<int32_t>({2, 4}, {0, 1, 2, 5, 5, 2, 1, 0}));
    c.inputs.pop_back();  // int32 labels, no weights
    test::check_gradients(c);
  }
}

TEST_CASE("SoftmaxCrossEntropyLossGrad: hand-computed mean over weighted, ignored samples") {
  // scores [3, 2] = 0 everywhere: softmax = ½. Labels {1, 0, ignored}, weights {1, 3}, so
  // w_0 = w[1] = 3, w_1 = w[0] = 1, ν = 4.
  // dScores[0] = (½, ½ − 1)·3/4,  dScores[1] = (½ − 1, ½)·1/4,  dScores[2] = 0.
  GradCheckCase c = loss("SoftmaxCrossEntropyLoss", "mean", {3, 2}, labels_i64({3}, {1, 0, 7}),
                         Tensor::from_vector<double>({2}, {1.0, 3.0}));
  c.attrs["ignore_index"] = A::attr_int(7);
  for (int outputs : {1, 2}) {
    c.num_outputs = outputs;
    Tensor g = input_gradient(c, Tensor::zeros(DType::F64, {3, 2}), Tensor::scalar<double>(1.0));
    const std::vector<double> want = {0.375, -0.375, -0.125, 0.125, 0, 0};
    REQUIRE(g.numel() == 6);
    for (int j = 0; j < 6; ++j) CHECK(g.item_as_double(j) == doctest::Approx(want[j]));
  }
}

TEST_CASE("softmax and loss gradient kernels: float32 agrees with float64") {
  check_f32_matches_f64(softmax("Softmax", 13, {64, 1000}), {64, 1000}, {64, 1000});
  check_f32_matches_f64(softmax("LogSoftmax", 13, {64, 1000}), {64, 1000}, {64, 1000});
  check_f32_matches_f64(softmax("Softmax", 13, {8, 50, 64}, {{"axis", A::attr_int(1)}}),
                        {8, 50, 64}, {8, 50, 64});
  check_f32_matches_f64(softmax("LogSoftmax", 11, {8, 50, 64}), {8, 50, 64}, {8, 50, 64});
  std::vector<int64_t> lv(64);
  for (int i = 0; i < 64; ++i) lv[i] = (i * 7) % 10;
  for (const char* red : {"mean", "sum"}) {
    GradCheckCase c = loss("SoftmaxCrossEntropyLoss", red, {64, 10}, labels_i64({64}, lv));
    check_f32_matches_f64(c, {64, 10}, {});
    c.num_outputs = 2;
    check_f32_matches_f64(c, {64, 10}, {});
    check_f32_matches_f64(loss("NegativeLogLikelihoodLoss", red, {64, 10}, labels_i64({64}, lv)),
                          {64, 10}, {});
  }
}

TEST_CASE("loss gradient kernels: a label out of range is named") {
  Graph g;
  g.opsets[""] = 17;
  Node n;
  n.name = "sce_grad";
  n.op_type = "SoftmaxCrossEntropyLossGrad";
  n.domain = kInternalDomain;
  n.op = OpId::SoftmaxCrossEntropyLossGrad;
  n.opset = 1;
  n.inputs = {"dloss", "log_prob", "labels"};
  n.outputs = {"dx"};
  g.nodes.push_back(n);
  std::map<std::string, Tensor> feeds{{"dloss", Tensor::scalar<float>(1.0f)},
                                      {"log_prob", Tensor::zeros(DType::F32, {2, 3})},
                                      {"labels", labels_i64({2}, {0, 3})}};
  for (const auto& [name, t] : feeds) {
    ValueInfo vi;
    vi.name = name;
    vi.dtype = t.dtype();
    g.inputs.push_back(vi);
  }
  CHECK_THROWS_WITH_AS(
      Executor(g).run(feeds, {"dx"}),
      doctest::Contains("node 'sce_grad' (ai.onnx_amp_train.SoftmaxCrossEntropyLossGrad"), Error);
  CHECK_THROWS_WITH_AS(Executor(g).run(feeds, {"dx"}),
                       doctest::Contains("target value 3 at position 1 is outside [0, 3)"), Error);
  feeds["labels"] = labels_i64({3}, {0, 1, 2});
  CHECK_THROWS_WITH_AS(Executor(g).run(feeds, {"dx"}),
                       doctest::Contains("target [3] does not match input [2, 3]"), Error);
}
