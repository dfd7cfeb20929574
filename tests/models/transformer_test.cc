// The zoo's transformer encoder: PyTorch's parameter names and count, the same logits as its
// PyTorch twin (bench/zoo_torch.py, nn.TransformerEncoder), and training in fp32 and fp16.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include "models/zoo.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"
#include "train/trainer.h"
#include "models/torch_twin.h"

using namespace oat;
namespace fs = std::filesystem;

namespace {

int64_t param_count(const Graph& g) {
  int64_t n = 0;
  for (const auto& [name, t] : g.initializers)
    if (is_floating(t.dtype())) n += t.numel();
  return n;
}

// 8 fixed sequences (uniform [0, 1), like pixel rows), labels 0..7.
train::Dataset memorise_batch(const models::TransformerOptions& o) {
  train::Dataset d;
  d.inputs = Tensor(DType::F32, {8, o.seq_len, o.d_in});
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t i = 0; i < d.inputs.numel(); ++i) d.inputs.data<float>()[i] = u(rng);
  d.targets = Tensor(DType::I64, {8});
  for (int64_t i = 0; i < 8; ++i) d.targets.data<int64_t>()[i] = i;
  return d;
}

// `steps` Adam steps (lr 1e-3) on that one batch; `losses` gets the loss of each step.
std::unique_ptr<train::Trainer> train_steps(const Graph& g, const train::Dataset& data,
                                            DType precision, int64_t steps,
                                            std::vector<double>& losses) {
  train::TrainerConfig cfg;
  cfg.max_steps = steps;
  cfg.epochs = steps;
  cfg.batch = 8;
  cfg.lr = 1e-3;
  cfg.shuffle = false;
  cfg.progress = false;
  cfg.graph.precision = precision;
  if (precision == DType::F16) cfg.loss_scale.mode = train::LossScaleMode::Dynamic;
  auto t = std::make_unique<train::Trainer>(g, cfg);
  t->on_step = [&losses](int64_t, double loss) { losses.push_back(loss); };
  t->fit(data, nullptr);
  return t;
}

}  // namespace

TEST_CASE("zoo: transformer has nn.TransformerEncoder's parameter names, shapes and count") {
  Graph g = models::zoo_model("transformer", 0);
  // sum(p.numel() for p in bench/zoo_torch.py's Transformer().parameters())
  CHECK(param_count(g) == 405130);
  CHECK(g.inputs[0].shape_string() == "[batch, 28, 28]");
  CHECK(g.outputs[0].shape_string() == "[batch, 10]");
  CHECK(g.initializers.at("input_proj.weight").shape() == Shape{128, 28});
  CHECK(g.initializers.at("pos_embedding").shape() == Shape{28, 128});
  CHECK(g.initializers.at("encoder.layers.0.self_attn.in_proj_weight").shape() == Shape{384, 128});
  CHECK(g.initializers.at("encoder.layers.1.self_attn.out_proj.bias").shape() == Shape{128});
  CHECK(g.initializers.at("encoder.layers.1.linear1.weight").shape() == Shape{512, 128});
  CHECK(g.initializers.at("encoder.layers.1.norm2.weight").shape() == Shape{128});
  CHECK(g.initializers.at("fc.weight").shape() == Shape{10, 128});
  // PyTorch's initialisation: in_proj xavier_uniform_ (bound √(6 / (128 + 384)) = 0.108), its
  // bias 0, LayerNorm 1 / 0; deterministic by seed.
  const Tensor& w = g.initializers.at("encoder.layers.0.self_attn.in_proj_weight");
  float hi = 0;
  for (int64_t i = 0; i < w.numel(); ++i) hi = std::max(hi, std::abs(w.data<float>()[i]));
  CHECK(hi <= 0.10826f);
  CHECK(hi > 0.105f);
  CHECK(g.initializers.at("encoder.layers.0.self_attn.in_proj_bias").to_float_vector() ==
        std::vector<float>(384, 0.0f));
  CHECK(g.initializers.at("encoder.layers.0.norm1.weight").to_float_vector() ==
        std::vector<float>(128, 1.0f));
  Graph same = models::zoo_model("transformer", 0), other = models::zoo_model("transformer", 1);
  CHECK(same.initializers.at("fc.weight").to_float_vector() == g.initializers.at("fc.weight").to_float_vector());
  CHECK(other.initializers.at("fc.weight").to_float_vector() != g.initializers.at("fc.weight").to_float_vector());

  models::TransformerOptions o;
  o.heads = 3;
  CHECK_THROWS_WITH_AS(models::transformer(0, o), doctest::Contains("not a multiple of heads"), Error);
  o.heads = 0;
  CHECK_THROWS_WITH_AS(models::transformer(0, o), doctest::Contains("must be positive"), Error);
}

