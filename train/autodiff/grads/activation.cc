// Gradients of the activations. The hot ones (ReLU family, sigmoid, tanh, GELU, clip, ...) are
// one dedicated kernel each (runtime/cpu/kernels/grad_activation.cc), fed the saved forward value
// that makes the derivative cheapest; the rare ones are short chains of ordinary nodes.
#include <cmath>

#include "train/autodiff/register.h"

namespace oat::train {

namespace {

using G = GradientContext;
using Attrs = std::map<std::string, Attribute>;

// The node's float attribute `key` (or `def`), passed on explicitly so the gradient kernel never
// depends on defaults that could drift from the forward kernel's.
Attribute float_attr(const Node& n, const char* key, float def) {
  return G::attr_float(n.attr_float(key, def));
}

// Relu: dX = dY ⊙ (Y > 0)
void relu_grad(G& c) { c.set_GI(0, c.emit_grad_op("ReluGrad", {c.GO(0), c.O(0)})); }

// LeakyRelu: dX = dY ⊙ (X > 0 ? 1 : α)
void leaky_relu_grad(G& c) {
  Attrs a{{"alpha", float_attr(c.node(), "alpha", 0.01f)}};
  c.set_GI(0, c.emit_grad_op("LeakyReluGrad", {c.GO(0), c.I(0)}, a));
}

// Sigmoid: dX = dY ⊙ Y ⊙ (1 − Y)
void sigmoid_grad(G& c) { c.set_GI(0, c.emit_grad_op("SigmoidGrad", {c.GO(0), c.O(0)})); }

// Tanh: dX = dY ⊙ (1 − Y²)
void tanh_grad(G& c) { c.set_GI(0, c.emit_grad_op("TanhGrad", {c.GO(0), c.O(0)})); }

// Clip: dX = dY ⊙ (lo ≤ X ≤ hi). Bounds: attributes min/max before opset 11, optional inputs
// 1/2 (not differentiable) from opset 11.
void clip_grad(G& c) {
  const Node& n = c.node();
  Attrs a;
  std::vector<std::string> ins = {c.GO(0), c.I(0)};
  if (n.opset < 11) {
    for (const char* k : {"min", "max"})
      if (n.has_attr(k)) a[k] = float_attr(n, k, 0.0f);
  } else {
    ins.push_back(c.I(1));
    ins.push_back(c.I(2));
  }
  c.set_GI(0, c.emit_grad_op("ClipGrad", ins, a));
}

// Erf: dX = dY ⊙ (2/√π)·e^(−X²)
void erf_grad(G& c) {
  std::string e = c.emit1("Exp", {c.emit1("Neg", {c.emit1("Mul", {c.I(0), c.I(0)})})});
  std::string k = c.scalar_like(2.0 / std::sqrt(M_PI), c.I(0));
  c.set_GI(0, c.emit1("Mul", {c.emit1("Mul", {c.GO(0), e}), k}));
}

// Gelu: none: dX = dY ⊙ (Φ(X) + X·φ(X));  tanh: see GeluGrad (grad_activation.cc)
void gelu_grad(G& c) {
  Attrs a;
  if (const Attribute* mode = c.node().attr("approximate")) a["approximate"] = *mode;
  c.set_GI(0, c.emit_grad_op("GeluGrad", {c.GO(0), c.I(0)}, a));
}

// Elu: dX = dY ⊙ (X > 0 ? 1 : α·eˣ)
void elu_grad(G& c) {
  Attrs a{{"alpha", float_attr(c.node(), "alpha", 1.0f)}};
  c.set_GI(0, c.emit_grad_op("EluGrad", {c.GO(0), c.I(0)}, a));
}

// Selu: dX = dY ⊙ γ·(X > 0 ? 1 : α·eˣ)   (EluGrad with gamma)
void selu_grad(G& c) {
  const Node& n = c.node();
  Attrs a{{"alpha", float_attr(n, "alpha", 1.67326319217681884765625f)},
          {"gamma", float_attr(n, "gamma", 1.05070102214813232421875f)}};
  c.set_GI(0, c.emit_grad_op("EluGrad", {c.GO(0), c.I(0)}, a));
}

// Celu: y = max(0, x) + min(0, α(e^(x/α) − 1)).  dX = dY ⊙ e^(min(X, 0)/α)
void celu_grad(G& c) {
  const float alpha = c.node().attr_float("alpha", 1.0f);
  std::string m = c.emit1("Min", {c.I(0), c.scalar_like(0.0, c.I(0))});
  std::string e = c.emit1("Exp", {c.emit1("Div", {m, c.scalar_like(alpha, c.I(0))})});
  c.set_GI(0, c.emit1("Mul", {c.GO(0), e}));
}

// Softplus: dX = dY ⊙ σ(X)
void softplus_grad(G& c) { c.set_GI(0, c.emit_grad_op("SoftplusGrad", {c.GO(0), c.I(0)})); }

// Softsign: dX = dY / (1 + |X|)²
void softsign_grad(G& c) {
  std::string d = c.emit1("Add", {c.emit1("Abs", {c.I(0)}), c.scalar_like(1.0, c.I(0))});
  c.set_GI(0, c.emit1("Div", {c.GO(0), c.emit1("Mul", {d, d})}));
}

// HardSigmoid: dX = dY ⊙ α·(0 < αX + β < 1)
void hard_sigmoid_grad(G& c) {
  const Node& n = c.node();
  Attrs a{{"alpha", float_attr(n, "alpha", 0.2f)}, {"beta", float_attr(n, "beta", 0.5f)}};
  c.set_GI(0, c.emit_grad_op("HardSigmoidGrad", {c.GO(0), c.I(0)}, a));
}

// HardSwish: dX = dY ⊙ (X < −3 ? 0 : X ≤ 3 ? X/3 + ½ : 1)
void hard_swish_grad(G& c) { c.set_GI(0, c.emit_grad_op("HardSwishGrad", {c.GO(0), c.I(0)})); }

// PRelu: dX = dY ⊙ (X < 0 ? slope : 1),  dSlope = sum_to(dY ⊙ (X < 0 ? X : 0), slope)
// One PReluGrad node gives both (only those wanted), dSlope already summed to the slope's shape.
void prelu_grad(G& c) {
  Attrs a;
  if (c.node().opset < 7) a["legacy_slope"] = G::attr_int(1);
  auto outs = c.emit_grad_op_outputs("PReluGrad", {c.GO(0), c.I(0), c.I(1)}, a,
                                     {c.needs_GI(0), c.needs_GI(1)});
  c.set_GI(0, outs[0]);
  c.set_GI(1, outs[1]);
}

// Mish: y = x·tanh(sp), sp = softplus(x).  dX = dY ⊙ (t + X·σ(X)·(1 − t²)),  t = tanh(sp)
void mish_grad(G& c) {
  std::string t = c.emit1("Tanh", {c.emit1("Softplus", {c.I(0)})});
  std::string one_minus_t2 = c.emit1("Sub", {c.scalar_like(1.0, c.I(0)), c.emit1("Mul", {t, t})});
  std::string xs = c.emit1("Mul", {c.I(0), c.emit1("Sigmoid", {c.I(0)})});
  std::string d = c.emit1("Add", {t, c.emit1("Mul", {xs, one_minus_t2})});
  c.set_GI(0, c.emit1("Mul", {c.GO(0), d}));
}

// ThresholdedRelu: dX = dY ⊙ (X > α)
void thresholded_relu_grad(G& c) {
  const float alpha = c.node().attr_float("alpha", 1.0f);
  std::string gt = c.emit1("Greater", {c.I(0), c.scalar_like(alpha, c.I(0))});
  c.set_GI(0, c.emit1("Mul", {c.GO(0), c.emit1("CastLike", {gt, c.GO(0)})}));
}

// Shrink: y = x − bias (x > λ), x + bias (x < −λ), 0 between.  dX = dY ⊙ (|X| > λ)
void shrink_grad(G& c) {
  const float lambd = c.node().attr_float("lambd", 0.5f);
  std::string outside =
      c.emit1("Greater", {c.emit1("Abs", {c.I(0)}), c.scalar_like(lambd, c.I(0))});
  c.set_GI(0, c.emit1("Mul", {c.GO(0), c.emit1("CastLike", {outside, c.GO(0)})}));
}

}  // namespace

void register_activation_gradients(GradientRegistry& r) {
  r.add(OpId::Relu, {relu_grad, {}});
  r.add(OpId::LeakyRelu, {leaky_relu_grad, {}});
  r.add(OpId::Sigmoid, {sigmoid_grad, {}});
  r.add(OpId::Tanh, {tanh_grad, {}});
  r.add(OpId::Clip, {clip_grad, {1, 2}});
  r.add(OpId::Erf, {erf_grad, {}});
  r.add(OpId::Gelu, {gelu_grad, {}});
  r.add(OpId::Elu, {elu_grad, {}});
  r.add(OpId::Selu, {selu_grad, {}});
  r.add(OpId::Celu, {celu_grad, {}});
  r.add(OpId::Softplus, {softplus_grad, {}});
  r.add(OpId::Softsign, {softsign_grad, {}});
  r.add(OpId::HardSigmoid, {hard_sigmoid_grad, {}});
  r.add(OpId::HardSwish, {hard_swish_grad, {}});
  r.add(OpId::PRelu, {prelu_grad, {}});
  r.add(OpId::Mish, {mish_grad, {}});
  r.add(OpId::ThresholdedRelu, {thresholded_relu_grad, {}});
  r.add(OpId::Shrink, {shrink_grad, {}});
}

}  // namespace oat::train
