// The index-driven composites (runtime/composite/indexing.cc) in a mixed-precision training graph:
// a linear classifier whose weight is assembled by ScatterND (none) and ScatterElements (add)
// from trainable pieces. build_training_graph lowers them before autodiff (their scatter-adds are
// internal-domain ops with gradients), the FP16 plan paints their float nodes by the clear list,
// and FP16 steps with dynamic loss scaling on the CPU lower the loss.
#include <doctest/doctest.h>

#include <random>

#include "fp16_fit.h"
#include "train/trainer.h"

using namespace oat;

namespace {

constexpr int64_t kIn = 6, kClasses = 4;

Node node(const std::string& name, const std::string& op, std::vector<std::string> in,
          const std::string& out, int64_t opset, std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.op = op_from_name(op);
  n.opset = opset;
  n.inputs = std::move(in);
  n.outputs = {out};
  n.attrs = std::move(attrs);
  return n;
}

ValueInfo info(const std::string& name, std::vector<Dim> shape) {
  ValueInfo v;
  v.name = name;
  v.dtype = DType::F32;
  v.shape = std::move(shape);
  return v;
}

// W = ScatterND(W0, [[1], [4]], U) then ScatterElements(W, [[0, 2, 5, 3]], U2, axis 0, add);
// logits = x·W + b.
Graph scatter_classifier() {
  std::mt19937 rng(5);
  Graph g;
  g.name = "scatter_classifier";
  g.opsets[""] = 17;
  Dim batch;
  batch.param = "batch";
  g.inputs.push_back(info("x", {batch, Dim{kIn, ""}}));
  g.initializers["W0"] = test::random_f32({kIn, kClasses}, 0.3f, rng);
  g.initializers["U"] = test::random_f32({2, kClasses}, 0.3f, rng);
  g.initializers["U2"] = test::random_f32({1, kClasses}, 0.3f, rng);
  g.initializers["b"] = Tensor::zeros(DType::F32, {kClasses});
  g.initializers["rows"] = Tensor::from_vector<int64_t>({2, 1}, {1, 4});
  g.initializers["cols"] = Tensor::from_vector<int64_t>({1, kClasses}, {0, 2, 5, 3});
  g.value_info["W0"] = info("W0", {Dim{kIn, ""}, Dim{kClasses, ""}});
  g.value_info["W1"] = info("W1", {Dim{kIn, ""}, Dim{kClasses, ""}});
  Attribute add;
  add.kind = Attribute::Kind::String;
  add.s = "add";
  g.nodes.push_back(node("scatter_rows", "ScatterND", {"W0", "rows", "U"}, "W1", 16));
  g.nodes.push_back(
      node("scatter_cols", "ScatterElements", {"W1", "cols", "U2"}, "W", 16, {{"reduction", add}}));
  g.nodes.push_back(node("fc", "MatMul", {"x", "W"}, "z", 17));
  g.nodes.push_back(node("bias", "Add", {"z", "b"}, "logits", 17));
  g.outputs.push_back(info("logits", {batch, Dim{kClasses, ""}}));
  return g;
}


}  // namespace

TEST_CASE("scatter training: the FP16 plan paints the expansions by the clear list") {
  train::TrainingGraphOptions o;
  o.precision = DType::F16;
  o.loss_scaling = true;
  const train::TrainingGraph tg = train::build_training_graph(scatter_classifier(), o);
  int scatter_adds = 0;
  for (const Node& n : tg.graph.nodes) {
    CHECK(n.op_type != "ScatterND");
    CHECK(n.op_type != "ScatterElements");
    if (!tg.composite_parts.count(n.name)) continue;
    if (n.op_type == "GatherGrad" || n.op_type == "GatherElementsGrad") {
      ++scatter_adds;
      CHECK(n.domain == kInternalDomain);
    }
  }
  CHECK(scatter_adds == 3);  // ScatterND's updates and written mask, ScatterElements' updates
  // The scatter-adds of the trainable updates sit between initializers and the FP16 MatMul: a
  // clear op there runs in FP16.
  for (const char* name : {"scatter_rows/scatter_updates_flat", "scatter_cols/scatter_updates"}) {
    CAPTURE(name);
    const convert::NodePrecision* p = tg.plan.find(name);
    REQUIRE(p);
    CHECK(p->dtype == DType::F16);
    CHECK(p->reason == "feeds fp16 node 'fc' from initializers/inputs");
  }
}

TEST_CASE("scatter training: FP16 steps with loss scaling on the CPU lower the loss") {
  const train::Dataset data = test::teacher_data(256, {kIn}, kClasses);
  train::Trainer t(scatter_classifier(), test::fp16_config(32, 6, 0.05, /*shuffle=*/false));
  const test::FitLosses f = test::fit_losses(t, data);
  REQUIRE(f.steps.size() == 48);
  const double first = f.first, last = f.last;
  CAPTURE(first);
  CAPTURE(last);
  CHECK(std::isfinite(last));
  CHECK(last < 0.8 * first);
  MESSAGE("scatter FP16 training: loss " << first << " -> " << last);
}
