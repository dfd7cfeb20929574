// Models that end in probabilities (Keras' Dense(activation="softmax"), keras.applications,
// Sigmoid binary classifiers; train/training_graph.h logits_behind): the loss reads the logits
// behind the final Softmax / Sigmoid instead of applying its own softmax to probabilities, and
// evaluation scores −log p, so a model with and without its final Softmax trains and evaluates
// to the same numbers.
#include <doctest/doctest.h>

#include "test_tensors.h"
#include "convert/graph_build.h"
#include "train/trainer.h"

using namespace oat;
using oat_test::GraphBuild;

namespace {

Tensor uniform(Shape s, uint32_t seed) { return oat_test::uniform_tensor(std::move(s), seed); }

// x [4, 3] → Gemm (W [3, 5], b) → z; then `head` ("Softmax", "Sigmoid", "" for none) → output.
Graph classifier(const std::string& head, int64_t opset = 13,
                 std::map<std::string, Attribute> attrs = {}) {
  GraphBuild b;
  b.g.opsets[""] = opset;
  b.input("x", DType::F32, {4, 3});
  b.init("W", uniform({3, 5}, 1)).init("b", uniform({5}, 2));
  b.node("Gemm", {"x", "W", "b"}, {"z"}, "fc");
  if (head.empty()) {
    b.output("z");
  } else {
    Node& n = b.node(head, {"z"}, {"p"}, "head");
    n.opset = opset;
    n.attrs = std::move(attrs);
    b.output("p");
  }
  b.g.outputs[0].shape = std::vector<Dim>{Dim{4, ""}, Dim{5, ""}};
  return b.g;
}

Node oat_test_identity(const std::string& in, const std::string& out) {
  Node n;
  n.name = "rename";
  n.op_type = "Identity";
  n.op = op_from_name("Identity");
  n.opset = 13;
  n.inputs = {in};
  n.outputs = {out};
  return n;
}

const Node& loss_node(const train::TrainingGraph& tg) {
  for (const Node& n : tg.graph.nodes)
    if (n.name == "loss") return n;
  FAIL("no loss node");
  return tg.graph.nodes.front();
}

}  // namespace

TEST_CASE("cross-entropy on a Softmax output reads the logits behind it") {
  train::TrainingGraphOptions o;
  SUBCASE("opset 13, default axis -1") {
    const train::TrainingGraph tg = train::build_training_graph(classifier("Softmax"), o);
    CHECK(tg.output == "p");
    CHECK(tg.scores == "z");
    CHECK(loss_node(tg).op_type == "SoftmaxCrossEntropyLoss");
    CHECK(loss_node(tg).inputs[0] == "z");
    CHECK(tg.scores_why.find("output 'p' is Softmax('z'): the loss reads 'z' as logits") !=
          std::string::npos);
  }
  SUBCASE("opset 11, axis 1 of a rank-2 output (the last axis)") {
    const train::TrainingGraph tg = train::build_training_graph(
        classifier("Softmax", 11, {{"axis", oat_test::int_attr(1)}}), o);
    CHECK(tg.scores == "z");
  }
  SUBCASE("a Softmax over another axis than the classes is left alone") {
    // axis 0 normalises over the batch: not class probabilities.
    const train::TrainingGraph tg = train::build_training_graph(
        classifier("Softmax", 13, {{"axis", oat_test::int_attr(0)}}), o);
    CHECK(tg.scores == "p");
    CHECK(loss_node(tg).inputs[0] == "p");
    CHECK(tg.scores_why.empty());
  }
  SUBCASE("through an Identity before the graph output") {
    Graph g = classifier("Softmax");
    g.nodes.push_back(oat_test_identity("p", "out"));
    g.outputs[0].name = "out";
    const train::TrainingGraph tg = train::build_training_graph(g, o);
    CHECK(tg.output == "out");
    CHECK(tg.scores == "z");
  }
  SUBCASE("LogSoftmax needs nothing (log_softmax is idempotent)") {
    const train::TrainingGraph tg = train::build_training_graph(classifier("LogSoftmax"), o);
    CHECK(tg.scores == "p");
  }
}

TEST_CASE("bce-with-logits on a Sigmoid output reads the logits; other losses read the output") {
  train::TrainingGraphOptions o;
  o.loss = train::LossKind::BCEWithLogits;
  train::TrainingGraph tg = train::build_training_graph(classifier("Sigmoid"), o);
  CHECK(tg.scores == "z");
  CHECK(tg.scores_why.find("is Sigmoid('z')") != std::string::npos);
  CHECK(tg.scores_why.find("binary cross-entropy") != std::string::npos);
  o.loss = train::LossKind::MSE;
  tg = train::build_training_graph(classifier("Sigmoid"), o);
  CHECK(tg.scores == "p");
  CHECK(tg.scores_why.empty());
  o.loss = train::LossKind::CrossEntropy;  // a Sigmoid is not a distribution over classes
  tg = train::build_training_graph(classifier("Sigmoid"), o);
  CHECK(tg.scores == "p");
}

TEST_CASE("evaluation of a Softmax output scores -log p: the same loss as the logits model") {
  train::Dataset data;
  data.inputs = uniform({12, 3}, 7);
  data.targets = Tensor::from_vector<int64_t>({12}, {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1});
  const Graph probs = classifier("Softmax"), logits = classifier("");
  const train::BatchLayout lp = train::layout_for(probs, train::LossKind::CrossEntropy);
  const train::BatchLayout ll = train::layout_for(logits, train::LossKind::CrossEntropy);
  CHECK(lp.output_is_probability);
  CHECK_FALSE(ll.output_is_probability);
  const train::EvalResult a = train::evaluate_model(probs, probs.initializers, data, lp,
                                                    train::LossKind::CrossEntropy, 4);
  const train::EvalResult b = train::evaluate_model(logits, logits.initializers, data, ll,
                                                    train::LossKind::CrossEntropy, 4);
  CHECK(a.loss > 0.5);
  CHECK(a.loss == doctest::Approx(b.loss).epsilon(1e-6));
  CHECK(a.accuracy == b.accuracy);
}

TEST_CASE("evaluation of a Sigmoid output under bce-with-logits scores the probabilities' BCE") {
  train::Dataset data;
  data.inputs = uniform({8, 3}, 9);
  Tensor t(DType::F32, {8, 5});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = (i * 7 % 3) == 0 ? 1.0f : 0.0f;
  data.targets = t;
  const Graph probs = classifier("Sigmoid"), logits = classifier("");
  const auto bce = train::LossKind::BCEWithLogits;
  const train::BatchLayout lp = train::layout_for(probs, bce), ll = train::layout_for(logits, bce);
  CHECK(lp.output_is_probability);
  const train::EvalResult a = train::evaluate_model(probs, probs.initializers, data, lp, bce, 4);
  const train::EvalResult b = train::evaluate_model(logits, logits.initializers, data, ll, bce, 4);
  CHECK(a.loss > 0.3);
  CHECK(a.loss == doctest::Approx(b.loss).epsilon(1e-5));
}
