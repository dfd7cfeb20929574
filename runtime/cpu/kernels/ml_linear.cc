// ai.onnx.ml linear models (opset 1): what scikit-learn's LinearRegression, Ridge, LogisticRegression,
// LinearSVC, SGDClassifier ... export to. X [N, C] or [C] (float, double, int64, int32, read as
// float); coefficients [K, C] row-major, intercepts [K] (or none).
//
//   LinearRegressor -> Y float [N, K], K = targets:
//       y = x · coefficientsᵀ + intercepts, then post_transform (ml_common.h; K = 1: PROBIT only)
//   LinearClassifier -> (Y labels [N], Z scores):
//       s = x · coefficientsᵀ + intercepts, K = len(intercepts) (or len(coefficients) / C)
//       K > 1:  label = classlabels[argmax_k s_k] (the first maximum); Z [N, K] = post_transform(s)
//       K = 1 (binary): label = s > 0 ? classlabels[1] : classlabels[0] (1 : 0 without two
//               labels); with two classlabels Z [N, 2] = [1 - s, s], LOGISTIC [1 - σ(s), σ(s)]
//               (SOFTMAX leaves s; ml_common.h binary_scores), else Z [N, 1] = s (PROBIT:
//               probit(s)): ONNX Runtime's rules, which these follow. (ONNX Runtime 1.32
//               refuses one row of coefficients without two labels; this runtime gives 1/0.)
//       classlabels_strings give string labels, classlabels_ints int64 ones.
// No gradients; on CUDA they run on the host.
#include "runtime/cpu/kernels/ml_common.h"

namespace oat::cpu {

namespace {

using ml::PostTransform;

// s[N, K] = x[N, C] · w[K, C]ᵀ + b (b empty: no intercepts), accumulated in double.
std::vector<float> linear_scores(const std::vector<double>& x, const ml::Rows& r,
                                 const std::vector<float>& w, const std::vector<float>& b,
                                 int64_t k) {
  std::vector<float> s(static_cast<size_t>(r.n * k));
  for (int64_t i = 0; i < r.n; ++i)
    for (int64_t t = 0; t < k; ++t) {
      double acc = b.empty() ? 0.0 : b[static_cast<size_t>(t)];
      const double* xi = x.data() + i * r.c;
      const float* wt = w.data() + t * r.c;
      for (int64_t j = 0; j < r.c; ++j) acc += xi[j] * wt[j];
      s[static_cast<size_t>(i * k + t)] = static_cast<float>(acc);
    }
  return s;
}

void check_coefficients(const KernelContext& ctx, const std::vector<float>& w,
                        const std::vector<float>& b, int64_t k, int64_t c) {
  if (static_cast<int64_t>(w.size()) != k * c)
    ctx.fail(cat("coefficients has ", w.size(), " values; ", k, " targets of X's ", c,
                 " features need ", k * c));
  if (!b.empty() && static_cast<int64_t>(b.size()) != k)
    ctx.fail(cat("intercepts has ", b.size(), " values for ", k, " targets"));
}

class LinearRegressorKernel : public OpKernel {
 public:
  explicit LinearRegressorKernel(const Node& n)
      : w_(n.attr_floats("coefficients")),
        b_(n.attr_floats("intercepts")),
        k_(n.attr_int("targets", 1)),
        post_(ml::post_transform_of(n)) {
    if (k_ < 1) throw Error(cat(n.describe(), ": targets must be >= 1, got ", k_));
  }
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const ml::Rows r = ml::rows_of(ctx, x);
    check_coefficients(ctx, w_, b_, k_, r.c);
    std::vector<float> s = linear_scores(ml::numbers_of(ctx, x), r, w_, b_, k_);
    for (int64_t i = 0; i < r.n; ++i) ml::post_transform_row(post_, s.data() + i * k_, k_);
    Tensor& y = ctx.allocate_output(0, DType::F32, {r.n, k_});
    std::copy(s.begin(), s.end(), y.data<float>());
  }

 private:
  std::vector<float> w_, b_;
  int64_t k_;
  PostTransform post_;
};

class LinearClassifierKernel : public OpKernel {
 public:
  explicit LinearClassifierKernel(const Node& n)
      : w_(n.attr_floats("coefficients")),
        b_(n.attr_floats("intercepts")),
        strings_(ml::strings_attr(n, "classlabels_strings")),
        ints_(n.attr_ints("classlabels_ints")),
        post_(ml::post_transform_of(n)) {
    if (w_.empty()) throw Error(cat(n.describe(), ": has no coefficients"));
    if (!strings_.empty() && !ints_.empty())
      throw Error(cat(n.describe(), ": has both classlabels_strings and classlabels_ints"));
  }
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const ml::Rows r = ml::rows_of(ctx, x);
    if (r.c == 0) ctx.fail("X has no features");
    const int64_t k =
        !b_.empty() ? static_cast<int64_t>(b_.size()) : static_cast<int64_t>(w_.size()) / r.c;
    check_coefficients(ctx, w_, b_, k, r.c);
    const bool use_strings = !strings_.empty();
    const int64_t labels = static_cast<int64_t>(use_strings ? strings_.size() : ints_.size());
    if (k > 1 && labels != k)
      ctx.fail(cat(k, " classes of scores but ", labels, " class labels"));
    const std::vector<float> s = linear_scores(ml::numbers_of(ctx, x), r, w_, b_, k);

    Tensor& y = ctx.allocate_output(0, use_strings ? DType::String : DType::I64, {r.n});
    // label i of the list (binary without two labels: 1 or 0 themselves)
    auto set_label = [&](int64_t row, int64_t i) {
      if (use_strings)
        y.data<std::string>()[row] = labels == 2 || k > 1 ? strings_[i] : std::to_string(i);
      else
        y.data<int64_t>()[row] = labels == 2 || k > 1 ? ints_[i] : i;
    };
    for (int64_t i = 0; i < r.n; ++i) {
      const float* si = s.data() + i * k;
      if (k == 1) {
        set_label(i, si[0] > 0 ? 1 : 0);
      } else {
        int64_t best = 0;
        for (int64_t t = 1; t < k; ++t)
          if (si[t] > si[best]) best = t;
        set_label(i, best);
      }
    }

    const bool second = k == 1 && labels == 2;
    const int64_t zk = second ? 2 : k;
    Tensor& z = ctx.allocate_output(1, DType::F32, {r.n, zk});
    float* out = z.data<float>();
    for (int64_t i = 0; i < r.n; ++i) {
      if (second) {
        ml::binary_scores(post_, s[static_cast<size_t>(i)], ml::SecondScore::OneMinus, out + 2 * i);
      } else {
        std::copy_n(s.data() + i * k, k, out + i * k);
        ml::post_transform_row(post_, out + i * k, k);
      }
    }
  }

 private:
  std::vector<float> w_, b_;
  std::vector<std::string> strings_;
  std::vector<int64_t> ints_;
  PostTransform post_;
};

}  // namespace

void register_ml_linear(KernelRegistry& r) {
  const std::initializer_list<DType> numeric = {DType::F32, DType::F64, DType::I64, DType::I32};
  r.add(OpId::LinearRegressor, Device::CPU, numeric, kernel_factory<LinearRegressorKernel>());
  r.add(OpId::LinearClassifier, Device::CPU, numeric, kernel_factory<LinearClassifierKernel>());
}

}  // namespace oat::cpu
