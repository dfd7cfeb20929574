// Gradients of the normalisations. Each is one gradient op (runtime/cpu/kernels/grad_norm.cc)
// that returns dX, dScale and dBias together, computing only those asked for; LpNormalization's
// (no parameters) returns dX (runtime/cpu/kernels/lp_norm.cc).
#include "train/autodiff/register.h"

namespace oat::train {

namespace {

using G = GradientContext;

// Gradients may flow only into Y (output 0): the statistics outputs (running or saved mean and
// variance, LayerNorm's Mean/InvStdDev) are state or diagnostics, not on a path to a loss.
void require_only_y_grad(G& c) {
  for (int k = 1; k < static_cast<int>(c.node().outputs.size()); ++k)
    if (!c.GO(k).empty())
      throw Error(cat(c.node().describe(), ": a gradient flows into output ", k, " ('", c.O(k),
                      "'); only Y (output 0) of ", c.node().op_type, " is differentiable"));
}

// Whether the BatchNormalization node normalises with batch statistics, as the forward kernel
// decides: opset >= 14 by training_mode; before, by the presence of the statistics outputs
// (unless is_test=1, opset <= 6).
bool batch_norm_training(const Node& n) {
  if (n.opset >= 14) return n.attr_int("training_mode", 0) != 0;
  bool extra = false;
  for (size_t i = 1; i < n.outputs.size(); ++i) extra |= !n.outputs[i].empty();
  return extra && !(n.opset <= 6 && n.attr_int("is_test", 0) != 0);
}

// BatchNormalization: Y = γ·x̂ + β, x̂ = (X − μ)/√(var + ε), per channel over (N, D1, ...).
//   training (μ, var from the batch): dX = (γ/σ)·(dY − mean(dY) − x̂·mean(dY⊙x̂))
//   inference (μ, var the inputs):    dX = dY·γ/σ
//   dγ = Σ dY⊙x̂,  dβ = Σ dY.
// In inference mode μ and var may be computed values (tf2onnx writes Keras' LayerNormalization as
// a BatchNormalization whose mean/var are ReduceMeans of the input); their gradients are
//   dμ = −Σ dY·γ/σ = −γ·dβ/σ,   dvar = Σ dY·γ·(X − μ)·(−½)(var + ε)^(−3/2) = −½·γ·dγ/(var + ε).
// In training mode Y does not depend on the mean/var inputs (they feed only the running
// statistics), so they get no gradient.
void batch_norm_grad(G& c) {
  require_only_y_grad(c);
  const Node& n = c.node();
  const bool training = batch_norm_training(n);
  std::map<std::string, Attribute> attrs;
  attrs["training_mode"] = G::attr_int(training ? 1 : 0);
  attrs["epsilon"] = G::attr_float(n.attr_float("epsilon", 1e-5f));
  attrs["spatial"] = G::attr_int(n.opset < 9 ? n.attr_int("spatial", 1) : 1);
  std::vector<std::string> ins = {c.GO(0), c.I(0), c.I(1)};
  if (!training) {
    ins.push_back(c.I(3));
    ins.push_back(c.I(4));
  }
  const bool d_mean = !training && c.needs_GI(3), d_var = !training && c.needs_GI(4);
  auto out = c.emit_grad_op_outputs("BatchNormalizationGrad", ins, attrs,
                                    {c.needs_GI(0), c.needs_GI(1) || d_var, c.needs_GI(2) || d_mean});
  for (int i = 0; i < 3; ++i)
    if (c.needs_GI(i)) c.set_GI(i, out[i]);
  if (!d_mean && !d_var) return;
  const std::string& gamma = c.I(1);
  const std::string var_eps =
      c.emit1("Add", {c.I(4), c.scalar_like(n.attr_float("epsilon", 1e-5f), c.I(4))});
  if (d_mean) {
    const std::string sd = c.emit1("Sqrt", {var_eps});
    c.set_GI(3, c.emit1("Neg", {c.emit1("Div", {c.emit1("Mul", {gamma, out[2]}), sd})}));
  }
  if (d_var)
    c.set_GI(4, c.emit1("Mul", {c.scalar_like(-0.5, c.I(4)),
                                c.emit1("Div", {c.emit1("Mul", {gamma, out[1]}), var_eps})}));
}

// InstanceNormalization: BatchNorm's training-mode gradient with statistics per (n, c) plane:
//   dX = (γ/σ)·(dY − mean(dY) − x̂·mean(dY⊙x̂)) per plane,  dγ = Σ_{n,s} dY⊙x̂,  dβ = Σ_{n,s} dY
void instance_norm_grad(G& c) {
  const Node& n = c.node();
  std::map<std::string, Attribute> attrs;
  attrs["instance"] = G::attr_int(1);
  attrs["training_mode"] = G::attr_int(1);
  attrs["epsilon"] = G::attr_float(n.attr_float("epsilon", 1e-5f));
  auto out = c.emit_grad_op_outputs("BatchNormalizationGrad", {c.GO(0), c.I(0), c.I(1)}, attrs,
                                    {c.needs_GI(0), c.needs_GI(1), c.needs_GI(2)});
  for (int i = 0; i < 3; ++i)
    if (c.needs_GI(i)) c.set_GI(i, out[i]);
}

// LayerNormalization: per row over the axes from `axis` on, Y = γ⊙x̂ + β, g = dY⊙γ:
//   dX = σ⁻¹·(g − mean(g) − x̂·mean(g⊙x̂)),  dγ = sum_to(Σ_rows dY⊙x̂, γ),  dβ = sum_to(Σ_rows dY, β)
// The forward node's Mean/InvStdDev outputs are reused when it has them.
void layer_norm_grad(G& c) {
  require_only_y_grad(c);
  const Node& n = c.node();
  std::map<std::string, Attribute> attrs;
  attrs["axis"] = G::attr_int(n.attr_int("axis", -1));
  attrs["epsilon"] = G::attr_float(n.attr_float("epsilon", 1e-5f));
  std::vector<std::string> ins = {c.GO(0), c.I(0), c.I(1)};
  if (!c.O(1).empty() && !c.O(2).empty()) {
    ins.push_back(c.O(1));
    ins.push_back(c.O(2));
  }
  const bool want_bias = !c.I(2).empty() && c.needs_GI(2);
  auto out = c.emit_grad_op_outputs("LayerNormalizationGrad", ins, attrs,
                                    {c.needs_GI(0), c.needs_GI(1), want_bias});
  if (c.needs_GI(0)) c.set_GI(0, out[0]);
  if (c.needs_GI(1)) c.set_GI(1, c.sum_to_shape_of(out[1], c.I(1)));
  if (want_bias) c.set_GI(2, c.sum_to_shape_of(out[2], c.I(2)));
}

// LpNormalization: y = x / ||x||_p along axis (0 for a zero lane), so with n = ||x||_p:
//   p = 2: dX = (dY − y·Σ dY⊙y) / n        p = 1: dX = (dY − sign(x)·Σ dY⊙y) / n
// and dX = 0 on a lane with n = 0 (derivation in runtime/cpu/kernels/lp_norm.cc). One internal op,
// LpNormalizationGrad(dY, X), with the forward's axis and p: exact, and no NaN at n = 0, which a
// composition of Div/ReduceL2 would need a Where for.
void lp_norm_grad(G& c) {
  const Node& n = c.node();
  std::map<std::string, Attribute> attrs;
  attrs["axis"] = G::attr_int(n.attr_int("axis", -1));
  attrs["p"] = G::attr_int(n.attr_int("p", 2));
  c.set_GI(0, c.emit_grad_op("LpNormalizationGrad", {c.GO(0), c.I(0)}, attrs));
}

}  // namespace

void register_norm_gradients(GradientRegistry& r) {
  r.add(OpId::BatchNormalization, {batch_norm_grad, {}});
  r.add(OpId::InstanceNormalization, {instance_norm_grad, {}});
  r.add(OpId::LayerNormalization, {layer_norm_grad, {}});
  r.add(OpId::LpNormalization, {lp_norm_grad, {}});
}

}  // namespace oat::train
