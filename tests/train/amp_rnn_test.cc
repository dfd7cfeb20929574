// Mixed-precision training of a small LSTM classifier (X [batch, seq, in] → LSTM (layout 1) →
// Y_h → Flatten → Gemm → softmax cross-entropy): the training graph holds the LSTM's expansion,
// whose nodes the precision plan paints FP16 as "allow list (LSTM 'lstm')" (as cuDNN's FP16 LSTM
// runs its gates in FP16), and a few CPU steps in emulated FP16 with loss scaling lower the loss;
// also bidirectional with sequence_lens and clip.
#include <doctest/doctest.h>

#include <random>

#include "fp16_fit.h"
#include "train/trainer.h"

using namespace oat;

namespace {

constexpr int64_t kSeq = 6, kIn = 4, kHidden = 8, kClasses = 3;

Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}

Node node(const std::string& name, const std::string& op, std::vector<std::string> in,
          std::vector<std::string> out, int64_t opset = 14) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.op = op_from_name(op);
  n.opset = opset;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

Tensor uniform(Shape s, float scale, std::mt19937& rng) {
  Tensor t(DType::F32, std::move(s));
  std::uniform_real_distribution<float> u(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// With `extras`: bidirectional, clip 3 and a constant sequence_lens for batches of 32 (lengths
// 1..6), which adds the integer mask/reversal path, Where with a zero constant and Clip.
Graph lstm_classifier(bool extras = false) {
  Graph g;
  g.name = "lstm_classifier";
  g.opsets[""] = 14;
  std::mt19937 rng(5);
  Dim batch;
  batch.param = "batch";
  ValueInfo x;
  x.name = "x";
  x.dtype = DType::F32;
  x.shape = std::vector<Dim>{batch, Dim{kSeq, ""}, Dim{kIn, ""}};
  g.inputs.push_back(x);
  const int64_t D = extras ? 2 : 1;
  g.initializers["lstm.W"] = uniform({D, 4 * kHidden, kIn}, 0.5f, rng);
  g.initializers["lstm.R"] = uniform({D, 4 * kHidden, kHidden}, 0.5f, rng);
  g.initializers["lstm.B"] = uniform({D, 8 * kHidden}, 0.1f, rng);
  g.initializers["fc.W"] = uniform({D * kHidden, kClasses}, 0.5f, rng);
  g.initializers["fc.b"] = Tensor::zeros(DType::F32, {kClasses});
  Node lstm = node("lstm", "LSTM", {"x", "lstm.W", "lstm.R", "lstm.B"}, {"", "h"});
  lstm.attrs["hidden_size"] = int_attr(kHidden);
  lstm.attrs["layout"] = int_attr(1);
  if (extras) {
    std::vector<int32_t> lens(32);
    for (size_t i = 0; i < lens.size(); ++i) lens[i] = static_cast<int32_t>(kSeq - i % kSeq);
    g.initializers["lstm.lens"] = Tensor::from_vector<int32_t>({32}, lens);
    lstm.inputs.push_back("lstm.lens");
    Attribute dir;
    dir.kind = Attribute::Kind::String;
    dir.s = "bidirectional";
    lstm.attrs["direction"] = dir;
    Attribute clip;
    clip.kind = Attribute::Kind::Float;
    clip.f = 3.0f;
    lstm.attrs["clip"] = clip;
  }
  g.nodes.push_back(lstm);
  Node flat = node("flatten", "Flatten", {"h"}, {"hf"});
  flat.attrs["axis"] = int_attr(1);
  g.nodes.push_back(flat);
  g.nodes.push_back(node("fc", "Gemm", {"hf", "fc.W", "fc.b"}, {"logits"}));
  ValueInfo y;
  y.name = "logits";
  y.dtype = DType::F32;
  y.shape = std::vector<Dim>{batch, Dim{kClasses, ""}};
  g.outputs.push_back(y);
  return g;
}

// The class is which of the first three features has the largest sum over the sequence.
train::Dataset sequences(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> u(0.0f, 1.0f);
  train::Dataset d{Tensor(DType::F32, {n, kSeq, kIn}), Tensor(DType::I64, {n})};
  float* x = d.inputs.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    double sum[kClasses] = {0, 0, 0};
    for (int64_t t = 0; t < kSeq; ++t)
      for (int64_t k = 0; k < kIn; ++k) {
        const float v = u(rng);
        x[(i * kSeq + t) * kIn + k] = v;
        if (k < kClasses) sum[k] += v;
      }
    d.targets.data<int64_t>()[i] =
        static_cast<int64_t>(std::max_element(sum, sum + kClasses) - sum);
  }
  return d;
}

}  // namespace

