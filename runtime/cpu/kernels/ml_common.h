// Shared pieces of the ai.onnx.ml kernels (ml_features.cc, ml_encoders.cc, ml_linear.cc,
// ml_svm.cc, ml_trees.cc): reading X as rows of features, the score post-transforms, and the
// attributes that opset 3 also allows as double tensors (`<name>_as_tensor`).
//
// Rows: X [N, C] is N rows of C features; X [C] is one row (the ops' spec: "[N, C] or [C]"),
// numbers of any of float, double, int64, int32, read as double.
//
// Post-transforms, per row of scores s (ONNX Runtime's definitions, which these follow exactly,
// so that a converted scikit-learn model gives ONNX Runtime's probabilities):
//   LOGISTIC      s' = 1 / (1 + e^-s)
//   SOFTMAX       s' = e^(s - max s) / Σ e^(s - max s)
//   SOFTMAX_ZERO  as SOFTMAX, but a score within 1e-7 of 0 stays 0 · e^-max (skipped)
//   PROBIT        s' = √2 · erfinv(2s - 1), erfinv by Winitzki's approximation with a = 0.147
//                 (what ONNX Runtime computes; within about 2e-3 of the exact inverse)
// A row of one score is transformed by PROBIT only (LOGISTIC, SOFTMAX leave it), as ONNX Runtime
// does for one target; the binary classifiers' second-score rules live with them.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/cpu/register.h"

namespace oat::cpu::ml {

enum class PostTransform { None, Logistic, Softmax, SoftmaxZero, Probit };

inline PostTransform post_transform_of(const Node& n) {
  const std::string s = n.attr_string("post_transform", "NONE");
  if (s == "NONE") return PostTransform::None;
  if (s == "LOGISTIC") return PostTransform::Logistic;
  if (s == "SOFTMAX") return PostTransform::Softmax;
  if (s == "SOFTMAX_ZERO") return PostTransform::SoftmaxZero;
  if (s == "PROBIT") return PostTransform::Probit;
  throw Error(cat(n.describe(),
                  ": post_transform must be NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO or PROBIT, got \"",
                  s, "\""));
}

// 1 / (1 + e^-x), computed on |x| so that it never overflows.
inline float logistic(float x) {
  const float v = 1.0f / (1.0f + std::exp(-std::fabs(x)));
  return x < 0 ? 1.0f - v : v;
}

// erfinv(x) ≈ sign(x) · sqrt(sqrt(b² - ln(1-x²)/a) - b), b = 2/(πa) + ln(1-x²)/2, a = 0.147.
inline float erfinv_approx(float x) {
  const float sgn = x < 0 ? -1.0f : 1.0f;
  const float l = std::log((1 - x) * (1 + x));
  const float b = 2 / (3.14159f * 0.147f) + 0.5f * l;
  return sgn * std::sqrt(-b + std::sqrt(b * b - l / 0.147f));
}

inline float probit(float p) { return 1.41421356f * erfinv_approx(2 * p - 1); }

inline void softmax_row(float* s, int64_t k, bool skip_zeros) {
  float m = -std::numeric_limits<float>::max();
  for (int64_t j = 0; j < k; ++j) m = std::max(m, s[j]);
  const float e0 = std::exp(-m);
  float sum = 0;
  for (int64_t j = 0; j < k; ++j) {
    if (skip_zeros && std::fabs(s[j]) <= 1e-7f) {
      s[j] *= e0;
    } else {
      s[j] = std::exp(s[j] - m);
      sum += s[j];
    }
  }
  for (int64_t j = 0; j < k; ++j) s[j] /= sum;
}

// Applies `t` to one row of k scores (k == 1: PROBIT only).
inline void post_transform_row(PostTransform t, float* s, int64_t k) {
  if (k == 1) {
    if (t == PostTransform::Probit) s[0] = probit(s[0]);
    return;
  }
  switch (t) {
    case PostTransform::None: break;
    case PostTransform::Logistic:
      for (int64_t j = 0; j < k; ++j) s[j] = logistic(s[j]);
      break;
    case PostTransform::Softmax: softmax_row(s, k, false); break;
    case PostTransform::SoftmaxZero: softmax_row(s, k, true); break;
    case PostTransform::Probit:
      for (int64_t j = 0; j < k; ++j) s[j] = probit(s[j]);
      break;
  }
}

// The two scores of a binary model that computes one, s (ONNX Runtime 1.32's rules, measured:
// scripts/compare_ml_ort.py): LOGISTIC z = [1 - σ(s), σ(s)]; PROBIT p = probit(s) then as NONE;
// otherwise z = [1 - s, s] (OneMinus: LinearClassifier, all-positive tree weights) or [-s, s]
// (Negate: trees with negative weights, SVMClassifier without a post_transform).
enum class SecondScore { OneMinus, Negate };

inline void binary_scores(PostTransform t, float s, SecondScore how, float* z) {
  if (t == PostTransform::Logistic) {
    const float p = logistic(s);
    z[0] = 1 - p;
    z[1] = p;
    return;
  }
  if (t == PostTransform::Probit) s = probit(s);
  z[0] = how == SecondScore::Negate ? -s : 1 - s;
  z[1] = s;
}

// X as rows: n rows of c features.
struct Rows {
  int64_t n = 0, c = 0;
};

inline Rows rows_of(const KernelContext& ctx, const Tensor& x) {
  if (x.rank() == 1) return {1, x.dim(0)};
  if (x.rank() == 2) return {x.dim(0), x.dim(1)};
  ctx.fail(cat("X must be [N, C] or [C], got ", shape_str(x.shape())));
}

// x's elements as double (float, double, int64, int32; anything else fails naming X's type).
inline std::vector<double> numbers_of(const KernelContext& ctx, const Tensor& x,
                                      const char* what = "X") {
  std::vector<double> v(static_cast<size_t>(x.numel()));
  auto fill = [&](auto* p) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(p[i]);
  };
  switch (x.dtype()) {
    case DType::F32: fill(x.data<float>()); break;
    case DType::F64: fill(x.data<double>()); break;
    case DType::I64: fill(x.data<int64_t>()); break;
    case DType::I32: fill(x.data<int32_t>()); break;
    default:
      ctx.fail(cat(what, " must be float, double, int64 or int32, got ", x.describe()));
  }
  return v;
}

// A float list attribute that opset 3 may also give as `<name>_as_tensor` (a double tensor).
inline std::vector<double> doubles_attr(const Node& n, const std::string& name) {
  if (const Attribute* t = n.attr(name + "_as_tensor")) {
    if (n.attr(name))
      throw Error(cat(n.describe(), ": has both ", name, " and ", name, "_as_tensor"));
    if (t->kind != Attribute::Kind::Tensor || !t->t.defined())
      throw Error(cat(n.describe(), ": ", name, "_as_tensor must be a tensor"));
    std::vector<double> v(static_cast<size_t>(t->t.numel()));
    if (t->t.dtype() == DType::F64) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = t->t.data<double>()[i];
    } else if (t->t.dtype() == DType::F32) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = t->t.data<float>()[i];
    } else {
      throw Error(cat(n.describe(), ": ", name, "_as_tensor must be float or double, got ",
                      dtype_name(t->t.dtype())));
    }
    return v;
  }
  const std::vector<float> f = n.attr_floats(name);
  return std::vector<double>(f.begin(), f.end());
}

inline const std::vector<std::string>& strings_attr(const Node& n, const std::string& name) {
  static const std::vector<std::string> none;
  const Attribute* a = n.attr(name);
  return a ? a->strings : none;
}

}  // namespace oat::cpu::ml
