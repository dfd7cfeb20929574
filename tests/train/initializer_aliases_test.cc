// Untying torch's merged parameters (train/initializer_aliases.h): `b = Identity(a)` of a float
// initializer trains as a separate parameter, as PyTorch trained it, and is written back as an
// initializer of its own.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "convert/graph_build.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"
#include "runtime/executor.h"
#include "train/initializer_aliases.h"
#include "train/trainer.h"

using namespace oat;
using oat_test::GraphBuild;
namespace fs = std::filesystem;

namespace {

Tensor random_tensor(Shape shape, unsigned seed, float scale = 0.5f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, scale);
  Tensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng);
  return t;
}

bool same_values(const Tensor& a, const Tensor& b) {
  const Tensor x = cast_tensor(a, DType::F32), y = cast_tensor(b, DType::F32);
  return x.shape() == y.shape() &&
         std::equal(x.data<float>(), x.data<float>() + x.numel(), y.data<float>());
}

bool has_node_writing(const Graph& g, const std::string& value) {
  for (const Node& n : g.nodes)
    for (const auto& o : n.outputs)
      if (o == value) return true;
  return false;
}

// x [N, 4] → Gemm(W1, b1) → Relu → Gemm(W2, b2) → Relu → Gemm(Wo, bo) → logits [N, 3]. With
// `aliased`, W2 and b2 are Identity nodes of W1 and b1 (what torch.onnx writes for two layers
// that start equal); otherwise they are initializers holding the same values.
Graph two_equal_layers(bool aliased) {
  GraphBuild b;
  b.g.opsets[""] = 13;
  b.input("x", DType::F32, {8, 4});
  b.init("W1", random_tensor({4, 4}, 1)).init("b1", random_tensor({4}, 2));
  b.init("Wo", random_tensor({4, 3}, 3)).init("bo", random_tensor({3}, 4));
  if (aliased) {
    b.node("Identity", {"W1"}, {"W2"}, "alias_W2");
    b.node("Identity", {"b1"}, {"b2"}, "alias_b2");
  } else {
    b.init("W2", b.g.initializers.at("W1").clone()).init("b2", b.g.initializers.at("b1").clone());
  }
  b.node("Gemm", {"x", "W1", "b1"}, {"h1"}, "fc1");
  b.node("Relu", {"h1"}, {"r1"}, "relu1");
  b.node("Gemm", {"r1", "W2", "b2"}, {"h2"}, "fc2");
  b.node("Relu", {"h2"}, {"r2"}, "relu2");
  b.node("Gemm", {"r2", "Wo", "bo"}, {"logits"}, "head");
  b.output("logits");
  b.g.outputs.back().shape = std::vector<Dim>{Dim{8, ""}, Dim{3, ""}};  // the checker wants one
  return b.g;
}

train::Dataset data(int64_t n, unsigned seed) {
  train::Dataset d{random_tensor({n, 4}, seed, 1.0f), Tensor(DType::I64, {n})};
  for (int64_t i = 0; i < n; ++i) d.targets.data<int64_t>()[i] = i % 3;
  return d;
}

train::TrainerConfig sgd_config() {
  train::TrainerConfig cfg;
  cfg.batch = 8;
  cfg.epochs = 1;
  cfg.lr = 0.5;
  cfg.shuffle = false;
  cfg.progress = false;
  cfg.graph.optimizer.kind = train::OptimizerKind::SGD;
  cfg.graph.optimizer.momentum = 0.0;
  return cfg;
}

