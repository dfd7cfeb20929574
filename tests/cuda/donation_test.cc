// Donated feeds (Executor::run_resident's `donated`): the CUDA optimizer updates write the
// parameter in place when the caller gives it away and no later node reads it; otherwise they
// write a new tensor and the feed keeps its value.
#include <doctest/doctest.h>

#include <iostream>

#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "tests/node_builder.h"
#include "tests/runtime/single_node.h"

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

TEST_CASE("donated feeds: MultiSGDUpdate writes every parameter and working copy in place") {
  if (cuda::device_count() == 0) {
    std::cout << "SKIPPED: no CUDA device answers (" << cuda::describe_device(0) << ")\n";
    return;
  }
  // Two parameters, no momentum: [P, G, "", W] each, then lr; outputs [P', "", W'] each.
  Graph graph;
  graph.opsets[""] = 17;
  graph.nodes.push_back(oat_test::make_node_outputs(
      "optimizer.sgd", "MultiSGDUpdate", {"p1", "g1", "", "w1", "p2", "g2", "", "w2", "lr"},
      {"p1o", "", "w1o", "p2o", "", "w2o"}, {{"working_type", oat_test::attr_i(10)}}, 1));
  for (const char* n : {"p1", "g1", "w1", "p2", "g2", "w2", "lr"})
    graph.inputs.push_back(ValueInfo{n, DType::Undefined, std::nullopt});
  for (const char* n : {"p1o", "w1o", "p2o", "w2o"})
    graph.outputs.push_back(ValueInfo{n, DType::Undefined, std::nullopt});
  auto half = [](const std::vector<float>& v) {
    const Tensor h = cast_tensor(Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v),
                                 DType::F16);
    Tensor d(DType::F16, h.shape(), Device::CUDA);
    cuda::copy_bytes(d.raw_data(), true, h.raw_data(), false, h.nbytes());
    return d;
  };
  auto host_half = [](const Tensor& d) {
    Tensor h(DType::F16, d.shape());
    cuda::copy_bytes(h.raw_data(), false, d.raw_data(), true, h.nbytes());
    return cast_tensor(h, DType::F32).to_float_vector();
  };
  const std::vector<float> want1 = {1.f - 0.5f * 2.f, 2.f - 0.5f * 4.f};
  const std::vector<float> want2 = {3.f + 0.5f * 2.f, 0.25f, 5.f - 0.5f};
  for (bool donate : {false, true}) {
    CAPTURE(donate);
    ExecutorOptions o;
    o.device = Device::CUDA;
    Executor ex(graph, o);
    const Tensor p1 = device({1, 2}), w1 = half({1, 2}), p2 = device({3, 0.25f, 5}),
                 w2 = half({3, 0.25f, 5});
    const std::map<std::string, Tensor> feeds = {
        {"p1", p1}, {"g1", device({2, 4})}, {"w1", w1},         {"p2", p2},
        {"g2", device({-2, 0, 1})},         {"w2", w2},         {"lr", Tensor::scalar<float>(0.5f)}};
    std::set<std::string> donated;
    if (donate) donated = {"p1", "w1", "p2", "w2"};
    const auto out = ex.run_resident(feeds, {"p1o", "w1o", "p2o", "w2o"}, donated);
    CHECK(host(out.at("p1o")) == want1);
    CHECK(host(out.at("p2o")) == want2);
    CHECK(out.at("w1o").dtype() == DType::F16);
    CHECK(host_half(out.at("w1o")) == want1);  // exact in FP16
    CHECK(host_half(out.at("w2o")) == want2);
    CHECK((out.at("p1o").raw_data() == p1.raw_data()) == donate);
    CHECK((out.at("w1o").raw_data() == w1.raw_data()) == donate);
    CHECK((out.at("p2o").raw_data() == p2.raw_data()) == donate);
    CHECK((out.at("w2o").raw_data() == w2.raw_data()) == donate);
    CHECK(host(p1) == (donate ? want1 : std::vector<float>{1, 2}));
    CHECK(host_half(w2) == (donate ? want2 : std::vector<float>{3, 0.25f, 5}));
  }
}
