// Elementwise arithmetic with numpy (multidirectional) broadcasting:
//   Add  y = a + b        Sub  y = a - b        Mul  y = a * b
//   Div  y = a / b        (integers truncate toward zero, as C does; b == 0 is an error)
//   Pow  y = a ^ b        (the exponent may have another dtype; y has a's dtype)
//   Mod  fmod=0: y = a - floor(a / b) * b  (sign of the divisor, Python's %)
//        fmod=1: y = a - trunc(a / b) * b  (sign of the dividend, C's fmod)
//   Sum / Max / Min       variadic: y = x0 ∘ x1 ∘ ... ∘ xn-1, all broadcast together
//                         (Max/Min propagate NaN, like numpy's maximum/minimum)
//   Mean                  variadic: y = (x0 + x1 + ... + xn-1) / n, broadcast together
// F16/BF16: every op computes in float and rounds each element once; Sum of more than two inputs
// accumulates all of them in float (the FP32 kernel on float copies) before its one rounding.
#include <cmath>
#include <type_traits>

#include "runtime/cpu/kernels/elementwise_impl.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {
namespace {

struct AddOp {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a + b);
  }
};
struct SubOp {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a - b);
  }
};
struct MulOp {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a * b);
  }
};
struct DivOp {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a / b);
  }
};
template <class T>
bool is_nan_value(T v) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    return v != v;
  }
}
// NaN wins: b is taken when it is larger or NaN; otherwise a (so a NaN a stays).
struct MaxOp {
  template <class T>
  T operator()(T a, T b) const {
    return (a < b || is_nan_value(b)) ? b : a;
  }
};
struct MinOp {
  template <class T>
  T operator()(T a, T b) const {
    return (b < a || is_nan_value(b)) ? b : a;
  }
};

template <class T>
bool any_zero(const Tensor& t) {
  const T* p = t.data<T>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    if (p[i] == T(0)) return true;
  return false;
}

// Integer division by zero is undefined in C (and traps on x86); report it instead.
template <class T>
void div_kernel(KernelContext& ctx) {
  if constexpr (std::is_integral_v<T>) {
    require_same_dtype(ctx, ctx.input(0).dtype(), 0, 2);
    if (any_zero<T>(ctx.input(1)))
      ctx.fail(
          cat("integer division by zero (divisor shape ", shape_str(ctx.input(1).shape()), ")"));
  }
  binary_kernel<T, T, DivOp>(ctx);
}

// ---- Mod ---------------------------------------------------------------------------------------

template <class T>
T mod_value(T a, T b, bool fmod) {
  if constexpr (kIsFloat<T>) {
    using C = ComputeType<T>;
    const C x = static_cast<C>(a), y = static_cast<C>(b);
    C r = std::fmod(x, y);
    if (!fmod && r != C(0) && ((r < C(0)) != (y < C(0)))) r += y;
    return static_cast<T>(r);
  } else if constexpr (std::is_unsigned_v<T>) {
    return static_cast<T>(a % b);
  } else {
    T r = static_cast<T>(a % b);
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  }
}

template <class T>
class ModKernel : public OpKernel {
 public:
  explicit ModKernel(const Node& node) : fmod_(node.attr_int("fmod", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    require_same_dtype(ctx, a.dtype(), 0, 2);
    if constexpr (std::is_integral_v<T>) {
      if (any_zero<T>(b))
        ctx.fail(cat("integer modulo by zero (divisor shape ", shape_str(b.shape()), ")"));
    }
    const Shape out = broadcast_or_fail(ctx, {a.shape(), b.shape()});
    Tensor& y = ctx.allocate_output(0, a.dtype(), out);
    const bool fm = fmod_;
    broadcast_binary(a.data<T>(), a.shape(), b.data<T>(), b.shape(), y.data<T>(), out,
                     [fm](T u, T v) { return mod_value(u, v, fm); });
  }

 private:
  bool fmod_;
};

// ---- Pow ---------------------------------------------------------------------------------------

// Integer power by squaring; negative exponents truncate 1 / a^-e toward zero like the float
// result cast back to the integer type would.
template <class T, class E>
T int_pow(T a, E e) {
  if constexpr (std::is_signed_v<E>) {
    if (e < 0) {
      if (a == 1) return 1;
      if (a == -1) return (e % 2 == 0) ? 1 : static_cast<T>(-1);
      return 0;
    }
  }
  T r = 1;
  T base = a;
  while (e > 0) {
    if (e & 1) r = static_cast<T>(r * base);
    base = static_cast<T>(base * base);
    e >>= 1;
  }
  return r;
}

template <class T, class E>
T pow_value(T a, E e) {
  if constexpr (kIsFloat<T>) {
    using C = ComputeType<T>;
    return static_cast<T>(std::pow(static_cast<C>(a), static_cast<C>(e)));
  } else if constexpr (std::is_integral_v<E>) {
    return int_pow(a, e);
  } else {
    return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(e)));
  }
}

