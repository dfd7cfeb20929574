// Gradient kernels of the softmax family and the classification losses (internal domain).
//
// SoftmaxGrad(dY, Y)     dX = Y ⊙ (dY − Σ_axis(dY ⊙ Y))
// LogSoftmaxGrad(dY, Y)  dX = dY − exp(Y) ⊙ Σ_axis dY
//   attrs: axis (the forward's, already defaulted by the builder), coerce_2d (1 for the forward
//   before opset 13: the input viewed as [prod(shape[:axis]), prod(shape[axis:])]).
//
// The losses, for input [N, C, d1...], target t [N, d1...], optional weight w [C]; j runs over the
// positions (n, d1...), w_j = w[t_j] (1 without weight), and 0 where t_j == ignore_index:
//   normaliser  ν = 1 (none, sum),  ν = Σ_j w_j (mean; when ν = 0 every w_j is 0 and dX = 0)
//   dL_j        dLoss[j] (none: dLoss has the target's shape) or dLoss (sum, mean: a scalar)
// NegativeLogLikelihoodLossGrad(dLoss, X_shape, target, [weight]):
//   dX[n, c, d] = −[c == t_j]·w_j·dL_j/ν
// SoftmaxCrossEntropyLossGrad(dLoss, log_prob | scores, target, [weight]), attr from_scores:
//   dScores[n, c, d] = (softmax[n, c, d] − [c == t_j])·w_j·dL_j/ν
//   softmax = exp(log_prob), the forward's output 1, or recomputed from the scores when the
//   forward node did not produce log_prob (from_scores = 1).
// Both take reduction (mean) and ignore_index like the forward ops.
// GCC 12 reports false "may be used uninitialized" warnings inside Eigen's AVX-512 packet
// reductions (GCC bug 105593); silenced before the first include, as in activation.cc.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <Eigen/Core>
#include <cmath>

#include "runtime/cpu/kernels/loss_common.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/softmax.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {
namespace {

// Above this many elements the outer loops run on all OpenMP threads.
constexpr int64_t kParallelMin = 16384;

// ---- Softmax / LogSoftmax ----------------------------------------------------------------------

template <class T, bool kLog>
class SoftmaxGradKernel : public OpKernel {
 public:
  explicit SoftmaxGradKernel(const Node& n)
      : axis_(n.attr_int("axis", -1)), coerce_2d_(n.attr_int("coerce_2d", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& y = ctx.input(1);
    if (y.dtype() != dy.dtype() || y.shape() != dy.shape())
      ctx.fail(cat("Y is ", dtype_name(y.dtype()), " ", shape_str(y.shape()),
                   " but the gradient dY is ", dtype_name(dy.dtype()), " ", shape_str(dy.shape())));
    const Shape& s = y.shape();
    const int r = y.rank();
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis > r || (axis == r && !coerce_2d_))
      ctx.fail(cat("axis ", axis_, " is out of range for input ", shape_str(s)));
    const int64_t outer = numel(Shape(s.begin(), s.begin() + axis));
    int64_t len = 1, inner = 1;
    if (coerce_2d_) {
      len = numel(Shape(s.begin() + axis, s.end()));
    } else {
      len = s[axis];
      inner = numel(Shape(s.begin() + axis + 1, s.end()));
    }
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), s);
    run(dy.data<T>(), y.data<T>(), dx.data<T>(), outer, len, inner);
  }

 private:
  using Arr = Eigen::Array<T, 1, Eigen::Dynamic>;
  using CMap = Eigen::Map<const Arr>;
  using MMap = Eigen::Map<Arr>;

  static void run(const T* dy, const T* y, T* dx, int64_t outer, int64_t len, int64_t inner) {
    if (outer == 0 || len == 0 || inner == 0) return;
    const bool big = outer * len * inner > kParallelMin;
    if (inner == 1) {  // contiguous rows
#pragma omp parallel for if (big)
      for (int64_t o = 0; o < outer; ++o) {
        CMap g(dy + o * len, len), yr(y + o * len, len);
        MMap out(dx + o * len, len);
        if (kLog) {
          out = g - yr.exp() * g.sum();
        } else {
          out = yr * (g - (g * yr).sum());
        }
      }
      return;
    }
    // Strided: columns of an [len, inner] block, `width` columns at a time.
    const int64_t width = std::min<int64_t>(inner, 1024);
    const int64_t chunks = (inner + width - 1) / width;
#pragma omp parallel for if (big)
    for (int64_t task = 0; task < outer * chunks; ++task) {
      const int64_t o = task / chunks, i0 = (task % chunks) * width;
      const int64_t w = std::min(width, inner - i0);
      const int64_t base = o * len * inner + i0;
      Arr sum = Arr::Zero(w);
      for (int64_t l = 0; l < len; ++l) {
        CMap g(dy + base + l * inner, w);
        if (kLog) {
          sum += g;
        } else {
          sum += g * CMap(y + base + l * inner, w);
        }
      }
      for (int64_t l = 0; l < len; ++l) {
        CMap g(dy + base + l * inner, w), yr(y + base + l * inner, w);
        MMap out(dx + base + l * inner, w);
        if (kLog) {
          out = g - yr.exp() * sum;
        } else {
          out = yr * (g - sum);
        }
      }
    }
  }

  int64_t axis_;
  bool coerce_2d_;
};

