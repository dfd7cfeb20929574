#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/quantize_impl.h"

namespace oat::cuda {

namespace {

__device__ __forceinline__ int64_t channel_of(int64_t i, int64_t channels, int64_t inner) {
  return channels == 1 ? 0 : (i / inner) % channels;
}

__device__ __forceinline__ int zero_point_at(const void* zp, bool sgn, int64_t c) {
  if (!zp) return 0;
  return sgn ? static_cast<int>(static_cast<const int8_t*>(zp)[c])
             : static_cast<int>(static_cast<const uint8_t*>(zp)[c]);
}

// rint(v) + zp clamped to [lo, hi]; NaN gives zp (as the CPU).
__device__ __forceinline__ int quantize_one(float v, int zp, int lo, int hi) {
  float q = rintf(v);
  if (isnan(q)) q = 0.f;
  q += static_cast<float>(zp);
  return q <= static_cast<float>(lo) ? lo : (q >= static_cast<float>(hi) ? hi : static_cast<int>(q));
}

template <class T, class S>
__global__ void quantize_kernel(const T* x, void* y, const S* scale, const void* zp, bool sgn,
                                int64_t n, int64_t channels, int64_t inner) {
  const int lo = sgn ? -128 : 0, hi = sgn ? 127 : 255;
  OAT_GRID_STRIDE_LOOP(i, n) {
    const int64_t c = channel_of(i, channels, inner);
    const int q = quantize_one(to_float(x[i]) / to_float(scale[c]), zero_point_at(zp, sgn, c), lo, hi);
    if (sgn) static_cast<int8_t*>(y)[i] = static_cast<int8_t>(q);
    else static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(q);
  }
}

template <class X, class S>
__global__ void dequantize_kernel(const X* x, S* y, const S* scale, const X* zp, int64_t n,
                                  int64_t channels, int64_t inner) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    const int64_t c = channel_of(i, channels, inner);
    const int64_t z = zp ? static_cast<int64_t>(zp[c]) : 0;
    y[i] = from_float<S>(static_cast<float>(static_cast<int64_t>(x[i]) - z) * to_float(scale[c]));
  }
}

template <class T, class S>
__global__ void quantize_grad_kernel(const T* dy, const T* x, T* dx, const S* scale,
                                     const void* zp, bool sgn, int64_t n, int64_t channels,
                                     int64_t inner) {
  const float lo = sgn ? -128.f : 0.f, hi = sgn ? 127.f : 255.f;
  OAT_GRID_STRIDE_LOOP(i, n) {
    const int64_t c = channel_of(i, channels, inner);
    const float q = rintf(to_float(x[i]) / to_float(scale[c])) +
                    static_cast<float>(zero_point_at(zp, sgn, c));
    dx[i] = q >= lo && q <= hi ? dy[i] : from_float<T>(0.f);  // NaN: no gradient
  }
}

}  // namespace

void launch_quantize_linear(ElemType x_type, const void* x, void* y, const QuantArgs& a,
                            cudaStream_t s) {
  if (a.n == 0) return;
  dispatch_float(x_type, "QuantizeLinear", [&](auto xt) {
    using T = decltype(xt);
    dispatch_float(a.scale_type, "QuantizeLinear scale", [&](auto st) {
      using S = decltype(st);
      quantize_kernel<T, S><<<blocks_for(a.n), kThreads, 0, s>>>(
          static_cast<const T*>(x), y, static_cast<const S*>(a.scale), a.zero_point, a.zp_signed,
          a.n, a.channels, a.inner);
    });
  });
  CUDA_CHECK_LAUNCH();
}

void launch_dequantize_linear(ElemType x_type, const void* x, void* y, const QuantArgs& a,
                              cudaStream_t s) {
  if (a.n == 0) return;
  auto run = [&](auto xt) {
    using X = decltype(xt);
    dispatch_float(a.scale_type, "DequantizeLinear scale", [&](auto st) {
      using S = decltype(st);
      dequantize_kernel<X, S><<<blocks_for(a.n), kThreads, 0, s>>>(
          static_cast<const X*>(x), static_cast<S*>(y), static_cast<const S*>(a.scale),
          static_cast<const X*>(a.zero_point), a.n, a.channels, a.inner);
    });
  };
  switch (x_type) {
    case ElemType::U8: run(uint8_t{}); break;
    case ElemType::I8: run(int8_t{}); break;
    case ElemType::I32: run(int32_t{}); break;
    default: bad_type("DequantizeLinear", x_type);
  }
  CUDA_CHECK_LAUNCH();
}

void launch_quantize_linear_grad(ElemType t, const void* dy, const void* x, void* dx,
                                 const QuantArgs& a, cudaStream_t s) {
  if (a.n == 0) return;
  dispatch_float(t, "QuantizeLinearGrad", [&](auto tt) {
    using T = decltype(tt);
    dispatch_float(a.scale_type, "QuantizeLinearGrad scale", [&](auto st) {
      using S = decltype(st);
      quantize_grad_kernel<T, S><<<blocks_for(a.n), kThreads, 0, s>>>(
          static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dx),
          static_cast<const S*>(a.scale), a.zero_point, a.zp_signed, a.n, a.channels, a.inner);
    });
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
