// Gradient kernels of the activations (internal domain). Each takes the incoming gradient dY and
// one saved forward value V of the same shape (the input X, or the output Y where that is cheaper)
// and returns dX:
//   ReluGrad(dY, Y)         dX = dY ⊙ (Y > 0)
//   LeakyReluGrad(dY, X)    dX = dY ⊙ (X > 0 ? 1 : α)                       attr alpha (0.01)
//   SigmoidGrad(dY, Y)      dX = dY ⊙ Y ⊙ (1 − Y)
//   TanhGrad(dY, Y)         dX = dY ⊙ (1 − Y²)
//   GeluGrad(dY, X)         none: dX = dY ⊙ (Φ(x) + x·φ(x)),  Φ(x) = ½(1 + erf(x/√2)),
//                                                             φ(x) = e^(−x²/2)/√(2π)
//                           tanh: u = k(x + c·x³), t = tanh u, k = √(2/π), c = 0.044715,
//                                 dX = dY ⊙ (½(1 + t) + ½x(1 − t²)·k(1 + 3c·x²))
//   ClipGrad(dY, X, [min], [max])  dX = dY ⊙ (lo ≤ X ≤ hi)   (PyTorch's clamp_backward); lo/hi
//                           come from attributes min/max when present (Clip before opset 11),
//                           else from the optional scalar inputs 2/3, else ∓∞
//   EluGrad(dY, X)          dX = dY ⊙ γ·(X > 0 ? 1 : α·eˣ)         attrs alpha (1), gamma (1);
//                           Elu is γ = 1, Selu passes its α and γ
//   SoftplusGrad(dY, X)     dX = dY ⊙ σ(X) = dY / (1 + e⁻ˣ)
//   HardSigmoidGrad(dY, X)  dX = dY ⊙ α·(0 < αX + β < 1)                   attrs alpha (0.2), beta
//   (0.5) HardSwishGrad(dY, X)    dX = dY ⊙ (X < −3 ? 0 : X ≤ 3 ? X/3 + ½ : 1)     (PyTorch's
//   convention) PReluGrad(dY, X, slope) -> (dX, dSlope)
//                           dX = dY ⊙ (X < 0 ? slope : 1)   (slope broadcast to X)
//                           dSlope = sum_to(dY ⊙ (X < 0 ? X : 0), slope's shape)
//                           attr legacy_slope = 1 for PRelu before opset 7, where a 1-D slope of
//                           size C is per channel (axis 1), as the forward kernel reads it.
// The elementwise ones run on Eigen arrays in cache-sized chunks, split across OpenMP threads
// above kElementwiseParallelMin elements; F16/BF16 compute on float blocks and round dX once per
// element. PReluGrad's dSlope is a sum, so its F16/BF16 kernel is the FP32 one on float copies.
// GCC 12 reports false "may be used uninitialized" warnings inside Eigen's AVX-512 packet exp/erf
// (GCC bug 105593); silenced before the first include, as in activation.cc.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cmath>
#include <limits>
#include <unsupported/Eigen/SpecialFunctions>

