// RNN, GRU and LSTM on CUDA (composite ops, runtime/composite/rnn.cc): every node of their
// expansions, and of a mixed-precision training graph holding one, has a CUDA kernel (checked
// from the kernel table, no device needed); where a device answers, the graphs' outputs agree
// with the CPU's in F32 and F16.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>

#include "runtime/composite.h"
#include "runtime/cuda/device.h"
#include "runtime/executor.h"
#include "tests/runtime/rnn_reference.h"
#include "train/training_graph.h"

using namespace oat;
using oat_test::rnn::Case;

namespace {

// Nodes without a CUDA kernel, except the generators that every executor runs on the host
// (Constant: the gradient builders' scalars).
std::string missing(const Graph& g) {
  std::set<std::string> host;
  for (const Node& n : g.nodes)
    if (n.op == OpId::Constant || n.op == OpId::ConstantOfShape || n.op == OpId::Range)
      host.insert(n.describe());
  std::string r;
  for (const auto& [node, why] : unsupported_nodes(g, Device::CUDA, default_registry()))
    if (!host.count(node)) r += node + ": " + why + "\n";
  return r;
}

// Cases that between them use every op an expansion emits.
std::vector<Case> cases() {
  std::vector<Case> v;
  Case l;
  l.op = "LSTM";
  l.direction = "bidirectional";
  l.layout = 1;
  l.lens = {3, 1};
  l.init_h = l.init_c = l.peepholes = true;
  l.clip = 0.8f;
  v.push_back(l);
  for (int64_t lbr : {0, 1}) {
    Case g;
    g.op = "GRU";
    g.direction = "reverse";
    g.linear_before_reset = lbr;
    g.lens = {2, 3};
    v.push_back(g);
  }
  Case r;
  r.op = "RNN";
  r.direction = "bidirectional";
  r.acts = {{"Affine", 0.5f, 0.1f}, {"ScaledTanh", 1.2f, 0.8f}};
  v.push_back(r);
  const std::vector<oat_test::rnn::Act> others = {{"Relu"},
                                                  {"LeakyRelu", 0.1f},
                                                  {"ThresholdedRelu", 0.2f},
                                                  {"Elu", 1.0f},
                                                  {"HardSigmoid", 0.2f, 0.5f},
                                                  {"Softsign"},
                                                  {"Softplus"},
                                                  {"Sigmoid"}};
  for (const auto& a : others) {
    Case c;
    c.op = "RNN";
    c.acts = {a};
    v.push_back(c);
  }
  return v;
}

}  // namespace

TEST_CASE("RNN/GRU/LSTM expansions and their training graphs have CUDA kernels for every node") {
  if (!cuda::compiled()) {
    MESSAGE("SKIPPED: this build has no CUDA backend");
    return;
  }
  for (const Case& c : cases()) {
    CAPTURE(c.op);
    const auto in = oat_test::rnn::make_inputs(c);
    std::map<std::string, Tensor> feeds;
    Graph g = oat_test::rnn::graph(c, in, feeds);
    lower_composites(g);
    CHECK(missing(g) == "");
  }
  // X [batch, 5, 3] → LSTM (layout 1) → Y_h → Flatten → Gemm, trained in F16 and BF16.
  Graph m;
  m.opsets[""] = 14;
  ValueInfo x{"x", DType::F32, std::vector<Dim>{Dim{-1, "batch"}, Dim{5, ""}, Dim{3, ""}}};
  m.inputs.push_back(x);
  m.initializers["W"] = Tensor::zeros(DType::F32, {1, 16, 3});
  m.initializers["R"] = Tensor::zeros(DType::F32, {1, 16, 4});
  m.initializers["B"] = Tensor::zeros(DType::F32, {1, 32});
  m.initializers["fc"] = Tensor::zeros(DType::F32, {4, 2});
  auto node = [&](const std::string& op, std::vector<std::string> i, std::vector<std::string> o) {
    Node n;
    n.name = op;
    n.op_type = op;
    n.op = op_from_name(op);
    n.opset = 14;
    n.inputs = std::move(i);
    n.outputs = std::move(o);
    m.nodes.push_back(n);
    return &m.nodes.back();
  };
  Node* lstm = node("LSTM", {"x", "W", "R", "B"}, {"", "h"});
  lstm->attrs["hidden_size"] = oat_test::rnn::a_int(4);
  lstm->attrs["layout"] = oat_test::rnn::a_int(1);
  node("Flatten", {"h"}, {"hf"});
  node("Gemm", {"hf", "fc"}, {"logits"});
  m.outputs.push_back(
      ValueInfo{"logits", DType::F32, std::vector<Dim>{Dim{-1, "batch"}, Dim{2, ""}}});
  for (DType precision : {DType::F16, DType::BF16}) {
    const std::string p = dtype_name(precision);
    CAPTURE(p);
    train::TrainingGraphOptions o;
    o.precision = precision;
    o.loss_scaling = precision == DType::F16;
    const train::TrainingGraph tg = train::build_training_graph(m, o);
    CHECK(missing(tg.graph) == "");
  }
}

TEST_CASE("RNN/GRU/LSTM agree between the CPU and CUDA in F32 and F16") {
  if (cuda::device_count() == 0) {
    MESSAGE("SKIPPED: " << cuda::describe_device());
    return;
  }
  for (Case c : cases())
    for (DType dt : {DType::F32, DType::F16}) {
      CAPTURE(c.op);
      const std::string t = dtype_name(dt);
      CAPTURE(t);
      c.dtype = dt;
      const auto in = oat_test::rnn::make_inputs(c);
      std::map<std::string, Tensor> feeds;
      const Graph g = oat_test::rnn::graph(c, in, feeds);
      Executor cpu(g);
      ExecutorOptions o;
      o.device = Device::CUDA;
      Executor gpu(g, o);
      const auto a = cpu.run(feeds);
      const auto b = gpu.run(feeds);
      REQUIRE(a.size() == b.size());
      const double tol = dt == DType::F16 ? 1e-2 : 1e-4;
      for (size_t k = 0; k < a.size(); ++k) {
        CAPTURE(k);
        REQUIRE(b[k].dtype() == a[k].dtype());
        REQUIRE(b[k].shape() == a[k].shape());
        const auto x = a[k].to_float_vector(), y = b[k].to_float_vector();
        double worst = 0;
        for (size_t i = 0; i < x.size(); ++i)
          worst = std::max(worst, std::fabs(static_cast<double>(x[i]) - y[i]));
        CAPTURE(worst);
        CHECK(worst <= tol);
      }
    }
}