// ---- losses ------------------------------------------------------------------------------------

// Per position j: the target t_j and coef_j = w_j·dL_j/ν (0 for ignored positions), after the
// same checks as the forward kernels.
template <class T>
struct LossCoefficients {
  int64_t N = 0, C = 0, D = 0;
  std::vector<int64_t> target;
  std::vector<T> coef;
};

template <class T>
LossCoefficients<T> loss_coefficients(const KernelContext& ctx, const LossAttrs& attrs,
                                      const Shape& in_shape, const Tensor& dloss,
                                      const Tensor& target, const Tensor* weight) {
  LossCoefficients<T> k;
  const Shape want = loss_target_shape(ctx, in_shape, target);
  k.N = in_shape[0];
  k.C = in_shape[1];
  k.D = k.N > 0 ? target.numel() / k.N : 0;
  k.target = target_indices(ctx, target);
  check_loss_weight(ctx, weight, k.C, dtype_of<T>());
  const bool per_position = attrs.reduction == Reduction::None;
  if (per_position ? dloss.shape() != want : dloss.numel() != 1)
    ctx.fail(cat("loss gradient ", shape_str(dloss.shape()), " does not match reduction '",
                 per_position ? "none" : "sum/mean", "' (expected ",
                 per_position ? shape_str(want) : "a scalar", ")"));
  if (dloss.dtype() != dtype_of<T>())
    ctx.fail(cat("loss gradient has dtype ", dtype_name(dloss.dtype()), ", expected ",
                 dtype_name(dtype_of<T>())));
  const T* w = weight ? weight->data<T>() : nullptr;
  const T* dl = dloss.data<T>();
  const size_t P = k.target.size();
  std::vector<double> wj(P, 0.0);
  double weight_sum = 0;
  for (size_t j = 0; j < P; ++j) {
    const int64_t t = k.target[j];
    if (attrs.ignore_index && t == *attrs.ignore_index) continue;
    if (t < 0 || t >= k.C)
      ctx.fail(cat("target value ", t, " at position ", j, " is outside [0, ", k.C, ")"));
    wj[j] = w ? static_cast<double>(w[t]) : 1.0;
    weight_sum += wj[j];
  }
  const double inv_norm =
      attrs.reduction == Reduction::Mean ? (weight_sum != 0 ? 1.0 / weight_sum : 0.0) : 1.0;
  k.coef.resize(P);
  for (size_t j = 0; j < P; ++j) {
    const double g = static_cast<double>(per_position ? dl[j] : dl[0]);
    k.coef[j] = static_cast<T>(wj[j] * g * inv_norm);
  }
  return k;
}

// dX[n, c, d] = −[c == t_j]·w_j·dL_j/ν
template <class T>
class NllLossGradKernel : public OpKernel {
 public:
  explicit NllLossGradKernel(const Node& n) : attrs_(parse_loss_attrs(n)) {}
  void compute(KernelContext& ctx) override {
    const Tensor& dloss = ctx.input(0);
    const Shape xs = ctx.input(1).to_int_vector();
    const auto k = loss_coefficients<T>(ctx, attrs_, xs, dloss, ctx.input(2), ctx.input_or_null(3));
    Tensor& dx = ctx.allocate_output(0, dloss.dtype(), xs);
    T* o = dx.data<T>();
    std::fill(o, o + dx.numel(), T(0));
    for (int64_t n = 0; n < k.N; ++n)
      for (int64_t d = 0; d < k.D; ++d) {
        const int64_t j = n * k.D + d;
        if (k.coef[j] != T(0)) o[(n * k.C + k.target[j]) * k.D + d] = -k.coef[j];
      }
  }

