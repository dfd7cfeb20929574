// --freeze-batchnorm (TrainingGraphOptions::freeze_batch_norm): BatchNormalization normalises
// with its running statistics, which stay as they are, while its scale and bias train (PyTorch's
// bn.eval() during fine-tuning), also for a node exported in training mode.
#include <doctest/doctest.h>

#include "convert/graph_build.h"
#include "test_tensors.h"
#include "train/trainer.h"

using namespace oat;
using oat_test::GraphBuild;

namespace {

// x [8, 2, 3, 3] → BatchNormalization (running mean 0.3, var 2) → GlobalAveragePool → Flatten
// → Gemm → logits [8, 3]. `training_export`: opset 15 with training_mode = 1 and the running
// statistic outputs, as torch.onnx writes in TrainingMode.TRAINING.
Graph bn_net(bool training_export) {
  GraphBuild b;
  b.g.opsets[""] = 15;
  b.input("x", DType::F32, {8, 2, 3, 3});
  b.init("scale", oat_test::uniform_tensor({2}, 1, 0.5f, 1.5f));
  b.init("bias", oat_test::uniform_tensor({2}, 2));
  b.init("mean", Tensor::from_vector<float>({2}, {0.3f, 0.3f}));
  b.init("var", Tensor::from_vector<float>({2}, {2.0f, 2.0f}));
  b.init("W", oat_test::uniform_tensor({2, 3}, 3)).init("c", oat_test::uniform_tensor({3}, 4));
  Node& bn = b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"bn"}, "bn");
  bn.opset = 15;
  if (training_export) {
    bn.attrs["training_mode"] = oat_test::int_attr(1);
    bn.outputs = {"bn", "rm", "rv"};
  }
  b.node("GlobalAveragePool", {"bn"}, {"gap"}, "gap");
  b.node("Flatten", {"gap"}, {"f"}, "flatten");
  b.node("Gemm", {"f", "W", "c"}, {"logits"}, "head");
  b.output("logits");
  b.g.outputs.back().shape = std::vector<Dim>{Dim{8, ""}, Dim{3, ""}};
  return b.g;
}

bool same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::equal(a.data<float>(), a.data<float>() + a.numel(), b.data<float>());
}

}  // namespace

TEST_CASE("--freeze-batchnorm: running statistics fixed and used, scale and bias train") {
  for (bool training_export : {false, true}) {
    CAPTURE(training_export);
    const Graph g = bn_net(training_export);
    train::TrainerConfig cfg;
    cfg.batch = 8;
    cfg.epochs = 2;
    cfg.lr = 0.1;
    cfg.progress = false;
    cfg.graph.freeze_batch_norm = true;
    train::Trainer t(g, cfg);
    const train::TrainingGraph& tg = t.training_graph();
    CHECK(tg.bn_stats.empty());
    CHECK(std::count(tg.params.begin(), tg.params.end(), "scale") == 1);
    CHECK(std::count(tg.params.begin(), tg.params.end(), "mean") == 0);
    for (const Node& n : tg.graph.nodes)
      if (n.name == "bn") {
        CHECK(n.attr_int("training_mode", 0) == 0);
        CHECK(n.outputs.size() == 1);
      }
    train::Dataset d{oat_test::uniform_tensor({16, 2, 3, 3}, 5, -2.0f, 2.0f), Tensor(DType::I64, {16})};
    for (int64_t i = 0; i < 16; ++i) d.targets.data<int64_t>()[i] = i % 3;
    t.fit(d, nullptr);
    const auto w = t.model_initializers();
    // Not trained state: the trained model keeps the file's values.
    CHECK(w.count("mean") == 0);
    CHECK(w.count("var") == 0);
    CHECK_FALSE(same(w.at("scale"), g.initializers.at("scale")));
    CHECK_FALSE(same(w.at("bias"), g.initializers.at("bias")));
  }
  // Without the flag the statistics follow the batches.
  train::TrainerConfig cfg;
  cfg.batch = 8;
  cfg.progress = false;
  train::Trainer t(bn_net(false), cfg);
  CHECK(t.training_graph().bn_stats.size() == 2);
  train::Dataset d{oat_test::uniform_tensor({8, 2, 3, 3}, 5, -2.0f, 2.0f), Tensor(DType::I64, {8})};
  for (int64_t i = 0; i < 8; ++i) d.targets.data<int64_t>()[i] = i % 3;
  t.fit(d, nullptr);
  CHECK_FALSE(same(t.model_initializers().at("mean"), bn_net(false).initializers.at("mean")));
}
