#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "models/zoo.h"
#include "onnx_loader/graph_writer.h"
#include "onnx_loader/model.h"
#include "runtime/executor.h"

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
    Executor exec(m.graph);
    for (int64_t batch : {1, 5}) {
      Tensor x = Tensor::zeros(DType::F32, {batch, 1, 28, 28});
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 17) / 17.0f;
      auto out = exec.run({{"input", x}});
      REQUIRE(out.size() == 1);
      CHECK(out[0].shape() == Shape{batch, 10});
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
