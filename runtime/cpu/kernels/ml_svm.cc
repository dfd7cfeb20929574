// ai.onnx.ml support vector machines (opset 1): scikit-learn's SVR / SVC / NuSVC / OneClassSVM /
// LinearSVR as skl2onnx exports them (libsvm's conventions). X [N, C] or [C], read as float.
//
// Kernels, with kernel_params = [γ, c0, d]:
//   LINEAR  K(x, v) = x·v           POLY     K = (γ x·v + c0)^d
//   RBF     K = e^(-γ |x - v|²)      SIGMOID  K = tanh(γ x·v + c0)
// SVMRegressor -> Y [N, 1]:
//   n_supports > 0:  y = Σ_j coefficients[j] K(x, v_j) + rho[0]   (v_j: support_vectors rows)
//   n_supports = 0:  y = x·coefficients + rho[0]                   (a linear model)
//   one_class = 1:   y = y > 0 ? 1 : -1.   No post_transform is applied (as ONNX Runtime).
// SVMClassifier -> (Y labels [N], Z scores). K classes (classlabels_ints or _strings),
//   vectors_per_class[k] support vectors for class k, stored class by class.
//   No support vectors (linear mode): s_k = x·coefficients[k] + rho[0]; label = argmax; Z [N, K].
//   Support vectors (one-vs-one): for each pair i < j (pair p in order), with c_r the
//   coefficient row (K-1 rows of all vectors),
//     d_p = Σ_{v of i} coef[j-1][v] K(x, v) + Σ_{v of j} coef[i][v] K(x, v) + rho[p]
//     a vote for i when d_p > 0, else for j; label = the class with most votes (the first).
//     Without prob_a/prob_b: Z holds the d_p ([N, K(K-1)/2]; two classes: Z [N, 2] = [-d, d],
//     LOGISTIC [1 - σ(d), σ(d)], another post_transform [1 - d, d]).
//     With prob_a/prob_b (Platt): r_ij = clamp(1 - σ(d_p a_p + b_p), 1e-7, 1 - 1e-7), r_ji = 1 - r_ij,
//     and Z [N, K] = the class probabilities of Wu, Lin and Weng's pairwise coupling (libsvm's
//     multiclass_probability, 100 iterations at most); the label is still the vote.
//   Two classes without probabilities: label = classlabels[1] when the score (0 for
//   one-vs-one, where the vote decides; the top score in linear mode) is >= 0.5 with all
//   coefficients >= 0, or > 0 with some negative; else the argmax's label. post_transform
//   then acts on Z as in ml_common.h. These are ONNX Runtime's rules, which these follow.
// No gradients; on CUDA they run on the host.
#include <algorithm>
#include <cmath>

#include "runtime/cpu/kernels/ml_common.h"

namespace oat::cpu {

namespace {

using ml::PostTransform;

enum class SvmKernel { Linear, Poly, Rbf, Sigmoid };

struct SvmCommon {
  SvmKernel kernel = SvmKernel::Linear;
  float gamma = 0, coef0 = 0, degree = 0;

  explicit SvmCommon(const Node& n) {
    const std::string k = n.attr_string("kernel_type", "LINEAR");
    if (k == "LINEAR")
      kernel = SvmKernel::Linear;
    else if (k == "POLY")
      kernel = SvmKernel::Poly;
    else if (k == "RBF")
      kernel = SvmKernel::Rbf;
    else if (k == "SIGMOID")
      kernel = SvmKernel::Sigmoid;
    else
      throw Error(cat(n.describe(), ": kernel_type must be LINEAR, POLY, RBF or SIGMOID, got \"",
                      k, "\""));
    const std::vector<float> p = n.attr_floats("kernel_params");
    if (!p.empty()) {
      if (p.size() != 3)
        throw Error(cat(n.describe(), ": kernel_params must be [gamma, coef0, degree], got ",
                        p.size(), " values"));
      gamma = p[0];
      coef0 = p[1];
      degree = p[2];
    }
  }

