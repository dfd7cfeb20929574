// Finite-difference gradient checker (Caffe's test_gradient_check_util, ggml's grad mode).
//
// For one op with inputs X_0..X_n (float64, random), the scalar loss is
//     L = Σ_k Σ_elements Y_k ⊙ R_k        (R_k fixed random weights, so every output element
//                                          contributes with a distinct weight)
// The analytic gradient dL/dX_i comes from the autodiff graph (train::build_backward) run by the
// executor; the numeric one from central differences (L(x+h) - L(x-h)) / 2h. Inputs are kept
// away from the op's kinks (ReLU's 0, Clip's bounds), where the derivative does not exist.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/composite.h"
#include "runtime/executor.h"
#include "train/autodiff/gradient_builder.h"

namespace oat::test {

struct GradCheckInput {
  Shape shape;
  bool differentiable = true;  // checked (and fed as float64)
  Tensor value;                // fixed value for non-differentiable inputs (indices, shapes)
  double lo = -1.0, hi = 1.0;  // sampling range for differentiable inputs
};

// A differentiable input of shape s, sampled from [lo, hi).
inline GradCheckInput in(Shape s, double lo = -1.0, double hi = 1.0) {
  GradCheckInput i;
  i.shape = std::move(s);
  i.lo = lo;
  i.hi = hi;
  return i;
}

// A differentiable input checked at the given value (converted to float64), not sampled.
inline GradCheckInput at(Tensor v) {
  GradCheckInput i;
  i.shape = v.shape();
  i.value = cast_tensor(v, DType::F64);
  return i;
}

// A non-differentiable input with a fixed value (indices, shapes, masks).
inline GradCheckInput fixed(Tensor v) {
  GradCheckInput i;
  i.differentiable = false;
  i.value = std::move(v);
  return i;
}

// An optional input left out.
inline GradCheckInput omitted() {
  GradCheckInput i;
  i.differentiable = false;
  return i;
}

struct GradCheckCase {
  std::string op;
  int64_t opset = 17;
  std::map<std::string, Attribute> attrs;
  std::vector<GradCheckInput> inputs;
  int num_outputs = 1;
  std::vector<int> checked_outputs = {0};  // outputs that feed the loss
  std::vector<double> kinks;  // input values where the derivative is undefined
  double step = 1e-6;
  double atol = 1e-6, rtol = 1e-5;
  unsigned seed = 1234;
  // Declare the inputs' shapes in the graph (composite ops read them: Einsum's "...", the
  // sequence length of RNN/GRU/LSTM, the rank of LRN).
  bool declare_shapes = false;
};

inline Tensor random_tensor(const Shape& s, double lo, double hi, std::mt19937& rng,
                            const std::vector<double>& kinks) {
  Tensor t(DType::F64, s);
  std::uniform_real_distribution<double> u(lo, hi);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = u(rng);
    // Resample values near a kink so that ±step never crosses it.
    for (int tries = 0; tries < 100; ++tries) {
      bool near = false;
      for (double k : kinks) near |= std::abs(v - k) < 0.02;
      if (!near) break;
      v = u(rng);
    }
    p[i] = v;
  }
  return t;
}

