// Shared drivers for the elementwise kernel families (binary.cc, unary.cc, activation.cc,
// compare.cc): an op is a small functor on scalars (or, for transcendental functions, on an Eigen
// array, so Eigen's vectorised exp/tanh/erf apply), and these templates run it over whole tensors
// with numpy broadcasting, tight contiguous inner loops and OpenMP above ~32K elements.
//
// Everything is templated on the element type. F16/BF16 run on their 16-bit storage with the
// arithmetic in float and one rounding per element (low_precision.h): scalar functors through
// Rounded<TO, Op>, Eigen expressions on float blocks widened from and rounded back to the storage.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/kernel.h"
#include "runtime/registry.h"

namespace oat::cpu {

// Floating-point element types, including the 16-bit storage types whose math runs in float.
template <class T>
constexpr bool kIsFloat = std::is_floating_point_v<T> || std::is_same_v<T, Eigen::half> ||
                          std::is_same_v<T, Eigen::bfloat16>;
// The type scalar math is done in: float for F16/BF16 (DESIGN.md: emulate, compute in FP32).
template <class T>
using ComputeType = std::conditional_t<std::is_floating_point_v<T> || !kIsFloat<T>, T, float>;

template <class T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// The broadcast shape of the node's operands; a mismatch fails naming the node and every shape.
inline Shape broadcast_or_fail(const KernelContext& ctx, const std::vector<Shape>& shapes) {
  try {
    return broadcast_shapes(shapes);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
}

// Fails unless inputs [first, last) all have dtype `want` (ONNX's single type constraint T).
inline void require_same_dtype(const KernelContext& ctx, DType want, int first, int last) {
  for (int i = first; i < last; ++i) {
    const Tensor* t = ctx.input_or_null(i);
    if (t && t->dtype() != want)
      ctx.fail(cat("input ", i, " has dtype ", dtype_name(t->dtype()), ", expected ",
                   dtype_name(want), " like input ", first));
  }
}

// y[i] = f(x[i]) for i < n. `f` is a plain functor, so the loop vectorises when f does.
template <class TI, class TO, class F>
void map_unary(const TI* x, TO* y, int64_t n, const F& f) {
  parallel_ranges(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = f(x[i]);
  });
}

// Elements per float block when an Eigen expression runs on F16/BF16 storage.
constexpr int64_t kLowFloatBlock = 512;

// y = g(x) where g maps an Eigen array to an Eigen expression (x.exp(), x.tanh(), ...), evaluated
// in parallel chunks with Eigen's packet math. For F16/BF16, g sees float blocks (widened from x)
// and each result is rounded once into y; so g must take `const auto&`.
template <class T, class G>
void map_eigen(const T* x, T* y, int64_t n, const G& g) {
  if constexpr (kIsLowFloat<T>) {
    parallel_ranges(n, [&](int64_t b, int64_t e) {
      float in[kLowFloatBlock], out[kLowFloatBlock];
      for (int64_t c = b; c < e; c += kLowFloatBlock) {
        const int64_t m = std::min(kLowFloatBlock, e - c);
        widen_to_float(x + c, in, m);
        ArrayMap<float>(out, m) = g(ConstArrayMap<float>(in, m));
        round_from_float(out, y + c, m);
      }
    });
  } else {
    parallel_ranges(n, [&](int64_t b, int64_t e) {
      ConstArrayMap<T> in(x + b, e - b);
      ArrayMap<T> out(y + b, e - b);
      out = g(in);
    });
  }
}

// o = f(a, b) with numpy broadcasting to `so` (the caller's broadcast of sa and sb). Inner runs
// are specialised on whether each operand advances (stride 1) or repeats (stride 0), so same
// shapes, scalars and row/channel broadcasts are all contiguous loops. `o` may alias `a` when
// sa == so (in-place folds for variadic ops).
template <class TA, class TB, class TO, class F>
void broadcast_binary(const TA* a, const Shape& sa, const TB* b, const Shape& sb, TO* o,
                      const Shape& so, const F& f) {
  const auto L = broadcast_layout<2>(so, {sa, sb});
  parallel_broadcast_runs(L, [&](int64_t eo, const std::array<int64_t, 2>& off,
                                 const std::array<int64_t, 2>& inner, int64_t n) {
    TO* po = o + eo;
    const TA* pa = a + off[0];
    const TB* pb = b + off[1];
    if (inner[0] && inner[1]) {
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    } else if (inner[0]) {
      const TB s = *pb;
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], s);
    } else if (inner[1]) {
      const TA s = *pa;
      for (int64_t i = 0; i < n; ++i) po[i] = f(s, pb[i]);
    } else {
      const TO v = f(*pa, *pb);
      for (int64_t i = 0; i < n; ++i) po[i] = v;
    }
  });
}

