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
#include "train/check.h"
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

namespace {

// tf2onnx's merge_duplication at a Keras model's initial values: two BatchNormalization layers
// read one initializer of ones as scale and running var, and one of zeros as bias and running
// mean; the head's zero bias is the zeros too. `producer` is the model's producer_name.
Graph merged_batch_norms(const std::string& producer) {
  GraphBuild b;
  b.g.opsets[""] = 15;
  b.g.producer = producer;
  b.input("x", DType::F32, {4, 2, 3, 3});
  Tensor ones(DType::F32, {2});
  ones.data<float>()[0] = ones.data<float>()[1] = 1.0f;
  b.init("ones", ones).init("zeros", Tensor::zeros(DType::F32, {2}));
  b.init("W", random_tensor({2, 2}, 10));
  b.node("BatchNormalization", {"x", "ones", "zeros", "zeros", "ones"}, {"bn0"}, "bn_0").opset = 15;
  b.node("Relu", {"bn0"}, {"r0"}, "relu");
  b.node("BatchNormalization", {"r0", "ones", "zeros", "zeros", "ones"}, {"bn1"}, "bn_1").opset = 15;
  b.node("GlobalAveragePool", {"bn1"}, {"gap"}, "gap");
  b.node("Flatten", {"gap"}, {"f"}, "flatten");
  b.node("MatMul", {"f", "W"}, {"m"}, "head");
  b.node("Add", {"m", "zeros"}, {"logits"}, "head_bias");
  b.output("logits");
  b.g.outputs.back().shape = std::vector<Dim>{Dim{4, ""}, Dim{2, ""}};
  return b.g;
}

const Node& node_named(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return n;
  FAIL("no node ", name);
  return g.nodes.front();
}

}  // namespace

TEST_CASE("merged reads (tf2onnx): every read of a constant-filled or statistic initializer gets its own copy") {
  std::vector<std::string> untied;
  const Graph g = train::untie_initializer_aliases(merged_batch_norms("tf2onnx"), &untied);
  // 'ones' is read 4 times, 'zeros' 5 times: all but the first read of each get a copy.
  CHECK(untied.size() == 3 + 4);
  const Node& bn0 = node_named(g, "bn_0");
  const Node& bn1 = node_named(g, "bn_1");
  CHECK(bn0.inputs[1] == "ones");
  CHECK(bn0.inputs[2] == "zeros");
  CHECK(bn0.inputs[3] == onnx_loader::untied_read_name("zeros", "bn_0", 3));
  CHECK(bn0.inputs[4] == onnx_loader::untied_read_name("ones", "bn_0", 4));
  CHECK(bn1.inputs[1] == onnx_loader::untied_read_name("ones", "bn_1", 1));
  CHECK(node_named(g, "head_bias").inputs[1] == onnx_loader::untied_read_name("zeros", "head_bias", 1));
  std::set<std::string> read;
  for (const Node& n : g.nodes)
    for (const auto& v : n.inputs)
      if (g.initializers.count(v) && v != "W") CHECK_MESSAGE(read.insert(v).second, v, " read twice");
  for (const auto& u : untied) CHECK(same_values(g.initializers.at(u), g.initializers.at(u.substr(0, u.find('@')))));
}

TEST_CASE("merged reads: a pytorch model keeps a shared constant-filled parameter shared, not a shared statistic") {
  std::vector<std::string> untied;
  const Graph g = train::untie_initializer_aliases(merged_batch_norms("pytorch"), &untied);
  // Both initializers are read as running statistics, so they are split all the same; torch
  // never writes that, but the statistics are state the step overwrites.
  CHECK(untied.size() == 7);
  // A plain shared read of a constant fill stays shared for pytorch (a truly shared module).
  GraphBuild b;
  b.g.producer = "pytorch";
  b.input("x", DType::F32, {2, 2});
  b.init("zeros", Tensor::zeros(DType::F32, {2}));
  b.node("Add", {"x", "zeros"}, {"a"}, "add_a");
  b.node("Add", {"a", "zeros"}, {"y"}, "add_b");
  b.output("y");
  untied.clear();
  train::untie_initializer_aliases(b.g, &untied);
  CHECK(untied.empty());
  b.g.producer = "tf2onnx";
  train::untie_initializer_aliases(b.g, &untied);
  CHECK(untied.size() == 1);
}

