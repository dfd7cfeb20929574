// `check` and values beyond FP16's range (train/check.h): a gradient that overflows where a ReLU
// masks it is reported but passes (the trainer takes that step, as PyTorch does); one that
// reaches a parameter makes the loss scale back off; a forward value that overflows fails,
// named as an overflow rather than as an infinite rounding error.
#include <doctest/doctest.h>

#include <random>

#include "convert/graph_build.h"
#include "train/check.h"

using namespace oat;
using oat_test::GraphBuild;

namespace {

Tensor tensor(Shape shape, std::vector<float> v) { return Tensor::from_vector<float>(shape, v); }

// x [4, 4] → fc1 (W1, b1) → ReLU → fc2 (W2 [4, 3], b2) → logits. Hidden unit 3 is dead
// (W1[:, 3] = 0, b1[3] = b3 < 0) when b3 < 0; W2's row 3 is ±`big`, so dL/dr[:, 3] is huge:
// scaled by 65536 it passes 65504.
Graph model(float b3, float big, float w1_scale = 0.3f) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w1(16), w2(12);
  for (int i = 0; i < 16; ++i) w1[i] = (i % 4 == 3) ? 0.0f : w1_scale * u(rng);
  for (int i = 0; i < 12; ++i) w2[i] = 0.5f * u(rng);
  w2[9] = big;
  w2[10] = -big;
  w2[11] = 0.0f;
  GraphBuild b;
  b.input("x", DType::F32, {4, 4});
  b.init("W1", tensor({4, 4}, w1)).init("b1", tensor({4}, {0.1f, 0.1f, 0.1f, b3}));
  b.init("W2", tensor({4, 3}, w2)).init("b2", tensor({3}, {0.0f, 0.0f, 0.0f}));
  b.node("Gemm", {"x", "W1", "b1"}, {"h"}, "fc1");
  b.node("Relu", {"h"}, {"r"}, "relu");
  b.node("Gemm", {"r", "W2", "b2"}, {"logits"}, "fc2");
  b.output("logits");
  return b.g;
}

const Tensor& input() {
  static const Tensor x = tensor({4, 4}, {0.9f, 0.2f, 0.7f, 0.4f, 0.1f, 0.8f, 0.3f, 0.6f,
                                          0.5f, 0.5f, 0.9f, 0.1f, 0.3f, 0.7f, 0.2f, 0.8f});
  return x;
}

const Tensor& labels() {
  static const Tensor y = Tensor::from_vector<int64_t>({4}, {0, 1, 2, 1});
  return y;
}

const train::NodeCheck& row(const train::CheckReport& r, const std::string& node) {
  for (const auto& c : r.nodes)
    if (c.node == node) return c;
  FAIL("no row for ", node);
  return r.nodes.front();
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("check: a gradient overflow that a ReLU masks is reported and passes") {
  train::CheckOptions o;  // fp16 on the CPU, dynamic S from 65536
  const train::CheckReport r = train::run_check(model(-1.0f, 300.0f), input(), labels(), o);
  CHECK(r.loss_scale == 65536.0);
  CHECK(r.overflow_retries == 0);
  CHECK(r.grads_finite);
  const train::NodeCheck& fc2 = row(r, "fc2");
  CHECK(fc2.overflow_grad > 0);  // dL/dr[:, 3] (×65536) is beyond 65504
  CHECK(fc2.overflow_out == 0);
  CHECK(fc2.overflow_max > 65504.0);
  CHECK(fc2.ok);
  CHECK(r.ok());
  const std::string table = train::check_table(r);
  CHECK(has(table, "overflow masked: node 'fc2'"));
  CHECK(has(table, "every parameter gradient is finite"));
  CHECK(has(train::check_json(r), "\"parameter_gradients_finite\": true"));
}

TEST_CASE("check: a gradient overflow that reaches a parameter makes the loss scale back off") {
  // Unit 3 alive: the overflowing dL/dr[:, 3] reaches W1 and b1, so S halves until it fits.
  train::CheckOptions o;
  const train::CheckReport r = train::run_check(model(1.0f, 300.0f), input(), labels(), o);
  CHECK(r.overflow_retries > 0);
  CHECK(r.loss_scale < 65536.0);
  CHECK(r.grads_finite);
  CHECK(row(r, "fc2").overflow_grad == 0);
  CHECK(r.ok());
}

TEST_CASE("check: a forward value beyond FP16's range fails, named as an overflow") {
  // Inputs up to 9000 and weights up to 20 (all finite in FP16) make h pass 65504: inf in
  // FP16, finite in FP32.
  Tensor x = input().clone();
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 1e4f;
  train::CheckOptions o;
  const train::CheckReport r = train::run_check(model(0.1f, 0.5f, 20.0f), x, labels(), o);
  const train::NodeCheck& fc1 = row(r, "fc1");
  CHECK(fc1.overflow_out > 0);
  CHECK(!fc1.ok);
  CHECK(!r.ok());
  const std::string table = train::check_table(r);
  CHECK(has(table, "out of tolerance: node 'fc1' (Gemm, fp16): overflow: "));
  CHECK(has(table, "output values beyond fp16's range"));
}
