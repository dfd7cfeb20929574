// Mixed-precision training on the CPU path (FP16/BF16 emulated exactly): the training graph's
// precision layout, and the demonstrations of issue #4 — FP16 gradients that underflow without
// loss scaling, an overflowing step that is skipped with the scale backing off and growing back,
// loss scaling that is exact in FP32, the scaler state across --resume, and BF16 training.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "models/zoo.h"
#include "train/trainer.h"

using namespace oat;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kIn = 8, kOut = 512;

// y = x·W (x [batch, 8], W [8, 512], W starts at zero): a wide linear regression.
Graph wide_linear() {
  Graph g;
  g.name = "wide_linear";
  g.opsets[""] = 17;
  Dim batch;
  batch.param = "batch";
  ValueInfo x;
  x.name = "x";
  x.dtype = DType::F32;
  x.shape = std::vector<Dim>{batch, Dim{kIn, ""}};
  g.inputs.push_back(x);
  g.initializers["W"] = Tensor::zeros(DType::F32, {kIn, kOut});
  Node mm;
  mm.name = "mm";
  mm.op_type = "MatMul";
  mm.op = op_from_name("MatMul");
  mm.opset = 17;
  mm.inputs = {"x", "W"};
  mm.outputs = {"y"};
  g.nodes.push_back(mm);
  ValueInfo y;
  y.name = "y";
  y.dtype = DType::F32;
  y.shape = std::vector<Dim>{batch, Dim{kOut, ""}};
  g.outputs.push_back(y);
  return g;
}

// Targets t = x·W_true with |W_true| ≤ 2e-5 and |x| ≤ 1, so |t| ≤ 1.6e-4. Under MSE over 512
// outputs and a batch of 64, dLoss/dy = 2(y − t)/32768: at W = 0 that is at most 1e-8, which
// FP16 (smallest subnormal 2⁻²⁴ ≈ 6e-8, anything below 3e-8 rounds to 0) cannot hold.
train::Dataset regression_data(int64_t n, uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::uniform_real_distribution<float> ux(-1.0f, 1.0f), uw(-2e-5f, 2e-5f);
  std::vector<float> w(kIn * kOut);
  for (auto& v : w) v = uw(rng);
  train::Dataset d{Tensor(DType::F32, {n, kIn}), Tensor(DType::F32, {n, kOut})};
  float* x = d.inputs.data<float>();
  float* t = d.targets.data<float>();
  for (int64_t i = 0; i < n * kIn; ++i) x[i] = ux(rng);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < kOut; ++o) {
      double s = 0;
      for (int64_t k = 0; k < kIn; ++k) s += static_cast<double>(x[i * kIn + k]) * w[k * kOut + o];
      t[i * kOut + o] = static_cast<float>(s);
    }
  return d;
}

train::TrainerConfig regression_config(DType precision, train::LossScaleMode mode) {
  train::TrainerConfig cfg;
  cfg.batch = 64;
  cfg.lr = 1e-6;
  cfg.shuffle = false;
  cfg.progress = false;
  cfg.graph.loss = train::LossKind::MSE;
  cfg.graph.precision = precision;
  cfg.loss_scale.mode = mode;
  return cfg;
}

