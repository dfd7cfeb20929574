// Activations (elementwise, y has x's shape), with ONNX's attribute defaults:
//   Relu            y = max(0, x)
//   LeakyRelu       y = x < 0 ? αx : x                                       α = 0.01
//   Sigmoid         y = 1 / (1 + e⁻ˣ)
//   HardSigmoid     y = max(0, min(1, αx + β))                               α = 0.2, β = 0.5
//   HardSwish       y = x · max(0, min(1, x/6 + 1/2))
//   Tanh            y = tanh x
//   Clip            y = min(max(x, lo), hi)    lo/hi: attributes min/max before opset 11,
//                                              optional scalar inputs 1/2 from opset 11
//   Erf             y = erf x
//   Gelu            none: y = x/2 · (1 + erf(x/√2));  tanh: y = x/2 · (1 + tanh(√(2/π)(x +
//   0.044715x³))) Elu             y = x < 0 ? α(eˣ - 1) : x                                α = 1
//   Selu            y = γ · (x <= 0 ? α(eˣ - 1) : x)              α ≈ 1.67326, γ ≈ 1.05070
//   Celu            y = max(0, x) + min(0, α(e^(x/α) - 1))                   α = 1
//   Softplus        y = ln(1 + eˣ) = max(x, 0) + ln(1 + e^-|x|)   (no overflow for large x)
//   Softsign        y = x / (1 + |x|)
//   PRelu           y = x < 0 ? slope·x : x    slope broadcasts unidirectionally to x's shape
//                                              (opset < 7: a 1-D slope of size C is per channel)
//   ThresholdedRelu y = x > α ? x : 0                                        α = 1
//   Mish            y = x · tanh(softplus(x))
//   Shrink          y = x < -λ ? x + bias : (x > λ ? x - bias : 0)          λ = 0.5, bias = 0
// F16/BF16 compute in float and round each element once (low_precision.h). The exponential
// branches are written branch-free, e.g. Elu = max(x,0) + α·expm1(min(x,0)), so
// Eigen evaluates them with vectorised expm1/tanh/erf instead of a per-element select.
// GCC 12 reports a false "(may be) used uninitialized" inside the AVX-512 intrinsics that Eigen's
// packet exp/log use (GCC bug 105593); it must be silenced before the first include.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unsupported/Eigen/SpecialFunctions>

#include "runtime/cpu/kernels/elementwise_impl.h"
#include "runtime/cpu/kernels/gelu_mode.h"
#include "runtime/cpu/kernels/prelu_slope.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {
namespace {

// ---- kernels parameterised by an op that parses its attributes -------------------------------

// Op(const Node&) with T operator()(T) const: a scalar functor in a vectorisable loop.
template <class T, class Op>
class ScalarActivation : public OpKernel {
 public:
  explicit ScalarActivation(const Node& node) : op_(node) {}
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    map_unary(x.data<T>(), y.data<T>(), x.numel(), rounded<T>(op_));
  }

 private:
  Op op_;
};

// Op(const Node&) with eval(array) returning an Eigen expression.
template <class T, class Op>
class EigenActivation : public OpKernel {
 public:
  explicit EigenActivation(const Node& node) : op_(node) {}
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    const Op& op = op_;
    map_eigen(x.data<T>(), y.data<T>(), x.numel(), [&op](const auto& v) { return op.eval(v); });
  }

 private:
  Op op_;
};

template <class Op, class... Ts>
void add_scalar(KernelRegistry& r, OpId op) {
  (r.add(op, Device::CPU, dtype_of<Ts>(), kernel_factory<ScalarActivation<Ts, Op>>()), ...);
}
template <class Op, class... Ts>
void add_eigen(KernelRegistry& r, OpId op) {
  (r.add(op, Device::CPU, dtype_of<Ts>(), kernel_factory<EigenActivation<Ts, Op>>()), ...);
}

// ---- scalar functors ---------------------------------------------------------------------------

struct ReluOp {
  explicit ReluOp(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }  // NaN stays NaN
};
struct LeakyReluOp {
  explicit LeakyReluOp(const Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(alpha) * x : x;
  }
  float alpha;
};
struct HardSigmoidOp {
  explicit HardSigmoidOp(const Node& n)
      : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  template <class T>
  T operator()(T x) const {
    return std::max(T(0), std::min(T(1), T(alpha) * x + T(beta)));
  }
  float alpha, beta;
};
struct HardSwishOp {
  explicit HardSwishOp(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return x * std::max(T(0), std::min(T(1), x * (T(1) / T(6)) + T(0.5)));
  }
};
struct SoftsignOp {
  explicit SoftsignOp(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return x / (T(1) + static_cast<T>(std::abs(x)));
  }
};
struct ThresholdedReluOp {
  explicit ThresholdedReluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class T>
  T operator()(T x) const {
    return x > T(alpha) ? x : T(0);
  }
  float alpha;
};

