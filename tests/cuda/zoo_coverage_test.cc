// The zoo on CUDA: every node of the forward graphs and of the mixed-precision training graphs
// has a CUDA kernel (checked from the kernel table, no device needed); where a device answers,
// the forward outputs also agree with the CPU.
#include <doctest/doctest.h>

#include <cmath>
#include <iostream>

#include "models/zoo.h"
#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "train/training_graph.h"

using namespace oat;

namespace {

std::string missing(const Graph& g) {
  std::string r;
  for (const auto& [node, why] : unsupported_nodes(g, Device::CUDA, default_registry()))
    r += node + ": " + why + "\n";
  return r;
}

const char* kModels[] = {"mlp", "lenet5", "resnet18-cifar", "transformer"};

}  // namespace

TEST_CASE("every zoo forward and training graph has CUDA kernels for all its nodes") {
  if (!cuda::compiled()) {
    MESSAGE("SKIPPED: this build has no CUDA backend");
    return;
  }
  for (const char* name : kModels) {
    CAPTURE(name);
    const Graph g = models::zoo_model(name);
    CHECK(missing(g) == "");
    for (DType precision : {DType::F32, DType::F16, DType::BF16}) {
      CAPTURE(dtype_name(precision));
      train::TrainingGraphOptions o;
      o.precision = precision;
      o.loss_scaling = precision == DType::F16;
      o.optimizer.kind = train::OptimizerKind::SGD;
      o.optimizer.momentum = 0.9;
      o.clip_norm = precision == DType::BF16 ? 1.0 : 0.0;
      const train::TrainingGraph tg = train::build_training_graph(g, o);
      CHECK(missing(tg.graph) == "");
    }
  }
}

TEST_CASE("zoo forward passes agree between the CPU and CUDA") {
  if (cuda::device_count() == 0) {
    MESSAGE("SKIPPED: " << cuda::describe_device());
    return;
  }
  for (const char* name : kModels) {
    CAPTURE(name);
    const Graph g = models::zoo_model(name);
    Shape in_shape{2};
    for (size_t d = 1; d < g.inputs[0].shape->size(); ++d) in_shape.push_back((*g.inputs[0].shape)[d].value);
    Tensor x(DType::F32, in_shape);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.37f * static_cast<float>(i));
    const std::map<std::string, Tensor> feeds{{g.inputs[0].name, x}};
    Executor cpu(g);
    ExecutorOptions o;
    o.device = Device::CUDA;
    Executor gpu(g, o);
    const auto a = cpu.run(feeds).at(0).to_float_vector();
    const auto b = gpu.run(feeds).at(0).to_float_vector();
    REQUIRE(a.size() == b.size());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
      scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
    }
    CAPTURE(worst);
    CHECK(worst <= 1e-4 * std::max(1.0, scale));
  }
}
