#include <cfloat>

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/block_reduce.cuh"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/reduce_impl.h"

namespace oat::cuda {

namespace {

// inner == 1: one block per row, threads stride along it.
template <class T, bool Log>
__global__ void softmax_rows(const T* x, T* y, int64_t len) {
  const T* xr = x + blockIdx.x * len;
  T* yr = y + blockIdx.x * len;
  float m = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) m = fmaxf(m, to_float(xr[j]));
  m = block_max(m);
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) s += expf(to_float(xr[j]) - m);
  s = block_sum(s);
  const float ls = logf(s), inv = 1.f / s;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float v = to_float(xr[j]) - m;
    yr[j] = from_float<T>(Log ? v - ls : expf(v) * inv);
  }
}

// inner == 1 and short rows (len ≤ kWarpRowMax, attention over a sequence, class logits): one
// warp per row, 8 rows per block of 256, lanes striding along the row, shuffles and no barrier;
// a block per row would leave 32-thread blocks (half an SM's threads at most) and two barriers
// per reduction.
constexpr int64_t kWarpRowMax = 512;
__device__ __forceinline__ int64_t warp_row() {
  return blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
}

template <class T, bool Log>
__global__ void softmax_warp_rows(const T* x, T* y, int64_t rows, int64_t len) {
  const int64_t row = warp_row();
  if (row >= rows) return;  // the whole warp
  const int lane = threadIdx.x & 31;
  const T* xr = x + row * len;
  T* yr = y + row * len;
  float m = -FLT_MAX;
  for (int64_t j = lane; j < len; j += 32) m = fmaxf(m, to_float(xr[j]));
  m = warp_reduce(m, MaxOp{});
  float s = 0.f;
  for (int64_t j = lane; j < len; j += 32) s += expf(to_float(xr[j]) - m);
  s = warp_reduce(s, SumOp{});
  const float ls = logf(s), inv = 1.f / s;
  for (int64_t j = lane; j < len; j += 32) {
    const float v = to_float(xr[j]) - m;
    yr[j] = from_float<T>(Log ? v - ls : expf(v) * inv);
  }
}

// dX from dY and Y as softmax_grad_rows, a warp per row.
template <class T, bool Log>
__global__ void softmax_grad_warp_rows(const T* dy, const T* y, T* dx, int64_t rows, int64_t len) {
  const int64_t row = warp_row();
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  const int64_t base = row * len;
  float s = 0.f;
  for (int64_t j = lane; j < len; j += 32)
    s += Log ? to_float(dy[base + j]) : to_float(dy[base + j]) * to_float(y[base + j]);
  s = warp_reduce(s, SumOp{});
  for (int64_t j = lane; j < len; j += 32) {
    const float g = to_float(dy[base + j]), v = to_float(y[base + j]);
    dx[base + j] = from_float<T>(Log ? g - expf(v) * s : v * (g - s));
  }
}

unsigned warp_row_blocks(int64_t rows) { return static_cast<unsigned>((rows + 7) / 8); }

// inner > 1: one thread per (outer, inner) column walks the axis three times.
template <class T, bool Log>
__global__ void softmax_columns(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  OAT_GRID_STRIDE_LOOP(c, outer * inner) {
    const int64_t o = c / inner, i = c - o * inner;
    const T* xc = x + o * len * inner + i;
    T* yc = y + o * len * inner + i;
    float m = -FLT_MAX;
    for (int64_t j = 0; j < len; ++j) m = fmaxf(m, to_float(xc[j * inner]));
    float s = 0.f;
    for (int64_t j = 0; j < len; ++j) s += expf(to_float(xc[j * inner]) - m);
    const float ls = logf(s), inv = 1.f / s;
    for (int64_t j = 0; j < len; ++j) {
      const float v = to_float(xc[j * inner]) - m;
      yc[j * inner] = from_float<T>(Log ? v - ls : expf(v) * inv);
    }
  }
}

