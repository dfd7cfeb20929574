// A QAT-style model for the quantization tests (tests/train/quantize_train_test.cc,
// tests/cli/quantize_cli_test.cc): the zoo MLP with fake quantization before each Gemm, as
// torch.onnx exports a PyTorch QAT model: activations per tensor (uint8, scale 1/32, zero point
// 128 for the input and 0 after the ReLUs), weights per output channel (int8 symmetric, axis 0 of
// W [out, in]). And a learnable task for it: 28x28 images whose class is the brightest of 10
// horizontal bands.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>

#include "models/zoo.h"
#include "node_builder.h"
#include "train/data/batches.h"

namespace oat_test {

inline oat::Graph qdq_mlp() {
  using namespace oat;
  auto f32 = [](Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); };
  Attribute axis0;
  axis0.kind = Attribute::Kind::Int;
  axis0.i = 0;
  Graph g = models::mlp(1);
  std::vector<Node> nodes;
  for (const Node& n : g.nodes) {
    if (n.op != OpId::Gemm) {
      nodes.push_back(n);
      continue;
    }
    Node gemm = n;
    const std::string p = n.name;
    g.initializers[p + ".act_scale"] = f32({}, {1.f / 32});
    Tensor za(DType::U8, {});
    za.data<uint8_t>()[0] = p == "fc1" ? 128 : 0;
    g.initializers[p + ".act_zp"] = za;
    nodes.push_back(make_node(p + ".act_q", "QuantizeLinear",
                              {n.inputs[0], p + ".act_scale", p + ".act_zp"}, p + ".act_q"));
    nodes.push_back(make_node(p + ".act_dq", "DequantizeLinear",
                              {p + ".act_q", p + ".act_scale", p + ".act_zp"}, p + ".act_dq"));
    gemm.inputs[0] = p + ".act_dq";
    const Tensor& w = g.initializers.at(n.inputs[1]);
    const int64_t out = w.dim(0), in = w.dim(1);
    std::vector<float> s(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
      float m = 0;
      for (int64_t i = 0; i < in; ++i) m = std::max(m, std::fabs(w.data<float>()[o * in + i]));
      s[static_cast<size_t>(o)] = std::max(m, 1e-3f) / 127.f;
    }
    g.initializers[p + ".w_scale"] = f32({out}, s);
    g.initializers[p + ".w_zp"] = Tensor::zeros(DType::I8, {out});
    nodes.push_back(make_node(p + ".w_q", "QuantizeLinear",
                              {n.inputs[1], p + ".w_scale", p + ".w_zp"}, p + ".w_q",
                              {{"axis", axis0}}));
    nodes.push_back(make_node(p + ".w_dq", "DequantizeLinear",
                              {p + ".w_q", p + ".w_scale", p + ".w_zp"}, p + ".w_dq",
                              {{"axis", axis0}}));
    gemm.inputs[1] = p + ".w_dq";
    nodes.push_back(gemm);
  }
  g.nodes = nodes;
  g.name = "mlp_qdq";
  return g;
}

inline oat::train::Dataset band_data(int64_t n, unsigned seed) {
  using namespace oat;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 0.5f);
  train::Dataset d{Tensor(DType::F32, {n, 1, 28, 28}), Tensor(DType::I64, {n})};
  for (int64_t b = 0; b < n; ++b) {
    const int64_t label = static_cast<int64_t>(rng() % 10);
    d.targets.data<int64_t>()[b] = label;
    for (int64_t r = 0; r < 28; ++r)
      for (int64_t c = 0; c < 28; ++c)
        d.inputs.data<float>()[(b * 28 + r) * 28 + c] = u(rng) + (r / 3 == label ? 0.5f : 0.f);
  }
  return d;
}

}  // namespace oat_test