struct ShrinkOp {
  explicit ShrinkOp(const Node& n)
      : lambd(n.attr_float("lambd", 0.5f)), bias(n.attr_float("bias", 0.0f)) {}
  template <class T>
  T operator()(T x) const {
    return x < T(-lambd) ? x + T(bias) : (x > T(lambd) ? x - T(bias) : T(0));
  }
  float lambd, bias;
};

// ---- Eigen expressions -------------------------------------------------------------------------

struct SigmoidOp {
  explicit SigmoidOp(const Node&) {}
  template <class A>
  auto eval(const A& x) const {
    using T = typename A::Scalar;
    return (T(1) + (-x).exp()).inverse();
  }
};
struct TanhOp {
  explicit TanhOp(const Node&) {}
  template <class A>
  auto eval(const A& x) const {
    return x.tanh();
  }
};
struct ErfOp {
  explicit ErfOp(const Node&) {}
  template <class A>
  auto eval(const A& x) const {
    return x.erf();
  }
};
struct GeluOp {
  explicit GeluOp(const Node& n) : tanh(gelu_uses_tanh(n)) {}
  // The two forms are different expression types, so GeluKernel picks one of two loops.
  template <class A>
  auto eval_erf(const A& x) const {
    using T = typename A::Scalar;
    return T(0.5) * x * (T(1) + (x * T(M_SQRT1_2)).erf());
  }
  template <class A>
  auto eval_tanh(const A& x) const {
    using T = typename A::Scalar;
    const T k = T(0.7978845608028654);  // √(2/π)
    return T(0.5) * x * (T(1) + (k * (x + T(0.044715) * x * x * x)).tanh());
  }
  bool tanh = false;
};
struct EluOp {
  explicit EluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class A>
  auto eval(const A& x) const {
    using T = typename A::Scalar;
    return x.max(T(0)) + T(alpha) * x.min(T(0)).expm1();
  }
  float alpha;
};
struct SeluOp {
  explicit SeluOp(const Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <class A>
  auto eval(const A& x) const {
    using T = typename A::Scalar;
    return T(gamma) * (x.max(T(0)) + T(alpha) * x.min(T(0)).expm1());
  }
  float alpha, gamma;
};
struct CeluOp {
  explicit CeluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class A>
  auto eval(const A& x) const {
    using T = typename A::Scalar;
    return x.max(T(0)) + T(alpha) * (x.min(T(0)) * (T(1) / T(alpha))).expm1();
  }
  float alpha;
};
struct SoftplusOp {
  explicit SoftplusOp(const Node&) {}
  template <class A>
  auto eval(const A& x) const {
    using T = typename A::Scalar;
    return x.max(T(0)) + (-x.abs()).exp().log1p();
  }
};
struct MishOp {
  explicit MishOp(const Node&) {}
  template <class A>
  auto eval(const A& x) const {
    using T = typename A::Scalar;
    return x * (x.max(T(0)) + (-x.abs()).exp().log1p()).tanh();
  }
};

template <class T>
class GeluKernel : public OpKernel {
 public:
  explicit GeluKernel(const Node& node) : op_(node) {}
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    const GeluOp& op = op_;
    if (op.tanh)
      map_eigen(x.data<T>(), y.data<T>(), x.numel(),
                [&op](const auto& v) { return op.eval_tanh(v); });
    else
      map_eigen(x.data<T>(), y.data<T>(), x.numel(),
                [&op](const auto& v) { return op.eval_erf(v); });
  }

 private:
  GeluOp op_;
};

// ---- Clip --------------------------------------------------------------------------------------

template <class T>
class ClipKernel : public OpKernel {
 public:
  explicit ClipKernel(const Node& node) : from_attrs_(node.opset < 11) {
    if (from_attrs_) {
      lo_ = static_cast<T>(node.attr_float("min", static_cast<float>(lowest())));
      hi_ = static_cast<T>(node.attr_float("max", static_cast<float>(highest())));
    }
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    T lo = from_attrs_ ? lo_ : lowest();
    T hi = from_attrs_ ? hi_ : highest();
    if (!from_attrs_) {
      if (const Tensor* t = ctx.input_or_null(1)) lo = bound(ctx, *t, "min", x.dtype());
      if (const Tensor* t = ctx.input_or_null(2)) hi = bound(ctx, *t, "max", x.dtype());
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    // min(max(x, lo), hi): lo > hi gives hi everywhere, as ONNX specifies; NaN stays NaN.
    map_unary(x.data<T>(), y.data<T>(), x.numel(),
              [lo, hi](T v) { return std::min(std::max(v, lo), hi); });
  }

 private:
  static T lowest() {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  }
  static T highest() {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::max();
  }
  static T bound(const KernelContext& ctx, const Tensor& t, const char* which, DType want) {
    if (t.numel() != 1) ctx.fail(cat(which, " must be a scalar, got shape ", shape_str(t.shape())));
    if (t.dtype() != want)
      ctx.fail(cat(which, " has dtype ", dtype_name(t.dtype()), ", input has ", dtype_name(want)));
    return t.data<T>()[0];
  }

  bool from_attrs_;
  T lo_{}, hi_{};
};

// ---- PRelu -------------------------------------------------------------------------------------

template <class T>
void prelu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  require_same_dtype(ctx, x.dtype(), 0, 2);
  // Before opset 7 a 1-D slope of size C is per channel (prelu_slope.h).
  const Shape slope_shape =
      checked_prelu_slope(ctx, x.shape(), slope.shape(), ctx.node().opset < 7);
  const Shape& out = x.shape();
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  broadcast_binary(x.data<T>(), x.shape(), slope.data<T>(), slope_shape, y.data<T>(), out,
                   [](T v, T s) { return v < T(0) ? s * v : v; });
}

}  // namespace

