#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/block_reduce.cuh"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/lp_norm_impl.h"

namespace oat::cuda {

namespace {

__device__ __forceinline__ float norm_term(float v, int p) { return p == 1 ? fabsf(v) : v * v; }
__device__ __forceinline__ float finish_norm(float s, int p) { return p == 1 ? s : sqrtf(s); }

// dX_j from dY_j, x_j, the lane's norm n and t = Σ dY⊙x.
__device__ __forceinline__ float lp_grad(float g, float v, float n, float t, int p) {
  if (n == 0.f) return 0.f;
  const float dn = p == 2 ? v / n : (v > 0.f ? 1.f : (v < 0.f ? -1.f : 0.f));
  return (g - dn * (t / n)) / n;
}

// inner == 1: one block per row, threads stride along it.
template <class T>
__global__ void lp_norm_rows(const T* x, T* y, int64_t len, int p) {
  const T* xr = x + blockIdx.x * len;
  T* yr = y + blockIdx.x * len;
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) s += norm_term(to_float(xr[j]), p);
  const float n = finish_norm(block_sum(s), p);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    yr[j] = from_float<T>(n == 0.f ? 0.f : to_float(xr[j]) / n);
}

// inner > 1: one thread per (outer, inner) column walks the axis twice.
template <class T>
__global__ void lp_norm_columns(const T* x, T* y, int64_t outer, int64_t len, int64_t inner,
                                int p) {
  OAT_GRID_STRIDE_LOOP(c, outer * inner) {
    const int64_t o = c / inner, i = c - o * inner, base = o * len * inner + i;
    float s = 0.f;
    for (int64_t j = 0; j < len; ++j) s += norm_term(to_float(x[base + j * inner]), p);
    const float n = finish_norm(s, p);
    for (int64_t j = 0; j < len; ++j) {
      const int64_t k = base + j * inner;
      y[k] = from_float<T>(n == 0.f ? 0.f : to_float(x[k]) / n);
    }
  }
}

template <class T>
__global__ void lp_norm_grad_rows(const T* dy, const T* x, T* dx, int64_t len, int p) {
  const int64_t base = blockIdx.x * len;
  float s = 0.f, t = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float v = to_float(x[base + j]);
    s += norm_term(v, p);
    t += to_float(dy[base + j]) * v;
  }
  const float n = finish_norm(block_sum(s), p);
  t = block_sum(t);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    dx[base + j] = from_float<T>(lp_grad(to_float(dy[base + j]), to_float(x[base + j]), n, t, p));
}

template <class T>
__global__ void lp_norm_grad_columns(const T* dy, const T* x, T* dx, int64_t outer, int64_t len,
                                     int64_t inner, int p) {
  OAT_GRID_STRIDE_LOOP(c, outer * inner) {
    const int64_t o = c / inner, i = c - o * inner, base = o * len * inner + i;
    float s = 0.f, t = 0.f;
    for (int64_t j = 0; j < len; ++j) {
      const float v = to_float(x[base + j * inner]);
      s += norm_term(v, p);
      t += to_float(dy[base + j * inner]) * v;
    }
    const float n = finish_norm(s, p);
    for (int64_t j = 0; j < len; ++j) {
      const int64_t k = base + j * inner;
      dx[k] = from_float<T>(lp_grad(to_float(dy[k]), to_float(x[k]), n, t, p));
    }
  }
}

int row_threads(int64_t len) { return len >= 1024 ? 256 : (len >= 128 ? 128 : 32); }

}  // namespace

void launch_lp_norm(ElemType t, int p, const void* x, void* y, int64_t outer, int64_t len,
                    int64_t inner, cudaStream_t s) {
  if (outer * len * inner == 0) return;
  dispatch_float(t, "LpNormalization", [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    if (inner == 1) {
      for (int64_t o = 0; o < outer; o += 65535) {  // gridDim.x limit per launch
        const int64_t rows = outer - o < 65535 ? outer - o : 65535;
        lp_norm_rows<T><<<static_cast<unsigned>(rows), row_threads(len), 0, s>>>(
            px + o * len, py + o * len, len, p);
      }
    } else {
      lp_norm_columns<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(px, py, outer, len, inner,
                                                                      p);
    }
  });
  CUDA_CHECK_LAUNCH();
}

void launch_lp_norm_grad(ElemType t, int p, const void* dy, const void* x, void* dx,
                         int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  if (outer * len * inner == 0) return;
  dispatch_float(t, "LpNormalizationGrad", [&](auto tag) {
    using T = decltype(tag);
    const T* pdy = static_cast<const T*>(dy);
    const T* px = static_cast<const T*>(x);
    T* pdx = static_cast<T*>(dx);
    if (inner == 1) {
      for (int64_t o = 0; o < outer; o += 65535) {
        const int64_t rows = outer - o < 65535 ? outer - o : 65535;
        lp_norm_grad_rows<T><<<static_cast<unsigned>(rows), row_threads(len), 0, s>>>(
            pdy + o * len, px + o * len, pdx + o * len, len, p);
      }
    } else {
      lp_norm_grad_columns<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(pdy, px, pdx, outer,
                                                                           len, inner, p);
    }
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