TEST_CASE("amp LSTM: the expansion is painted FP16 by the allow list and the loss falls") {
  const Graph model = lstm_classifier();
  train::Trainer t(model, test::fp16_config(32, 8, 0.01));
  const train::TrainingGraph& tg = t.training_graph();

  // The LSTM node is gone from the training graph; its parts are painted as the composite.
  size_t parts = 0, low = 0;
  for (const Node& n : tg.graph.nodes) {
    CHECK(n.op_type != "LSTM");
    auto it = tg.composite_parts.find(n.name);
    if (it == tg.composite_parts.end()) continue;
    ++parts;
    CHECK(it->second.op_type == "LSTM");
    CHECK(it->second.name == "lstm");
    const convert::NodePrecision* p = tg.plan.find(n.name);
    REQUIRE_MESSAGE(p, n.name);
    CAPTURE(n.name);
    CHECK(p->reason == "allow list (LSTM 'lstm')");
    low += p->dtype == DType::F16;
  }
  CHECK(parts > 50);
  CHECK(low == parts);
  CHECK(tg.plan.find("lstm/d0/t1/HR")->dtype == DType::F16);   // H·Rᵀ, a tensor-core GEMM
  CHECK(tg.plan.find("lstm/d0/t5/iof")->dtype == DType::F16);  // the gates' Sigmoid
  CHECK(tg.plan.find("fc")->dtype == DType::F16);
  // The LSTM's gradient nodes follow their forward nodes into FP16.
  size_t low_grads = 0;
  for (const auto& [grad, fwd] : tg.origin)
    if (tg.composite_parts.count(fwd) && tg.plan.find(grad) &&
        tg.plan.find(grad)->dtype == DType::F16)
      ++low_grads;
  CHECK(low_grads > 50);

  const train::Dataset data = sequences(256, 9);
  const double before = t.evaluate(data).loss;
  const test::FitLosses f = test::fit_losses(t, data);
  const train::EvalResult after = t.evaluate(data);
  MESSAGE("LSTM FP16: loss " << before << " -> " << after.loss << ", accuracy " << after.accuracy
                             << ", skipped steps " << t.loss_scaler().state().skipped_steps);
  REQUIRE(f.steps.size() == 64);
  CHECK(after.loss < 0.7 * before);
  CHECK(after.accuracy > 0.6);
  CHECK(t.loss_scaler().state().skipped_steps <= 2);
}

TEST_CASE("amp LSTM: bidirectional with sequence_lens and clip trains in FP16") {
  const Graph model = lstm_classifier(true);
  train::Trainer t(model, test::fp16_config(32, 8, 0.01));
  const train::TrainingGraph& tg = t.training_graph();
  // The gates' Clip and the masking Where run in FP16; the integer mask path carries no floats.
  CHECK(tg.plan.find("lstm/d1/t2/iof_clip")->dtype == DType::F16);
  CHECK(tg.plan.find("lstm/d1/t2/H_held")->dtype == DType::F16);
  CHECK_FALSE(tg.plan.find("lstm/reverse_index")->carries_floats);
  const train::Dataset data = sequences(256, 9);
  const double before = t.evaluate(data).loss;
  t.fit(data, nullptr);
  const train::EvalResult after = t.evaluate(data);
  MESSAGE("bidirectional LSTM with sequence_lens, FP16: loss " << before << " -> " << after.loss
                                                               << ", accuracy " << after.accuracy);
  CHECK(after.loss < 0.8 * before);
}