void register_activation(KernelRegistry& r) {
  using H = Eigen::half;
  using BF = Eigen::bfloat16;
  add_scalar<ReluOp, float, double, H, BF, int64_t, int32_t, int8_t>(r, OpId::Relu);
  add_scalar<LeakyReluOp, float, double, H, BF>(r, OpId::LeakyRelu);
  add_scalar<HardSigmoidOp, float, double, H, BF>(r, OpId::HardSigmoid);
  add_scalar<HardSwishOp, float, double, H, BF>(r, OpId::HardSwish);
  add_scalar<SoftsignOp, float, double, H, BF>(r, OpId::Softsign);
  add_scalar<ThresholdedReluOp, float, double, H, BF>(r, OpId::ThresholdedRelu);
  add_scalar<ShrinkOp, float, double, H, BF>(r, OpId::Shrink);
  add_eigen<SigmoidOp, float, double, H, BF>(r, OpId::Sigmoid);
  add_eigen<TanhOp, float, double, H, BF>(r, OpId::Tanh);
  add_eigen<ErfOp, float, double, H, BF>(r, OpId::Erf);
  add_eigen<EluOp, float, double, H, BF>(r, OpId::Elu);
  add_eigen<SeluOp, float, double, H, BF>(r, OpId::Selu);
  add_eigen<CeluOp, float, double, H, BF>(r, OpId::Celu);
  add_eigen<SoftplusOp, float, double, H, BF>(r, OpId::Softplus);
  add_eigen<MishOp, float, double, H, BF>(r, OpId::Mish);
  r.add(OpId::Gelu, Device::CPU, DType::F32, kernel_factory<GeluKernel<float>>());
  r.add(OpId::Gelu, Device::CPU, DType::F64, kernel_factory<GeluKernel<double>>());
  r.add(OpId::Gelu, Device::CPU, DType::F16, kernel_factory<GeluKernel<H>>());
  r.add(OpId::Gelu, Device::CPU, DType::BF16, kernel_factory<GeluKernel<BF>>());
  r.add(OpId::Clip, Device::CPU, DType::F32, kernel_factory<ClipKernel<float>>());
  r.add(OpId::Clip, Device::CPU, DType::F64, kernel_factory<ClipKernel<double>>());
  r.add(OpId::Clip, Device::CPU, DType::F16, kernel_factory<ClipKernel<H>>());
  r.add(OpId::Clip, Device::CPU, DType::BF16, kernel_factory<ClipKernel<BF>>());
  r.add(OpId::Clip, Device::CPU, DType::I64, kernel_factory<ClipKernel<int64_t>>());
  r.add(OpId::Clip, Device::CPU, DType::I32, kernel_factory<ClipKernel<int32_t>>());
  r.add(OpId::Clip, Device::CPU, DType::I8, kernel_factory<ClipKernel<int8_t>>());
  r.add(OpId::Clip, Device::CPU, DType::U8, kernel_factory<ClipKernel<uint8_t>>());
  r.add(OpId::PRelu, Device::CPU, DType::F32, function_kernel(&prelu_kernel<float>));
  r.add(OpId::PRelu, Device::CPU, DType::F64, function_kernel(&prelu_kernel<double>));
  r.add(OpId::PRelu, Device::CPU, DType::F16, function_kernel(&prelu_kernel<H>));
  r.add(OpId::PRelu, Device::CPU, DType::BF16, function_kernel(&prelu_kernel<BF>));
  r.add(OpId::PRelu, Device::CPU, DType::I64, function_kernel(&prelu_kernel<int64_t>));
  r.add(OpId::PRelu, Device::CPU, DType::I32, function_kernel(&prelu_kernel<int32_t>));
}

}  // namespace oat::cpu