// Runs the check; reports the worst element per input through doctest CHECKs.
inline void check_gradients(const GradCheckCase& c) {
  std::mt19937 rng(c.seed);
  Graph g;
  g.opsets[""] = c.opset;
  Node n;
  n.name = "op";
  n.op_type = c.op;
  n.op = op_from_name(c.op);
  n.opset = c.opset;
  n.attrs = c.attrs;
  std::map<std::string, Tensor> feeds;
  std::vector<std::string> wrt;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const auto& in = c.inputs[i];
    std::string name = "x" + std::to_string(i);
    if (in.shape.empty() && !in.value.defined() && !in.differentiable) {
      n.inputs.push_back("");  // omitted optional input
      continue;
    }
    n.inputs.push_back(name);
    Tensor v = in.differentiable && !in.value.defined()
                   ? random_tensor(in.shape, in.lo, in.hi, rng, c.kinks)
                   : in.value;
    ValueInfo vi;
    vi.name = name;
    vi.dtype = v.dtype();
    if (c.declare_shapes) {
      vi.shape.emplace();
      for (int64_t d : v.shape()) vi.shape->push_back(Dim{d, ""});
    }
    g.inputs.push_back(vi);
    feeds[name] = v;
    if (in.differentiable) wrt.push_back(name);
  }
  for (int k = 0; k < c.num_outputs; ++k) n.outputs.push_back("y" + std::to_string(k));
  g.nodes.push_back(n);

  // L = Σ_k ReduceSum(Y_k ⊙ R_k). R_k's shape is only known after a forward run.
  {
    Executor probe(g);
    std::vector<std::string> outs;
    for (int k : c.checked_outputs) outs.push_back("y" + std::to_string(k));
    auto y = probe.run(feeds, outs);
    std::vector<std::string> terms;
    for (int k : c.checked_outputs) {
      const std::string yk = "y" + std::to_string(k);
      g.initializers["r" + std::to_string(k)] =
          random_tensor(y.at(yk).shape(), -1.0, 1.0, rng, {});
      Node mul;
      mul.name = "loss_mul" + std::to_string(k);
      mul.op_type = "Mul";
      mul.op = OpId::Mul;
      mul.opset = 17;
      mul.inputs = {yk, "r" + std::to_string(k)};
      mul.outputs = {"wy" + std::to_string(k)};
      Node red;
      red.name = "loss_sum" + std::to_string(k);
      red.op_type = "ReduceSum";
      red.op = OpId::ReduceSum;
      red.opset = 17;
      red.attrs["keepdims"] = train::GradientContext::attr_int(0);
      red.inputs = {mul.outputs[0]};
      red.outputs = {"l" + std::to_string(k)};
      terms.push_back(red.outputs[0]);
      g.nodes.push_back(mul);
      g.nodes.push_back(red);
    }
    Node sum;
    sum.name = "loss";
    sum.op_type = "Sum";
    sum.op = OpId::Sum;
    sum.opset = 17;
    sum.inputs = terms;
    sum.outputs = {"loss"};
    g.nodes.push_back(sum);
  }
  Graph forward = g;
  // A composite op (Einsum) is differentiated through its expansion, as build_training_graph does.
  lower_composites(g);
  train::BackwardResult bw = train::build_backward(g, "loss", wrt);
  REQUIRE_MESSAGE(bw.no_path.empty(), c.op, ": some inputs have no path to the loss");
  feeds[bw.seed] = Tensor::scalar<double>(1.0);

  Executor exec(g);
  std::vector<std::string> fetch;
  for (const auto& w : wrt) fetch.push_back(bw.grads.at(w));
  auto analytic = exec.run(feeds, fetch);

  Executor fwd(forward);
  auto loss_at = [&](const std::map<std::string, Tensor>& f) {
    std::map<std::string, Tensor> ff = f;
    ff.erase(bw.seed);
    return fwd.run(ff, {"loss"}).at("loss").item_as_double();
  };
  for (const auto& w : wrt) {
    const Tensor& ga = analytic.at(bw.grads.at(w));
    Tensor x = feeds.at(w).clone();
    REQUIRE_MESSAGE(ga.shape() == x.shape(), c.op, ": gradient of ", w, " has shape ",
                    shape_str(ga.shape()), ", input has ", shape_str(x.shape()));
    double worst = 0;
    std::string where;
    for (int64_t j = 0; j < x.numel(); ++j) {
      std::map<std::string, Tensor> f = feeds;
      Tensor xp = x.clone();
      xp.data<double>()[j] += c.step;
      f[w] = xp;
      const double lp = loss_at(f);
      Tensor xm = x.clone();
      xm.data<double>()[j] -= c.step;
      f[w] = xm;
      const double lm = loss_at(f);
      const double numeric = (lp - lm) / (2 * c.step);
      const double a = ga.item_as_double(j);
      const double err = std::abs(a - numeric) / (c.atol + c.rtol * std::max(std::abs(a), std::abs(numeric)));
      if (err > worst) {
        worst = err;
        where = cat(w, "[", j, "]: analytic ", a, ", numeric ", numeric);
      }
    }
    INFO(c.op, " d/d", w, " worst element ", where);
    CHECK(worst <= 1.0);
  }
}

// dLoss/dX for loss = ReduceSum(op(X, constants...)) (keepdims 0, so dY = 1) through the
// autodiff graph, X fed as given (any float dtype; the seed is 1 in X's dtype), the constants
// (indices, shapes) as initializers.
inline Tensor sum_gradient(const std::string& op, const Tensor& x,
                           std::map<std::string, Attribute> attrs, int64_t opset = 17,
                           const std::vector<Tensor>& constants = {}) {
  Graph g;
  g.opsets[""] = opset;
  ValueInfo vi;
  vi.name = "x";
  vi.dtype = x.dtype();
  g.inputs.push_back(vi);
  Node n;
  n.name = "op";
  n.op_type = op;
  n.op = op_from_name(op);
  n.opset = opset;
  n.attrs = std::move(attrs);
  n.inputs = {"x"};
  for (size_t k = 0; k < constants.size(); ++k) {
    n.inputs.push_back("c" + std::to_string(k + 1));
    g.initializers[n.inputs.back()] = constants[k];
  }
  n.outputs = {"y"};
  Node s;
  s.name = "sum";
  s.op_type = "ReduceSum";
  s.op = OpId::ReduceSum;
  s.opset = opset;
  s.attrs["keepdims"] = train::GradientContext::attr_int(0);
  s.inputs = {"y"};
  s.outputs = {"loss"};
  g.nodes = {n, s};
  train::BackwardResult bw = train::build_backward(g, "loss", {"x"});
  Executor ex(g);
  return ex
      .run({{"x", x}, {bw.seed, cast_tensor(Tensor::scalar<double>(1.0), x.dtype())}},
           {bw.grads.at("x")})
      .at(bw.grads.at("x"));
}

}  // namespace oat::test
