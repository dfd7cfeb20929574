// Gradients of the elementwise arithmetic ops. Broadcast operands get their gradient summed
// back to their own shape: sum_to(g, X) below (SumToShape, a no-op for same-shaped operands).
#include "train/autodiff/register.h"

namespace oat::train {

namespace {

using G = GradientContext;

// Add: dA = sum_to(dY, A), dB = sum_to(dY, B)
void add_grad(G& c) {
  for (int i = 0; i < 2; ++i)
    if (c.needs_GI(i)) c.set_GI(i, c.sum_to_shape_of(c.GO(0), c.I(i)));
}

// Sub: dA = sum_to(dY, A), dB = -sum_to(dY, B)
void sub_grad(G& c) {
  if (c.needs_GI(0)) c.set_GI(0, c.sum_to_shape_of(c.GO(0), c.I(0)));
  if (c.needs_GI(1)) c.set_GI(1, c.emit1("Neg", {c.sum_to_shape_of(c.GO(0), c.I(1))}));
}

// Mul: dA = sum_to(dY·B, A), dB = sum_to(dY·A, B)
void mul_grad(G& c) {
  if (c.needs_GI(0)) c.set_GI(0, c.sum_to_shape_of(c.emit1("Mul", {c.GO(0), c.I(1)}), c.I(0)));
  if (c.needs_GI(1)) c.set_GI(1, c.sum_to_shape_of(c.emit1("Mul", {c.GO(0), c.I(0)}), c.I(1)));
}

// Div: Y = A/B.  dA = sum_to(dY/B, A), dB = -sum_to(dY·Y/B, B)
void div_grad(G& c) {
  std::string g_over_b = c.emit1("Div", {c.GO(0), c.I(1)});
  if (c.needs_GI(0)) c.set_GI(0, c.sum_to_shape_of(g_over_b, c.I(0)));
  if (c.needs_GI(1)) {
    std::string t = c.emit1("Mul", {g_over_b, c.O(0)});
    c.set_GI(1, c.emit1("Neg", {c.sum_to_shape_of(t, c.I(1))}));
  }
}

// The element type of a forward value, Undefined when the graph does not say.
DType dtype_in_graph(const G& c, const std::string& v) {
  const Graph& g = c.graph();
  if (auto it = g.initializers.find(v); it != g.initializers.end()) return it->second.dtype();
  const ValueInfo* vi = g.find_value_info(v);
  return vi ? vi->dtype : DType::Undefined;
}

// Pow: Y = A^B.  dA = sum_to(dY·B·A^(B-1), A), dB = sum_to(dY·Y·ln A, B)
// B may be an integer tensor (Pow 12+); it is then widened to dY's type for dA (and has no dB).
void pow_grad(G& c) {
  if (c.needs_GI(0)) {
    std::string b = c.I(1);
    if (!is_floating(dtype_in_graph(c, b))) b = c.emit1("CastLike", {b, c.GO(0)});
    std::string one = c.scalar_like(1.0, b);
    std::string bm1 = c.emit1("Sub", {b, one});
    std::string p = c.emit1("Pow", {c.I(0), bm1});
    std::string t = c.emit1("Mul", {c.emit1("Mul", {c.GO(0), b}), p});
    c.set_GI(0, c.sum_to_shape_of(t, c.I(0)));
  }
  if (c.needs_GI(1)) {
    std::string t = c.emit1("Mul", {c.emit1("Mul", {c.GO(0), c.O(0)}), c.emit1("Log", {c.I(0)})});
    c.set_GI(1, c.sum_to_shape_of(t, c.I(1)));
  }
}

// Mod (float: fmod 1, C's fmod; fmod 0, Python's %): Y = A − B·q with q = trunc(A/B) or
// floor(A/B), an integer.  dA = sum_to(dY, A), dB = −sum_to(dY·q, B), q = Round((A − Y)/B)
// (PyTorch's fmod and remainder backward; A, B where A/B is an integer are jumps of Y).
void mod_grad(G& c) {
  if (c.needs_GI(0)) c.set_GI(0, c.sum_to_shape_of(c.GO(0), c.I(0)));
  if (c.needs_GI(1)) {
    std::string q = c.emit1("Round", {c.emit1("Div", {c.emit1("Sub", {c.I(0), c.O(0)}), c.I(1)})});
    c.set_GI(1, c.emit1("Neg", {c.sum_to_shape_of(c.emit1("Mul", {c.GO(0), q}), c.I(1))}));
  }
}

// Sum: dX_i = sum_to(dY, X_i)
void sum_grad(G& c) {
  for (int i = 0; i < static_cast<int>(c.node().inputs.size()); ++i)
    if (c.needs_GI(i)) c.set_GI(i, c.sum_to_shape_of(c.GO(0), c.I(i)));
}

// Mean: Y = (X_0 + … + X_{n−1}) / n.  dX_i = sum_to(dY / n, X_i)
void mean_grad(G& c) {
  const int n = static_cast<int>(c.node().inputs.size());
  std::string g = c.emit1("Div", {c.GO(0), c.scalar_like(n, c.GO(0))});
  for (int i = 0; i < n; ++i)
    if (c.needs_GI(i)) c.set_GI(i, c.sum_to_shape_of(g, c.I(i)));
}

// Max/Min: dX_i = sum_to(dY·[X_i == Y], X_i). Ties pass the gradient to every tied input.
void minmax_grad(G& c) {
  for (int i = 0; i < static_cast<int>(c.node().inputs.size()); ++i) {
    if (!c.needs_GI(i)) continue;
    std::string mask = c.emit1("CastLike", {c.emit1("Equal", {c.I(i), c.O(0)}), c.GO(0)});
    c.set_GI(i, c.sum_to_shape_of(c.emit1("Mul", {c.GO(0), mask}), c.I(i)));
  }
}

// Neg: dX = -dY
void neg_grad(G& c) { c.set_GI(0, c.emit1("Neg", {c.GO(0)})); }

// Exp: dX = dY·Y
void exp_grad(G& c) { c.set_GI(0, c.emit1("Mul", {c.GO(0), c.O(0)})); }

// Log: dX = dY / X
void log_grad(G& c) { c.set_GI(0, c.emit1("Div", {c.GO(0), c.I(0)})); }

// Sqrt: dX = dY / (2·Y)
void sqrt_grad(G& c) {
  std::string two_y = c.emit1("Add", {c.O(0), c.O(0)});
  c.set_GI(0, c.emit1("Div", {c.GO(0), two_y}));
}

// Reciprocal: Y = 1/X.  dX = -dY·Y²
void reciprocal_grad(G& c) {
  std::string y2 = c.emit1("Mul", {c.O(0), c.O(0)});
  c.set_GI(0, c.emit1("Neg", {c.emit1("Mul", {c.GO(0), y2})}));
}

// Abs: dX = dY·sign(X)  (0 at the kink)
void abs_grad(G& c) { c.set_GI(0, c.emit1("Mul", {c.GO(0), c.emit1("Sign", {c.I(0)})})); }

// Sin: dX = dY·cos X;  Cos: dX = -dY·sin X
void sin_grad(G& c) { c.set_GI(0, c.emit1("Mul", {c.GO(0), c.emit1("Cos", {c.I(0)})})); }
void cos_grad(G& c) {
  c.set_GI(0, c.emit1("Neg", {c.emit1("Mul", {c.GO(0), c.emit1("Sin", {c.I(0)})})}));
}

// Tan: dX = dY·(1 + Y²)   (1 + tan²x = 1/cos²x)
void tan_grad(G& c) {
  std::string one_y2 =
      c.emit1("Add", {c.scalar_like(1.0, c.O(0)), c.emit1("Mul", {c.O(0), c.O(0)})});
  c.set_GI(0, c.emit1("Mul", {c.GO(0), one_y2}));
}

// Sinh: dX = dY·cosh X;  Cosh: dX = dY·sinh X
void sinh_grad(G& c) { c.set_GI(0, c.emit1("Mul", {c.GO(0), c.emit1("Cosh", {c.I(0)})})); }
void cosh_grad(G& c) { c.set_GI(0, c.emit1("Mul", {c.GO(0), c.emit1("Sinh", {c.I(0)})})); }

// 1 − X², the derivative's core for Asin, Acos and Atanh.
std::string one_minus_x2(G& c) {
  return c.emit1("Sub", {c.scalar_like(1.0, c.I(0)), c.emit1("Mul", {c.I(0), c.I(0)})});
}

// Asin: dX = dY / √(1 − X²)
void asin_grad(G& c) {
  c.set_GI(0, c.emit1("Div", {c.GO(0), c.emit1("Sqrt", {one_minus_x2(c)})}));
}

// Acos: dX = −dY / √(1 − X²)
void acos_grad(G& c) {
  c.set_GI(0, c.emit1("Neg", {c.emit1("Div", {c.GO(0), c.emit1("Sqrt", {one_minus_x2(c)})})}));
}

// Atan: dX = dY / (1 + X²)
void atan_grad(G& c) {
  std::string d = c.emit1("Add", {c.scalar_like(1.0, c.I(0)), c.emit1("Mul", {c.I(0), c.I(0)})});
  c.set_GI(0, c.emit1("Div", {c.GO(0), d}));
}

// Asinh: dX = dY / √(X² + 1)
void asinh_grad(G& c) {
  std::string d = c.emit1("Add", {c.emit1("Mul", {c.I(0), c.I(0)}), c.scalar_like(1.0, c.I(0))});
  c.set_GI(0, c.emit1("Div", {c.GO(0), c.emit1("Sqrt", {d})}));
}

// Acosh: dX = dY / √(X² − 1), written √((X − 1)(X + 1)) so X near 1 does not cancel
void acosh_grad(G& c) {
  std::string one = c.scalar_like(1.0, c.I(0));
  std::string d = c.emit1("Mul", {c.emit1("Sub", {c.I(0), one}), c.emit1("Add", {c.I(0), one})});
  c.set_GI(0, c.emit1("Div", {c.GO(0), c.emit1("Sqrt", {d})}));
}

// Atanh: dX = dY / (1 − X²)
void atanh_grad(G& c) { c.set_GI(0, c.emit1("Div", {c.GO(0), one_minus_x2(c)})); }

// Where(C, A, B): dA = sum_to(where(C, dY, 0), A), dB = sum_to(where(C, 0, dY), B)
void where_grad(G& c) {
  std::string zero = c.scalar_like(0.0, c.GO(0));
  if (c.needs_GI(1))
    c.set_GI(1, c.sum_to_shape_of(c.emit1("Where", {c.I(0), c.GO(0), zero}), c.I(1)));
  if (c.needs_GI(2))
    c.set_GI(2, c.sum_to_shape_of(c.emit1("Where", {c.I(0), zero, c.GO(0)}), c.I(2)));
}

}  // namespace

void register_elementwise_gradients(GradientRegistry& r) {
  r.add(OpId::Add, {add_grad, {}});
  r.add(OpId::Sub, {sub_grad, {}});
  r.add(OpId::Mul, {mul_grad, {}});
  r.add(OpId::Div, {div_grad, {}});
  r.add(OpId::Pow, {pow_grad, {}});
  r.add(OpId::Mod, {mod_grad, {}});
  r.add(OpId::Sum, {sum_grad, {}});
  r.add(OpId::Max, {minmax_grad, {}});
  r.add(OpId::Min, {minmax_grad, {}});
  r.add(OpId::Neg, {neg_grad, {}});
  r.add(OpId::Exp, {exp_grad, {}});
  r.add(OpId::Log, {log_grad, {}});
  r.add(OpId::Sqrt, {sqrt_grad, {}});
  r.add(OpId::Reciprocal, {reciprocal_grad, {}});
  r.add(OpId::Abs, {abs_grad, {}});
  r.add(OpId::Sin, {sin_grad, {}});
  r.add(OpId::Cos, {cos_grad, {}});
  r.add(OpId::Tan, {tan_grad, {}});
  r.add(OpId::Asin, {asin_grad, {}});
  r.add(OpId::Acos, {acos_grad, {}});
  r.add(OpId::Atan, {atan_grad, {}});
  r.add(OpId::Sinh, {sinh_grad, {}});
  r.add(OpId::Cosh, {cosh_grad, {}});
  r.add(OpId::Asinh, {asinh_grad, {}});
  r.add(OpId::Acosh, {acosh_grad, {}});
  r.add(OpId::Atanh, {atanh_grad, {}});
  r.add(OpId::Mean, {mean_grad, {}});
  r.add(OpId::Where, {where_grad, {0}});
}

}  // namespace oat::train