  // K(x, v) over c features, plus `bias` for the linear kernel.
  float apply(const float* x, const float* v, int64_t c, float bias = 0) const {
    if (kernel == SvmKernel::Rbf) {
      float s = 0;
      for (int64_t j = 0; j < c; ++j) {
        const float d = x[j] - v[j];
        s += d * d;
      }
      return std::exp(-gamma * s);
    }
    float dot = 0;
    for (int64_t j = 0; j < c; ++j) dot += x[j] * v[j];
    switch (kernel) {
      case SvmKernel::Poly: return std::pow(gamma * dot + coef0, degree);
      case SvmKernel::Sigmoid: return std::tanh(gamma * dot + coef0);
      default: return dot + bias;
    }
  }
};

std::vector<float> floats_of(const KernelContext& ctx, const Tensor& x) {
  const std::vector<double> d = ml::numbers_of(ctx, x);
  return std::vector<float>(d.begin(), d.end());
}

class SvmRegressorKernel : public OpKernel {
 public:
  explicit SvmRegressorKernel(const Node& n)
      : svm_(n),
        n_supports_(n.attr_int("n_supports", 0)),
        coef_(n.attr_floats("coefficients")),
        sv_(n.attr_floats("support_vectors")),
        rho_(n.attr_floats("rho")),
        one_class_(n.attr_int("one_class", 0) != 0) {
    auto bad = [&](const std::string& why) { throw Error(cat(n.describe(), ": ", why)); };
    if (coef_.empty()) bad("has no coefficients");
    if (rho_.empty()) bad("has no rho");
    if (n_supports_ < 0) bad(cat("n_supports must be >= 0, got ", n_supports_));
    if (n_supports_ > 0) {
      if (static_cast<int64_t>(coef_.size()) != n_supports_)
        bad(cat("has ", coef_.size(), " coefficients for ", n_supports_, " support vectors"));
      if (sv_.size() % static_cast<size_t>(n_supports_) != 0)
        bad(cat("support_vectors has ", sv_.size(), " values, not a multiple of n_supports ",
                n_supports_));
    } else {
      svm_.kernel = SvmKernel::Linear;  // no support vectors: x·coefficients + rho, as ONNX Runtime
    }
  }
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const ml::Rows r = ml::rows_of(ctx, x);
    const int64_t features =
        n_supports_ > 0 ? static_cast<int64_t>(sv_.size()) / n_supports_ : static_cast<int64_t>(coef_.size());
    if (r.c != features) ctx.fail(cat("X has ", r.c, " features; the model has ", features));
    const std::vector<float> v = floats_of(ctx, x);
    Tensor& y = ctx.allocate_output(0, DType::F32, {r.n, 1});
    float* out = y.data<float>();
    for (int64_t i = 0; i < r.n; ++i) {
      const float* xi = v.data() + i * r.c;
      float s;
      if (n_supports_ > 0) {
        double acc = rho_[0];
        for (int64_t j = 0; j < n_supports_; ++j)
          acc += coef_[static_cast<size_t>(j)] * svm_.apply(xi, sv_.data() + j * r.c, r.c);
        s = static_cast<float>(acc);
      } else {
        s = svm_.apply(xi, coef_.data(), r.c, rho_[0]);  // the linear kernel (constructor)
      }
      out[i] = one_class_ ? (s > 0 ? 1.0f : -1.0f) : s;
    }
  }

