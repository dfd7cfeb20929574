// End-to-end training on the CPU reference path with the zoo's MLP on synthetic data.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "models/zoo.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"
#include "train/trainer.h"

using namespace oat;
namespace fs = std::filesystem;

namespace {

// Ten classes, each a fixed random 28×28 prototype plus noise: separable, so a working trainer
// must reach high accuracy in a few hundred steps.
train::Dataset synthetic(int64_t n, uint64_t seed) {
  std::mt19937 proto_rng(42), rng(static_cast<unsigned>(seed));
  std::vector<std::vector<float>> protos(10, std::vector<float>(784));
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (auto& p : protos)
    for (auto& v : p) v = u(proto_rng);
  train::Dataset d{Tensor(DType::F32, {n, 1, 28, 28}), Tensor(DType::I64, {n})};
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = static_cast<int64_t>(rng() % 10);
    d.targets.data<int64_t>()[i] = c;
    for (int j = 0; j < 784; ++j) d.inputs.data<float>()[i * 784 + j] = protos[c][j] + noise(rng);
  }
  return d;
}

train::TrainerConfig quiet_config() {
  train::TrainerConfig cfg;
  cfg.batch = 32;
  cfg.lr = 1e-3;
  cfg.progress = false;
  return cfg;
}

std::string tmp_path(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("oat_trainer_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

}  // namespace

TEST_CASE("trainer: the MLP learns a separable problem and the loss falls") {
  Graph model = models::mlp(3);
  train::Dataset tr = synthetic(640, 1), va = synthetic(320, 2);
  train::TrainerConfig cfg = quiet_config();
  cfg.epochs = 2;
  train::Trainer t(model, cfg);
  std::vector<double> losses;
  t.on_step = [&](int64_t, double l) { losses.push_back(l); };
  const train::EvalResult before = t.evaluate(va);
  t.fit(tr, &va);
  const train::EvalResult after = t.evaluate(va);
  REQUIRE(losses.size() == 40);
  CHECK(losses.back() < 0.5 * losses.front());
  CHECK(after.loss < before.loss);
  CHECK(after.accuracy > 0.9);
}

TEST_CASE("trainer: --freeze keeps matching parameters fixed") {
  Graph model = models::mlp(3);
  train::TrainerConfig cfg = quiet_config();
  cfg.max_steps = 3;
  cfg.graph.freeze = {"fc1.*"};
  train::Trainer t(model, cfg);
  CHECK(t.training_graph().frozen.size() == 2);
  t.fit(synthetic(96, 1), nullptr);
  auto w = t.model_initializers();
  CHECK(w.count("fc1.weight") == 0);  // not trained, so not exported as changed
  const Tensor& before = model.initializers.at("fc2.weight");
  const Tensor& after = w.at("fc2.weight");
  CHECK_FALSE(std::equal(before.data<float>(), before.data<float>() + before.numel(), after.data<float>()));
}

TEST_CASE("trainer: resuming from a checkpoint gives the same weights as training straight through") {
  Graph model = models::mlp(5);
  train::Dataset tr = synthetic(128, 3);  // 4 steps per epoch at batch 32
  train::TrainerConfig cfg = quiet_config();
  cfg.epochs = 2;
  train::Trainer straight(model, cfg);
  straight.fit(tr, nullptr);

  const std::string ckpt = tmp_path("ckpt");
  train::TrainerConfig first = cfg;
  first.max_steps = 4;
  first.checkpoint_dir = ckpt;
  train::Trainer a(model, first);
  a.fit(tr, nullptr);
  REQUIRE(fs::exists(fs::path(ckpt) / "checkpoint.json"));

  train::TrainerConfig second = cfg;
  second.checkpoint_dir = ckpt;
  second.resume = true;
  train::Trainer b(model, second);
  b.fit(tr, nullptr);
  CHECK(b.step() == 8);
  auto ws = straight.model_initializers(), wb = b.model_initializers();
  for (const auto& [name, t] : ws) {
    CAPTURE(name);
    const Tensor& u = wb.at(name);
    double worst = 0;
    for (int64_t i = 0; i < t.numel(); ++i)
      worst = std::max(worst, static_cast<double>(std::abs(t.data<float>()[i] - u.data<float>()[i])));
    CHECK(worst < 1e-6);
  }
}

TEST_CASE("trainer: data that does not fit the model is refused with the reason") {
  Graph model = models::mlp(0);
  train::TrainerConfig cfg = quiet_config();
  train::Trainer t(model, cfg);
  train::Dataset wrong_shape{Tensor::zeros(DType::F32, {4, 3, 10}), Tensor::zeros(DType::I64, {4})};
  CHECK_THROWS_WITH_AS(t.fit(wrong_shape, nullptr), doctest::Contains("the model's input takes [1, 28, 28]"), Error);
  train::Dataset bad_label{Tensor::zeros(DType::F32, {2, 784}), Tensor::from_vector<int64_t>({2}, {3, 10})};
  CHECK_THROWS_WITH_AS(t.fit(bad_label, nullptr), doctest::Contains("label 10 at sample 1 is outside [0, 10)"), Error);
  train::Dataset mismatch{Tensor::zeros(DType::F32, {3, 784}), Tensor::zeros(DType::I64, {2})};
  CHECK_THROWS_WITH_AS(t.fit(mismatch, nullptr), doctest::Contains("3 inputs but 2 targets"), Error);
}

TEST_CASE("trainer: the trained model exports into the original file's graph and loads back") {
  const std::string in = tmp_path("mlp.onnx"), out = tmp_path("mlp.trained.onnx");
  onnx_loader::save_graph(models::mlp(1), in);
  onnx_loader::Model m = onnx_loader::load_model(in);
  train::TrainerConfig cfg = quiet_config();
  cfg.max_steps = 2;
  train::Trainer t(m.graph, cfg);
  t.fit(synthetic(64, 1), nullptr);
  onnx_loader::save_model(m, t.model_initializers(), out);
  onnx_loader::Model back = onnx_loader::load_model(out);
  CHECK(back.graph.nodes.size() == m.graph.nodes.size());
  const Tensor& w = back.graph.initializers.at("fc3.weight");
  const Tensor& trained = t.model_initializers().at("fc3.weight");
  CHECK(std::equal(w.data<float>(), w.data<float>() + w.numel(), trained.data<float>()));
  fs::remove_all(fs::path(in).parent_path());
}

TEST_CASE("evaluate_model: weights replace the initializers (baked into a graph copy, not fed)") {
  Graph model = models::mlp(3);
  train::Dataset va = synthetic(70, 2);  // 3 batches of 32, the last partial
  const train::BatchLayout layout = train::layout_for(model, train::LossKind::CrossEntropy);
  // Trained-looking weights: every initializer scaled by 0.5.
  std::map<std::string, Tensor> weights;
  Graph baked = model;
  for (auto& [name, t] : baked.initializers) {
    if (!is_floating(t.dtype())) continue;
    Tensor s = cast_tensor(t, DType::F32).clone();
    for (int64_t i = 0; i < s.numel(); ++i) s.data<float>()[i] *= 0.5f;
    weights[name] = s;
    t = s;
  }
  REQUIRE(!weights.empty());
  const train::EvalResult with = train::evaluate_model(model, weights, va, layout,
                                                       train::LossKind::CrossEntropy, 32);
  const train::EvalResult direct =
      train::evaluate_model(baked, {}, va, layout, train::LossKind::CrossEntropy, 32);
  const train::EvalResult original =
      train::evaluate_model(model, {}, va, layout, train::LossKind::CrossEntropy, 32);
  CHECK(with.samples == 70);
  CHECK(with.loss == direct.loss);
  CHECK(with.accuracy == direct.accuracy);
  CHECK(with.loss != original.loss);
  // The caller's model keeps its own initializers.
  for (const auto& [name, t] : weights)
    CHECK(model.initializers.at(name).storage() != t.storage());
}
