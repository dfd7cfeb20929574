// The trainer's own graph inputs (lr, step, targets/labels, the loss) never take a name the model
// already uses: a model whose initializers are called "lr" and "step" and whose Reshape shape is
// called "targets" trains exactly as the same model with other names (before, the trainer's Adam
// step-count input "step" shadowed a model initializer of that name: an STFT's frame_step read 1).
#include <doctest/doctest.h>

#include <random>

#include "fp16_fit.h"
#include "node_builder.h"
#include "train/trainer.h"

using namespace oat;

namespace {

using oat_test::make_node;

// x [batch, 4] -> Gemm(W, b) [batch, 3] -> Reshape(shape = [-1, 3]) -> y.
Graph model(const std::string& w, const std::string& b, const std::string& shape) {
  std::mt19937 rng(5);
  Graph g;
  g.name = "names";
  g.opsets[""] = 13;
  Dim batch;
  batch.param = "batch";
  g.inputs.push_back(ValueInfo{"x", DType::F32, std::vector<Dim>{batch, Dim{4, ""}}});
  g.initializers[w] = test::random_f32({4, 3}, 0.5f, rng);
  g.initializers[b] = test::random_f32({3}, 0.5f, rng);
  g.initializers[shape] = Tensor::from_vector<int64_t>({2}, {-1, 3});
  g.nodes.push_back(make_node("fc", "Gemm", {"x", w, b}, "y0"));
  g.nodes.push_back(make_node("rs", "Reshape", {"y0", shape}, "y"));
  g.outputs.push_back(ValueInfo{"y", DType::F32, std::vector<Dim>{batch, Dim{3, ""}}});
  return g;
}

std::vector<double> losses(const Graph& g, const train::Dataset& d) {
  train::TrainerConfig cfg;
  cfg.batch = 8;
  cfg.epochs = 3;
  cfg.lr = 0.05;
  cfg.progress = false;
  cfg.graph.loss = train::LossKind::MSE;
  train::Trainer t(g, cfg);
  return test::fit_losses(t, d).steps;
}

}  // namespace

TEST_CASE("model values named lr, step and targets do not collide with the trainer's inputs") {
  std::mt19937 rng(9);
  const train::Dataset d{test::random_f32({32, 4}, 1.0f, rng), test::random_f32({32, 3}, 1.0f, rng)};
  const std::vector<double> plain = losses(model("W", "B", "shape"), d);
  const std::vector<double> clash = losses(model("lr", "step", "targets"), d);
  REQUIRE(plain.size() == 12);
  CHECK(clash == plain);
  CHECK(plain.back() < plain.front());
  train::TrainingGraphOptions o;
  o.loss = train::LossKind::MSE;
  const train::TrainingGraph tg = train::build_training_graph(model("lr", "step", "targets"), o);
  CHECK(tg.lr != "lr");
  CHECK(tg.step != "step");
  CHECK(tg.target != "targets");
}
