// Small models with dense outputs, built in-test, for cross-entropy over rank >= 3 outputs and
// integer (token id) inputs (train/training_graph.h LabelOptions; tests/train/dense_loss_test.cc,
// tests/cli/dense_cli_test.cc):
//   seg_net:   x [N, 1, 8, 8] -> Conv 3x3 (8) -> Relu -> Conv 1x1 (3) -> logits [N, 3, 8, 8]
//   token_net: ids int64 [N, 8] -> Gather(E [16, 16]) -> MatMul W [16, 16] + b -> logits [N, 8, 16]
// and their synthetic tasks:
//   seg_data:   x ~ U(−1, 1); each pixel's label is 0 (x < −0.3), 1 (|x| <= 0.3) or 2 (x > 0.3);
//               row 0 of every map is labelled ignore_index (−100);
//   token_data: ids ~ U{0..15}; label = (id·3 + 1) mod 16.
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include "node_builder.h"
#include "runtime/graph.h"
#include "train/data/batches.h"

namespace oat::dense_test {

constexpr int64_t kSegClasses = 3, kSegSize = 8, kSegHidden = 8;
constexpr int64_t kVocab = 16, kSeq = 8, kEmbed = 16;

// Nodes at opset 13: Conv, Relu, MatMul, Add, Mul, Gather and Cast mean the same up to 17.
using oat_test::make_node;

inline ValueInfo value(const std::string& name, DType dt, std::vector<int64_t> dims) {
  ValueInfo v;
  v.name = name;
  v.dtype = dt;
  std::vector<Dim> d;
  for (int64_t x : dims) {
    Dim dim;
    if (x < 0) dim.param = "batch";
    else dim.value = x;
    d.push_back(dim);
  }
  v.shape = d;
  return v;
}

inline Tensor uniform(Shape s, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  Tensor t(DType::F32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

inline Graph seg_net(unsigned seed = 3) {
  std::mt19937 rng(seed);
  Graph g;
  g.name = "seg_net";
  g.opsets[""] = 17;
  g.inputs.push_back(value("x", DType::F32, {-1, 1, kSegSize, kSegSize}));
  g.initializers["w1"] = uniform({kSegHidden, 1, 3, 3}, 0.5f, rng);
  g.initializers["b1"] = uniform({kSegHidden}, 0.3f, rng);
  g.initializers["w2"] = uniform({kSegClasses, kSegHidden, 1, 1}, 0.5f, rng);
  g.initializers["b2"] = Tensor::zeros(DType::F32, {kSegClasses});
  g.nodes.push_back(make_node("conv1", "Conv", {"x", "w1", "b1"}, "h",
                              {{"kernel_shape", ints_attribute({3, 3})},
                               {"pads", ints_attribute({1, 1, 1, 1})}}));
  g.nodes.push_back(make_node("relu", "Relu", {"h"}, "hr"));
  g.nodes.push_back(make_node("conv2", "Conv", {"hr", "w2", "b2"}, "logits",
                              {{"kernel_shape", ints_attribute({1, 1})}}));
  g.outputs.push_back(value("logits", DType::F32, {-1, kSegClasses, kSegSize, kSegSize}));
  return g;
}

inline train::Dataset seg_data(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  train::Dataset d{uniform({n, 1, kSegSize, kSegSize}, 1.0f, rng),
                   Tensor(DType::I64, {n, kSegSize, kSegSize})};
  for (int64_t i = 0; i < d.inputs.numel(); ++i) {
    const float x = d.inputs.data<float>()[i];
    const bool row0 = (i / kSegSize) % kSegSize == 0;
    d.targets.data<int64_t>()[i] = row0 ? -100 : x < -0.3f ? 0 : x > 0.3f ? 2 : 1;
  }
  return d;
}

inline Graph token_net(unsigned seed = 4) {
  std::mt19937 rng(seed);
  Graph g;
  g.name = "token_net";
  g.opsets[""] = 17;
  g.inputs.push_back(value("ids", DType::I64, {-1, kSeq}));
  g.initializers["embedding"] = uniform({kVocab, kEmbed}, 0.5f, rng);
  g.initializers["W"] = uniform({kEmbed, kVocab}, 0.3f, rng);
  g.initializers["b"] = Tensor::zeros(DType::F32, {kVocab});
  g.nodes.push_back(make_node("embed", "Gather", {"embedding", "ids"}, "h"));
  g.nodes.push_back(make_node("head", "MatMul", {"h", "W"}, "z"));
  g.nodes.push_back(make_node("bias", "Add", {"z", "b"}, "logits"));
  g.outputs.push_back(value("logits", DType::F32, {-1, kSeq, kVocab}));
  return g;
}

inline train::Dataset token_data(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> id(0, kVocab - 1);
  train::Dataset d{Tensor(DType::I64, {n, kSeq}), Tensor(DType::I64, {n, kSeq})};
  for (int64_t i = 0; i < n * kSeq; ++i) {
    const int64_t t = id(rng);
    d.inputs.data<int64_t>()[i] = t;
    d.targets.data<int64_t>()[i] = (t * 3 + 1) % kVocab;
  }
  return d;
}

}  // namespace oat::dense_test
