// ONNX's optimizer ops (domain ai.onnx.preview.training, opset 1) as expansions of elementwise
// ops (runtime/composite.h): a model that carries its own update rule (an exported training step)
// runs on either backend. Inputs: R (learning rate, scalar), T (int64 update count, scalar), then
// n tensors per group; outputs group by group. Every result is computed in X's type (float or
// double; R and T are cast to it). The formulas are ONNX's reference (onnx/backend/test/case/node):
//
// Adagrad(R, T, X₁..Xₙ, G₁..Gₙ, H₁..Hₙ) -> X₁'..Xₙ', H₁'..Hₙ'
//     attrs decay_factor d (0), epsilon ε (1e-6), norm_coefficient λ (0)
//   r = R / (1 + T·d),   g = λ·X + G,   H' = H + g²,   X' = X − r·g / (√H' + ε)
//
// Momentum(R, T, X₁..Xₙ, G₁..Gₙ, V₁..Vₙ) -> X₁'..Xₙ', V₁'..Vₙ'
//     attrs alpha α, beta β, mode ("standard" | "nesterov"), norm_coefficient λ (all required)
//   g = λ·X + G,   β̂ = β when T > 0, else 1,   V' = α·V + β̂·g
//   standard: X' = X − R·V'          nesterov: X' = X − R·(g + α·V')
//
// Adam(R, T, X₁..Xₙ, G₁..Gₙ, V₁..Vₙ, H₁..Hₙ) -> X₁'..Xₙ', V₁'..Vₙ', H₁'..Hₙ'
//     attrs alpha α (0.9), beta β (0.999), epsilon ε (1e-6), norm_coefficient λ (0),
//     norm_coefficient_post λ₂ (0)
//   g = λ·X + G,   V' = α·V + (1−α)·g,   H' = β·H + (1−β)·g²
//   r = R·√(1 − β^T) / (1 − α^T) when T > 0, else R
//   X' = (1 − λ₂)·(X − r·V' / (√H' + ε))
//
// T > 0 is a Where on the device (T is a graph value, not a constant), so the graph is the same
// for every step. An empty output name skips that output; what other outputs need is still made.
#include <cmath>

#include "runtime/composite/expanders.h"
#include "runtime/error.h"
#include "runtime/onnx_type_code.h"

namespace oat::composite {

namespace {

// The expansion of one optimizer node: the group count and helpers in X₁'s type.
class Optimizer {
 public:
  Optimizer(Expansion& e, size_t groups_in, size_t groups_out) : e_(e) {
    const size_t tensors = e.node().inputs.size() < 2 ? 0 : e.node().inputs.size() - 2;
    if (tensors == 0 || tensors % groups_in != 0)
      e.fail(cat("expects R, T and ", groups_in, " groups of n tensors (n >= 1); got ",
                 e.node().inputs.size(), " inputs"));
    n_ = tensors / groups_in;
    if (e.node().outputs.size() > groups_out * n_)
      e.fail(cat("has ", e.node().outputs.size(), " outputs; ", groups_in, " groups of ", n_,
                 " inputs make at most ", groups_out * n_));
    type_ = e.dtype(e.input(2));
    if (type_ == DType::Undefined) type_ = DType::F32;
    if (type_ != DType::F32 && type_ != DType::F64)
      e.fail(cat("X '", e.input(2), "' is ", dtype_name(type_), "; expected float or double"));
    for (size_t k = 2; k < e.node().inputs.size(); ++k) {
      const DType t = e.dtype(e.input(k));
      if (t != DType::Undefined && t != type_)
        e.fail(cat("input '", e.input(k), "' is ", dtype_name(t), ", X '", e.input(2), "' is ",
                   dtype_name(type_), "; every optimized tensor has one type"));
    }
    if (e.input(0).empty() || e.input(1).empty()) e.fail("R and T are required");
    r_ = cast(e.input(0), "R");
    t_ = cast(e.input(1), "T");
  }

