// Sequences and optionals run on the CPU only: a device executor refuses a sequence op by name
// before running, and a sequence that reaches a device node through an op both backends have
// (Identity) is a named error, not an empty tensor uploaded in its place.
#include <doctest/doctest.h>

#include <iostream>

#include "node_builder.h"
#include "runtime/cuda/device.h"
#include "runtime/executor.h"

using namespace oat;

TEST_CASE("a CUDA executor refuses sequences, naming the node") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  ExecutorOptions o;
  o.device = Device::CUDA;
  Graph g;
  g.opsets[""] = 17;
  ValueInfo s;
  s.name = "s";
  s.kind = ValueKind::Sequence;
  s.dtype = DType::F32;
  g.inputs = {s};
  g.outputs = {ValueInfo{"y", DType::Undefined, std::nullopt}};
  g.nodes = {oat_test::make_node("len", "SequenceLength", {"s"}, "y")};
  CHECK_THROWS_WITH_AS(Executor(g, o),
                       doctest::Contains("node 'len' (SequenceLength, opset 13): sequences and "
                                         "optionals (SequenceLength) run on the CPU only"),
                       Unsupported);

  g.nodes = {oat_test::make_node("id", "Identity", {"s"}, "y")};
  Executor ex(g, o);
  const Tensor seq = Tensor::sequence(DType::F32, {Tensor::zeros(DType::F32, {2})});
  CHECK_THROWS_WITH_AS(ex.run({{"s", seq}}),
                       doctest::Contains("node 'id' (Identity, opset 13): input 0 's' is a "
                                         "sequence(float32) of 1; sequences and optionals run on "
                                         "the CPU only"),
                       Unsupported);
}
