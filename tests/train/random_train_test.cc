// Training through a random generator: a VAE-like autoencoder whose latent code is sampled with
// the reparameterisation trick, z = mu + exp(0.5·logvar)·eps with eps = RandomNormalLike(mu)
// (what torch.randn_like exports to). The noise is a constant for the step (no gradient into the
// generator, train/autodiff/grads/shape.cc); mu's and logvar's weights train through Add, Mul and
// Exp. The Trainer lowers the reconstruction loss (MSE against the input), a fixed draw gives a
// finite-difference check of every parameter's gradient (tests/cli/random_cli_test.cc: the CLI).
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "fp16_fit.h"
#include "train/trainer.h"

using namespace oat;

namespace {

constexpr int64_t kIn = 8, kLatent = 4;

Node node(const std::string& name, const std::string& op, std::vector<std::string> in,
          const std::string& out, std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.op = op_from_name(op);
  n.opset = 13;
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

// x [batch, 8] -> mu, logvar = Gemm(x) [batch, 4] -> z = mu + exp(0.5 logvar) * eps -> Gemm -> y.
// With `noise` empty, eps = RandomNormalLike(mu, seed 1); else eps is that graph input.
Graph vae(bool noise_input = false) {
  std::mt19937 rng(3);
  Graph g;
  g.name = "vae";
  g.opsets[""] = 13;
  Dim batch;
  batch.param = "batch";
  g.inputs.push_back(info("x", {batch, Dim{kIn, ""}}));
  g.initializers["Wmu"] = test::random_f32({kIn, kLatent}, 0.4f, rng);
  g.initializers["bmu"] = Tensor::zeros(DType::F32, {kLatent});
  g.initializers["Wlv"] = test::random_f32({kIn, kLatent}, 0.4f, rng);
  g.initializers["blv"] = Tensor::zeros(DType::F32, {kLatent});
  g.initializers["Wd"] = test::random_f32({kLatent, kIn}, 0.4f, rng);
  g.initializers["bd"] = Tensor::zeros(DType::F32, {kIn});
  g.initializers["half"] = Tensor::scalar<float>(0.5f);
  g.nodes.push_back(node("enc_mu", "Gemm", {"x", "Wmu", "bmu"}, "mu"));
  g.nodes.push_back(node("enc_lv", "Gemm", {"x", "Wlv", "blv"}, "logvar"));
  g.nodes.push_back(node("half_lv", "Mul", {"logvar", "half"}, "hlv"));
  g.nodes.push_back(node("sigma", "Exp", {"hlv"}, "sigma"));
  if (noise_input) {
    g.inputs.push_back(info("eps", {batch, Dim{kLatent, ""}}));
  } else {
    Attribute seed;
    seed.kind = Attribute::Kind::Float;
    seed.f = 1.0f;
    g.nodes.push_back(node("noise", "RandomNormalLike", {"mu"}, "eps", {{"seed", seed}}));
  }
  g.nodes.push_back(node("scale_noise", "Mul", {"sigma", "eps"}, "se"));
  g.nodes.push_back(node("sample", "Add", {"mu", "se"}, "z"));
  g.nodes.push_back(node("dec", "Gemm", {"z", "Wd", "bd"}, "y"));
  g.outputs.push_back(info("y", {batch, Dim{kIn, ""}}));
  return g;
}

// Inputs on a 2-dimensional subspace (an autoencoder with 4 latents can reconstruct them).
train::Dataset data(int64_t n) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.f, 1.f);
  Tensor basis = test::random_f32({2, kIn}, 1.0f, rng);
  Tensor x(DType::F32, {n, kIn});
  for (int64_t b = 0; b < n; ++b) {
    const float a0 = g(rng), a1 = g(rng);
    for (int64_t i = 0; i < kIn; ++i)
      x.data<float>()[b * kIn + i] = a0 * basis.data<float>()[i] + a1 * basis.data<float>()[kIn + i];
  }
  return train::Dataset{x, x};
}

}  // namespace