template <class T>
void pow_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Shape out = broadcast_or_fail(ctx, {a.shape(), b.shape()});
  Tensor& y = ctx.allocate_output(0, a.dtype(), out);
  const T* pa = a.data<T>();
  T* py = y.data<T>();
  // A scalar float exponent on a float base (x^2 in decomposed LayerNorm, x^0.5, x^3 in GELU's
  // tanh form) becomes a vectorised loop without pow.
  if constexpr (kIsFloat<T>) {
    if (b.numel() == 1 && out == a.shape() &&
        (b.dtype() == DType::F32 || b.dtype() == DType::F64)) {
      const double e = b.item_as_double(0);
      const int64_t n = a.numel();
      using C = ComputeType<T>;  // F16/BF16: float math, one rounding
      if (e == 2.0)
        return map_unary(pa, py, n, [](T v) {
          const C c(v);
          return T(c * c);
        });
      if (e == 3.0)
        return map_unary(pa, py, n, [](T v) {
          const C c(v);
          return T(c * c * c);
        });
      if (e == 1.0) return map_unary(pa, py, n, [](T v) { return v; });
      if (e == 0.5) return map_unary(pa, py, n, [](T v) { return T(std::sqrt(C(v))); });
      if (e == -1.0) return map_unary(pa, py, n, [](T v) { return T(C(1) / C(v)); });
    }
  }
  dispatch_dtype(b.dtype(), [&](auto e_tag) {
    using E = decltype(e_tag);
    if constexpr (std::is_same_v<E, bool>) {
      throw Unsupported(cat(ctx.node().describe(), ": exponent dtype ", dtype_name(b.dtype()),
                            " is not supported"),
                        cat("Pow[exponent ", dtype_name(b.dtype()), "]"));
    } else {
      broadcast_binary(pa, a.shape(), b.data<E>(), b.shape(), py, out,
                       [](T u, E v) { return pow_value(u, v); });
    }
  });
}

// ---- Sum / Max / Min ---------------------------------------------------------------------------

// The output shape of a variadic op: one or more inputs of one dtype, broadcast together.
Shape variadic_shape(const KernelContext& ctx) {
  const int n = ctx.num_inputs();
  if (n < 1) ctx.fail("needs at least one input");
  std::vector<Shape> shapes;
  for (int i = 0; i < n; ++i) shapes.push_back(ctx.input(i).shape());
  require_same_dtype(ctx, ctx.input(0).dtype(), 0, n);
  return broadcast_or_fail(ctx, shapes);
}

// y = x0 ∘ x1 ∘ ... : the first pair is computed into y directly when it already has y's shape,
// then each further input is folded into y in place.
template <class T, class Op>
void variadic_kernel(KernelContext& ctx) {
  const int n = ctx.num_inputs();
  const Shape out = variadic_shape(ctx);
  if (n == 1) return ctx.set_output(0, ctx.input(0));
  Tensor& y = ctx.allocate_output(0, ctx.input(0).dtype(), out);
  T* py = y.data<T>();
  const Tensor& x0 = ctx.input(0);
  const Tensor& x1 = ctx.input(1);
  int next = 1;
  if (broadcast_shapes({x0.shape(), x1.shape()}) == out) {
    broadcast_binary(x0.data<T>(), x0.shape(), x1.data<T>(), x1.shape(), py, out, Rounded<T, Op>{});
    next = 2;
  } else {
    broadcast_copy(x0.data<T>(), x0.shape(), py, out);
  }
  for (int i = next; i < n; ++i) {
    const Tensor& x = ctx.input(i);
    broadcast_binary(static_cast<const T*>(py), out, x.data<T>(), x.shape(), py, out,
                     Rounded<T, Op>{});
  }
}

// Mean: x0 copied to y, each further input added in place, then y /= n (floats only; the
// F16/BF16 kernel runs this one on float copies, so the sum and the scaling round once).
template <class T>
void mean_kernel(KernelContext& ctx) {
  const int n = ctx.num_inputs();
  const Shape out = variadic_shape(ctx);
  Tensor& y = ctx.allocate_output(0, ctx.input(0).dtype(), out);
  T* py = y.data<T>();
  broadcast_copy(ctx.input(0).data<T>(), ctx.input(0).shape(), py, out);
  for (int i = 1; i < n; ++i) {
    const Tensor& x = ctx.input(i);
    broadcast_binary(static_cast<const T*>(py), out, x.data<T>(), x.shape(), py, out, AddOp{});
  }
  const T count = static_cast<T>(n);
  map_unary(static_cast<const T*>(py), py, y.numel(), [count](T v) { return v / count; });
}

