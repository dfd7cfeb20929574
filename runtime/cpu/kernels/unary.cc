// Elementwise unary math, y has x's shape:
//   Sqrt √x   Exp eˣ   Log ln x   Sin   Cos          (Eigen's vectorised packet math)
//   Neg -x    Abs |x|  Reciprocal 1/x
//   Floor ⌊x⌋  Ceil ⌈x⌉  Round: nearest, halves to even (2.5 → 2, -0.5 → -0)
//   Sign: -1, 0 or 1 (NaN stays NaN)
//   IsNaN → bool      IsInf → bool: x = +inf (detect_positive=1), x = -inf (detect_negative=1)
// F16/BF16 compute in float and round once per element (low_precision.h).
// GCC 12 reports a false "(may be) used uninitialized" inside the AVX-512 intrinsics that Eigen's
// packet exp/log use (GCC bug 105593); it must be silenced before the first include.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/cpu/kernels/elementwise_impl.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

void register_trig(KernelRegistry& r);  // trig.cc: Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh

namespace {

struct SqrtOp {
  template <class A>
  static auto eval(const A& x) {
    return x.sqrt();
  }
};
struct ExpOp {
  template <class A>
  static auto eval(const A& x) {
    return x.exp();
  }
};
struct LogOp {
  template <class A>
  static auto eval(const A& x) {
    return x.log();
  }
};
struct SinOp {
  template <class A>
  static auto eval(const A& x) {
    return x.sin();
  }
};
struct CosOp {
  template <class A>
  static auto eval(const A& x) {
    return x.cos();
  }
};

struct NegOp {
  template <class T>
  T operator()(T x) const {
    return static_cast<T>(-x);
  }
};
struct AbsOp {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(x < 0 ? -x : x);
    } else {
      return static_cast<T>(std::abs(x));
    }
  }
};
struct ReciprocalOp {
  template <class T>
  T operator()(T x) const {
    return T(1) / x;
  }
};
struct FloorOp {
  template <class T>
  T operator()(T x) const {
    return static_cast<T>(std::floor(x));
  }
};
struct CeilOp {
  template <class T>
  T operator()(T x) const {
    return static_cast<T>(std::ceil(x));
  }
};
// rint rounds in the current rounding mode, which is round-half-to-even unless someone changed it.
struct RoundOp {
  template <class T>
  T operator()(T x) const {
    return static_cast<T>(std::rint(x));
  }
};
struct SignOp {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x > 0 ? T(1) : T(0);
    } else {
      return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);  // 0 and NaN map to themselves
    }
  }
};
struct IsNaNOp {
  template <class T>
  bool operator()(T x) const {
    return std::isnan(x);
  }
};

template <class T>
class IsInfKernel : public OpKernel {
 public:
  explicit IsInfKernel(const Node& node)
      : negative_(node.attr_int("detect_negative", 1) != 0),
        positive_(node.attr_int("detect_positive", 1) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, DType::Bool, x.shape());
    const T inf = std::numeric_limits<T>::infinity();
    const bool neg = negative_, pos = positive_;
    map_unary(x.data<T>(), y.data<bool>(), x.numel(),
              [=](T v) { return (pos && v == inf) || (neg && v == -inf); });
  }

 private:
  bool negative_, positive_;
};

template <class... Ts>
void add_isinf(KernelRegistry& r) {
  (r.add(OpId::IsInf, Device::CPU, dtype_of<Ts>(), kernel_factory<IsInfKernel<Ts>>()), ...);
}
template <class... Ts>
void add_isnan(KernelRegistry& r) {
  (r.add(OpId::IsNaN, Device::CPU, dtype_of<Ts>(),
         function_kernel(&unary_kernel<Ts, bool, IsNaNOp>)),
   ...);
}

}  // namespace

void register_unary(KernelRegistry& r) {
  using H = Eigen::half;
  using BF = Eigen::bfloat16;
  add_eigen_unary<SqrtOp, float, double, H, BF>(r, OpId::Sqrt);
  add_eigen_unary<ExpOp, float, double, H, BF>(r, OpId::Exp);
  add_eigen_unary<LogOp, float, double, H, BF>(r, OpId::Log);
  add_eigen_unary<SinOp, float, double, H, BF>(r, OpId::Sin);
  add_eigen_unary<CosOp, float, double, H, BF>(r, OpId::Cos);
  add_unary<NegOp, float, double, H, BF, int64_t, int32_t, int8_t>(r, OpId::Neg);
  add_unary<AbsOp, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t>(r, OpId::Abs);
  add_unary<ReciprocalOp, float, double, H, BF>(r, OpId::Reciprocal);
  add_unary<FloorOp, float, double, H, BF>(r, OpId::Floor);
  add_unary<CeilOp, float, double, H, BF>(r, OpId::Ceil);
  add_unary<RoundOp, float, double, H, BF>(r, OpId::Round);
  add_unary<SignOp, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t>(r, OpId::Sign);
  add_isnan<float, double, H, BF>(r);
  add_isinf<float, double, H, BF>(r);
  register_trig(r);
}

}  // namespace oat::cpu
