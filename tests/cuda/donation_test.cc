// Donated feeds (Executor::run_resident's `donated`): the CUDA optimizer updates write the
// parameter in place when the caller gives it away and no later node reads it; otherwise they
// write a new tensor and the feed keeps its value.
#include <doctest/doctest.h>

#include <iostream>

#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "tests/node_builder.h"

using namespace oat;

namespace {

// po = SGDUpdate(p, g, lr); with `reader`, a later Identity also reads p.
Graph sgd_graph(bool reader) {
  Graph g;
  g.opsets[""] = 17;
  g.nodes.push_back(oat_test::make_node("sgd", "SGDUpdate", {"p", "g", "", "lr"}, "po", {}, 1));
  if (reader) g.nodes.push_back(oat_test::make_node("id", "Identity", {"p"}, "p_copy"));
  for (const char* n : {"p", "g", "lr"}) g.inputs.push_back(ValueInfo{n, DType::F32, std::nullopt});
  g.outputs.push_back(ValueInfo{"po", DType::Undefined, std::nullopt});
  if (reader) g.outputs.push_back(ValueInfo{"p_copy", DType::Undefined, std::nullopt});
  return g;
}

Tensor device(const std::vector<float>& v) {
  Tensor h = Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
  Tensor d(DType::F32, h.shape(), Device::CUDA);
  cuda::copy_bytes(d.raw_data(), true, h.raw_data(), false, h.nbytes());
  return d;
}

std::vector<float> host(const Tensor& d) {
  Tensor h(DType::F32, d.shape());
  cuda::copy_bytes(h.raw_data(), false, d.raw_data(), true, h.nbytes());
  return h.to_float_vector();
}

}  // namespace

TEST_CASE("donated feeds: SGDUpdate on CUDA writes the parameter in place only when allowed") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  const std::vector<float> want = {1.f - 0.5f * 2.f, 2.f - 0.5f * 4.f, 3.f + 0.5f * 2.f};
  for (bool reader : {false, true})
    for (bool donate : {false, true}) {
      CAPTURE(reader);
      CAPTURE(donate);
      ExecutorOptions o;
      o.device = Device::CUDA;
      const Graph graph = sgd_graph(reader);  // the Executor keeps a reference
      Executor ex(graph, o);
      const Tensor p = device({1, 2, 3});
      const std::map<std::string, Tensor> feeds = {
          {"p", p}, {"g", device({2, 4, -2})}, {"lr", Tensor::scalar<float>(0.5f)}};
      std::set<std::string> donated;
      if (donate) donated.insert("p");
      const auto out = ex.run_resident(feeds, {"po"}, donated);
      CHECK(host(out.at("po")) == want);
      const bool in_place = donate && !reader;
      CHECK((out.at("po").raw_data() == p.raw_data()) == in_place);
      CHECK(host(p) == (in_place ? want : std::vector<float>{1, 2, 3}));
    }
  ExecutorOptions o;
  o.device = Device::CUDA;
  const Graph graph = sgd_graph(false);
  Executor ex(graph, o);
  CHECK_THROWS_WITH_AS(ex.run_resident({{"p", device({1})}, {"g", device({1})},
                                        {"lr", Tensor::scalar<float>(1.f)}},
                                       {"po"}, {"q"}),
                       doctest::Contains("donated value 'q' is not fed"), Error);
}
