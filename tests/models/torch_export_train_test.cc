// Training torch.onnx exports, not only running them: `check` (CPU mixed fp16 vs CPU FP32, one
// forward + backward) passes on the small ViT, ConvNeXt, DenseNet and Swin reference exports and on
// a ConvNeXt with torchvision's 1e-6 layer scale (its Mul nodes stay fp32), and the
// nn.TransformerEncoder export, whose deep-copied layers torch.onnx merged into one initializer
// per weight with Identity nodes for the others, trains those layers apart and writes them back
// as initializers of their own (train/initializer_aliases.h).
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>

#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"
#include "train/check.h"
#include "train/trainer.h"
#include "reference_models.h"

namespace fs = std::filesystem;
using namespace oat;

namespace {

onnx_loader::Model load_case(const std::string& name, Tensor* input) {
  const fs::path dir = oat_test::reference_models() / name;
  REQUIRE_MESSAGE(fs::exists(dir / "model.onnx"), dir.string(), " was not generated");
  if (input)
    *input = onnx_loader::read_tensor_pb((dir / "test_data_set_0" / "input_0.pb").string()).tensor;
  return onnx_loader::load_model((dir / "model.onnx").string());
}

// (alias, source): the Identity nodes of float initializers in `g`.
std::vector<std::pair<std::string, std::string>> aliases(const Graph& g) {
  std::vector<std::pair<std::string, std::string>> r;
  for (const Node& n : g.nodes)
    if (n.op_type == "Identity" && g.initializers.count(n.inputs[0]) &&
        is_floating(g.initializers.at(n.inputs[0]).dtype()))
      r.emplace_back(n.outputs[0], n.inputs[0]);
  return r;
}

bool same_values(const Tensor& a, const Tensor& b) {
  const Tensor x = cast_tensor(a, DType::F32), y = cast_tensor(b, DType::F32);
  return x.shape() == y.shape() &&
         std::equal(x.data<float>(), x.data<float>() + x.numel(), y.data<float>());
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("check passes (CPU mixed fp16 vs FP32) on the ViT, ConvNeXt, DenseNet and Swin exports") {
    // Swin's shifted-window mask is a ScatterND on folded shape values (runtime/shape_fold.h).
    for (const std::string name :
         {"vit_tiny_32", "convnext_tiny_64", "densenet_small_64", "swin_small_64"}) {
      CAPTURE(name);
      Tensor input;
      const onnx_loader::Model model = load_case(name, &input);
      const Tensor labels = Tensor::from_vector<int64_t>({3}, {1, 4, 7});
      train::CheckOptions o;  // fp16 on the CPU, the default tolerances
      const train::CheckReport r = train::run_check(model.graph, input, labels, o);
      INFO(train::check_table(r));
      CHECK(r.nodes.size() > 30);
      CHECK(r.ok());
      CHECK(std::abs(r.loss_checked - r.loss_ref) <= 1e-2 * std::abs(r.loss_ref));
    }
  }

  TEST_CASE("convnext_tiny_64_ls1e-6: torchvision's 1e-6 layer scale keeps its Mul nodes fp32") {
    // 1e-6 is below float16's smallest normal (6.1e-5): the painter keeps each layer-scale Mul
    // (and the residual Add after it) in FP32 (convert/paint.cc). The gradients entering the
    // blocks' branches are 1e-6 times the blocks' output gradients, FP16 subnormals at the first
    // loss scale (65536) whichever precision the Mul runs in (as in PyTorch, until the dynamic
    // scale grows): checked at 2^20, where only the layer-scale Muls would fail in FP16.
    Tensor input;
    const onnx_loader::Model model = load_case("convnext_tiny_64_ls1e-6", &input);
    const Tensor labels = Tensor::from_vector<int64_t>({3}, {1, 4, 7});
    std::set<std::string> scale_muls;
    for (const Node& n : model.graph.nodes)
      for (const auto& in : n.inputs)
        if (n.op_type == "Mul" && in.find("layer_scale") != std::string::npos)
          scale_muls.insert(n.name);
    REQUIRE(scale_muls.size() == 2);
    train::CheckOptions o;
    o.loss_scale = 1048576;
    const train::CheckReport r = train::run_check(model.graph, input, labels, o);
    INFO(train::check_table(r));
    CHECK(r.ok());
    size_t seen = 0;
    for (const auto& n : r.nodes)
      if (scale_muls.count(n.node)) {
        ++seen;
        CHECK(n.precision == DType::F32);
      }
    CHECK(seen == 2);

    o.out_of_range_fp32 = false;  // --no-out-of-range-fp32: the Muls in FP16 fail
    const train::CheckReport off = train::run_check(model.graph, input, labels, o);
    std::set<std::string> failing;
    for (const auto& n : off.nodes)
      if (!n.ok) failing.insert(n.node);
    CHECK(failing == scale_muls);
  }

  TEST_CASE("transformer_encoder: the layers torch.onnx merged train apart and export as initializers") {
    Tensor input;
    onnx_loader::Model model = load_case("transformer_encoder", &input);
    const auto merged = aliases(model.graph);
    REQUIRE(merged.size() >= 12);  // 3 deep-copied layers: each weight of layers 1, 2 aliased

    // MSE towards random targets of the output's shape (per-token logits).
    const Shape out_shape = Executor(model.graph).run({{"input", input}})[0].shape();
    Tensor targets(DType::F32, out_shape);
    std::mt19937 rng(5);
    std::normal_distribution<float> n01;
    for (int64_t i = 0; i < targets.numel(); ++i) targets.data<float>()[i] = n01(rng);
    train::TrainerConfig cfg;
    cfg.batch = input.dim(0);
    cfg.max_steps = 2;
    cfg.lr = 0.05;
    cfg.shuffle = false;
    cfg.progress = false;
    cfg.graph.loss = train::LossKind::MSE;
    cfg.graph.optimizer.kind = train::OptimizerKind::SGD;
    train::Trainer t(model.graph, cfg);
    t.fit(train::Dataset{input, targets}, nullptr);
    const auto trained = t.model_initializers();
    for (const auto& [alias, source] : merged) {
      CAPTURE(alias);
      REQUIRE(trained.count(alias));
      REQUIRE(trained.count(source));
      CHECK(!same_values(trained.at(alias), trained.at(source)));
    }

    const fs::path dir = fs::temp_directory_path() / ("oat_untie_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string out = (dir / "trained.onnx").string();
    onnx_loader::save_model(model, trained, out);
    const onnx_loader::Model back = onnx_loader::load_model(out);
    CHECK(aliases(back.graph).empty());
    CHECK(back.graph.nodes.size() == model.graph.nodes.size() - merged.size());
    for (const auto& [alias, source] : merged)
      CHECK(same_values(back.graph.initializers.at(alias), trained.at(alias)));
    // The written model computes what the trainer's weights compute.
    const train::EvalResult e = t.evaluate(train::Dataset{input, targets});
    const train::BatchLayout layout = train::layout_for(back.graph, train::LossKind::MSE);
    const train::EvalResult b = train::evaluate_model(back.graph, {}, train::Dataset{input, targets},
                                                      layout, train::LossKind::MSE, cfg.batch);
    CHECK(b.loss == doctest::Approx(e.loss).epsilon(1e-6));
    fs::remove_all(dir);
  }
}
