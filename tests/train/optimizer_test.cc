// The optimizer kernels against PyTorch's update rules, computed by hand here.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "runtime/executor.h"
#include "runtime/threads.h"
#include "train/trainer.h"

using namespace oat;

namespace {

Attribute fattr(float v) {
  Attribute a;
  a.kind = Attribute::Kind::Float;
  a.f = v;
  return a;
}
Attribute iattr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}

// Runs one internal-domain node on `feeds` and returns its outputs.
std::vector<Tensor> run_node(const std::string& op, std::vector<std::string> inputs, int outputs,
                             std::map<std::string, Attribute> attrs,
                             std::map<std::string, Tensor> feeds) {
  Graph g;
  g.opsets[""] = 17;
  g.opsets[kInternalDomain] = 1;
  Node n;
  n.name = op;
  n.op_type = op;
  n.op = op_from_name(op);
  n.domain = kInternalDomain;
  n.opset = 1;
  n.inputs = inputs;
  n.attrs = std::move(attrs);
  for (int k = 0; k < outputs; ++k) {
    n.outputs.push_back("out" + std::to_string(k));
    ValueInfo v;
    v.name = n.outputs.back();
    g.outputs.push_back(v);
  }
  for (const auto& [name, t] : feeds) {
    ValueInfo v;
    v.name = name;
    v.dtype = t.dtype();
    g.inputs.push_back(v);
  }
  g.nodes.push_back(n);
  Executor exec(g);
  return exec.run(feeds);
}

}  // namespace

TEST_CASE("SGDUpdate: momentum, Nesterov and weight decay as torch.optim.SGD") {
  const float p0 = 1.0f, g0 = 0.5f, lr = 0.1f, mu = 0.9f, wd = 0.01f;
  auto out = run_node("SGDUpdate", {"p", "g", "v", "lr"}, 2,
                      {{"momentum", fattr(mu)}, {"weight_decay", fattr(wd)}, {"nesterov", iattr(1)}},
                      {{"p", Tensor::from_vector<float>({1}, {p0})},
                       {"g", Tensor::from_vector<float>({1}, {g0})},
                       {"v", Tensor::from_vector<float>({1}, {0.2f})},
                       {"lr", Tensor::scalar<float>(lr)}});
  const float d = g0 + wd * p0;            // 0.51
  const float v1 = mu * 0.2f + d;          // 0.69
  const float step = d + mu * v1;          // Nesterov
  CHECK(out[1].data<float>()[0] == doctest::Approx(v1));
  CHECK(out[0].data<float>()[0] == doctest::Approx(p0 - lr * step));
}

TEST_CASE("AdamUpdate: Adam and AdamW with bias correction") {
  for (int decoupled : {0, 1}) {
    CAPTURE(decoupled);
    const double p0 = 0.3, g = -0.2, m0 = 0.01, v0 = 0.004, lr = 0.01, wd = 0.1;
    const int64_t t = 3;
    auto out = run_node("AdamUpdate", {"p", "g", "m", "v", "lr", "t"}, 3,
                        {{"weight_decay", fattr(static_cast<float>(wd))}, {"decoupled", iattr(decoupled)}},
                        {{"p", Tensor::from_vector<float>({1}, {static_cast<float>(p0)})},
                         {"g", Tensor::from_vector<float>({1}, {static_cast<float>(g)})},
                         {"m", Tensor::from_vector<float>({1}, {static_cast<float>(m0)})},
                         {"v", Tensor::from_vector<float>({1}, {static_cast<float>(v0)})},
                         {"lr", Tensor::scalar<float>(static_cast<float>(lr))},
                         {"t", Tensor::scalar<int64_t>(t)}});
    const double gr = decoupled ? g : g + wd * p0;
    const double pd = decoupled ? p0 * (1 - lr * wd) : p0;
    const double m = 0.9 * m0 + 0.1 * gr, v = 0.999 * v0 + 0.001 * gr * gr;
    const double mhat = m / (1 - std::pow(0.9, t)), vhat = v / (1 - std::pow(0.999, t));
    CHECK(out[1].data<float>()[0] == doctest::Approx(m).epsilon(1e-5));
    CHECK(out[2].data<float>()[0] == doctest::Approx(v).epsilon(1e-5));
    CHECK(out[0].data<float>()[0] == doctest::Approx(pd - lr * mhat / (std::sqrt(vhat) + 1e-8)).epsilon(1e-5));
  }
}

