// Unary math, activations and Cast (elementwise.cc registers them). Formulas as in
// runtime/cpu/kernels/unary.cc, trig.cc and activation.cc, evaluated in float.
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/vector_map.cuh"

namespace oat::cuda {

namespace {

__device__ __forceinline__ float softplus(float x) {
  // log(1 + eˣ) without overflow: x + log1p(e⁻ˣ) for x > 0.
  return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}

template <UnaryOp Op>
__device__ __forceinline__ float apply(float x, float a, float b) {
  if constexpr (Op == UnaryOp::Sqrt) return sqrtf(x);
  if constexpr (Op == UnaryOp::Exp) return expf(x);
  if constexpr (Op == UnaryOp::Log) return logf(x);
  if constexpr (Op == UnaryOp::Neg) return -x;
  if constexpr (Op == UnaryOp::Abs) return fabsf(x);
  if constexpr (Op == UnaryOp::Reciprocal) return 1.f / x;
  if constexpr (Op == UnaryOp::Floor) return floorf(x);
  if constexpr (Op == UnaryOp::Ceil) return ceilf(x);
  if constexpr (Op == UnaryOp::Sign) return x > 0.f ? 1.f : (x < 0.f ? -1.f : x);
  if constexpr (Op == UnaryOp::Round) return rintf(x);  // half to even
  if constexpr (Op == UnaryOp::Sin) return sinf(x);
  if constexpr (Op == UnaryOp::Cos) return cosf(x);
  // Relu and Clip keep NaN (as the CPU kernels: x < 0 ? 0 : x, min(max(x, lo), hi) with
  // std::max/std::min), so a NaN activation still reaches UnscaleAndCheck.
  if constexpr (Op == UnaryOp::Relu) return x < 0.f ? 0.f : x;
  if constexpr (Op == UnaryOp::LeakyRelu) return x < 0.f ? a * x : x;
  if constexpr (Op == UnaryOp::Sigmoid) return 1.f / (1.f + expf(-x));
  if constexpr (Op == UnaryOp::HardSigmoid) return fmaxf(0.f, fminf(1.f, a * x + b));
  if constexpr (Op == UnaryOp::HardSwish) return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
  if constexpr (Op == UnaryOp::Tanh) return tanhf(x);
  if constexpr (Op == UnaryOp::Clip) {
    const float m = x < a ? a : x;
    return b < m ? b : m;
  }
  if constexpr (Op == UnaryOp::Erf) return erff(x);
  if constexpr (Op == UnaryOp::Gelu) return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  if constexpr (Op == UnaryOp::GeluTanh) {
    // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
  if constexpr (Op == UnaryOp::Elu) return x < 0.f ? a * expm1f(x) : x;
  if constexpr (Op == UnaryOp::Selu) return b * (x <= 0.f ? a * expm1f(x) : x);
  if constexpr (Op == UnaryOp::Celu) return fmaxf(0.f, x) + fminf(0.f, a * expm1f(x / a));
  if constexpr (Op == UnaryOp::Softplus) return softplus(x);
  if constexpr (Op == UnaryOp::Softsign) return x / (1.f + fabsf(x));
  if constexpr (Op == UnaryOp::ThresholdedRelu) return x > a ? x : 0.f;
  if constexpr (Op == UnaryOp::Mish) return x * tanhf(softplus(x));
  if constexpr (Op == UnaryOp::Tan) return tanf(x);
  if constexpr (Op == UnaryOp::Asin) return asinf(x);
  if constexpr (Op == UnaryOp::Acos) return acosf(x);
  if constexpr (Op == UnaryOp::Atan) return atanf(x);
  if constexpr (Op == UnaryOp::Sinh) return sinhf(x);
  if constexpr (Op == UnaryOp::Cosh) return coshf(x);
  if constexpr (Op == UnaryOp::Asinh) return asinhf(x);
  if constexpr (Op == UnaryOp::Acosh) return acoshf(x);
  if constexpr (Op == UnaryOp::Atanh) return atanhf(x);
  if constexpr (Op == UnaryOp::Shrink) return x < -a ? x + b : (x > a ? x - b : 0.f);
  if constexpr (Op == UnaryOp::Scale) return a * x;
  return x;
}

template <UnaryOp Op, class T>
__global__ void unary_kernel(const T* x, T* y, int64_t n, float a, float b, bool packed) {
  map_elements<pack_elems<T>()>(
      packed, n, [=](T v) { return from_float<T>(apply<Op>(to_float(v), a, b)); }, y, x);
}

template <UnaryOp Op>
void launch_op(ElemType t, const void* x, void* y, int64_t n, float a, float b, cudaStream_t s) {
  dispatch_float(t, "unary", [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = pack_elems<T>();
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    const bool packed = packs_aligned<V>(px, py);
    unary_kernel<Op, T><<<map_blocks(packed, V, n), kThreads, 0, s>>>(px, py, n, a, b, packed);
  });
}

template <class T>
__device__ __forceinline__ double widen(T x) {
  if constexpr (IsLowFloat<T>::value) {
    return static_cast<double>(static_cast<float>(x));
  } else {
    return static_cast<double>(x);
  }
}

template <class To, class From>
__device__ __forceinline__ To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_integral_v<From>) {
      return x != From{};
    } else {
      return widen(x) != 0.0;
    }
  } else if constexpr (IsLowFloat<To>::value) {
    return from_float<To>(static_cast<float>(widen(x)));
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(widen(x));
  } else if constexpr (std::is_integral_v<From>) {
    return static_cast<To>(x);
  } else {
    const double d = widen(x);  // float -> int truncates toward zero; NaN -> 0 (as the CPU)
    return d != d ? To{} : static_cast<To>(d);
  }
}