// Our initializers (LayerNorm and the attention biases made random, so that a mis-wired one
// shows) loaded by name into the PyTorch twin give the same logits. Needs PyTorch (Debian's
// python3-torch, or OAT_TORCH_PYTHON); without it this test fails rather than skips, as the
// ResNet one does.
TEST_CASE("zoo: transformer computes what its PyTorch twin (nn.TransformerEncoder) computes") {
  const fs::path dir = fs::temp_directory_path() / ("oat_zoo_tf_" + std::to_string(::getpid()));
  fs::create_directories(dir / "w");
  Graph g = models::zoo_model("transformer", 5);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (auto& [name, t] : g.initializers) {
    if (!is_floating(t.dtype())) continue;  // Reshape shapes
    if (name.find("norm") != std::string::npos || name.find("bias") != std::string::npos) {
      const bool scale = name.find("norm") != std::string::npos && name.find(".weight") != std::string::npos;
      Tensor r(DType::F32, t.shape());
      for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] = scale ? 1.0f + u(rng) : u(rng);
      t = r;
    }
    onnx_loader::write_npy(t, (dir / "w" / (name + ".npy")).string());
  }
  Tensor x(DType::F32, {3, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 2.0f * u(rng);
  oat_test::check_against_torch(g, x, dir, R"(import os, sys
import numpy as np, torch
sys.path.insert(0, sys.argv[2])
from zoo_torch import zoo_model, load_zoo_weights
d = sys.argv[1]
w = {f[:-4]: np.load(os.path.join(d, "w", f)) for f in os.listdir(os.path.join(d, "w"))}
m = load_zoo_weights(zoo_model("transformer"), w).train()  # dropout 0: train = eval arithmetic
with torch.no_grad():
    y = m(torch.from_numpy(np.load(os.path.join(d, "x.npy"))))
np.save(os.path.join(d, "y.npy"), y.numpy())
)",
                                cat(dir.string(), " ", OAT_SOURCE_DIR, "/bench"),
                                "transformer vs PyTorch");
}

TEST_CASE("zoo: transformer trains in fp32: the loss falls within a few Adam steps") {
  Graph g = models::zoo_model("transformer", 0);
  const train::Dataset data = memorise_batch(models::TransformerOptions{});
  std::vector<double> losses;
  const auto t = train_steps(g, data, DType::F32, 16, losses);
  REQUIRE(losses.size() == 16);
  MESSAGE("transformer fp32 losses: " << losses[0] << " ... " << losses[7] << " ... " << losses[15]);
  // Every parameter trains: input_proj (2), pos_embedding, 12 per layer (in_proj, out_proj,
  // linear1, linear2, norm1, norm2: weight and bias each), fc (2).
  CHECK(t->training_graph().params.size() == 3 + 2 * 12 + 2);
  // The PyTorch twin, same batch (bench/zoo_torch.py): 2.43 -> 1.78 after 8 steps, 0.44 after 16.
  CHECK(losses[0] > 1.5);
  CHECK(losses[15] < 0.5 * losses[0]);
  for (double l : losses) CHECK(std::isfinite(l));
}

TEST_CASE("zoo: transformer trains in fp16 (dynamic loss scaling) and bf16") {
  Graph g = models::zoo_model("transformer", 0);
  const train::Dataset data = memorise_batch(models::TransformerOptions{});
  for (DType p : {DType::F16, DType::BF16}) {
    CAPTURE(std::string(dtype_name(p)));
    std::vector<double> losses;
    const auto t = train_steps(g, data, p, 16, losses);
    REQUIRE(losses.size() == 16);
    const std::string name = dtype_name(p);
    MESSAGE("transformer " << name << " losses: " << losses[0] << " ... " << losses[15]
                           << ", optimizer steps " << t->optimizer_step());
    for (double l : losses) CHECK(std::isfinite(l));
    CHECK(t->optimizer_step() >= 14);  // at most a couple of overflow-skipped steps
    CHECK(losses[15] < 0.7 * losses[0]);
    // The plan: the projections and attention products in the low precision, Softmax and
    // LayerNormalization (deny list) in FP32.
    const convert::PrecisionPlan& plan = t->training_graph().plan;
    int low_matmuls = 0, fp32_softmax = 0, fp32_norms = 0;
    for (const convert::NodePrecision& n : plan.nodes) {
      if ((n.op_type == "MatMul" || n.op_type == "Gemm") && n.dtype == p) ++low_matmuls;
      if (n.op_type == "Softmax" && n.dtype == DType::F32) ++fp32_softmax;
      if (n.op_type == "LayerNormalization" && n.dtype == DType::F32) ++fp32_norms;
    }
    CHECK(low_matmuls == 2 + 2 * 8);  // input_proj, fc; per layer q/k/v/out_proj, 2 attention, 2 FFN
    CHECK(fp32_softmax == 2);
    CHECK(fp32_norms == 4);
  }
}