TEST_CASE("a VAE-like graph with RandomNormalLike trains: the loss falls, logvar's weights move") {
  train::TrainerConfig cfg;
  cfg.batch = 32;
  cfg.epochs = 30;
  cfg.lr = 0.01;
  cfg.progress = false;
  cfg.graph.loss = train::LossKind::MSE;
  const Graph g = vae();
  train::Trainer t(g, cfg);
  const train::Dataset d = data(512);
  const test::FitLosses f = test::fit_losses(t, d);
  INFO("first ", f.first, " last ", f.last);
  CHECK(f.last < 0.5 * f.first);
  // The noise path trains: logvar's weights get gradients through exp(0.5 logvar) * eps.
  const Tensor& wlv = t.state().at("Wlv");
  const Tensor& wlv0 = g.initializers.at("Wlv");
  double moved = 0;
  for (int64_t i = 0; i < wlv.numel(); ++i)
    moved += std::abs(wlv.data<float>()[i] - wlv0.data<float>()[i]);
  CHECK(moved > 1e-3);
}

TEST_CASE("the training graph has no gradient node for the generator; the noise is a constant") {
  train::TrainingGraphOptions o;
  o.loss = train::LossKind::MSE;
  const train::TrainingGraph tg = train::build_training_graph(vae(), o);
  int generators = 0;
  for (const Node& n : tg.graph.nodes) {
    if (n.op == OpId::RandomNormalLike) ++generators;
    // No value derived from eps's name (eps_grad: what a gradient of eps would be called).
    for (const auto& out : n.outputs) CHECK((out == "eps" || out.find("eps_") != 0));
  }
  CHECK(generators == 1);
}

TEST_CASE("with a fixed draw the gradients of every parameter match finite differences") {
  // The noise as a graph input (the draw fixed): the loss is a deterministic function of the
  // parameters, and the Trainer's one SGD step on one batch moves each parameter by -lr·dL/dp.
  // dL/dp from central differences of the loss evaluated by a forward run.
  const Graph g = vae(/*noise_input=*/true);
  std::mt19937 rng(11);
  const train::Dataset d0 = data(8);
  train::Dataset d = d0;
  d.extra["eps"] = test::random_f32({8, kLatent}, 1.0f, rng);
  auto loss_at = [&](const Graph& gg) {
    train::TrainerConfig cfg;
    cfg.batch = 8;
    cfg.progress = false;
    cfg.graph.loss = train::LossKind::MSE;
    train::Trainer t(gg, cfg);
    return t.evaluate(d).loss;
  };
  train::TrainerConfig cfg;
  cfg.batch = 8;
  cfg.epochs = 1;
  cfg.lr = 1e-3;
  cfg.shuffle = false;
  cfg.progress = false;
  cfg.graph.loss = train::LossKind::MSE;
  cfg.graph.optimizer.kind = train::OptimizerKind::SGD;
  train::Trainer t(g, cfg);
  t.fit(d, nullptr);
  for (const char* p : {"Wmu", "bmu", "Wlv", "blv", "Wd"}) {
    CAPTURE(p);
    const Tensor& before = g.initializers.at(p);
    const Tensor& after = t.state().at(p);
    for (int64_t i = 0; i < before.numel(); i += 3) {
      CAPTURE(i);
      const double grad = (before.data<float>()[i] - after.data<float>()[i]) / cfg.lr;
      const double h = 1e-2;
      Graph plus = g, minus = g;  // Tensor copies share storage: give p its own
      plus.initializers[p] = before.clone();
      minus.initializers[p] = before.clone();
      plus.initializers[p].data<float>()[i] += static_cast<float>(h);
      minus.initializers[p].data<float>()[i] -= static_cast<float>(h);
      const double fd = (loss_at(plus) - loss_at(minus)) / (2 * h);
      CHECK(grad == doctest::Approx(fd).epsilon(0.03).scale(1e-2));
    }
  }
}
