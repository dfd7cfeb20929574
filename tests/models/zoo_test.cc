#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "models/zoo.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"
#include "onnx_loader/tensor_io.h"
#include "runtime/executor.h"
#include "train/trainer.h"
#include "models/torch_twin.h"

using namespace oat;
namespace fs = std::filesystem;

TEST_CASE("zoo: every model writes a checker-valid ONNX file that loads and runs at any batch") {
  const fs::path dir = fs::temp_directory_path() / ("oat_zoo_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const auto& name : models::zoo_names()) {
    CAPTURE(name);
    Graph g = models::zoo_model(name, 7);
    const std::string path = (dir / (name + ".onnx")).string();
    onnx_loader::save_graph(g, path);  // runs the ONNX checker
    onnx_loader::Model m = onnx_loader::load_model(path);
    CHECK(m.graph.initializers.size() == g.initializers.size());
    REQUIRE(m.graph.inputs.size() == 1);
    REQUIRE(m.graph.outputs.size() == 1);
    const auto& in = *m.graph.inputs[0].shape;
    const auto& out_dims = *m.graph.outputs[0].shape;
    CHECK_FALSE(in[0].fixed());  // dynamic batch
    CHECK_FALSE(out_dims[0].fixed());
    Executor exec(m.graph);
    for (int64_t batch : {1, 3}) {
      Shape shape = {batch};
      for (size_t d = 1; d < in.size(); ++d) shape.push_back(in[d].value);
      Tensor x = Tensor::zeros(DType::F32, shape);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 17) / 17.0f;
      auto out = exec.run({{"input", x}});
      REQUIRE(out.size() == 1);
      CHECK(out[0].shape() == Shape{batch, out_dims[1].value});
      for (int64_t i = 0; i < out[0].numel(); ++i) CHECK(std::isfinite(out[0].data<float>()[i]));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("zoo: PyTorch's default initialisation, deterministic by seed") {
  Graph a = models::lenet5(1), b = models::lenet5(1), c = models::lenet5(2);
  const Tensor& wa = a.initializers.at("fc1.weight");
  const Tensor& wb = b.initializers.at("fc1.weight");
  const Tensor& wc = c.initializers.at("fc1.weight");
  CHECK(wa.shape() == Shape{120, 400});
  CHECK(std::equal(wa.data<float>(), wa.data<float>() + wa.numel(), wb.data<float>()));
  CHECK_FALSE(std::equal(wa.data<float>(), wa.data<float>() + wa.numel(), wc.data<float>()));
  // U(-1/√400, 1/√400): every value inside the bound, the extremes close to it, mean near 0.
  float lo = 1, hi = -1;
  double sum = 0;
  for (int64_t i = 0; i < wa.numel(); ++i) {
    lo = std::min(lo, wa.data<float>()[i]);
    hi = std::max(hi, wa.data<float>()[i]);
    sum += wa.data<float>()[i];
  }
  CHECK(hi <= 0.05f);
  CHECK(lo >= -0.05f);
  CHECK(hi > 0.049f);
  CHECK(lo < -0.049f);
  CHECK(std::abs(sum / wa.numel()) < 0.002);
  CHECK(a.initializers.at("conv1.weight").shape() == Shape{6, 1, 5, 5});
  CHECK_THROWS_WITH_AS(models::zoo_model("vgg"), doctest::Contains("unknown zoo model 'vgg'"), Error);
}

namespace {

int64_t numel_of(const Graph& g, const std::vector<std::string>& names) {
  int64_t n = 0;
  for (const auto& name : names) n += g.initializers.at(name).numel();
  return n;
}

std::vector<std::string> names_ending(const Graph& g, const std::string& suffix) {
  std::vector<std::string> r;
  for (const auto& [name, t] : g.initializers)
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      r.push_back(name);
  return r;
}

}  // namespace

TEST_CASE("zoo: resnet18 has torchvision's parameter names, shapes and count") {
  Graph g = models::resnet18(0);
  // torchvision's state_dict has 122 keys: 102 tensors + 20 num_batches_tracked counters.
  CHECK(g.initializers.size() == 102);
  CHECK(names_ending(g, ".running_mean").size() == 20);
  CHECK(names_ending(g, ".running_var").size() == 20);
  std::vector<std::string> params;
  for (const auto& [name, t] : g.initializers)
    if (name.find("running_") == std::string::npos) params.push_back(name);
  // sum(p.numel() for p in torchvision.models.resnet18().parameters())
  CHECK(numel_of(g, params) == 11689512);
  CHECK(g.initializers.at("conv1.weight").shape() == Shape{64, 3, 7, 7});
  CHECK(g.initializers.at("layer2.0.downsample.0.weight").shape() == Shape{128, 64, 1, 1});
  CHECK(g.initializers.at("layer3.1.conv2.weight").shape() == Shape{256, 256, 3, 3});
  CHECK(g.initializers.at("layer4.1.bn2.running_var").shape() == Shape{512});
  CHECK(g.initializers.at("fc.weight").shape() == Shape{1000, 512});
  CHECK_FALSE(g.initializers.count("layer1.0.downsample.0.weight"));  // 64 -> 64, stride 1

  models::ResNetOptions o;
  o.image_size = 32;
  o.num_classes = 10;
  Graph c = models::resnet18(0, o);
  std::vector<std::string> cparams;
  for (const auto& [name, t] : c.initializers)
    if (name.find("running_") == std::string::npos) cparams.push_back(name);
  CHECK(numel_of(c, cparams) == 11181642);  // resnet18(num_classes=10)
  CHECK(c.inputs[0].shape_string() == models::zoo_model("resnet18-cifar").inputs[0].shape_string());

  o.in_channels = 0;
  CHECK_THROWS_WITH_AS(models::resnet18(0, o), doctest::Contains("must be positive"), Error);
}

TEST_CASE("zoo: resnet18 uses torchvision's initialisation, deterministic by seed") {
  Graph a = models::zoo_model("resnet18-cifar", 3), b = models::zoo_model("resnet18-cifar", 3),
        c = models::zoo_model("resnet18-cifar", 4);
  const Tensor& wa = a.initializers.at("layer3.0.conv1.weight");
  CHECK(std::equal(wa.data<float>(), wa.data<float>() + wa.numel(),
                   b.initializers.at("layer3.0.conv1.weight").data<float>()));
  CHECK_FALSE(std::equal(wa.data<float>(), wa.data<float>() + wa.numel(),
                         c.initializers.at("layer3.0.conv1.weight").data<float>()));
  // kaiming_normal_(mode="fan_out", nonlinearity="relu"): N(0, 2 / (cout·k·k)).
  for (const char* name : {"conv1.weight", "layer3.0.conv1.weight", "layer4.0.downsample.0.weight"}) {
    CAPTURE(name);
    const Tensor& w = a.initializers.at(name);
    const double fan_out = static_cast<double>(w.dim(0) * w.dim(2) * w.dim(3));
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < w.numel(); ++i) {
      s += w.data<float>()[i];
      s2 += static_cast<double>(w.data<float>()[i]) * w.data<float>()[i];
    }
    const double mean = s / w.numel(), sd = std::sqrt(s2 / w.numel() - mean * mean);
    CHECK(sd == doctest::Approx(std::sqrt(2.0 / fan_out)).epsilon(0.05));
    CHECK(std::abs(mean) < 0.1 * sd);
  }
  for (const auto& name : names_ending(a, "bn1.weight"))
    for (int64_t i = 0; i < a.initializers.at(name).numel(); ++i)
      CHECK(a.initializers.at(name).data<float>()[i] == 1.0f);
  // fc: nn.Linear's default, U(-1/√512, 1/√512).
  const Tensor& fc = a.initializers.at("fc.weight");
  for (int64_t i = 0; i < fc.numel(); ++i) CHECK(std::abs(fc.data<float>()[i]) <= 1.0f / std::sqrt(512.0f));
}

TEST_CASE("zoo: resnet18-cifar trains: the loss falls within a few Adam steps") {
  Graph g = models::zoo_model("resnet18-cifar", 0);
  // 8 fixed images, labels 0..7, trained on the same batch: a working forward + backward +
  // BatchNorm-in-training-mode + optimizer memorises it quickly (PyTorch: 2.65 -> 0.008 in 3 steps).
  train::Dataset data;
  data.inputs = Tensor(DType::F32, {8, 3, 32, 32});
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t i = 0; i < data.inputs.numel(); ++i) data.inputs.data<float>()[i] = u(rng);
  data.targets = Tensor(DType::I64, {8});
  for (int64_t i = 0; i < 8; ++i) data.targets.data<int64_t>()[i] = i;
  train::TrainerConfig cfg;
  cfg.max_steps = 5;
  cfg.epochs = 5;
  cfg.batch = 8;
  cfg.lr = 1e-3;
  cfg.shuffle = false;
  cfg.progress = false;
  train::Trainer t(g, cfg);
  CHECK(t.training_graph().params.size() == 62);  // 20 convs + 20 BN x (weight, bias) + fc x 2
  CHECK(t.training_graph().bn_stats.size() == 40);
  std::vector<double> losses;
  t.on_step = [&](int64_t, double loss) { losses.push_back(loss); };
  t.fit(data, nullptr);
  REQUIRE(losses.size() == 5);
  MESSAGE("resnet18-cifar losses: " << losses[0] << " " << losses[1] << " " << losses[2] << " "
                                    << losses[3] << " " << losses[4]);
  CHECK(losses[0] > 1.0);
  CHECK(losses[4] < 0.5 * losses[0]);
  for (size_t i = 1; i < losses.size(); ++i) CHECK(std::isfinite(losses[i]));
  // The running statistics moved from their initial 0 / 1.
  auto w = t.model_initializers();
  const Tensor& rm = w.at("layer1.0.bn1.running_mean");
  double moved = 0;
  for (int64_t i = 0; i < rm.numel(); ++i) moved += std::abs(rm.data<float>()[i]);
  CHECK(moved > 0.0);
}