bool all_zero(const Tensor& t) {
  const float* p = t.data<float>();
  return std::all_of(p, p + t.numel(), [](float v) { return v == 0.0f; });
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

std::map<std::string, Tensor> deep_copy(const std::map<std::string, Tensor>& m) {
  std::map<std::string, Tensor> r;
  for (const auto& [k, t] : m) r[k] = t.clone();
  return r;
}

std::string tmp_path(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("oat_amp_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

}  // namespace

TEST_CASE("amp graph: FP32 masters feed FP16 working copies; loss, scaling, optimizer stay FP32") {
  Graph model = models::mlp(1);
  train::TrainingGraphOptions o;
  o.precision = DType::F16;
  o.loss_scaling = true;
  o.clip_norm = 1.0;
  train::TrainingGraph tg = train::build_training_graph(model, o);
  const Graph& g = tg.graph;
  auto precision_of = [&](const std::string& node) {
    const convert::NodePrecision* p = tg.plan.find(node);
    REQUIRE_MESSAGE(p, node);
    return p->dtype;
  };
  auto producer = [&](const std::string& value) -> const Node* {
    for (const Node& n : g.nodes)
      for (const auto& out : n.outputs)
        if (out == value) return &n;
    return nullptr;
  };
  for (const auto& p : tg.params) {
    CAPTURE(p);
    CHECK(g.initializers.at(p).dtype() == DType::F32);             // the master
    CHECK(g.initializers.at(p + ".adam_m").dtype() == DType::F32);  // optimizer state
    const Node* adam = producer(p + ".next");
    REQUIRE(adam);
    CHECK(precision_of(adam->name) == DType::F32);
    CHECK(adam->inputs.back() == tg.found_inf);  // skip
  }
  // The working copies: FP16 states, round(P₀) at first, that each parameter's AdamUpdate
  // writes beside P' (output 3, working_type FLOAT16); no Cast of a master runs in the step.
  CHECK(producer("fc1.weight_to_fp16") == nullptr);
  REQUIRE(tg.working.count("fc1.weight_to_fp16"));
  CHECK(tg.working.at("fc1.weight_to_fp16") == "fc1.weight");
  CHECK(tg.updates.at("fc1.weight_to_fp16") == "fc1.weight_to_fp16.next");
  const Tensor& copy0 = g.initializers.at("fc1.weight_to_fp16");
  CHECK(copy0.dtype() == DType::F16);
  CHECK(copy0.shape() == g.initializers.at("fc1.weight").shape());
  CHECK(static_cast<float>(copy0.data<Eigen::half>()[3]) ==
        static_cast<float>(Eigen::half(g.initializers.at("fc1.weight").data<float>()[3])));
  const Node* writer = producer("fc1.weight_to_fp16.next");
  REQUIRE(writer);
  // Every parameter's update is one MultiAdamUpdate ([P, G, M, V, W] per parameter -> [P', M',
  // V', W']): fc1.weight's group reads its working copy (W, so that a donated W takes W') and
  // writes the next one as its W'.
  CHECK(writer->op == OpId::MultiAdamUpdate);
  CHECK(writer->outputs.size() == 4 * tg.params.size());
  const auto at = std::find(writer->outputs.begin(), writer->outputs.end(), "fc1.weight_to_fp16.next");
  const size_t group = static_cast<size_t>(at - writer->outputs.begin()) / 4;
  CHECK((at - writer->outputs.begin()) % 4 == 3);
  CHECK(writer->inputs[5 * group] == "fc1.weight");
  CHECK(writer->inputs[5 * group + 4] == "fc1.weight_to_fp16");
  CHECK(writer->attr_int("working_type", 0) == 10);
  size_t param_casts = 0;
  for (const Node& n : g.nodes)
    if (n.op == OpId::Cast && tg.grads.count(n.inputs[0])) ++param_casts;
  CHECK(param_casts == 0);
  // Without working copies: one Cast per weight to FP16, run every step.
  o.working_copies = false;
  const train::TrainingGraph tc = train::build_training_graph(model, o);
  CHECK(tc.working.empty());
  const Node* cast = nullptr;
  for (const Node& n : tc.graph.nodes)
    if (!n.outputs.empty() && n.outputs[0] == "fc1.weight_to_fp16") cast = &n;
  REQUIRE(cast);
  CHECK(cast->op == OpId::Cast);
  CHECK(cast->inputs[0] == "fc1.weight");
  size_t casts = 0;  // one working copy per parameter Cast, and nothing else changed
  for (const Node& n : tc.graph.nodes)
    if (n.op == OpId::Cast && tc.grads.count(n.inputs[0])) ++casts;
  CHECK(casts == tg.working.size());
  CHECK(tc.graph.nodes.size() == g.nodes.size() + casts);
  for (const Node& n : g.nodes) {
    if (n.op != OpId::MatMul && n.op != OpId::Gemm) continue;
    CAPTURE(n.name);
    CHECK(precision_of(n.name) == DType::F16);
  }
  // Gradient nodes follow their forward nodes; the loss, UnscaleAndCheck and clipping are FP32.
  size_t followers = 0;
  for (const auto& np : tg.plan.nodes)
    if (np.reason.find("follows forward node") != std::string::npos) ++followers;
  CHECK(followers > 5);
  CHECK(precision_of("loss") == DType::F32);
  CHECK(precision_of("loss_scale.unscale") == DType::F32);
  CHECK(precision_of("clip") == DType::F32);
  CHECK(g.value_info.at(tg.loss).dtype == DType::F32);
  // Gradients reaching UnscaleAndCheck may be FP16 (it widens them); its outputs are FP32.
  const Node* unscale = producer(tg.found_inf);
  REQUIRE(unscale);
  CHECK(unscale->op == OpId::UnscaleAndCheck);
  CHECK(unscale->inputs.size() == tg.params.size() + 1);
}

TEST_CASE("amp demo a: FP16 gradients underflow to zero without loss scaling; dynamic scaling trains") {
  Graph model = wide_linear();
  train::Dataset data = regression_data(640, 7);
  auto run = [&](DType precision, train::LossScaleMode mode, int64_t steps) {
    train::TrainerConfig cfg = regression_config(precision, mode);
    cfg.max_steps = steps;
    cfg.epochs = 100;
    auto t = std::make_unique<train::Trainer>(model, cfg);
    t->fit(data, nullptr);
    return t;
  };
  const double initial =
      train::Trainer(model, regression_config(DType::F32, train::LossScaleMode::None)).evaluate(data).loss;
  CHECK(initial > 1e-10);  // mean(t²) at W = 0

  // FP16 without scaling: every gradient is exactly 0, so W and Adam's moments never move.
  auto plain = run(DType::F16, train::LossScaleMode::None, 60);
  CHECK(all_zero(plain->state().at("W")));
  CHECK(all_zero(plain->state().at("W.adam_m")));  // m' = 0.9m + 0.1g stays 0 only if every g is 0
  CHECK(all_zero(plain->state().at("W.adam_v")));
  CHECK(plain->evaluate(data).loss == initial);

  // The same model in FP32 learns: the zeros are FP16 underflow, not the problem.
  auto fp32 = run(DType::F32, train::LossScaleMode::None, 60);
  const double fp32_loss = fp32->evaluate(data).loss;
  CHECK(fp32_loss < 0.1 * initial);

  // FP16 with dynamic loss scaling (2¹⁶): the scaled gradients are representable, and it learns
  // as FP32 does.
  auto scaled = run(DType::F16, train::LossScaleMode::Dynamic, 60);
  CHECK_FALSE(all_zero(scaled->state().at("W")));
  const double fp16_loss = scaled->evaluate(data).loss;
  CHECK(fp16_loss < 0.1 * initial);
  CHECK(fp16_loss < 2.0 * fp32_loss);
  CHECK(scaled->loss_scaler().state().skipped_steps == 0);
  CHECK(scaled->optimizer_step() == 60);
  MESSAGE("initial loss " << initial << ", fp16 no scaling " << plain->evaluate(data).loss
                          << ", fp16 dynamic " << fp16_loss << ", fp32 " << fp32_loss);
}

TEST_CASE("amp demo b: an overflowing step is skipped bit for bit, halves the scale, and it grows back") {
  Graph model = wide_linear();
  train::Dataset data = regression_data(64 * 9, 3);
  // Batch 5 (step 5) gets targets of 1e8: its FP32 loss is finite (~1e16) but its scaled
  // gradient overflows FP16.
  float* t = data.targets.data<float>();
  for (int64_t i = 4 * 64 * kOut; i < 5 * 64 * kOut; ++i) t[i] = 1e8f;
  train::TrainerConfig cfg = regression_config(DType::F16, train::LossScaleMode::Dynamic);
  cfg.loss_scale.init_scale = 1024;
  cfg.loss_scale.growth_interval = 3;
  cfg.max_steps = 9;
  const std::string log = tmp_path("amp_b.jsonl");
  cfg.log_path = log;
  cfg.log_every = 1;
  train::Trainer tr(model, cfg);
  std::vector<std::map<std::string, Tensor>> states;  // after each step
  std::vector<double> scales;
  std::vector<int64_t> opt_steps;
  tr.on_step = [&](int64_t, double) {
    states.push_back(deep_copy(tr.state()));
    scales.push_back(tr.loss_scaler().scale());
    opt_steps.push_back(tr.optimizer_step());
  };
  tr.fit(data, nullptr);
  REQUIRE(states.size() == 9);
  // Steps 1-3 clean: grown to 2048 after the third. Step 4 clean. Step 5 overflows.
  CHECK(scales == std::vector<double>{1024, 1024, 2048, 2048, 1024, 1024, 1024, 2048, 2048});
  CHECK(opt_steps == std::vector<int64_t>{1, 2, 3, 4, 4, 5, 6, 7, 8});
  CHECK(tr.loss_scaler().state().skipped_steps == 1);
  for (const auto& [name, before] : states[3]) {
    CAPTURE(name);
    CHECK(bitwise_equal(before, states[4].at(name)));    // step 5 left everything untouched
    CHECK_FALSE(bitwise_equal(before, states[5].at(name)));  // step 6 moved on
  }
  // The log carries the scale and the skipped count.
  std::ifstream f(log);
  std::string line, fifth;
  for (int i = 0; i < 5 && std::getline(f, line); ++i) fifth = line;
  CHECK(fifth.find("\"loss_scale\":1024.0") != std::string::npos);
  CHECK(fifth.find("\"skipped_steps\":1") != std::string::npos);
}

TEST_CASE("amp: working copies written by the optimizer train exactly as Casts of the masters") {
  // The fused update writes round(P') beside P'; the unfused graph casts P' in the next step's
  // forward. Both round the same FP32 value once, so every step must agree bit for bit, the
  // skipped (overflowing) step included, for SGD with and without momentum, Adam and AdamW, in
  // FP16 and BF16.
  Graph model = wide_linear();
  train::Dataset data = regression_data(64 * 6, 11);
  float* t = data.targets.data<float>();
  for (int64_t i = 2 * 64 * kOut; i < 3 * 64 * kOut; ++i) t[i] = 1e8f;  // step 3 overflows FP16
  struct Case {
    train::OptimizerKind opt;
    double momentum;
    DType precision;
  };
  for (const Case& c : {Case{train::OptimizerKind::SGD, 0.0, DType::F16},
                        Case{train::OptimizerKind::SGD, 0.9, DType::F16},
                        Case{train::OptimizerKind::Adam, 0.0, DType::F16},
                        Case{train::OptimizerKind::AdamW, 0.0, DType::BF16}}) {
    CAPTURE(static_cast<int>(c.opt));
    CAPTURE(c.momentum);
    CAPTURE(dtype_name(c.precision));
    train::TrainerConfig cfg = regression_config(
        c.precision, c.precision == DType::F16 ? train::LossScaleMode::Dynamic
                                               : train::LossScaleMode::None);
    cfg.lr = c.opt == train::OptimizerKind::SGD ? 1e-2 : 1e-4;
    cfg.graph.optimizer.kind = c.opt;
    cfg.graph.optimizer.momentum = c.momentum;
    cfg.graph.optimizer.weight_decay = 0.01;
    cfg.max_steps = 6;
    std::vector<double> fused_loss, cast_loss;
    train::Trainer fused(model, cfg);
    fused.on_step = [&](int64_t, double l) { fused_loss.push_back(l); };
    fused.fit(data, nullptr);
    cfg.graph.working_copies = false;
    train::Trainer cast(model, cfg);
    cast.on_step = [&](int64_t, double l) { cast_loss.push_back(l); };
    cast.fit(data, nullptr);
    REQUIRE(fused_loss.size() == 6);
    CHECK(fused_loss == cast_loss);
    CHECK(fused.loss_scaler().state().skipped_steps == cast.loss_scaler().state().skipped_steps);
    if (c.precision == DType::F16) CHECK(fused.loss_scaler().state().skipped_steps == 1);
    REQUIRE(fused.training_graph().working.size() == 1);
    for (const auto& [name, s] : cast.state()) {
      CAPTURE(name);
      CHECK(bitwise_equal(s, fused.state().at(name)));
    }
    // The last working copy is the last master, rounded; and W moved.
    const auto& [copy, master] = *fused.training_graph().working.begin();
    CHECK(bitwise_equal(fused.state().at(copy),
                        cast_tensor(fused.state().at(master), c.precision)));
    CHECK_FALSE(all_zero(fused.state().at(master)));
  }
}

TEST_CASE("amp: loss scaling in FP32 is exact (powers of two), so the weights match unscaled training") {
  Graph model = models::mlp(2);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  train::Dataset cls{Tensor(DType::F32, {128, 1, 28, 28}), Tensor(DType::I64, {128})};
  for (int64_t i = 0; i < cls.inputs.numel(); ++i) cls.inputs.data<float>()[i] = u(rng);
  for (int64_t i = 0; i < 128; ++i) cls.targets.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
  train::TrainerConfig cfg;
  cfg.batch = 32;
  cfg.progress = false;
  cfg.epochs = 2;
  train::Trainer plain(model, cfg);
  plain.fit(cls, nullptr);
  cfg.loss_scale.mode = train::LossScaleMode::Dynamic;
  cfg.loss_scale.growth_interval = 3;  // the scale changes during the run, too
  train::Trainer scaled(model, cfg);
  scaled.fit(cls, nullptr);
  CHECK(scaled.loss_scaler().scale() == 65536.0 * 4);
  for (const auto& [name, t] : plain.state()) {
    CAPTURE(name);
    CHECK(bitwise_equal(t, scaled.state().at(name)));
  }
}

TEST_CASE("amp: --resume restores the loss scaler with the weights") {
  Graph model = wide_linear();
  train::Dataset data = regression_data(64 * 4, 9);
  float* t = data.targets.data<float>();
  for (int64_t i = 1 * 64 * kOut; i < 2 * 64 * kOut; ++i) t[i] = 1e8f;  // step 2 (and 6) overflow
  train::TrainerConfig cfg = regression_config(DType::F16, train::LossScaleMode::Dynamic);
  cfg.loss_scale.init_scale = 1024;
  cfg.loss_scale.growth_interval = 2;
  cfg.epochs = 2;  // 8 steps
  train::Trainer straight(model, cfg);
  straight.fit(data, nullptr);

  const std::string ckpt = tmp_path("ckpt");
  train::TrainerConfig first = cfg;
  first.max_steps = 4;
  first.checkpoint_dir = ckpt;
  train::Trainer a(model, first);
  a.fit(data, nullptr);
  train::TrainerConfig second = cfg;
  second.checkpoint_dir = ckpt;
  second.resume = true;
  train::Trainer b(model, second);
  b.fit(data, nullptr);
  CHECK(b.step() == 8);
  CHECK(straight.loss_scaler().state().skipped_steps == 2);
  CHECK(b.loss_scaler().state().skipped_steps == 2);
  CHECK(b.loss_scaler().scale() == straight.loss_scaler().scale());
  CHECK(b.loss_scaler().state().growth_tracker == straight.loss_scaler().state().growth_tracker);
  CHECK(b.optimizer_step() == straight.optimizer_step());
  for (const auto& [name, s] : straight.state()) {
    CAPTURE(name);
    CHECK(bitwise_equal(s, b.state().at(name)));
  }
  // A checkpoint written with dynamic scaling does not resume a run without it.
  train::TrainerConfig other = second;
  other.loss_scale.mode = train::LossScaleMode::None;
  train::Trainer c(model, other);
  CHECK_THROWS_WITH_AS(c.fit(data, nullptr), doctest::Contains("loss scaling is 'dynamic'"), Error);
  fs::remove_all(fs::path(ckpt).parent_path());
}

TEST_CASE("amp: BF16 trains the MLP without loss scaling (a short run, the loss falls)") {
  Graph model = models::mlp(4);
  std::mt19937 proto_rng(42), rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<std::vector<float>> protos(10, std::vector<float>(784));
  for (auto& p : protos)
    for (auto& v : p) v = u(proto_rng);
  train::Dataset d{Tensor(DType::F32, {320, 1, 28, 28}), Tensor(DType::I64, {320})};
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (int64_t i = 0; i < 320; ++i) {
    const int64_t c = static_cast<int64_t>(rng() % 10);
    d.targets.data<int64_t>()[i] = c;
    for (int j = 0; j < 784; ++j) d.inputs.data<float>()[i * 784 + j] = protos[c][j] + noise(rng);
  }
  train::TrainerConfig cfg;
  cfg.batch = 32;
  cfg.epochs = 2;
  cfg.progress = false;
  cfg.graph.precision = DType::BF16;
  train::Trainer t(model, cfg);
  CHECK_FALSE(t.loss_scaler().checks_overflow());
  CHECK(t.training_graph().plan.count(DType::BF16) > 0);
  const double before = t.evaluate(d).loss;
  std::vector<double> losses;
  t.on_step = [&](int64_t, double l) { losses.push_back(l); };
  t.fit(d, nullptr);
  const train::EvalResult after = t.evaluate(d);
  CHECK(losses.back() < 0.5 * losses.front());
  CHECK(after.loss < 0.5 * before);
  CHECK(after.accuracy > 0.8);
}

TEST_CASE("amp: a forward pass that overflows FP16 skips its step; one that always does stops the run") {
  Graph model = wide_linear();
  train::Dataset data = regression_data(64 * 4, 11);
  float* x = data.inputs.data<float>();
  for (int64_t i = 64 * kIn; i < 2 * 64 * kIn; ++i) x[i] = 1e30f;  // batch 2: Inf once cast to FP16
  train::TrainerConfig cfg = regression_config(DType::F16, train::LossScaleMode::Dynamic);
  cfg.max_steps = 4;
  train::Trainer t(model, cfg);
  std::vector<double> losses;
  t.on_step = [&](int64_t, double l) { losses.push_back(l); };
  t.fit(data, nullptr);
  REQUIRE(losses.size() == 4);
  CHECK_FALSE(std::isfinite(losses[1]));
  CHECK(std::isfinite(losses[3]));
  CHECK(t.loss_scaler().state().skipped_steps == 1);
  CHECK(t.optimizer_step() == 3);
  for (int64_t i = 0; i < t.state().at("W").numel(); ++i)
    REQUIRE(std::isfinite(t.state().at("W").data<float>()[i]));

  // Every batch overflows: the scale cannot help a forward pass, so training stops with the reason.
  for (int64_t i = 0; i < data.inputs.numel(); ++i) x[i] = 1e30f;
  cfg.max_steps = 200;
  cfg.epochs = 100;
  train::Trainer u(model, cfg);
  CHECK_THROWS_WITH_AS(u.fit(data, nullptr), doctest::Contains("the forward pass overflows"), Error);
  CHECK(u.step() == 49);  // the 50th non-finite loss in a row throws

  // Without loss scaling the first non-finite loss stops the run: here at step 2, after the
  // first update (1e30 inputs give huge gradients), so the learning rate is blamed.
  train::TrainerConfig plain = regression_config(DType::F32, train::LossScaleMode::None);
  plain.max_steps = 4;
  train::Trainer v(model, plain);
  CHECK_THROWS_WITH_AS(v.fit(data, nullptr), doctest::Contains("learning rate too high?"), Error);
  CHECK(v.step() < 4);
  // Targets near FLT_MAX (finite, so the data check lets them through): their square overflows
  // at step 1, before any update (W starts at 0); the data is blamed, not the learning rate.
  for (int64_t i = 0; i < data.targets.numel(); ++i) data.targets.data<float>()[i] = 3e38f;
  train::Trainer w(model, plain);
  CHECK_THROWS_WITH_AS(w.fit(data, nullptr),
                       doctest::Contains("at step 1, before any update changed the weights: the "
                                         "model's output or the targets are not finite"),
                       Error);
  CHECK(w.step() == 0);
}