#include "runtime/cpu/kernels/gelu_mode.h"
#include "runtime/cpu/kernels/prelu_slope.h"
#include "runtime/cpu/kernels/elementwise_impl.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {
namespace {

constexpr int64_t kChunk = 4096;  // elements per Eigen evaluation (stays in L1/L2)

// Checks that dY (input 0) and V (input `vi`) agree in dtype and shape; fails naming both.
void require_like_grad(const KernelContext& ctx, const Tensor& dy, const Tensor& v, int vi) {
  if (v.dtype() != dy.dtype() || v.shape() != dy.shape())
    ctx.fail(cat("input ", vi, " is ", dtype_name(v.dtype()), " ", shape_str(v.shape()),
                 " but the gradient dY is ", dtype_name(dy.dtype()), " ", shape_str(dy.shape())));
}

// dX = f(dY, V) chunk by chunk: f(ConstArrayMap g, ConstArrayMap v, ArrayMap out).
template <class T, class F>
void grad_chunks(KernelContext& ctx, const F& f) {
  const Tensor& dy = ctx.input(0);
  const Tensor& v = ctx.input(1);
  require_like_grad(ctx, dy, v, 1);
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.shape());
  const T* g = dy.data<T>();
  const T* p = v.data<T>();
  T* o = dx.data<T>();
  if constexpr (kIsLowFloat<T>) {
    // F16/BF16: f runs on float blocks widened from the storage; each dX element is rounded once.
    parallel_ranges(dy.numel(), [&](int64_t b, int64_t e) {
      float gb[kLowFloatBlock], vb[kLowFloatBlock], ob[kLowFloatBlock];
      for (int64_t c = b; c < e; c += kLowFloatBlock) {
        const int64_t m = std::min(kLowFloatBlock, e - c);
        widen_to_float(g + c, gb, m);
        widen_to_float(p + c, vb, m);
        ArrayMap<float> out(ob, m);
        f(ConstArrayMap<float>(gb, m), ConstArrayMap<float>(vb, m), out);
        round_from_float(ob, o + c, m);
      }
    });
  } else {
    parallel_ranges(dy.numel(), [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; c += kChunk) {
        const int64_t m = std::min(kChunk, e - c);
        ArrayMap<T> out(o + c, m);
        f(ConstArrayMap<T>(g + c, m), ConstArrayMap<T>(p + c, m), out);
      }
    });
  }
}

// A kernel whose Op(const Node&) parses attributes and has
// template <class A, class O> void operator()(const A& g, const A& v, O& out) const.
template <class T, class Op>
class ElementwiseGrad : public OpKernel {
 public:
  explicit ElementwiseGrad(const Node& node) : op_(node) {}
  void compute(KernelContext& ctx) override { grad_chunks<T>(ctx, op_); }

 private:
  Op op_;
};

template <class Op>
void add_grad(KernelRegistry& r, OpId op) {
  r.add(op, Device::CPU, DType::F32, kernel_factory<ElementwiseGrad<float, Op>>());
  r.add(op, Device::CPU, DType::F16, kernel_factory<ElementwiseGrad<Eigen::half, Op>>());
  r.add(op, Device::CPU, DType::BF16, kernel_factory<ElementwiseGrad<Eigen::bfloat16, Op>>());
  r.add(op, Device::CPU, DType::F64, kernel_factory<ElementwiseGrad<double, Op>>());
}

// dX = dY ⊙ (Y > 0)
struct ReluGradOp {
  explicit ReluGradOp(const Node&) {}
  template <class A, class O>
  void operator()(const A& g, const A& y, O& out) const {
    using T = typename A::Scalar;
    out = (y > T(0)).select(g, T(0));
  }
};

