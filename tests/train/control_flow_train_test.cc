// Training and control flow (If, Loop, Scan): autodiff has no gradient for them. A model whose
// Loop lies between a parameter and the loss (here the parameter is read only inside the Loop's
// body, from the outer scope) is refused with an error naming the node; a Loop off the gradient
// path (preprocessing of the input) trains, its forward run by the CPU kernel.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>

#include "fp16_fit.h"
#include "node_builder.h"
#include "runtime/executor.h"
#include "train/training_graph.h"

using namespace oat;

namespace {

constexpr int64_t kIn = 4, kClasses = 3;

Node node(const std::string& name, const std::string& op, std::vector<std::string> in,
          std::vector<std::string> out) {
  return oat_test::make_node_outputs(name, op, std::move(in), std::move(out));
}

ValueInfo info(const std::string& name, DType dtype, std::vector<Dim> dims) {
  ValueInfo v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(dims);
  return v;
}

// x [batch, 4] -> h = Loop(M = 2){ h = Tanh(h @ A) } -> logits = h @ W + b, where A is an
// initializer read inside the body (`a_is_param`), or the body halves h (no parameter).
Graph loop_classifier(bool a_is_param) {
  std::mt19937 rng(5);
  Graph g;
  g.name = "loop_classifier";
  g.opsets[""] = 13;
  Dim batch;
  batch.param = "batch";
  g.inputs.push_back(info("x", DType::F32, {batch, Dim{kIn, ""}}));
  g.initializers["W"] = test::random_f32({kIn, kClasses}, 0.5f, rng);
  g.initializers["b"] = Tensor::zeros(DType::F32, {kClasses});
  g.initializers["M"] = Tensor::scalar<int64_t>(2);
  auto body = std::make_shared<Graph>();
  body->name = "body";
  body->opsets[""] = 13;
  body->inputs = {info("i", DType::I64, {}), info("c", DType::Bool, {}),
                  info("h", DType::F32, {batch, Dim{kIn, ""}})};
  if (a_is_param) {
    g.initializers["A"] = test::random_f32({kIn, kIn}, 0.5f, rng);
    body->nodes.push_back(node("mm", "MatMul", {"h", "A"}, {"ha"}));
    body->nodes.push_back(node("act", "Tanh", {"ha"}, {"h_out"}));
  } else {
    body->initializers["half"] = Tensor::scalar<float>(0.5f);
    body->nodes.push_back(node("halve", "Mul", {"h", "half"}, {"h_out"}));
  }
  body->nodes.push_back(node("keep", "Identity", {"c"}, {"c_out"}));
  body->outputs = {info("c_out", DType::Bool, {}), info("h_out", DType::F32, {batch, Dim{kIn, ""}})};
  Node loop = node("loop", "Loop", {"M", "", "x"}, {"h_final"});
  loop.attrs["body"] = oat_test::graph_attr(body);
  g.nodes.push_back(loop);
  // What the loader's shape inference records for the Loop's output (mixed precision casts by it).
  g.value_info["h_final"] = info("h_final", DType::F32, {batch, Dim{kIn, ""}});
  g.nodes.push_back(node("head", "MatMul", {"h_final", "W"}, {"z"}));
  g.nodes.push_back(node("bias", "Add", {"z", "b"}, {"logits"}));
  g.outputs.push_back(info("logits", DType::F32, {batch, Dim{kClasses, ""}}));
  return g;
}

}  // namespace

TEST_CASE("training through a Loop is refused, naming the node and the parameter it reads") {
  for (DType precision : {DType::F32, DType::F16}) {
    CAPTURE(dtype_name(precision));
    train::TrainingGraphOptions o;
    o.precision = precision;
    o.loss_scaling = precision == DType::F16;
    CHECK_THROWS_WITH_AS(
        train::build_training_graph(loop_classifier(true), o),
        doctest::Contains("node 'loop' (Loop, opset 13): training through control flow (If, Loop, "
                          "Scan) is not supported: autodiff has no gradient for Loop, and it lies "
                          "between the parameters and the loss (it reads 'A' inside its subgraph)"),
        Error);
  }
}

TEST_CASE("a Loop off the gradient path trains: its forward runs on the CPU kernel") {
  for (DType precision : {DType::F32, DType::F16}) {
  CAPTURE(dtype_name(precision));
  train::TrainingGraphOptions o;
  o.precision = precision;
  o.loss_scaling = precision == DType::F16;
  const train::TrainingGraph tg = train::build_training_graph(loop_classifier(false), o);
  CHECK(tg.params == std::vector<std::string>{"W", "b"});
  Executor ex(tg.graph);
  std::map<std::string, Tensor> feeds;
  feeds[tg.data_input] =
      Tensor::from_vector<float>({2, kIn}, {1, -1, 2, 0.5f, -2, 1, 0, 1});
  feeds[tg.target] = Tensor::from_vector<int64_t>({2}, {0, 2});
  feeds[tg.lr] = Tensor::scalar<float>(0.1f);
  feeds[tg.step] = Tensor::scalar<int64_t>(1);
  feeds[tg.seed] = Tensor::scalar<float>(1.0f);
  if (!tg.inv_scale.empty()) feeds[tg.inv_scale] = Tensor::scalar<float>(1.0f);
  std::vector<std::string> fetch = {tg.loss, tg.updates.at("W")};
  auto out = ex.run(feeds, fetch);
  CHECK(std::isfinite(out.at(tg.loss).item_as_double()));
  // W moved: the gradient reached it through the head, after the Loop.
  const Tensor& w0 = tg.graph.initializers.at("W");
  const Tensor& w1 = out.at(tg.updates.at("W"));
  double moved = 0;
  for (int64_t i = 0; i < w0.numel(); ++i)
    moved += std::abs(w1.item_as_double(i) - w0.item_as_double(i));
  CHECK(moved > 0);
  }
}