 private:
  SvmCommon svm_;
  int64_t n_supports_;
  std::vector<float> coef_, sv_, rho_;
  bool one_class_;
};

// libsvm's multiclass_probability (Wu, Lin and Weng 2004, method 2): p minimising
// Σ_i Σ_{j≠i} (r_ji p_i - r_ij p_j)², by the fixed-point iteration on Q p = (pᵀQp) 1.
void coupled_probabilities(int64_t k, const std::vector<float>& r, float* p) {
  std::vector<float> q(static_cast<size_t>(k * k), 0.0f), qp(static_cast<size_t>(k), 0.0f);
  auto Q = [&](int64_t i, int64_t j) -> float& { return q[static_cast<size_t>(i * k + j)]; };
  auto R = [&](int64_t i, int64_t j) { return r[static_cast<size_t>(i * k + j)]; };
  const float eps = 0.005f / static_cast<float>(k);
  for (int64_t i = 0; i < k; ++i) {
    p[i] = 1.0f / static_cast<float>(k);
    for (int64_t j = 0; j < i; ++j) {
      Q(i, i) += R(j, i) * R(j, i);
      Q(i, j) = Q(j, i);
    }
    for (int64_t j = i + 1; j < k; ++j) {
      Q(i, i) += R(j, i) * R(j, i);
      Q(i, j) = -R(j, i) * R(i, j);
    }
  }
  for (int iter = 0; iter < 100; ++iter) {
    float pqp = 0;
    for (int64_t i = 0; i < k; ++i) {
      qp[i] = 0;
      for (int64_t j = 0; j < k; ++j) qp[i] += Q(i, j) * p[j];
      pqp += p[i] * qp[i];
    }
    float max_error = 0;
    for (int64_t i = 0; i < k; ++i) max_error = std::max(max_error, std::fabs(qp[i] - pqp));
    if (max_error < eps) break;
    for (int64_t i = 0; i < k; ++i) {
      const float diff = (-qp[i] + pqp) / Q(i, i);
      p[i] += diff;
      pqp = (pqp + diff * (diff * Q(i, i) + 2 * qp[i])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < k; ++j) {
        qp[j] = (qp[j] + diff * Q(i, j)) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

class SvmClassifierKernel : public OpKernel {
 public:
  explicit SvmClassifierKernel(const Node& n)
      : svm_(n),
        per_class_(n.attr_ints("vectors_per_class")),
        coef_(n.attr_floats("coefficients")),
        sv_(n.attr_floats("support_vectors")),
        rho_(n.attr_floats("rho")),
        prob_a_(n.attr_floats("prob_a")),
        prob_b_(n.attr_floats("prob_b")),
        strings_(ml::strings_attr(n, "classlabels_strings")),
        ints_(n.attr_ints("classlabels_ints")),
        post_(ml::post_transform_of(n)) {
    auto bad = [&](const std::string& why) { throw Error(cat(n.describe(), ": ", why)); };
    k_ = static_cast<int64_t>(!strings_.empty() ? strings_.size() : ints_.size());
    if (k_ < 1) bad("needs classlabels_ints or classlabels_strings");
    if (coef_.empty()) bad("has no coefficients");
    if (rho_.empty()) bad("has no rho");
    if (prob_a_.size() != prob_b_.size())
      bad(cat("prob_a has ", prob_a_.size(), " values and prob_b ", prob_b_.size()));
    for (int64_t c : per_class_) {
      if (c < 0) bad(cat("vectors_per_class must be >= 0, got ", c));
      start_.push_back(vectors_);
      // every vector needs at least one value of support_vectors (no overflow past it)
      if (c > static_cast<int64_t>(sv_.size()) - vectors_)
        bad(cat("vectors_per_class counts more support vectors than support_vectors holds (",
                sv_.size(), " values)"));
      vectors_ += c;
    }
    svc_ = vectors_ > 0;
    const int64_t pairs = k_ * (k_ - 1) / 2;
    if (svc_) {
      if (static_cast<int64_t>(per_class_.size()) != k_)
        bad(cat("vectors_per_class has ", per_class_.size(), " values for ", k_, " classes"));
      if (sv_.size() % static_cast<size_t>(vectors_) != 0)
        bad(cat("support_vectors has ", sv_.size(), " values, not a multiple of the ", vectors_,
                " support vectors"));
      features_ = static_cast<int64_t>(sv_.size()) / vectors_;
      if (static_cast<int64_t>(coef_.size()) < (k_ - 1) * vectors_)
        bad(cat("has ", coef_.size(), " coefficients; ", k_ - 1, " rows of ", vectors_,
                " support vectors need ", (k_ - 1) * vectors_));
      if (static_cast<int64_t>(rho_.size()) < pairs)
        bad(cat("rho has ", rho_.size(), " values for ", pairs, " class pairs"));
      if (!prob_a_.empty() && static_cast<int64_t>(prob_a_.size()) < pairs)
        bad(cat("prob_a has ", prob_a_.size(), " values for ", pairs, " class pairs"));
    } else {
      if (coef_.size() % static_cast<size_t>(k_) != 0)
        bad(cat("has ", coef_.size(), " coefficients, not a multiple of the ", k_, " classes"));
      features_ = static_cast<int64_t>(coef_.size()) / k_;
      svm_.kernel = SvmKernel::Linear;
    }
    all_positive_ = std::all_of(coef_.begin(), coef_.end(), [](float c) { return c >= 0; });
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const ml::Rows r = ml::rows_of(ctx, x);
    if (r.c != features_) ctx.fail(cat("X has ", r.c, " features; the model has ", features_));
    const std::vector<float> v = floats_of(ctx, x);
    const bool proba = !prob_a_.empty();
    const int64_t pairs = k_ * (k_ - 1) / 2;
    // scores per row written to Z
    const int64_t zk = svc_ && !proba ? (k_ > 2 ? pairs : 2) : k_;
    Tensor& y = ctx.allocate_output(0, strings_.empty() ? DType::I64 : DType::String, {r.n});
    Tensor& z = ctx.allocate_output(1, DType::F32, {r.n, zk});
    float* zo = z.data<float>();
    std::fill_n(zo, z.numel(), 0.0f);
    std::vector<float> kern(static_cast<size_t>(vectors_)), d(static_cast<size_t>(pairs));
    std::vector<int64_t> votes(static_cast<size_t>(k_));
    for (int64_t n = 0; n < r.n; ++n) {
      const float* xi = v.data() + n * r.c;
      float* zs = zo + n * zk;
      int64_t best = 0;
      float top = 0;
      if (!svc_) {
        for (int64_t c = 0; c < k_; ++c)
          zs[c] = svm_.apply(xi, coef_.data() + c * features_, features_, rho_[0]);
        best = std::max_element(zs, zs + k_) - zs;
        top = zs[best];
      } else {
        for (int64_t j = 0; j < vectors_; ++j)
          kern[static_cast<size_t>(j)] = svm_.apply(xi, sv_.data() + j * features_, features_);
        std::fill(votes.begin(), votes.end(), 0);
        int64_t p = 0;
        for (int64_t i = 0; i + 1 < k_; ++i)
          for (int64_t j = i + 1; j < k_; ++j, ++p) {
            double s = 0;
            const float* ci = coef_.data() + (j - 1) * vectors_;  // row j-1 for class i's vectors
            for (int64_t m = 0; m < per_class_[i]; ++m)
              s += ci[start_[i] + m] * kern[static_cast<size_t>(start_[i] + m)];
            const float* cj = coef_.data() + i * vectors_;  // row i for class j's vectors
            for (int64_t m = 0; m < per_class_[j]; ++m)
              s += cj[start_[j] + m] * kern[static_cast<size_t>(start_[j] + m)];
            s += rho_[static_cast<size_t>(p)];
            d[static_cast<size_t>(p)] = static_cast<float>(s);
            ++votes[static_cast<size_t>(s > 0 ? i : j)];
          }
        best = std::max_element(votes.begin(), votes.end()) - votes.begin();
        if (proba) {
          std::vector<float> rr(static_cast<size_t>(k_ * k_), 0.0f);
          p = 0;
          for (int64_t i = 0; i + 1 < k_; ++i)
            for (int64_t j = i + 1; j < k_; ++j, ++p) {
              const float val = 1 - ml::logistic(d[static_cast<size_t>(p)] * prob_a_[p] + prob_b_[p]);
              const float c = std::min(std::max(val, 1.0e-7f), 1 - 1.0e-7f);
              rr[static_cast<size_t>(i * k_ + j)] = c;
              rr[static_cast<size_t>(j * k_ + i)] = 1 - c;
            }
          coupled_probabilities(k_, rr, zs);
        } else {
          std::copy(d.begin(), d.end(), zs);
        }
      }
      // the label
      int64_t label = best;
      if (pairs == 1 && !proba) {
        if ((all_positive_ && top >= 0.5f) || (!all_positive_ && top > 0)) label = 1;
      }
      if (!strings_.empty())
        y.data<std::string>()[n] = strings_[static_cast<size_t>(label)];
      else
        y.data<int64_t>()[n] = ints_[static_cast<size_t>(label)];
      // the scores' post-transform
      if (svc_ && !proba && k_ <= 2) {
        ml::binary_scores(post_, zs[0],
                          post_ == PostTransform::None ? ml::SecondScore::Negate
                                                       : ml::SecondScore::OneMinus,
                          zs);
      } else {
        ml::post_transform_row(post_, zs, zk);
      }
    }
  }

 private:
  SvmCommon svm_;
  std::vector<int64_t> per_class_, start_;
  std::vector<float> coef_, sv_, rho_, prob_a_, prob_b_;
  std::vector<std::string> strings_;
  std::vector<int64_t> ints_;
  PostTransform post_;
  int64_t k_ = 0, vectors_ = 0, features_ = 0;
  bool svc_ = false, all_positive_ = true;
};

}  // namespace

void register_ml_svm(KernelRegistry& r) {
  const std::initializer_list<DType> numeric = {DType::F32, DType::F64, DType::I64, DType::I32};
  r.add(OpId::SVMRegressor, Device::CPU, numeric, kernel_factory<SvmRegressorKernel>());
  r.add(OpId::SVMClassifier, Device::CPU, numeric, kernel_factory<SvmClassifierKernel>());
}

}  // namespace oat::cpu