// dX = dY ⊙ (X > 0 ? 1 : α)
struct LeakyReluGradOp {
  explicit LeakyReluGradOp(const Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  template <class A, class O>
  void operator()(const A& g, const A& x, O& out) const {
    using T = typename A::Scalar;
    out = (x > T(0)).select(g, T(alpha) * g);
  }
  float alpha;
};

// dX = dY ⊙ Y ⊙ (1 − Y)
struct SigmoidGradOp {
  explicit SigmoidGradOp(const Node&) {}
  template <class A, class O>
  void operator()(const A& g, const A& y, O& out) const {
    using T = typename A::Scalar;
    out = g * y * (T(1) - y);
  }
};

// dX = dY ⊙ (1 − Y²)
struct TanhGradOp {
  explicit TanhGradOp(const Node&) {}
  template <class A, class O>
  void operator()(const A& g, const A& y, O& out) const {
    using T = typename A::Scalar;
    out = g * (T(1) - y.square());
  }
};

// none: dX = dY ⊙ (Φ(x) + x·φ(x));  tanh: dX = dY ⊙ (½(1 + t) + ½x(1 − t²)·k(1 + 3c·x²))
struct GeluGradOp {
  explicit GeluGradOp(const Node& n) : tanh(gelu_uses_tanh(n)) {}
  template <class A, class O>
  void operator()(const A& g, const A& x, O& out) const {
    using T = typename A::Scalar;
    if (tanh) {
      const T k = T(0.7978845608028654), c = T(0.044715);  // √(2/π)
      const Eigen::Array<T, Eigen::Dynamic, 1> t = (k * (x + c * x * x.square())).tanh();
      out = g * (T(0.5) * (T(1) + t) +
                 T(0.5) * x * (T(1) - t.square()) * k * (T(1) + T(3) * c * x.square()));
    } else {
      const T inv_sqrt_2pi = T(0.3989422804014327);  // 1/√(2π)
      out = g * (T(0.5) * (T(1) + (x * T(M_SQRT1_2)).erf()) +
                 x * (T(-0.5) * x.square()).exp() * inv_sqrt_2pi);
    }
  }
  bool tanh = false;
};

// dX = dY ⊙ γ·(X > 0 ? 1 : α·eˣ)   (e^min(x,0), so large x never overflows)
struct EluGradOp {
  explicit EluGradOp(const Node& n)
      : alpha(n.attr_float("alpha", 1.0f)), gamma(n.attr_float("gamma", 1.0f)) {}
  template <class A, class O>
  void operator()(const A& g, const A& x, O& out) const {
    using T = typename A::Scalar;
    out = (x > T(0)).select(T(gamma) * g, (T(gamma) * T(alpha)) * g * x.min(T(0)).exp());
  }
  float alpha, gamma;
};

// dX = dY / (1 + e⁻ˣ)
struct SoftplusGradOp {
  explicit SoftplusGradOp(const Node&) {}
  template <class A, class O>
  void operator()(const A& g, const A& x, O& out) const {
    using T = typename A::Scalar;
    out = g / (T(1) + (-x).exp());
  }
};

// dX = dY ⊙ α·(0 < αX + β < 1)
struct HardSigmoidGradOp {
  explicit HardSigmoidGradOp(const Node& n)
      : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  template <class A, class O>
  void operator()(const A& g, const A& x, O& out) const {
    using T = typename A::Scalar;
    const auto z = T(alpha) * x + T(beta);
    out = ((z > T(0)) && (z < T(1))).select(T(alpha) * g, T(0));
  }
  float alpha, beta;
};

// dX = dY ⊙ (X < −3 ? 0 : X ≤ 3 ? X/3 + ½ : 1)
struct HardSwishGradOp {
  explicit HardSwishGradOp(const Node&) {}
  template <class A, class O>
  void operator()(const A& g, const A& x, O& out) const {
    using T = typename A::Scalar;
    out = (x < T(-3)).select(T(0), (x > T(3)).select(g, g * (x * T(1.0 / 3.0) + T(0.5))));
  }
};

// ---- Clip --------------------------------------------------------------------------------------

// dX = dY ⊙ (lo ≤ X ≤ hi)
template <class T>
class ClipGradKernel : public OpKernel {
 public:
  explicit ClipGradKernel(const Node& n) {
    if (n.has_attr("min")) lo_attr_ = static_cast<T>(n.attr_float("min", 0.0f));
    if (n.has_attr("max")) hi_attr_ = static_cast<T>(n.attr_float("max", 0.0f));
    has_lo_ = n.has_attr("min");
    has_hi_ = n.has_attr("max");
  }
  void compute(KernelContext& ctx) override {
    T lo = has_lo_ ? lo_attr_ : -std::numeric_limits<T>::infinity();
    T hi = has_hi_ ? hi_attr_ : std::numeric_limits<T>::infinity();
    if (!has_lo_)
      if (const Tensor* t = ctx.input_or_null(2)) lo = bound(ctx, *t, "min");
    if (!has_hi_)
      if (const Tensor* t = ctx.input_or_null(3)) hi = bound(ctx, *t, "max");
    using C = ComputeType<T>;  // F16/BF16 compare in float (exact) and copy dY
    const C l = static_cast<C>(lo), h = static_cast<C>(hi);
    grad_chunks<T>(ctx, [l, h](const auto& g, const auto& x, auto& out) {
      out = ((x >= l) && (x <= h)).select(g, C(0));
    });
  }