// The architecture, checked against torchvision itself: our initializers (with random BatchNorm
// parameters and statistics, so a mis-wired BN shows) loaded by name into
// torchvision.models.resnet18(num_classes=10) give the same eval-mode logits. Needs PyTorch +
// torchvision (Debian's python3-torch python3-torchvision, installed by scripts/setup.sh; or
// OAT_TORCH_PYTHON); without them this test fails rather than skips.
TEST_CASE("zoo: resnet18-cifar computes what torchvision's resnet18(num_classes=10) computes") {
  const fs::path dir = fs::temp_directory_path() / ("oat_zoo_tv_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Graph g = models::zoo_model("resnet18-cifar", 5);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (auto& [name, t] : g.initializers) {
    const bool bn = name.find("bn") != std::string::npos || name.find("downsample.1") != std::string::npos;
    if (bn) {
      const bool positive = name.find("running_var") != std::string::npos || name.find(".weight") != std::string::npos;
      Tensor r(DType::F32, t.shape());
      for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] = positive ? 1.0f + u(rng) : u(rng);
      t = r;
    }
    onnx_loader::write_npy(t, (dir / (name + ".npy")).string());
  }
  Tensor x(DType::F32, {2, 3, 32, 32});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 2.0f * u(rng);
  oat_test::check_against_torch(g, x, dir, R"(import os, sys
import numpy as np, torch, torchvision
d = sys.argv[1]
m = torchvision.models.resnet18(num_classes=10).eval()
sd = m.state_dict()
ours = {f[:-4] for f in os.listdir(d) if f.endswith(".npy") and f != "x.npy"}
theirs = {k for k in sd if not k.endswith("num_batches_tracked")}
if ours != theirs:
    print("names differ: only ours", sorted(ours - theirs)[:5], "only torchvision", sorted(theirs - ours)[:5])
    sys.exit(3)
for k in theirs:
    sd[k] = torch.from_numpy(np.load(os.path.join(d, k + ".npy")))
m.load_state_dict(sd)
with torch.no_grad():
    y = m(torch.from_numpy(np.load(os.path.join(d, "x.npy"))))
np.save(os.path.join(d, "y.npy"), y.numpy())
)",
                                dir.string(), "resnet18-cifar vs torchvision");
}