  size_t n() const { return n_; }
  // Input `i` of group `group` (group 0 is X).
  const std::string& in(size_t group, size_t i) const { return e_.input(2 + group * n_ + i); }
  const std::string& r() const { return r_; }
  const std::string& t() const { return t_; }

  std::string k(double v, const std::string& tag) {
    return e_.constant_tensor(cast_tensor(Tensor::scalar<double>(v), type_), tag);
  }
  std::string op(const std::string& type, const std::vector<std::string>& in,
                 const std::string& tag) {
    return e_.add1(type, in, tag);
  }
  // An op whose result is output `out` of the node when that is requested, else a fresh value.
  std::string result(const std::string& type, const std::vector<std::string>& in, size_t out,
                     const std::string& tag) {
    const std::string& name = e_.output(out);
    if (name.empty()) return op(type, in, tag);
    e_.add_to(type, in, {name}, tag);
    return name;
  }
  // λ·X + G (G itself when λ = 0).
  std::string regularized(double lambda, size_t i) {
    if (lambda == 0.0) return in(1, i);
    const std::string lx = op("Mul", {k(lambda, "norm_coefficient"), in(0, i)}, cat("lambda_x", i));
    return op("Add", {lx, in(1, i)}, cat("g", i));
  }
  // A scalar that is `positive` when T > 0 and `otherwise` else.
  std::string when_t_positive(const std::string& positive, const std::string& otherwise,
                              const std::string& tag) {
    if (t_positive_.empty()) t_positive_ = op("Greater", {t_, k(0, "zero")}, "t_positive");
    return op("Where", {t_positive_, positive, otherwise}, tag);
  }

 private:
  std::string cast(const std::string& v, const std::string& tag) {
    if (e_.dtype(v) == type_) return v;
    return e_.add1("Cast", {v}, tag + "_cast", {{"to", int_attribute(onnx_code_of(type_))}});
  }

