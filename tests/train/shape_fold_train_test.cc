// Shape folding (runtime/shape_fold.h) in a training graph: build_training_graph folds the mask
// arithmetic before lowering its ScatterND, and the model's floating initializers stay trainable
// parameters; the folded values are constants of the training graph, not parameters.
#include <doctest/doctest.h>

#include "node_builder.h"

#include <algorithm>

#include "runtime/executor.h"
#include "train/training_graph.h"

using namespace oat;

namespace {

Attribute tensor_attr(Tensor t) {
  Attribute a;
  a.kind = Attribute::Kind::Tensor;
  a.t = std::move(t);
  return a;
}

Node node(const std::string& op, std::vector<std::string> in, const std::string& out,
          std::map<std::string, Attribute> attrs = {}) {
  return oat_test::make_node("n_" + out, op, std::move(in), out, std::move(attrs));
}

}  // namespace

TEST_CASE("shape folding in a training graph: parameters stay parameters") {
  // y = (x + ScatterND(ConstantOfShape(Shape(x)[1:]), ind, upd)) * w: x [batch, 3, 5], w [5].
  Graph m;
  m.opsets[""] = 13;
  m.inputs.push_back(ValueInfo{"x", DType::F32, std::vector<Dim>{Dim{-1, "batch"}, Dim{3, ""}, Dim{5, ""}}});
  m.initializers["w"] = Tensor::from_vector<float>({5}, {1, 2, 3, 4, 5});
  m.initializers["b1"] = Tensor::from_vector<int64_t>({1}, {1});
  m.initializers["e3"] = Tensor::from_vector<int64_t>({1}, {3});
  m.initializers["ind"] = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 0, 4});
  m.nodes.push_back(node("Shape", {"x"}, "s"));
  m.nodes.push_back(node("Slice", {"s", "b1", "e3"}, "hw"));
  m.nodes.push_back(node("ConstantOfShape", {"hw"}, "z",
                         {{"value", tensor_attr(Tensor::from_vector<float>({1}, {0.f}))}}));
  m.nodes.push_back(node("Constant", {}, "upd",
                         {{"value", tensor_attr(Tensor::from_vector<float>({2}, {-1.f, 2.f}))}}));
  m.nodes.push_back(node("ScatterND", {"z", "ind", "upd"}, "mask"));
  m.nodes.push_back(node("Add", {"x", "mask"}, "xm"));
  m.nodes.push_back(node("Mul", {"xm", "w"}, "y"));
  m.outputs.push_back(ValueInfo{"y", DType::F32, std::nullopt});

  train::TrainingGraphOptions o;
  o.loss = train::LossKind::MSE;
  const train::TrainingGraph tg = train::build_training_graph(m, o);
  CHECK(tg.params == std::vector<std::string>{"w"});
  CHECK(tg.graph.initializers.count("mask"));  // the folded mask: a constant
  CHECK_FALSE(tg.graph.initializers.count("s"));
  for (const std::string op : {"ConstantOfShape", "ScatterND"})
    CHECK_MESSAGE(std::none_of(tg.graph.nodes.begin(), tg.graph.nodes.end(),
                               [&](const Node& n) { return n.op_type == op; }),
                  op, " is still in the training graph");
  CHECK(m.nodes.size() == 7);  // the model itself is untouched

  // dL/dw for L = mean((y - t)^2) with t = 0 at batch 2: 2/N Σ y·xm over the rows.
  Tensor x(DType::F32, {2, 3, 5});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i % 7);
  Executor exec(tg.graph);
  std::map<std::string, Tensor> feeds{{"x", x},
                                      {tg.target, Tensor::zeros(DType::F32, {2, 3, 5})},
                                      {tg.lr, Tensor::scalar<float>(0.f)},
                                      {tg.step, Tensor::scalar<int64_t>(1)},
                                      {tg.seed, Tensor::scalar<float>(1.f)}};
  const Tensor g = exec.run(feeds, {tg.grads.at("w")}).at(tg.grads.at("w"));
  std::vector<double> want(5, 0.0);
  for (int64_t i = 0; i < 30; ++i) {
    const int64_t r = (i / 5) % 3, c = i % 5;
    const double xm = x.data<float>()[i] + (r == 1 && c == 2 ? -1.0 : r == 0 && c == 4 ? 2.0 : 0.0);
    want[c] += 2.0 / 30.0 * (xm * (c + 1)) * xm;
  }
  for (int c = 0; c < 5; ++c) CHECK(g.item_as_double(c) == doctest::Approx(want[c]).epsilon(1e-5));
}