std::string tmp_path(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("oat_aliases_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

}  // namespace

TEST_CASE("untie_initializer_aliases: an Identity of a float initializer becomes a copy; chains too") {
  GraphBuild b;
  b.input("x", DType::F32, {2, 4});
  b.input("over", DType::F32, {4, 4});  // a graph input: the caller may feed it, never untied
  b.init("W", random_tensor({4, 4}, 5)).init("b", random_tensor({4}, 6));
  b.init("k", Tensor::scalar<int64_t>(3));
  b.node("Identity", {"W"}, {"W2"}, "alias");
  b.node("Identity", {"W2"}, {"W3"}, "alias_of_alias");
  b.node("Identity", {"k"}, {"k2"}, "integer_alias");
  b.node("Identity", {"over"}, {"over2"}, "input_alias");
  b.node("Identity", {"b"}, {"b_out"}, "output_alias");
  b.node("MatMul", {"x", "W"}, {"y1"}, "m1");
  b.node("MatMul", {"y1", "W2"}, {"y2"}, "m2");
  b.node("MatMul", {"y2", "W3"}, {"y3"}, "m3");
  b.node("MatMul", {"y3", "over2"}, {"y"}, "m4");
  b.output("y").output("b_out");

  std::vector<std::string> untied;
  const Graph g = train::untie_initializer_aliases(b.g, &untied);
  CHECK(untied == std::vector<std::string>{"W2", "W3"});
  CHECK(g.nodes.size() == b.g.nodes.size() - 2);
  CHECK(!has_node_writing(g, "W2"));
  CHECK(!has_node_writing(g, "W3"));
  CHECK(has_node_writing(g, "k2"));     // integer: nothing to train
  CHECK(has_node_writing(g, "over2"));  // of a graph input
  CHECK(has_node_writing(g, "b_out"));  // a graph output stays computed
  for (const char* name : {"W2", "W3"}) {
    REQUIRE(g.initializers.count(name));
    CHECK(same_values(g.initializers.at(name), b.g.initializers.at("W")));
    CHECK(g.initializers.at(name).storage() != b.g.initializers.at("W").storage());
  }
  // Same function before and after.
  const Tensor x = random_tensor({2, 4}, 7), over = random_tensor({4, 4}, 8);
  const auto before = Executor(b.g).run({{"x", x}, {"over", over}});
  const auto after = Executor(g).run({{"x", x}, {"over", over}});
  CHECK(same_values(before[0], after[0]));
  // Nothing left to untie.
  std::vector<std::string> again;
  train::untie_initializer_aliases(g, &again);
  CHECK(again.empty());
}

TEST_CASE("training a model with aliased parameters equals training them as separate ones (PyTorch)") {
  const std::string in = tmp_path("aliased.onnx"), out = tmp_path("aliased.trained.onnx");
  onnx_loader::save_graph(two_equal_layers(true), in);
  onnx_loader::Model aliased = onnx_loader::load_model(in);
  REQUIRE(has_node_writing(aliased.graph, "W2"));

  train::Trainer ta(aliased.graph, sgd_config());
  ta.fit(data(24, 9), nullptr);
  train::Trainer tb(two_equal_layers(false), sgd_config());
  tb.fit(data(24, 9), nullptr);
  REQUIRE(ta.step() == 3);

  const auto a = ta.model_initializers(), b = tb.model_initializers();
  CHECK(a.size() == 6);  // W1 b1 W2 b2 Wo bo: the aliases are parameters of their own
  REQUIRE(a.size() == b.size());
  for (const auto& [name, t] : b) {
    REQUIRE_MESSAGE(a.count(name), name);
    CHECK_MESSAGE(same_values(a.at(name), t), name, " differs from training separate parameters");
  }
  // They started equal and trained apart (tied, they would have stayed equal).
  CHECK(!same_values(a.at("W1"), a.at("W2")));
  CHECK(!same_values(a.at("b1"), a.at("b2")));

  // Export: the Identity nodes become initializers holding the trained values.
  onnx_loader::save_model(aliased, a, out);
  onnx_loader::Model back = onnx_loader::load_model(out);
  CHECK(!has_node_writing(back.graph, "W2"));
  CHECK(!has_node_writing(back.graph, "b2"));
  CHECK(back.graph.nodes.size() == aliased.graph.nodes.size() - 2);
  for (const auto& [name, t] : a) {
    REQUIRE_MESSAGE(back.graph.initializers.count(name), name);
    CHECK_MESSAGE(same_values(back.graph.initializers.at(name), t), name);
  }
  // A name that is neither an initializer nor an Identity alias is still refused.
  CHECK_THROWS_WITH_AS(onnx_loader::save_model(aliased, {{"h1", a.at("b1")}}, out),
                       doctest::Contains("no initializer named 'h1'"), Error);
  fs::remove_all(fs::path(in).parent_path());
}

TEST_CASE("a BatchNormalization whose running statistics are aliases of parameters trains") {
  // torch.onnx's eval-mode DenseNet: running_mean = Identity(bias) (both zeros) and
  // running_var = Identity(scale) (both ones).
  GraphBuild b;
  b.g.opsets[""] = 15;
  b.input("x", DType::F32, {4, 2, 3, 3});
  Tensor ones(DType::F32, {2});
  ones.data<float>()[0] = ones.data<float>()[1] = 1.0f;
  b.init("scale", ones).init("bias", Tensor::zeros(DType::F32, {2}));
  b.init("W", random_tensor({2, 3}, 10)).init("c", random_tensor({3}, 11));
  b.node("Identity", {"bias"}, {"mean"}, "alias_mean");
  b.node("Identity", {"scale"}, {"var"}, "alias_var");
  b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"bn"}, "bn").opset = 15;
  b.node("GlobalAveragePool", {"bn"}, {"gap"}, "gap");
  b.node("Flatten", {"gap"}, {"f"}, "flatten");
  b.node("Gemm", {"f", "W", "c"}, {"logits"}, "head");
  b.output("logits");

  train::Dataset d{random_tensor({8, 2, 3, 3}, 12, 1.0f), Tensor(DType::I64, {8})};
  for (int64_t i = 0; i < 8; ++i) d.targets.data<int64_t>()[i] = i % 3;
  train::TrainerConfig cfg = sgd_config();
  cfg.batch = 4;
  train::Trainer t(b.g, cfg);
  t.fit(d, nullptr);
  const auto& tg = t.training_graph();
  CHECK(std::find(tg.bn_stats.begin(), tg.bn_stats.end(), "mean") != tg.bn_stats.end());
  CHECK(std::find(tg.bn_stats.begin(), tg.bn_stats.end(), "var") != tg.bn_stats.end());
  const auto w = t.model_initializers();
  // The statistics follow the batches, the parameters their gradients: no longer equal.
  CHECK(!same_values(w.at("mean"), w.at("bias")));
  CHECK(!same_values(w.at("var"), w.at("scale")));
  CHECK(!same_values(w.at("mean"), Tensor::zeros(DType::F32, {2})));
}