  Expansion& e_;
  size_t n_ = 0;
  DType type_ = DType::F32;
  std::string r_, t_, t_positive_;
};

double required_float(const Expansion& e, const char* name) {
  if (!e.node().attrs.count(name)) e.fail(cat("attribute '", name, "' is required"));
  return e.node().attr_float(name, 0.0f);
}

}  // namespace

void expand_adagrad(Expansion& e) {
  Optimizer o(e, 3, 2);
  const double decay = e.node().attr_float("decay_factor", 0.0f);
  const double eps = e.node().attr_float("epsilon", 1e-6f);
  const double lambda = e.node().attr_float("norm_coefficient", 0.0f);
  std::string r = o.r();
  if (decay != 0.0) {
    const std::string td = o.op("Mul", {o.t(), o.k(decay, "decay_factor")}, "t_decay");
    const std::string den = o.op("Add", {td, o.k(1, "one")}, "one_plus_t_decay");
    r = o.op("Div", {r, den}, "r");
  }
  for (size_t i = 0; i < o.n(); ++i) {
    const std::string g = o.regularized(lambda, i);
    const std::string g2 = o.op("Mul", {g, g}, cat("g_squared", i));
    const std::string h = o.result("Add", {o.in(2, i), g2}, o.n() + i, cat("h_new", i));
    const std::string sq = o.op("Sqrt", {h}, cat("sqrt_h", i));
    const std::string den = o.op("Add", {sq, o.k(eps, "epsilon")}, cat("sqrt_h_eps", i));
    const std::string step = o.op("Div", {o.op("Mul", {r, g}, cat("r_g", i)), den}, cat("step", i));
    o.result("Sub", {o.in(0, i), step}, i, cat("x_new", i));
  }
}

void expand_momentum(Expansion& e) {
  Optimizer o(e, 3, 2);
  const double alpha = required_float(e, "alpha");
  const double beta = required_float(e, "beta");
  const double lambda = required_float(e, "norm_coefficient");
  if (!e.node().attrs.count("mode")) e.fail("attribute 'mode' is required");
  const std::string mode = e.node().attr_string("mode", "");
  if (mode != "standard" && mode != "nesterov")
    e.fail(cat("mode '", mode, "' must be 'standard' or 'nesterov'"));
  const std::string beta_t = o.when_t_positive(o.k(beta, "beta"), o.k(1, "one"), "beta_adjusted");
  const std::string a = o.k(alpha, "alpha");
  for (size_t i = 0; i < o.n(); ++i) {
    const std::string g = o.regularized(lambda, i);
    const std::string av = o.op("Mul", {a, o.in(2, i)}, cat("alpha_v", i));
    const std::string bg = o.op("Mul", {beta_t, g}, cat("beta_g", i));
    const std::string v = o.result("Add", {av, bg}, o.n() + i, cat("v_new", i));
    std::string d = v;
    if (mode == "nesterov")
      d = o.op("Add", {g, o.op("Mul", {a, v}, cat("alpha_v_new", i))}, cat("nesterov", i));
    o.result("Sub", {o.in(0, i), o.op("Mul", {o.r(), d}, cat("step", i))}, i, cat("x_new", i));
  }
}

void expand_adam(Expansion& e) {
  Optimizer o(e, 4, 3);
  const double alpha = e.node().attr_float("alpha", 0.9f);
  const double beta = e.node().attr_float("beta", 0.999f);
  const double eps = e.node().attr_float("epsilon", 1e-6f);
  const double lambda = e.node().attr_float("norm_coefficient", 0.0f);
  const double post = e.node().attr_float("norm_coefficient_post", 0.0f);
  // r = R·√(1 − β^T) / (1 − α^T) when T > 0 (at T = 0 the unselected branch is 0/0, unused).
  const std::string one = o.k(1, "one");
  const std::string bt = o.op("Pow", {o.k(beta, "beta"), o.t()}, "beta_pow_t");
  const std::string at = o.op("Pow", {o.k(alpha, "alpha"), o.t()}, "alpha_pow_t");
  const std::string num = o.op("Sqrt", {o.op("Sub", {one, bt}, "one_minus_beta_pow_t")}, "sqrt_bc");
  const std::string den = o.op("Sub", {one, at}, "one_minus_alpha_pow_t");
  const std::string corrected = o.op("Div", {o.op("Mul", {o.r(), num}, "r_sqrt_bc"), den}, "r_bc");
  const std::string r = o.when_t_positive(corrected, o.r(), "r");
  const std::string a = o.k(alpha, "alpha"), a1 = o.k(1 - alpha, "one_minus_alpha");
  const std::string b = o.k(beta, "beta"), b1 = o.k(1 - beta, "one_minus_beta");
  for (size_t i = 0; i < o.n(); ++i) {
    const std::string g = o.regularized(lambda, i);
    const std::string v = o.result(
        "Add",
        {o.op("Mul", {a, o.in(2, i)}, cat("alpha_v", i)), o.op("Mul", {a1, g}, cat("alpha1_g", i))},
        o.n() + i, cat("v_new", i));
    const std::string g2 = o.op("Mul", {g, g}, cat("g_squared", i));
    const std::string h = o.result(
        "Add",
        {o.op("Mul", {b, o.in(3, i)}, cat("beta_h", i)), o.op("Mul", {b1, g2}, cat("beta1_g2", i))},
        2 * o.n() + i, cat("h_new", i));
    const std::string sq = o.op("Add", {o.op("Sqrt", {h}, cat("sqrt_h", i)), o.k(eps, "epsilon")},
                                cat("sqrt_h_eps", i));
    const std::string step =
        o.op("Mul", {r, o.op("Div", {v, sq}, cat("v_over_sqrt_h", i))}, cat("step", i));
    if (post == 0.0) {
      o.result("Sub", {o.in(0, i), step}, i, cat("x_new", i));
    } else {
      const std::string x = o.op("Sub", {o.in(0, i), step}, cat("x_step", i));
      o.result("Mul", {o.k(1 - post, "one_minus_post"), x}, i, cat("x_new", i));
    }
  }
}

}  // namespace oat::composite
