// Einsum in a mixed-precision training graph: build_training_graph lowers it (runtime/composite.h)
// before autodiff, and the precision plan paints every node of its expansion by Einsum's place in
// the op lists (the allow list: FP16). A small two-Einsum classifier with a symbolic batch (so the
// expansion computes a reshape target at run time) trains on the CPU's FP16 emulation with
// dynamic loss scaling, and its loss falls.
#include <doctest/doctest.h>

#include <random>

#include "fp16_fit.h"
#include "train/trainer.h"

using namespace oat;

namespace {

constexpr int64_t kSeq = 3, kIn = 6, kHidden = 5, kClasses = 4;

Node einsum_node(const std::string& name, const std::string& eq, std::vector<std::string> in,
                 const std::string& out) {
  Node n;
  n.name = name;
  n.op_type = "Einsum";
  n.op = op_from_name("Einsum");
  n.opset = 12;
  Attribute a;
  a.kind = Attribute::Kind::String;
  a.s = eq;
  n.attrs["equation"] = a;
  n.inputs = std::move(in);
  n.outputs = {out};
  return n;
}

// x [batch, 3, 6] → h = einsum("bsi,hi->bsh", x, W1) → z = einsum("bsh,ch->bc", h, W2) + b
Graph einsum_classifier() {
  std::mt19937 rng(3);
  Graph g;
  g.name = "einsum_classifier";
  g.opsets[""] = 17;
  Dim batch;
  batch.param = "batch";
  ValueInfo x;
  x.name = "x";
  x.dtype = DType::F32;
  x.shape = std::vector<Dim>{batch, Dim{kSeq, ""}, Dim{kIn, ""}};
  g.inputs.push_back(x);
  g.initializers["W1"] = test::random_f32({kHidden, kIn}, 0.4f, rng);
  g.initializers["W2"] = test::random_f32({kClasses, kHidden}, 0.4f, rng);
  g.initializers["b"] = Tensor::zeros(DType::F32, {kClasses});
  g.nodes.push_back(einsum_node("proj", "bsi,hi->bsh", {"x", "W1"}, "h"));
  g.nodes.push_back(einsum_node("head", "bsh,ch->bc", {"h", "W2"}, "z"));
  Node add;
  add.name = "bias";
  add.op_type = "Add";
  add.op = OpId::Add;
  add.opset = 17;
  add.inputs = {"z", "b"};
  add.outputs = {"logits"};
  g.nodes.push_back(add);
  ValueInfo y;
  y.name = "logits";
  y.dtype = DType::F32;
  y.shape = std::vector<Dim>{batch, Dim{kClasses, ""}};
  g.outputs.push_back(y);
  return g;
}


}  // namespace

TEST_CASE("einsum training: the FP16 plan paints the expansion by Einsum's allow list") {
  train::TrainingGraphOptions o;
  o.precision = DType::F16;
  o.loss_scaling = true;
  const train::TrainingGraph tg = train::build_training_graph(einsum_classifier(), o);
  int parts = 0;
  bool matmul = false;
  for (const Node& n : tg.graph.nodes) {
    CHECK(n.op_type != "Einsum");
    auto it = tg.composite_parts.find(n.name);
    if (it == tg.composite_parts.end()) continue;
    CAPTURE(n.name);
    // The int64 shape arithmetic of run-time reshape targets carries no float values.
    const ValueInfo* vi = tg.graph.find_value_info(n.outputs[0]);
    if (n.op == OpId::Shape || (vi && vi->dtype == DType::I64)) continue;
    ++parts;
    const convert::NodePrecision* p = tg.plan.find(n.name);
    REQUIRE(p);
    CHECK(p->reason == cat("allow list (Einsum '", it->second.name, "')"));
    if (n.op == OpId::MatMul) {
      matmul = true;
      CHECK(p->dtype == DType::F16);
    }
  }
  CHECK(parts >= 4);
  CHECK(matmul);
  CHECK(tg.plan.find("proj/matmul1")->reason == "allow list (Einsum 'proj')");
  CHECK(tg.plan.find("head/matmul1")->dtype == DType::F16);
}

TEST_CASE("einsum training: FP16 steps with loss scaling on the CPU lower the loss") {
  const Graph model = einsum_classifier();
  const train::Dataset data = test::teacher_data(256, {kSeq, kIn}, kClasses);
  train::Trainer t(model, test::fp16_config(32, 6, 0.02, /*shuffle=*/false));
  const test::FitLosses f = test::fit_losses(t, data);
  REQUIRE(f.steps.size() == 48);
  const double first = f.first, last = f.last;
  CAPTURE(first);
  CAPTURE(last);
  CHECK(std::isfinite(last));
  CHECK(last < 0.6 * first);
  const train::EvalResult r = t.evaluate(data);
  CAPTURE(r.accuracy);
  CHECK(r.accuracy > 0.7);
  MESSAGE("einsum FP16 training: loss " << first << " -> " << last << ", accuracy " << r.accuracy);
}