// o = f(a, b, c) with numpy broadcasting of three operands (Where).
template <class TA, class TB, class TC, class TO, class F>
void broadcast_ternary(const TA* a, const Shape& sa, const TB* b, const Shape& sb, const TC* c,
                       const Shape& sc, TO* o, const Shape& so, const F& f) {
  const auto L = broadcast_layout<3>(so, {sa, sb, sc});
  parallel_broadcast_runs(L, [&](int64_t eo, const std::array<int64_t, 3>& off,
                                 const std::array<int64_t, 3>& inner, int64_t n) {
    TO* po = o + eo;
    const TA* pa = a + off[0];
    const TB* pb = b + off[1];
    const TC* pc = c + off[2];
    if (inner[0] && inner[1] && inner[2]) {
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i], pc[i]);
    } else {
      const int64_t s0 = inner[0], s1 = inner[1], s2 = inner[2];
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i * s0], pb[i * s1], pc[i * s2]);
    }
  });
}

// Copies x broadcast to shape `so` into o (the first step of a variadic fold).
template <class T>
void broadcast_copy(const T* x, const Shape& sx, T* o, const Shape& so) {
  broadcast_binary(x, sx, x, sx, o, so, [](T v, T) { return v; });
}

// A kernel y = Op{}(a, b) over one dtype T, with the output dtype TO (T, or bool for compares).
template <class T, class TO, class Op>
void binary_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_same_dtype(ctx, a.dtype(), 0, 2);
  const Shape out = broadcast_or_fail(ctx, {a.shape(), b.shape()});
  Tensor& y = ctx.allocate_output(0, dtype_of<TO>(), out);
  broadcast_binary(a.data<T>(), a.shape(), b.data<T>(), b.shape(), y.data<TO>(), out,
                   Rounded<TO, Op>{});
}

// Registers binary_kernel<T, TO(T), Op> for each T in Ts.
template <class Op, bool kBoolOut, class... Ts>
void add_binary(KernelRegistry& r, OpId op) {
  (r.add(op, Device::CPU, dtype_of<Ts>(),
         function_kernel(&binary_kernel<Ts, std::conditional_t<kBoolOut, bool, Ts>, Op>)),
   ...);
}

// A kernel y = Op{}(x) elementwise over one dtype, output dtype TO.
template <class T, class TO, class Op>
void unary_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, dtype_of<TO>(), x.shape());
  map_unary(x.data<T>(), y.data<TO>(), x.numel(), Rounded<TO, Op>{});
}

// A kernel y = Op::eval(x) where eval builds an Eigen array expression.
template <class T, class Op>
void eigen_unary_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  map_eigen(x.data<T>(), y.data<T>(), x.numel(), [](const auto& v) { return Op::eval(v); });
}

template <class Op, class... Ts>
void add_unary(KernelRegistry& r, OpId op) {
  (r.add(op, Device::CPU, dtype_of<Ts>(), function_kernel(&unary_kernel<Ts, Ts, Op>)), ...);
}
template <class Op, class... Ts>
void add_eigen_unary(KernelRegistry& r, OpId op) {
  (r.add(op, Device::CPU, dtype_of<Ts>(), function_kernel(&eigen_unary_kernel<Ts, Op>)), ...);
}

}  // namespace oat::cpu