template <class To, class From>
__global__ void cast_kernel(const From* x, To* y, int64_t n, bool packed) {
  map_elements<pack_elems<To, From>()>(packed, n, [](From v) { return convert<To, From>(v); }, y, x);
}

template <PredicateOp Op, class T>
__global__ void predicate_kernel(const T* x, bool* y, int64_t n, bool pos, bool neg) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    if constexpr (Op == PredicateOp::Not) {
      y[i] = !x[i];
    } else {
      const float v = to_float(x[i]);
      y[i] = Op == PredicateOp::IsNaN ? isnan(v) : (isinf(v) && (v > 0.f ? pos : neg));
    }
  }
}

}  // namespace

void launch_predicate(PredicateOp op, ElemType t, const void* x, bool* y, int64_t n, bool a,
                      bool b, cudaStream_t s) {
  if (n == 0) return;
  if (op == PredicateOp::Not) {
    predicate_kernel<PredicateOp::Not, bool>
        <<<blocks_for(n), kThreads, 0, s>>>(static_cast<const bool*>(x), y, n, a, b);
  } else {
    dispatch_float(t, "IsNaN/IsInf", [&](auto tag) {
      using T = decltype(tag);
      if (op == PredicateOp::IsNaN)
        predicate_kernel<PredicateOp::IsNaN, T>
            <<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), y, n, a, b);
      else
        predicate_kernel<PredicateOp::IsInf, T>
            <<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), y, n, a, b);
    });
  }
  CUDA_CHECK_LAUNCH();
}

void launch_unary(UnaryOp op, ElemType t, const void* x, void* y, int64_t n, float a, float b,
                  cudaStream_t s) {
  if (n == 0) return;
  switch (op) {
#define OAT_UNARY_CASE(name) \
  case UnaryOp::name: launch_op<UnaryOp::name>(t, x, y, n, a, b, s); break;
    OAT_UNARY_CASE(Sqrt) OAT_UNARY_CASE(Exp) OAT_UNARY_CASE(Log) OAT_UNARY_CASE(Neg)
    OAT_UNARY_CASE(Abs) OAT_UNARY_CASE(Reciprocal) OAT_UNARY_CASE(Floor) OAT_UNARY_CASE(Ceil)
    OAT_UNARY_CASE(Sign) OAT_UNARY_CASE(Round) OAT_UNARY_CASE(Sin) OAT_UNARY_CASE(Cos)
    OAT_UNARY_CASE(Relu) OAT_UNARY_CASE(LeakyRelu) OAT_UNARY_CASE(Sigmoid)
    OAT_UNARY_CASE(HardSigmoid) OAT_UNARY_CASE(HardSwish) OAT_UNARY_CASE(Tanh)
    OAT_UNARY_CASE(Clip) OAT_UNARY_CASE(Erf) OAT_UNARY_CASE(Gelu) OAT_UNARY_CASE(GeluTanh)
    OAT_UNARY_CASE(Elu) OAT_UNARY_CASE(Selu) OAT_UNARY_CASE(Celu) OAT_UNARY_CASE(Softplus)
    OAT_UNARY_CASE(Softsign) OAT_UNARY_CASE(ThresholdedRelu) OAT_UNARY_CASE(Mish)
    OAT_UNARY_CASE(Tan) OAT_UNARY_CASE(Asin) OAT_UNARY_CASE(Acos) OAT_UNARY_CASE(Atan)
    OAT_UNARY_CASE(Sinh) OAT_UNARY_CASE(Cosh) OAT_UNARY_CASE(Asinh) OAT_UNARY_CASE(Acosh)
    OAT_UNARY_CASE(Atanh) OAT_UNARY_CASE(Shrink)
    OAT_UNARY_CASE(Scale)
#undef OAT_UNARY_CASE
  }
  CUDA_CHECK_LAUNCH();
}

void launch_cast(ElemType from, ElemType to, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  dispatch_all(from, "Cast", [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch_all(to, "Cast", [&](auto to_tag) {
      using To = decltype(to_tag);
      constexpr int V = pack_elems<To, From>();
      const From* px = static_cast<const From*>(x);
      To* py = static_cast<To*>(y);
      const bool packed = packs_aligned<V>(px, py);
      cast_kernel<To, From><<<map_blocks(packed, V, n), kThreads, 0, s>>>(px, py, n, packed);
    });
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
