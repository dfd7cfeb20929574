// Converted models run by our executor (F16/BF16 CPU kernels) give outputs close to the FP32
// model's: the CPU path emulates low precision, so this is the number a GPU run would show.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "convert/graph_build.h"
#include "models/zoo.h"
#include "runtime/executor.h"

using namespace oat;
using namespace oat::convert;

namespace {

Tensor random_images(Shape shape, uint32_t seed) {
  Tensor t(DType::F32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// max |a - b| / max |b|
double relative_deviation(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_float_vector(), y = b.to_float_vector();
  REQUIRE(x.size() == y.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(x[i]) - y[i]));
    scale = std::max(scale, std::abs(static_cast<double>(y[i])));
  }
  return diff / scale;
}

}  // namespace

TEST_CASE("LeNet-5 in fp16 and bf16 runs in our executor close to fp32") {
  const Graph fp32 = models::lenet5(3);
  const Tensor x = random_images({4, 1, 28, 28}, 11);
  Executor ref_exec(fp32);
  const Tensor want = ref_exec.run({{"input", x}})[0];
  for (DType low : {DType::F16, DType::BF16}) {
    const std::string name = dtype_name(low);
    CAPTURE(name);
    Graph g = fp32;
    PaintOptions p;
    p.low = low;
    ApplyOptions a;
    a.keep_io_types = true;
    a.convert_initializers = true;
    apply_plan(g, paint(g, p), a);
    Executor exec(g);
    const Tensor got = exec.run({{"input", x}})[0];
    REQUIRE(got.dtype() == DType::F32);
    const double dev = relative_deviation(got, want);
    MESSAGE((name + " LeNet-5 max |y - y_fp32| / max |y_fp32| = " + std::to_string(dev)));
    CHECK(dev < (low == DType::F16 ? 1e-2 : 5e-2));
    CHECK(dev > 0);  // it really ran in low precision
  }
}

TEST_CASE(
    "ResNet-18 (CIFAR size) in fp16: BatchNorm with FP32 parameters, residual adds, in our "
    "executor") {
  const Graph fp32 = models::zoo_model("resnet18-cifar", 5);
  const Tensor x = random_images({2, 3, 32, 32}, 3);
  const std::string in = fp32.inputs.at(0).name;
  Executor ref_exec(fp32);
  const Tensor want = ref_exec.run({{in, x}})[0];
  Graph g = fp32;
  const PrecisionPlan plan = paint(g, {});
  size_t bn = 0;
  for (const auto& p : plan.nodes)
    if (p.op_type == "BatchNormalization") {
      ++bn;
      CHECK(p.dtype == DType::F16);
    }
  CHECK(bn == 20);
  ApplyOptions a;
  a.keep_io_types = true;
  a.convert_initializers = true;
  const ApplyReport r = apply_plan(g, plan, a);
  CHECK(r.casts_inserted == 2);  // only the input and the output: the whole network runs in fp16
  for (const Node& n : g.nodes)
    if (n.op_type == "BatchNormalization")
      for (size_t k = 1; k < n.inputs.size(); ++k)
        CHECK(g.initializers.at(n.inputs[k]).dtype() == DType::F32);
  Executor exec(g);
  const Tensor got = exec.run({{in, x}})[0];
  const double dev = relative_deviation(got, want);
  MESSAGE(("fp16 ResNet-18 max |y - y_fp32| / max |y_fp32| = " + std::to_string(dev)));
  CHECK(dev < 1e-2);
  CHECK(dev > 0);
}
