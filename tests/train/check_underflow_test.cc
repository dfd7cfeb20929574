// `check` and values below FP16's normal range (train/check.h): gradient values under 2^-14 that
// the checked path holds within one subnormal step (2^-24) of the FP32 kernel are subnormal
// rounding, not a kernel error: counted apart and reported ("ok (underflow)"); the same error
// in forward values, or a larger one in gradients, still fails.
#include <doctest/doctest.h>

#include "test_tensors.h"
#include "convert/graph_build.h"
#include "train/check.h"

using namespace oat;
using oat_test::GraphBuild;

namespace {

Tensor uniform(Shape s, uint32_t seed, float lo, float hi) {
  return oat_test::uniform_tensor(std::move(s), seed, lo, hi);
}

// x [4, 8] → fc1 (Gemm) → Tanh → fc2 (Gemm, [8, 6]) → ReduceMean → Mul by k → the loss
// (--loss model). dLoss/d(fc2's output) = k/24 per element, times the loss scale S = 65536: with
// k = 1e-10 that is 2.7e-7, below FP16's smallest normal (6.1e-5) and a few subnormal steps
// (6e-8) above zero, so fc2's input gradient (and Tanh's) are subnormals in FP16.
Graph model(float k, float b1_range = 0.1f) {
  GraphBuild b;
  b.input("x", DType::F32, {4, 8});
  b.init("W1", uniform({8, 8}, 1, -0.5f, 0.5f)).init("b1", uniform({8}, 2, -b1_range, b1_range));
  b.init("W2", uniform({8, 6}, 3, -0.5f, 0.5f)).init("b2", uniform({6}, 4, -0.1f, 0.1f));
  b.init("k", Tensor::scalar<float>(k));
  b.node("Gemm", {"x", "W1", "b1"}, {"h"}, "fc1");
  b.node("Tanh", {"h"}, {"t"}, "tanh");
  b.node("Gemm", {"t", "W2", "b2"}, {"y"}, "fc2");
  b.node("ReduceMean", {"y"}, {"m"}, "mean").attrs["keepdims"] = oat_test::int_attr(0);
  b.node("Mul", {"m", "k"}, {"loss"}, "scale");
  b.output("loss");
  b.g.outputs[0].shape = std::vector<Dim>{};
  return b.g;
}

const train::NodeCheck& row(const train::CheckReport& r, const std::string& node) {
  for (const auto& c : r.nodes)
    if (c.node == node) return c;
  FAIL("no row for ", node);
  return r.nodes.front();
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

train::CheckOptions options() {
  train::CheckOptions o;  // fp16 on the CPU
  o.loss = train::LossKind::Model;
  o.loss_scale = 65536.0;
  return o;
}

}  // namespace

TEST_CASE("check: gradients below FP16's normal range are reported as underflow and pass") {
  const Tensor x = uniform({4, 8}, 5, -1.0f, 1.0f);
  const train::CheckReport r = train::run_check(model(1e-10f), x, Tensor(), options());
  const train::NodeCheck& fc2 = row(r, "fc2");
  CHECK(fc2.underflow_grad > 0);
  CHECK(fc2.underflow_max < std::ldexp(1.0, -14));
  // With the subnormals counted, the relative error is beyond FP16's tolerance ...
  CHECK(fc2.local_all_rel > fc2.tol);
  // ... and without them the node's own rounding is what FP16 promises.
  CHECK(fc2.local.rel < fc2.tol);
  CHECK(fc2.ok);
  CHECK(fc2.underflow_decides());
  CHECK(r.ok());
  const std::string table = train::check_table(r);
  CHECK(has(table, "ok (underflow)"));
  CHECK(has(table, "underflow: node 'fc2' (Gemm, fp16): "));
  CHECK(has(table, "below fp16's smallest normal"));
  CHECK(has(train::check_json(r), "\"underflow\""));
}

TEST_CASE("check: normal-range gradients report no underflow") {
  const Tensor x = uniform({4, 8}, 5, -1.0f, 1.0f);
  const train::CheckReport r = train::run_check(model(1.0f), x, Tensor(), options());
  CHECK(r.ok());
  CHECK_FALSE(row(r, "fc2").underflow_decides());
  CHECK_FALSE(has(train::check_table(r), "underflow"));
}

TEST_CASE("check: a wrong subnormal gradient, or forward values below the normal range, still fail") {
  SUBCASE("a gradient kernel off by a factor of 2 in the subnormal range") {
    train::CheckOptions o = options();
    o.perturb = [](const Node& n, std::vector<Tensor>& outs) {
      if (n.name.rfind("fc2_grad", 0) != 0 || outs.empty() || !outs[0].defined()) return;
      if (outs[0].dtype() != DType::F16) return;
      Tensor& t = outs[0];
      for (int64_t i = 0; i < t.numel(); ++i)
        t.data<Eigen::half>()[i] = Eigen::half(2.0f * static_cast<float>(t.data<Eigen::half>()[i]));
    };
    const Tensor x = uniform({4, 8}, 5, -1.0f, 1.0f);
    const train::CheckReport r = train::run_check(model(1e-10f), x, Tensor(), o);
    CHECK_FALSE(row(r, "fc2").ok);
    CHECK_FALSE(r.ok());
  }
  SUBCASE("forward values of ~1e-6 (fc1's output, no bias) rounded to FP16 subnormals fail") {
    const Tensor x = uniform({4, 8}, 5, -1e-6f, 1e-6f);
    const train::CheckReport r = train::run_check(model(1.0f, 0.0f), x, Tensor(), options());
    CHECK_FALSE(row(r, "fc1").ok);
    CHECK(row(r, "fc1").underflow_grad == 0);
    MESSAGE("fc1 local rel ", row(r, "fc1").local.rel);
  }
}
