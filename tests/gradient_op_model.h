// A model with ONNX's Gradient op (train/autodiff/gradient_op.h), for the train and CUDA tests:
//
//   h = MatMul(a, W),  t = Tanh(h),  y = Mul(t, t)                        (y: [2, 4], not a scalar)
//   da, dW = Gradient(a2, W; xs = [a, W], y = y)     at a = a2, another input (W the graph's own)
//   dq     = Gradient(q, W, a; xs = [q, W], zs = [a], y = y), dW left out   (y does not read q)
//
// and the expected values in double: with s = Σ y, ds/dh = 2·t·(1 − t²) at h = a2·W,
// da = ds/dh · Wᵀ, dW = a2ᵀ · ds/dh; dq = zeros of q's shape.
#pragma once

#include <cmath>
#include <vector>

#include "runtime/graph.h"
#include "runtime/tensor.h"
#include "test_tensors.h"

namespace oat_test {

struct GradientOpModel {
  oat::Graph g;
  oat::Tensor a, a2, q, w;

  GradientOpModel() {
    using namespace oat;
    a = uniform_tensor({2, 3}, 1);
    a2 = uniform_tensor({2, 3}, 2);
    q = uniform_tensor({5}, 3);
    w = uniform_tensor({3, 4}, 4);
    g.name = "gradient_op";
    g.opsets[""] = 13;
    g.opsets["ai.onnx.preview.training"] = 1;
    auto input = [&](const std::string& name, const Tensor& t) {
      std::vector<Dim> dims;
      for (int64_t d : t.shape()) dims.push_back(Dim{d, ""});
      g.inputs.push_back(ValueInfo{name, DType::F32, dims});
    };
    input("a", a);
    input("a2", a2);
    input("q", q);
    g.initializers["W"] = w;
    auto node = [&](const std::string& name, const std::string& op, std::vector<std::string> in,
                    std::vector<std::string> out, const std::string& domain = "") -> Node& {
      Node n;
      n.name = name;
      n.op_type = op;
      n.domain = domain;
      n.op = op_from_domain(domain, op);
      n.opset = domain.empty() ? 13 : 1;
      n.inputs = std::move(in);
      n.outputs = std::move(out);
      g.nodes.push_back(std::move(n));
      return g.nodes.back();
    };
    auto strings = [](std::vector<std::string> v) {
      Attribute at;
      at.kind = Attribute::Kind::Strings;
      at.strings = std::move(v);
      return at;
    };
    node("mm", "MatMul", {"a", "W"}, {"h"});
    node("tanh", "Tanh", {"h"}, {"t"});
    node("square", "Mul", {"t", "t"}, {"y"});
    Node& g1 = node("grad", "Gradient", {"a2", "W"}, {"da", "dW"}, "ai.onnx.preview.training");
    g1.attrs["xs"] = strings({"a", "W"});
    g1.attrs["y"] = string_attribute("y");
    Node& g2 = node("grad_q", "Gradient", {"q", "W", "a"}, {"dq", ""}, "ai.onnx.preview.training");
    g2.attrs["xs"] = strings({"q", "W"});
    g2.attrs["zs"] = strings({"a"});
    g2.attrs["y"] = string_attribute("y");
    for (const char* o : {"y", "da", "dW", "dq"})
      g.outputs.push_back(ValueInfo{o, DType::F32, std::nullopt});
  }

  // Expected da [2, 3] and dW [3, 4], row-major.
  void expected(std::vector<double>& da, std::vector<double>& dw) const {
    double dh[2][4];
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) {
        double h = 0;
        for (int k = 0; k < 3; ++k)
          h += double(a2.data<float>()[i * 3 + k]) * w.data<float>()[k * 4 + j];
        const double t = std::tanh(h);
        dh[i][j] = 2 * t * (1 - t * t);
      }
    da.assign(6, 0.0);
    dw.assign(12, 0.0);
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 3; ++k)
        for (int j = 0; j < 4; ++j) {
          da[i * 3 + k] += dh[i][j] * w.data<float>()[k * 4 + j];
          dw[k * 4 + j] += double(a2.data<float>()[i * 3 + k]) * dh[i][j];
        }
  }
};

}  // namespace oat_test