template <bool Log>
void launch_kind(ElemType t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner,
                 cudaStream_t s) {
  dispatch_float(t, "Softmax", [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    if (inner == 1 && len <= kWarpRowMax && outer < (int64_t{1} << 34)) {
      softmax_warp_rows<T, Log><<<warp_row_blocks(outer), 256, 0, s>>>(px, py, outer, len);
    } else if (inner == 1) {
      const int threads = len >= 1024 ? 256 : (len >= 128 ? 128 : 32);
      for (int64_t o = 0; o < outer; o += 65535) {  // gridDim.x limit per launch
        const int64_t rows = outer - o < 65535 ? outer - o : 65535;
        softmax_rows<T, Log><<<static_cast<unsigned>(rows), threads, 0, s>>>(px + o * len,
                                                                            py + o * len, len);
      }
    } else {
      softmax_columns<T, Log><<<blocks_for(outer * inner), kThreads, 0, s>>>(px, py, outer, len,
                                                                           inner);
    }
  });
}

template <class T, bool Log>
__global__ void softmax_grad_rows(const T* dy, const T* y, T* dx, int64_t len) {
  const int64_t base = blockIdx.x * len;
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
    s += Log ? to_float(dy[base + j]) : to_float(dy[base + j]) * to_float(y[base + j]);
  s = block_sum(s);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float g = to_float(dy[base + j]), v = to_float(y[base + j]);
    dx[base + j] = from_float<T>(Log ? g - expf(v) * s : v * (g - s));
  }
}

template <class T, bool Log>
__global__ void softmax_grad_columns(const T* dy, const T* y, T* dx, int64_t outer, int64_t len,
                                     int64_t inner) {
  OAT_GRID_STRIDE_LOOP(c, outer * inner) {
    const int64_t o = c / inner, i = c - o * inner, base = o * len * inner + i;
    float s = 0.f;
    for (int64_t j = 0; j < len; ++j) {
      const int64_t k = base + j * inner;
      s += Log ? to_float(dy[k]) : to_float(dy[k]) * to_float(y[k]);
    }
    for (int64_t j = 0; j < len; ++j) {
      const int64_t k = base + j * inner;
      const float g = to_float(dy[k]), v = to_float(y[k]);
      dx[k] = from_float<T>(Log ? g - expf(v) * s : v * (g - s));
    }
  }
}

template <bool Log>
void launch_grad_kind(ElemType t, const void* dy, const void* y, void* dx, int64_t outer,
                      int64_t len, int64_t inner, cudaStream_t s) {
  dispatch_float(t, "SoftmaxGrad", [&](auto tag) {
    using T = decltype(tag);
    const T* pdy = static_cast<const T*>(dy);
    const T* py = static_cast<const T*>(y);
    T* pdx = static_cast<T*>(dx);
    if (inner == 1 && len <= kWarpRowMax && outer < (int64_t{1} << 34)) {
      softmax_grad_warp_rows<T, Log><<<warp_row_blocks(outer), 256, 0, s>>>(pdy, py, pdx, outer,
                                                                           len);
    } else if (inner == 1) {
      const int threads = len >= 1024 ? 256 : (len >= 128 ? 128 : 32);
      for (int64_t o = 0; o < outer; o += 65535) {
        const int64_t rows = outer - o < 65535 ? outer - o : 65535;
        softmax_grad_rows<T, Log><<<static_cast<unsigned>(rows), threads, 0, s>>>(
            pdy + o * len, py + o * len, pdx + o * len, len);
      }
    } else {
      softmax_grad_columns<T, Log><<<blocks_for(outer * inner), kThreads, 0, s>>>(pdy, py, pdx,
                                                                                outer, len, inner);
    }
  });
}

}  // namespace

void launch_softmax_grad(ElemType t, bool log, const void* dy, const void* y, void* dx,
                         int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  if (outer * len * inner == 0) return;
  if (log)
    launch_grad_kind<true>(t, dy, y, dx, outer, len, inner, s);
  else
    launch_grad_kind<false>(t, dy, y, dx, outer, len, inner, s);
  CUDA_CHECK_LAUNCH();
}

void launch_softmax(ElemType t, bool log, const void* x, void* y, int64_t outer, int64_t len,
                    int64_t inner, cudaStream_t s) {
  if (outer * len * inner == 0) return;
  if (log)
    launch_kind<true>(t, x, y, outer, len, inner, s);
  else
    launch_kind<false>(t, x, y, outer, len, inner, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
