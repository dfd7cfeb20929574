// What a CUDA request does where no device answers (this machine, CI, a CPU-only build): a clear
// "no CUDA device" error, never a crash. Where a device answers these cases check the opposite.
#include <doctest/doctest.h>

#include <iostream>

#include "runtime/cuda/device.h"
#include "runtime/executor.h"

using namespace oat;

namespace {

Graph relu_graph() {
  Graph g;
  g.opsets[""] = 17;
  Node n;
  n.name = "r";
  n.op_type = "Relu";
  n.op = op_from_name("Relu");
  n.opset = 17;
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  g.inputs.push_back(ValueInfo{"x", DType::F32, std::nullopt});
  g.outputs.push_back(ValueInfo{"y", DType::Undefined, std::nullopt});
  return g;
}

}  // namespace

TEST_CASE("an executor on CUDA without a device fails with 'no CUDA device'") {
  const Graph g = relu_graph();
  ExecutorOptions o;
  o.device = Device::CUDA;
  if (cuda::device_count() > 0) {
    Executor ex(g, o);
    auto out = ex.run({{"x", Tensor::from_vector<float>({4}, {-1.f, 2.f, -3.f, 4.f})}});
    CHECK(out.at(0).device() == Device::CPU);
    CHECK(out.at(0).to_float_vector() == std::vector<float>{0.f, 2.f, 0.f, 4.f});
    return;
  }
  CHECK_THROWS_WITH_AS(Executor(g, o), doctest::Contains("no CUDA device"), Error);
}

TEST_CASE("a CUDA tensor without a device fails with 'no CUDA device'") {
  if (cuda::device_count() > 0) {
    Tensor t(DType::F32, {3}, Device::CUDA);
    CHECK(t.device() == Device::CUDA);
    CHECK_THROWS_WITH_AS(t.item_as_double(0), doctest::Contains("download it first"), Error);
    return;
  }
  CHECK_THROWS_WITH_AS(Tensor(DType::F32, {3}, Device::CUDA), doctest::Contains("no CUDA device"),
                       Error);
}

TEST_CASE("the CUDA kernel table is present exactly when the backend is compiled") {
  const KernelRegistry& r = default_registry();
  CHECK(r.supports_op(OpId::MatMul, Device::CUDA) == cuda::compiled());
  CHECK(r.supports_op(OpId::Conv, Device::CUDA) == cuda::compiled());
  CHECK(r.supports_op(OpId::UnscaleAndCheck, Device::CUDA) == cuda::compiled());
  if (cuda::compiled()) {
    CHECK(r.supports(OpId::MatMul, Device::CUDA, DType::F16));
    CHECK(r.supports(OpId::MatMul, Device::CUDA, DType::BF16));
    CHECK_FALSE(r.supports(OpId::MatMul, Device::CUDA, DType::F64));
  }
}