template <class Op, class... Ts>
void add_variadic(KernelRegistry& r, OpId op) {
  (r.add(op, Device::CPU, dtype_of<Ts>(), function_kernel(&variadic_kernel<Ts, Op>)), ...);
}

}  // namespace

void register_binary(KernelRegistry& r) {
  using H = Eigen::half;
  using BF = Eigen::bfloat16;
  add_binary<AddOp, false, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t>(r, OpId::Add);
  add_binary<SubOp, false, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t>(r, OpId::Sub);
  add_binary<MulOp, false, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t>(r, OpId::Mul);
  r.add(OpId::Div, Device::CPU, DType::F32, function_kernel(&div_kernel<float>));
  r.add(OpId::Div, Device::CPU, DType::F64, function_kernel(&div_kernel<double>));
  r.add(OpId::Div, Device::CPU, DType::F16, function_kernel(&div_kernel<H>));
  r.add(OpId::Div, Device::CPU, DType::BF16, function_kernel(&div_kernel<BF>));
  r.add(OpId::Div, Device::CPU, DType::I64, function_kernel(&div_kernel<int64_t>));
  r.add(OpId::Div, Device::CPU, DType::I32, function_kernel(&div_kernel<int32_t>));
  r.add(OpId::Div, Device::CPU, DType::I8, function_kernel(&div_kernel<int8_t>));
  r.add(OpId::Div, Device::CPU, DType::U8, function_kernel(&div_kernel<uint8_t>));
  r.add(OpId::Pow, Device::CPU, DType::F32, function_kernel(&pow_kernel<float>));
  r.add(OpId::Pow, Device::CPU, DType::F64, function_kernel(&pow_kernel<double>));
  r.add(OpId::Pow, Device::CPU, DType::F16, function_kernel(&pow_kernel<H>));
  r.add(OpId::Pow, Device::CPU, DType::BF16, function_kernel(&pow_kernel<BF>));
  r.add(OpId::Pow, Device::CPU, DType::I64, function_kernel(&pow_kernel<int64_t>));
  r.add(OpId::Pow, Device::CPU, DType::I32, function_kernel(&pow_kernel<int32_t>));
  r.add(OpId::Mod, Device::CPU, DType::F32, kernel_factory<ModKernel<float>>());
  r.add(OpId::Mod, Device::CPU, DType::F64, kernel_factory<ModKernel<double>>());
  r.add(OpId::Mod, Device::CPU, DType::F16, kernel_factory<ModKernel<H>>());
  r.add(OpId::Mod, Device::CPU, DType::BF16, kernel_factory<ModKernel<BF>>());
  r.add(OpId::Mod, Device::CPU, DType::I64, kernel_factory<ModKernel<int64_t>>());
  r.add(OpId::Mod, Device::CPU, DType::I32, kernel_factory<ModKernel<int32_t>>());
  r.add(OpId::Mod, Device::CPU, DType::I8, kernel_factory<ModKernel<int8_t>>());
  r.add(OpId::Mod, Device::CPU, DType::U8, kernel_factory<ModKernel<uint8_t>>());
  r.add(OpId::Mod, Device::CPU, DType::I16, kernel_factory<ModKernel<int16_t>>());
  r.add(OpId::Mod, Device::CPU, DType::U16, kernel_factory<ModKernel<uint16_t>>());
  r.add(OpId::Mod, Device::CPU, DType::U32, kernel_factory<ModKernel<uint32_t>>());
  r.add(OpId::Mod, Device::CPU, DType::U64, kernel_factory<ModKernel<uint64_t>>());
  add_variadic<AddOp, float, double>(r, OpId::Sum);
  r.add(OpId::Sum, Device::CPU, kLowFloats,
        in_fp32(function_kernel(&variadic_kernel<float, AddOp>)));
  r.add(OpId::Mean, Device::CPU, DType::F32, function_kernel(&mean_kernel<float>));
  r.add(OpId::Mean, Device::CPU, DType::F64, function_kernel(&mean_kernel<double>));
  r.add(OpId::Mean, Device::CPU, kLowFloats, in_fp32(function_kernel(&mean_kernel<float>)));
  add_variadic<MaxOp, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t, int16_t, uint16_t,
               uint32_t, uint64_t>(r, OpId::Max);
  add_variadic<MinOp, float, double, H, BF, int64_t, int32_t, int8_t, uint8_t, int16_t, uint16_t,
               uint32_t, uint64_t>(r, OpId::Min);
}

}  // namespace oat::cpu
