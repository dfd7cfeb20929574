// ONNX's Gradient op (train/autodiff/gradient_op.h) on CUDA: its expansion (the recomputed
// forward and its gradient nodes) runs on the device and agrees with the CPU reference.
#include <doctest/doctest.h>

#include <cmath>
#include <iostream>

#include "gradient_op_model.h"
#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "train/autodiff/gradient_op.h"

using namespace oat;

TEST_CASE("Gradient op on CUDA agrees with the CPU") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  train::register_gradient_op();
  oat_test::GradientOpModel m;
  const std::map<std::string, Tensor> feeds = {{"a", m.a}, {"a2", m.a2}, {"q", m.q}};
  auto run = [&](Device d) {
    ExecutorOptions o;
    o.device = d;
    Executor ex(m.g, o);
    return ex.run(feeds);  // outputs come back to the host
  };
  const auto cpu = run(Device::CPU), gpu = run(Device::CUDA);
  REQUIRE(gpu.size() == cpu.size());
  for (size_t k = 0; k < cpu.size(); ++k) {
    CAPTURE(k);
    REQUIRE(gpu[k].shape() == cpu[k].shape());
    const auto a = cpu[k].to_float_vector(), b = gpu[k].to_float_vector();
    for (size_t i = 0; i < a.size(); ++i)
      CHECK(std::abs(a[i] - b[i]) <= 1e-5f * (1 + std::abs(a[i])));
  }
}
