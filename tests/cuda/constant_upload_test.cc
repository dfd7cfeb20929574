// Constant nodes on a CUDA executor: evaluated once when the executor is made and, when floating
// with more than one element, uploaded once like an initializer, not before every run.
#include <doctest/doctest.h>

#include <iostream>

#include "runtime/cuda/context.h"
#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "tests/node_builder.h"

using namespace oat;

TEST_CASE("a floating Constant is uploaded once, at the first run, not at every run") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  Graph g;
  g.opsets[""] = 17;
  Attribute value;
  value.kind = Attribute::Kind::Tensor;
  value.t = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  g.nodes.push_back(oat_test::make_node("c", "Constant", {}, "c_out", {{"value", value}}, 17));
  g.nodes.push_back(oat_test::make_node("add", "Add", {"x", "c_out"}, "y", {}, 17));
  g.inputs.push_back(ValueInfo{"x", DType::F32, std::nullopt});
  g.outputs.push_back(ValueInfo{"y", DType::Undefined, std::nullopt});
  ExecutorOptions o;
  o.device = Device::CUDA;
  Executor ex(g, o);
  auto* cc = dynamic_cast<cuda::CudaContext*>(ex.device_context());
  REQUIRE(cc);
  const Tensor x = Tensor::from_vector<float>({4}, {10, 20, 30, 40});
  CHECK(ex.run({{"x", x}})[0].to_float_vector() == std::vector<float>{11, 22, 33, 44});
  const uint64_t after_first = cc->uploads();
  CHECK(after_first == 2);  // x and the constant
  for (int i = 0; i < 3; ++i)
    CHECK(ex.run({{"x", x}})[0].to_float_vector() == std::vector<float>{11, 22, 33, 44});
  CHECK(cc->uploads() == after_first + 3);  // x only
}
