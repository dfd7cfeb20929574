// GatherGrad (an embedding's gradient) on CUDA sums each row's contributions in index order
// without atomics (runtime/cuda/kernels/gather_grad_impl.cu), so it equals the CPU kernel bit for
// bit and is the same on every run, with many repeats, negative indices and rows no index names.
#include <doctest/doctest.h>

#include <iostream>
#include <random>

#include "runtime/cuda/device.h"
#include "node_builder.h"
#include "runtime/executor.h"

using namespace oat;

namespace {

Graph gather_grad_graph(int64_t axis) {
  Graph g;
  g.opsets[""] = 17;
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = axis;
  g.nodes.push_back(oat_test::make_node("gg", "GatherGrad", {"dy", "shape", "idx"}, "dx",
                                        {{"axis", a}}, 17));
  g.inputs.push_back(ValueInfo{"dy", DType::F32, std::nullopt});
  g.inputs.push_back(ValueInfo{"shape", DType::I64, std::nullopt});
  g.inputs.push_back(ValueInfo{"idx", DType::I64, std::nullopt});
  g.outputs.push_back(ValueInfo{"dx", DType::Undefined, std::nullopt});
  return g;
}

std::vector<float> run(const Graph& g, Device d, const Tensor& dy, const Tensor& shape,
                       const Tensor& idx) {
  ExecutorOptions o;
  o.device = d;
  Executor ex(g, o);
  auto out = ex.run({{"dy", dy}, {"shape", shape}, {"idx", idx}});
  return out.at(0).to_float_vector();
}

}  // namespace

TEST_CASE("GatherGrad on CUDA equals the CPU bit for bit, run after run") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  // X [2, 9, 5], axis 1; 600 indices into 9 rows (rows 4 and 8 never named), some negative.
  const int64_t outer = 2, rows = 9, inner = 5, count = 600;
  std::vector<int64_t> idx(count);
  std::uniform_int_distribution<int> pick(0, 6);
  const int64_t used[7] = {0, 1, 2, 3, 5, 6, 7};
  for (auto& k : idx) {
    k = used[pick(rng)];
    if (rng() % 3 == 0) k -= rows;  // the same row, counted from the end
  }
  std::vector<float> dy(outer * count * inner);
  for (auto& v : dy) v = nd(rng) * 1e3f;  // large terms: any change of order shows
  const Tensor tdy = Tensor::from_vector<float>({outer, count, inner}, dy);
  const Tensor tshape = Tensor::from_vector<int64_t>({3}, {outer, rows, inner});
  const Tensor tidx = Tensor::from_vector<int64_t>({count}, idx);
  const Graph g = gather_grad_graph(1);
  const std::vector<float> cpu = run(g, Device::CPU, tdy, tshape, tidx);
  const std::vector<float> gpu = run(g, Device::CUDA, tdy, tshape, tidx);
  const std::vector<float> again = run(g, Device::CUDA, tdy, tshape, tidx);
  CHECK(gpu == cpu);
  CHECK(again == gpu);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      CHECK(gpu[(o * rows + 4) * inner + i] == 0.f);
      CHECK(gpu[(o * rows + 8) * inner + i] == 0.f);
    }
}