 private:
  static T bound(const KernelContext& ctx, const Tensor& t, const char* which) {
    if (t.numel() != 1 || t.dtype() != dtype_of<T>())
      ctx.fail(cat(which, " must be a ", dtype_name(dtype_of<T>()), " scalar, got ",
                   dtype_name(t.dtype()), " ", shape_str(t.shape())));
    return t.data<T>()[0];
  }
  T lo_attr_{}, hi_attr_{};
  bool has_lo_ = false, has_hi_ = false;
};

// ---- PRelu -------------------------------------------------------------------------------------

// dX = dY ⊙ (X < 0 ? slope : 1);  dSlope = sum_to(dY ⊙ (X < 0 ? X : 0), slope's shape)
template <class T>
class PReluGradKernel : public OpKernel {
 public:
  explicit PReluGradKernel(const Node& n) : legacy_(n.attr_int("legacy_slope", 0) != 0) {}
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& slope = ctx.input(2);
    const Shape ss = checked_prelu_grad_slope(ctx, dy, x, slope, legacy_);  // [C]: [C, 1, ..]
    const Shape& xs = x.shape();
    const T* g = dy.data<T>();
    const T* px = x.data<T>();
    const T* ps = slope.data<T>();
    if (ctx.output_requested(0)) {
      T* o = ctx.allocate_output(0, x.dtype(), xs).template data<T>();
      const auto L = broadcast_layout<1>(xs, {ss});
      parallel_broadcast_runs(L, [&](int64_t e, const std::array<int64_t, 1>& off,
                                     const std::array<int64_t, 1>& inner, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const T s = ps[off[0] + i * inner[0]];
          o[e + i] = px[e + i] < T(0) ? s * g[e + i] : g[e + i];
        }
      });
    }
    if (ctx.output_requested(1)) {
      Tensor& ds = ctx.allocate_output(1, slope.dtype(), slope.shape());
      T* d = ds.data<T>();
      std::fill(d, d + ds.numel(), T(0));
      for_each_broadcast_run(
          xs, {contiguous_strides(xs), broadcast_strides(ss, xs)},
          [&](const std::vector<int64_t>& off, const std::vector<int64_t>& inner, int64_t n) {
            const T* gx = g + off[0];
            const T* xx = px + off[0];
            if (inner[1] == 0) {
              T acc = T(0);
              for (int64_t k = 0; k < n; ++k) acc += xx[k] < T(0) ? gx[k] * xx[k] : T(0);
              d[off[1]] += acc;
            } else {
              for (int64_t k = 0; k < n; ++k) d[off[1] + k] += xx[k] < T(0) ? gx[k] * xx[k] : T(0);
            }
          });
    }
  }

 private:
  bool legacy_;
};

}  // namespace

void register_grad_activation(KernelRegistry& r) {
  add_grad<ReluGradOp>(r, OpId::ReluGrad);
  add_grad<LeakyReluGradOp>(r, OpId::LeakyReluGrad);
  add_grad<SigmoidGradOp>(r, OpId::SigmoidGrad);
  add_grad<TanhGradOp>(r, OpId::TanhGrad);
  add_grad<GeluGradOp>(r, OpId::GeluGrad);
  add_grad<EluGradOp>(r, OpId::EluGrad);
  add_grad<SoftplusGradOp>(r, OpId::SoftplusGrad);
  add_grad<HardSigmoidGradOp>(r, OpId::HardSigmoidGrad);
  add_grad<HardSwishGradOp>(r, OpId::HardSwishGrad);
  r.add(OpId::ClipGrad, Device::CPU, DType::F32, kernel_factory<ClipGradKernel<float>>());
  r.add(OpId::ClipGrad, Device::CPU, DType::F64, kernel_factory<ClipGradKernel<double>>());
  r.add(OpId::ClipGrad, Device::CPU, DType::F16, kernel_factory<ClipGradKernel<Eigen::half>>());
  r.add(OpId::ClipGrad, Device::CPU, DType::BF16,
        kernel_factory<ClipGradKernel<Eigen::bfloat16>>());
  r.add(OpId::PReluGrad, Device::CPU, DType::F32, kernel_factory<PReluGradKernel<float>>());
  r.add(OpId::PReluGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<PReluGradKernel<float>>()));
  r.add(OpId::PReluGrad, Device::CPU, DType::F64, kernel_factory<PReluGradKernel<double>>());
}

}  // namespace oat::cpu