TEST_CASE("a tf2onnx model with merged BatchNorm initializers trains each layer apart and saves them") {
  const std::string in = tmp_path("merged.onnx"), out = tmp_path("merged.trained.onnx");
  onnx_loader::GraphWriteOptions wo;
  wo.producer_name = "tf2onnx";
  onnx_loader::save_graph(merged_batch_norms("tf2onnx"), in, wo);
  onnx_loader::Model m = onnx_loader::load_model(in);
  REQUIRE(m.graph.producer == "tf2onnx");
  train::Dataset d{random_tensor({8, 2, 3, 3}, 12, 1.0f), Tensor(DType::I64, {8})};
  for (int64_t i = 0; i < 8; ++i) d.targets.data<int64_t>()[i] = i % 2;
  train::TrainerConfig cfg = sgd_config();
  cfg.batch = 4;
  train::Trainer t(m.graph, cfg);
  t.fit(d, nullptr);
  const auto& tg = t.training_graph();
  CHECK(tg.bn_stats.size() == 4);
  CHECK(tg.params.size() == 6);  // two scales, two biases, W, the head's bias
  const auto w = t.model_initializers();
  const std::string var0 = onnx_loader::untied_read_name("ones", "bn_0", 4);
  const std::string scale1 = onnx_loader::untied_read_name("ones", "bn_1", 1);
  // The running variance followed the batches and the scales their gradients: apart now
  // (tied, the scale would have been overwritten by the running variance every step).
  CHECK(!same_values(w.at("ones"), w.at(var0)));
  CHECK(!same_values(w.at("ones"), w.at(scale1)));
  CHECK(std::any_of(tg.notes.begin(), tg.notes.end(), [](const std::string& s) {
    return s.find("untied 7 reads of merged initializers") != std::string::npos;
  }));

  // check reads the model the same way and says so before its table.
  train::CheckOptions co;
  const train::CheckReport rep = train::run_check(m.graph, random_tensor({4, 2, 3, 3}, 13, 1.0f),
                                                  Tensor::from_vector<int64_t>({4}, {0, 1, 1, 0}), co);
  CHECK(train::check_table(rep).rfind("untied 7 reads of merged initializers", 0) == 0);

  onnx_loader::save_model(m, w, out);
  onnx_loader::Model back = onnx_loader::load_model(out);
  CHECK(node_named(back.graph, "bn_0").inputs[4] == var0);
  CHECK(node_named(back.graph, "bn_1").inputs[1] == scale1);
  for (const auto& [name, value] : w) {
    REQUIRE_MESSAGE(back.graph.initializers.count(name), name);
    CHECK_MESSAGE(same_values(back.graph.initializers.at(name), value), name);
  }
  fs::remove_all(fs::path(in).parent_path());
}

TEST_CASE("tf2onnx's one-element initializers are constants; Keras variables and other producers' are parameters") {
  auto model = [](const std::string& producer, const std::string& scalar_name) {
    GraphBuild b;
    b.g.opsets[""] = 13;
    b.g.producer = producer;
    b.input("x", DType::F32, {4, 3});
    b.init("W", random_tensor({3, 2}, 1)).init(scalar_name, Tensor::scalar<float>(0.5f));
    b.node("MatMul", {"x", "W"}, {"m"}, "fc");
    b.node("Mul", {"m", scalar_name}, {"logits"}, "scale");
    b.output("logits");
    b.g.outputs.back().shape = std::vector<Dim>{Dim{4, ""}, Dim{2, ""}};
    return b.g;
  };
  train::TrainingGraphOptions o;
  auto params = [&](const Graph& g) { return train::build_training_graph(g, o).params; };
  CHECK(params(model("tf2onnx", "model/dense/Gelu/mul/x:0")) == std::vector<std::string>{"W"});
  const train::TrainingGraph tg = train::build_training_graph(model("tf2onnx", "model/dense/Gelu/mul/x:0"), o);
  CHECK(tg.constants == std::vector<std::string>{"model/dense/Gelu/mul/x:0"});
  CHECK(params(model("tf2onnx", "model/temperature/ReadVariableOp:0")).size() == 2);
  CHECK(params(model("pytorch", "logit_scale")).size() == 2);
  CHECK(params(model("", "s")).size() == 2);
}

TEST_CASE("a Conv model without BatchNormalization from torch or tf2onnx gets the folded-BatchNorm note") {
  auto model = [](const std::string& producer, bool layer_norm = false) {
    GraphBuild b;
    b.g.opsets[""] = 17;
    b.g.producer = producer;
    b.input("x", DType::F32, {2, 1, 4, 4});
    b.init("K", random_tensor({2, 1, 3, 3}, 1)).init("W", random_tensor({2, 3}, 2));
    b.node("Conv", {"x", "K"}, {"c0"}, "conv");
    if (layer_norm) {
      Tensor ones(DType::F32, {4});
      for (int64_t i = 0; i < 4; ++i) ones.data<float>()[i] = 1.0f;
      b.init("ln_scale", ones);
      Node& ln = b.node("LayerNormalization", {"c0", "ln_scale"}, {"c"}, "ln");
      ln.opset = 17;
    } else {
      b.node("Identity", {"c0"}, {"c"}, "pass");
    }
    b.node("GlobalAveragePool", {"c"}, {"g"}, "gap");
    b.node("Flatten", {"g"}, {"f"}, "flatten");
    b.node("MatMul", {"f", "W"}, {"logits"}, "head");
    b.output("logits");
    b.g.outputs.back().shape = std::vector<Dim>{Dim{2, ""}, Dim{3, ""}};
    return b.g;
  };
  auto noted = [&](const std::string& producer, bool layer_norm = false) {
    const auto notes = train::build_training_graph(model(producer, layer_norm), {}).notes;
    return std::any_of(notes.begin(), notes.end(), [](const std::string& s) {
      return s.find("Conv but no BatchNormalization") != std::string::npos &&
             s.find("TrainingMode.PRESERVE") != std::string::npos;
    });
  };
  CHECK(noted("pytorch"));
  CHECK(noted("tf2onnx"));
  CHECK_FALSE(noted("onnx-amp-train"));
  CHECK_FALSE(noted("pytorch", true));  // a LayerNorm design (ConvNeXt) never had BatchNorm
}