TEST_CASE("AdamUpdate: every element of a large, ragged tensor (threaded, blocked path)") {
  // 100003 elements: more than the kernel's threading threshold, not a multiple of its block.
  const int64_t n = 100003;
  Tensor p(DType::F32, {n}), g(DType::F32, {n}), m(DType::F32, {n}), v(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) {
    p.data<float>()[i] = std::sin(0.001f * static_cast<float>(i));
    g.data<float>()[i] = std::cos(0.0007f * static_cast<float>(i)) - 0.3f;
    m.data<float>()[i] = 0.01f * std::sin(0.003f * static_cast<float>(i));
    v.data<float>()[i] = 1e-4f * (1.0f + std::cos(0.002f * static_cast<float>(i)));
  }
  const double lr = 0.01, wd = 0.05;
  const double b1 = 0.9f, b2 = 0.999f;  // the attributes are floats: β₂ is 0.99900001 here
  const int64_t t = 4;
  for (int decoupled : {0, 1}) {
    CAPTURE(decoupled);
    auto out = run_node("AdamUpdate", {"p", "g", "m", "v", "lr", "t"}, 3,
                        {{"weight_decay", fattr(static_cast<float>(wd))}, {"decoupled", iattr(decoupled)}},
                        {{"p", p}, {"g", g}, {"m", m}, {"v", v},
                         {"lr", Tensor::scalar<float>(static_cast<float>(lr))},
                         {"t", Tensor::scalar<int64_t>(t)}});
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double p0 = p.data<float>()[i], gi = g.data<float>()[i];
      const double gr = decoupled ? gi : gi + wd * p0;
      const double pd = decoupled ? p0 * (1 - lr * wd) : p0;
      const double mm = b1 * m.data<float>()[i] + (1 - b1) * gr;
      const double vv = b2 * v.data<float>()[i] + (1 - b2) * gr * gr;
      const double want = pd - lr * (mm / (1 - std::pow(b1, t))) /
                                   (std::sqrt(vv / (1 - std::pow(b2, t))) + 1e-8);
      bad += std::abs(out[0].data<float>()[i] - want) > 1e-6 + 1e-5 * std::abs(want);
      bad += std::abs(out[1].data<float>()[i] - mm) > 1e-5 * std::abs(mm) + 1e-9;
      bad += std::abs(out[2].data<float>()[i] - vv) > 1e-5 * std::abs(vv) + 1e-12;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("SGDUpdate/AdamUpdate: skip leaves parameters and state untouched") {
  auto out = run_node("AdamUpdate", {"p", "g", "m", "v", "lr", "t", "skip"}, 3, {},
                      {{"p", Tensor::from_vector<float>({2}, {1, 2})},
                       {"g", Tensor::from_vector<float>({2}, {5, 5})},
                       {"m", Tensor::from_vector<float>({2}, {0, 0})},
                       {"v", Tensor::from_vector<float>({2}, {0, 0})},
                       {"lr", Tensor::scalar<float>(0.1f)},
                       {"t", Tensor::scalar<int64_t>(1)},
                       {"skip", Tensor::scalar<bool>(true)}});
  CHECK(out[0].data<float>()[0] == 1.0f);
  CHECK(out[0].data<float>()[1] == 2.0f);
  CHECK(out[1].data<float>()[0] == 0.0f);
}

TEST_CASE("SGDUpdate/AdamUpdate: the working copy is P' (P when skipped) rounded once to working_type") {
  // 1 + 2⁻¹¹·k is not an F16 value for odd k; P' = P − lr·G lands between F16 values too.
  std::vector<float> pv, gv;
  for (int k = 0; k < 9; ++k) {
    pv.push_back(1.0f + std::ldexp(1.0f, -12) * (2 * k + 1));
    gv.push_back(0.37f * (k - 4));
  }
  const Tensor P = Tensor::from_vector<float>({9}, pv), G = Tensor::from_vector<float>({9}, gv);
  const Tensor V = Tensor::zeros(DType::F32, {9});
  for (int64_t code : {10, 16}) {
    CAPTURE(code);
    const DType low = code == 10 ? DType::F16 : DType::BF16;
    for (bool skip : {false, true}) {
      CAPTURE(skip);
      std::map<std::string, Tensor> feeds = {{"p", P}, {"g", G}, {"v", V},
                                             {"lr", Tensor::scalar<float>(1e-3f)},
                                             {"skip", Tensor::scalar<bool>(skip)}};
      auto sgd = run_node("SGDUpdate", {"p", "g", "v", "lr", "skip"}, 3,
                          {{"momentum", fattr(0.9f)}, {"working_type", iattr(code)}}, feeds);
      REQUIRE(sgd.size() == 3);
      CHECK(sgd[2].dtype() == low);
      const auto want = cast_tensor(sgd[0], low).to_float_vector();
      CHECK(sgd[2].to_float_vector() == want);
      if (skip) CHECK(sgd[0].to_float_vector() == pv);
      else CHECK(sgd[0].to_float_vector() != pv);
      feeds["m"] = V;
      feeds["t"] = Tensor::scalar<int64_t>(1);
      auto adam = run_node("AdamUpdate", {"p", "g", "m", "v", "lr", "t", "skip"}, 4,
                           {{"working_type", iattr(code)}}, feeds);
      REQUIRE(adam.size() == 4);
      CHECK(adam[3].dtype() == low);
      CHECK(adam[3].to_float_vector() == cast_tensor(adam[0], low).to_float_vector());
    }
  }
  CHECK_THROWS_WITH_AS(run_node("SGDUpdate", {"p", "g", "v", "lr"}, 3,
                                {{"momentum", fattr(0.9f)}, {"working_type", iattr(1)}},
                                {{"p", P}, {"g", G}, {"v", V}, {"lr", Tensor::scalar<float>(1.f)}}),
                       doctest::Contains("working_type 1 must be 10 (FLOAT16) or 16 (BFLOAT16)"),
                       Error);
}

TEST_CASE("GlobalNormClip scales all gradients by max_norm / ‖g‖ only above the bound") {
  auto out = run_node("GlobalNormClip", {"a", "b", "max"}, 3, {},
                      {{"a", Tensor::from_vector<float>({2}, {3, 0})},
                       {"b", Tensor::from_vector<float>({1}, {4})},
                       {"max", Tensor::scalar<float>(1.0f)}});
  CHECK(out[2].data<float>()[0] == doctest::Approx(5.0));
  CHECK(out[0].data<float>()[0] == doctest::Approx(0.6).epsilon(1e-5));
  CHECK(out[1].data<float>()[0] == doctest::Approx(0.8).epsilon(1e-5));
  auto same = run_node("GlobalNormClip", {"a", "max"}, 2, {},
                       {{"a", Tensor::from_vector<float>({2}, {0.3f, 0.4f})},
                        {"max", Tensor::scalar<float>(1.0f)}});
  CHECK(same[0].data<float>()[1] == 0.4f);
}

TEST_CASE("GlobalNormClip's norm is the same bits on 1 and 2 threads (fixed summation order)") {
  Tensor g(DType::F32, {300001});
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int64_t i = 0; i < g.numel(); ++i) g.data<float>()[i] = n(rng) * (i % 7 == 0 ? 1e3f : 1e-3f);
  const int before = num_threads();
  float norms[2];
  for (int t : {1, 2}) {
    set_num_threads(t);
    auto out = run_node("GlobalNormClip", {"g", "max"}, 2, {},
                        {{"g", g}, {"max", Tensor::scalar<float>(1.0f)}});
    norms[t - 1] = out[1].data<float>()[0];
  }
  set_num_threads(before);
  double ref = 0;
  for (int64_t i = 0; i < g.numel(); ++i) ref += double(g.data<float>()[i]) * g.data<float>()[i];
  CHECK(norms[0] == doctest::Approx(std::sqrt(ref)).epsilon(1e-6));
  CHECK(std::memcmp(&norms[0], &norms[1], sizeof(float)) == 0);
}

TEST_CASE("learning-rate schedules") {
  train::ScheduleConfig s;
  CHECK(train::scheduled_lr(0.1, s, 5, 10, 2) == doctest::Approx(0.1));
  s.kind = "step";
  s.step_size = 2;
  s.gamma = 0.5;
  CHECK(train::scheduled_lr(0.1, s, 3, 100, 2) == doctest::Approx(0.1));   // epoch 1
  CHECK(train::scheduled_lr(0.1, s, 4, 100, 2) == doctest::Approx(0.05));  // epoch 2
  s.kind = "cosine";
  s.min_lr = 0.0;
  CHECK(train::scheduled_lr(0.1, s, 0, 11, 1) == doctest::Approx(0.1));
  CHECK(train::scheduled_lr(0.1, s, 5, 11, 1) == doctest::Approx(0.05).epsilon(0.02));
  s.warmup_steps = 4;
  CHECK(train::scheduled_lr(0.1, s, 0, 20, 1) == doctest::Approx(0.025));
  CHECK(train::scheduled_lr(0.1, s, 3, 20, 1) == doctest::Approx(0.1));
  s.kind = "bogus";
  CHECK_THROWS_AS(train::scheduled_lr(0.1, s, 10, 20, 1), Error);
}

TEST_CASE("wildcard patterns for --freeze") {
  CHECK(train::wildcard_match("conv*", "conv1.weight"));
  CHECK(train::wildcard_match("*.bias", "fc3.bias"));
  CHECK_FALSE(train::wildcard_match("*.bias", "fc3.weight"));
  CHECK(train::wildcard_match("fc?.weight", "fc1.weight"));
  CHECK_FALSE(train::wildcard_match("fc?.weight", "fc12.weight"));
}
