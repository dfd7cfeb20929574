// Issue #5, DESIGN.md "Weight gradients land in FP32": in a mixed-precision training graph the
// low-precision MatMulGrad / GemmGrad / ConvGrad nodes write the parameters' gradients in FP32
// straight from the FP32 accumulator (grad_type = 1, runtime/grad_type.h), so no Cast(f16 -> f32)
// sits between a gradient node and the update, the graph's value types say FP32, and at run time
// the tensors are FP32 while the data gradients (dX) stay in the low type.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "convert/value_types.h"
#include "models/zoo.h"
#include "runtime/executor.h"
#include "runtime/grad_type.h"
#include "train/training_graph.h"

using namespace oat;

namespace {

const Node* producer(const Graph& g, const std::string& value, size_t* index = nullptr) {
  for (const Node& n : g.nodes)
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] == value) {
        if (index) *index = k;
        return &n;
      }
  return nullptr;
}

// The gradient nodes that write parameter `p`'s gradient contributions (one, or the inputs of
// the FP32 Sum that accumulates them), with the output index each is written at.
std::vector<std::pair<const Node*, size_t>> contributions(const train::TrainingGraph& tg,
                                                           const std::string& p) {
  const Graph& g = tg.graph;
  size_t k = 0;
  const Node* n = producer(g, tg.grads.at(p), &k);
  REQUIRE_MESSAGE(n, p);
  if (n->op != OpId::Sum) return {{n, k}};
  std::vector<std::pair<const Node*, size_t>> r;
  for (const auto& in : n->inputs) {
    const Node* m = producer(g, in, &k);
    REQUIRE_MESSAGE(m, in);
    r.push_back({m, k});
  }
  return r;
}

void check_graph(const Graph& model, DType low, bool loss_scaling) {
  train::TrainingGraphOptions o;
  o.precision = low;
  o.loss_scaling = loss_scaling;
  o.optimizer.kind = train::OptimizerKind::SGD;
  const train::TrainingGraph tg = train::build_training_graph(model, o);
  const Graph& g = tg.graph;
  const convert::ValueTypes types = convert::infer_value_types(g);
  size_t fp32_nodes = 0;
  for (const auto& p : tg.params) {
    CAPTURE(p);
    // Each contribution comes straight from a low-precision weight-gradient node asked for FP32.
    for (const auto& [n, k] : contributions(tg, p)) {
      CAPTURE(n->name);
      REQUIRE(has_weight_grad_outputs(*n));
      CHECK(is_weight_grad_output(*n, k));
      CHECK(weight_grads_in_fp32(*n));
      CHECK(tg.plan.find(n->name)->dtype == low);
      CHECK(types.at(n->outputs[k]) == DType::F32);
      if (!n->outputs[0].empty())  // dX / dA (absent for the first layer): low, read by low nodes
        CHECK(types.at(n->outputs[0]) == low);
      ++fp32_nodes;
    }
    CHECK(types.at(tg.grads.at(p)) == DType::F32);
    // The update (or UnscaleAndCheck) reads the gradient itself: nothing in between.
    bool read = false;
    for (const Node& n : g.nodes)
      if (n.op == OpId::MultiSGDUpdate) {  // [P, G, V, W] per parameter, then lr and skip
        for (size_t i = 0; i + 4 < n.inputs.size(); i += 4)
          if (n.inputs[i] == p) {
            CHECK(n.inputs[i + 1] == (loss_scaling ? p + ".grad.unscaled" : tg.grads.at(p)));
            read = true;
          }
      } else if (n.op == OpId::UnscaleAndCheck) {
        CHECK(std::count(n.inputs.begin(), n.inputs.end(), tg.grads.at(p)) == 1);
      }
    CHECK(read);
  }
  CHECK(fp32_nodes >= tg.params.size());
  // No Cast reads a weight gradient; every Cast to FP32 reads something else (the loss path).
  for (const Node& n : g.nodes) {
    if (n.op != OpId::Cast) continue;
    size_t k = 0;
    const Node* src = producer(g, n.inputs[0], &k);
    if (!src) continue;
    CAPTURE(n.name);
    CHECK_FALSE(is_weight_grad_output(*src, k));
  }

  // At run time: one SGD step on the CPU; the observer sees FP32 dW/dB and low dX.
  Executor exec(g);
  size_t seen = 0;
  exec.set_observer([&](const Node& n, const std::vector<Tensor>& outs) {
    if (!weight_grads_in_fp32(n)) return;
    CAPTURE(n.name);
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!outs[k].defined() || n.outputs[k].empty()) continue;
      CHECK(outs[k].dtype() == (is_weight_grad_output(n, k) ? DType::F32 : low));
    }
    ++seen;
  });
  std::map<std::string, Tensor> feeds;
  for (const auto& [name, next] : tg.updates) feeds[name] = g.initializers.at(name);
  Tensor x(DType::F32, {4, 1, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 97) / 97.f;
  feeds[tg.data_input] = x;
  feeds[tg.target] = Tensor::from_vector<int64_t>({4}, {3, 1, 4, 1});
  feeds[tg.lr] = Tensor::scalar<float>(0.01f);
  feeds[tg.step] = Tensor::scalar<int64_t>(1);
  feeds[tg.seed] = Tensor::scalar<float>(loss_scaling ? 1024.0f : 1.0f);
  if (loss_scaling) feeds[tg.inv_scale] = Tensor::scalar<float>(1.0f / 1024.0f);
  std::vector<std::string> fetch = {tg.loss};
  for (const auto& p : tg.params) fetch.push_back(tg.updates.at(p));
  const auto out = exec.run(feeds, fetch);
  CHECK(seen > 0);
  CHECK(std::isfinite(out.at(tg.loss).item_as_double()));
  for (const auto& p : tg.params) CHECK(out.at(tg.updates.at(p)).dtype() == DType::F32);
}

}  // namespace

TEST_CASE("amp graph: weight gradients are written FP32 by their GEMM/conv node, no Cast before the update") {
  for (const char* name : {"mlp", "lenet5"})
    for (DType low : {DType::F16, DType::BF16})
      for (bool scaling : {true, false}) {
        CAPTURE(name);
        CAPTURE(dtype_name(low));
        CAPTURE(scaling);
        check_graph(models::zoo_model(name, 1), low, scaling);
      }
}

TEST_CASE("amp graph: an FP32 training graph and FP32-pinned nodes get no grad_type") {
  train::TrainingGraphOptions o;
  const train::TrainingGraph f32 = train::build_training_graph(models::lenet5(1), o);
  for (const Node& n : f32.graph.nodes) CHECK_FALSE(n.has_attr(kGradTypeAttr));

  // fc2 pinned FP32: its GemmGrad follows it and writes FP32 anyway (no attribute needed);
  // the other weight-gradient nodes still get it.
  o.precision = DType::F16;
  o.fp32_nodes = {"fc2"};
  const train::TrainingGraph tg = train::build_training_graph(models::lenet5(1), o);
  size_t with = 0, without = 0;
  for (const Node& n : tg.graph.nodes) {
    if (!has_weight_grad_outputs(n)) continue;
    const bool low = tg.plan.find(n.name)->dtype == DType::F16;
    CAPTURE(n.name);
    CHECK(weight_grads_in_fp32(n) == low);
    (low ? with : without) += 1;
  }
  CHECK(with == 4);  // conv1, conv2, fc1, fc3
  CHECK(without == 1);
}