 private:
  LossAttrs attrs_;
};

// dScores[n, c, d] = (softmax[n, c, d] − [c == t_j])·w_j·dL_j/ν
template <class T>
class SoftmaxCrossEntropyLossGradKernel : public OpKernel {
 public:
  explicit SoftmaxCrossEntropyLossGradKernel(const Node& n)
      : attrs_(parse_loss_attrs(n)), from_scores_(n.attr_int("from_scores", 0) != 0) {}
  void compute(KernelContext& ctx) override {
    const Tensor& dloss = ctx.input(0);
    const Tensor& x = ctx.input(1);  // log_prob, or the scores when from_scores
    if (x.dtype() != dloss.dtype())
      ctx.fail(cat(from_scores_ ? "scores" : "log_prob", " have dtype ", dtype_name(x.dtype()),
                   ", the loss gradient has ", dtype_name(dloss.dtype())));
    const auto k =
        loss_coefficients<T>(ctx, attrs_, x.shape(), dloss, ctx.input(2), ctx.input_or_null(3));
    const int64_t N = k.N, C = k.C, D = k.D;
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.shape());
    T* o = dx.data<T>();
    const T* in = x.data<T>();
    if (from_scores_) softmax_along<T>(in, o, N, C, D, SoftmaxKind::Softmax);
    const bool big = x.numel() > kParallelMin;
#pragma omp parallel for if (big)
    for (int64_t n = 0; n < N; ++n) {
      // Sample n is a row-major [C, D] block; coef_j scales column d.
      const T* cf = k.coef.data() + n * D;
      Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>> coef_row(cf, D);
      Eigen::Map<Block> out(o + n * C * D, C, D);
      if (from_scores_) {
        out.rowwise() *= coef_row;
      } else {
        out = Eigen::Map<const Block>(in + n * C * D, C, D).exp().rowwise() * coef_row;
      }
      for (int64_t d = 0; d < D; ++d) {
        const int64_t j = n * D + d;
        if (cf[d] != T(0)) o[(n * C + k.target[j]) * D + d] -= cf[d];
      }
    }
  }

 private:
  using Block = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  LossAttrs attrs_;
  bool from_scores_;
};

}  // namespace

void register_grad_loss(KernelRegistry& r) {
  r.add(OpId::SoftmaxGrad, Device::CPU, DType::F32,
        kernel_factory<SoftmaxGradKernel<float, false>>());
  r.add(OpId::SoftmaxGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<SoftmaxGradKernel<float, false>>()));
  r.add(OpId::SoftmaxGrad, Device::CPU, DType::F64,
        kernel_factory<SoftmaxGradKernel<double, false>>());
  r.add(OpId::LogSoftmaxGrad, Device::CPU, DType::F32,
        kernel_factory<SoftmaxGradKernel<float, true>>());
  r.add(OpId::LogSoftmaxGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<SoftmaxGradKernel<float, true>>()));
  r.add(OpId::LogSoftmaxGrad, Device::CPU, DType::F64,
        kernel_factory<SoftmaxGradKernel<double, true>>());
  r.add(OpId::NegativeLogLikelihoodLossGrad, Device::CPU, DType::F32,
        kernel_factory<NllLossGradKernel<float>>());
  r.add(OpId::NegativeLogLikelihoodLossGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<NllLossGradKernel<float>>()));
  r.add(OpId::NegativeLogLikelihoodLossGrad, Device::CPU, DType::F64,
        kernel_factory<NllLossGradKernel<double>>());
  r.add(OpId::SoftmaxCrossEntropyLossGrad, Device::CPU, DType::F32,
        kernel_factory<SoftmaxCrossEntropyLossGradKernel<float>>());
  r.add(OpId::SoftmaxCrossEntropyLossGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<SoftmaxCrossEntropyLossGradKernel<float>>()));
  r.add(OpId::SoftmaxCrossEntropyLossGrad, Device::CPU, DType::F64,
        kernel_factory<SoftmaxCrossEntropyLossGradKernel<double>>());
}

}  // namespace oat::cpu
