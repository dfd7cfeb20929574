#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/pool_impl.h"

namespace oat::cuda {

namespace {

template <class T>
struct PlaneLoad {
  const T* plane;
  __device__ float operator()(int64_t i) const { return to_float(plane[i]); }
};

// One thread per output element (the rule in pool_impl.h).
template <class T>
__global__ void max_pool_indices_kernel(const T* x, T* y, int64_t* indices, int64_t planes,
                                        PoolGeometry g, bool column_major) {
  const int64_t P = g.out[0] * g.out[1] * g.out[2];
  const int64_t plane = g.in[0] * g.in[1] * g.in[2];
  OAT_GRID_STRIDE_LOOP(o, planes * P) {
    const int64_t p = o / P;
    float best;
    const int64_t at = max_pool_window(g, o - p * P, PlaneLoad<T>{x + p * plane}, &best);
    y[o] = from_float<T>(best);
    if (indices) indices[o] = max_pool_index(g, p, at, column_major);
  }
}

template <class T>
__global__ void avg_pool_kernel(const T* x, T* y, int64_t planes, PoolGeometry g,
                                bool include_pad) {
  const int64_t P = g.out[0] * g.out[1] * g.out[2];
  const int64_t plane = g.in[0] * g.in[1] * g.in[2];
  OAT_GRID_STRIDE_LOOP(o, planes * P) {
    const int64_t p = o / P;
    y[o] = from_float<T>(avg_pool_window(g, o - p * P, PlaneLoad<T>{x + p * plane}, include_pad));
  }
}

// One thread per input element (the gathers of pool_impl.h); x null: AveragePoolGrad.
template <class T>
__global__ void pool_grad_kernel(const T* dy, const T* x, T* dx, int64_t planes, PoolGeometry g,
                                 bool include_pad) {
  const int64_t P = g.out[0] * g.out[1] * g.out[2];
  const int64_t plane = g.in[0] * g.in[1] * g.in[2];
  OAT_GRID_STRIDE_LOOP(i, planes * plane) {
    const int64_t p = i / plane;
    const PlaneLoad<T> dyp{dy + p * P};
    const float v = x ? max_pool_grad_at(g, i - p * plane, PlaneLoad<T>{x + p * plane}, dyp)
                      : avg_pool_grad_at(g, i - p * plane, dyp, include_pad);
    dx[i] = from_float<T>(v);
  }
}

}  // namespace

void launch_max_pool_indices(ElemType t, const void* x, void* y, int64_t* indices, int64_t planes,
                             const PoolGeometry& g, bool column_major, cudaStream_t s) {
  const int64_t n = planes * g.out[0] * g.out[1] * g.out[2];
  if (n == 0) return;
  dispatch_float(t, "MaxPool", [&](auto tag) {
    using T = decltype(tag);
    max_pool_indices_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(y), indices, planes, g, column_major);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_avg_pool(ElemType t, const void* x, void* y, int64_t planes, const PoolGeometry& g,
                     bool include_pad, cudaStream_t s) {
  const int64_t n = planes * g.out[0] * g.out[1] * g.out[2];
  if (n == 0) return;
  dispatch_float(t, "AveragePool", [&](auto tag) {
    using T = decltype(tag);
    avg_pool_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(y), planes, g, include_pad);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_pool_grad(ElemType t, const void* dy, const void* x, void* dx, int64_t planes,
                      const PoolGeometry& g, bool include_pad, cudaStream_t s) {
  const int64_t n = planes * g.in[0] * g.in[1] * g.in[2];
  if (n == 0) return;
  dispatch_float(t, x ? "MaxPoolGrad" : "AveragePoolGrad", [&](auto tag) {
    using T = decltype(tag);
    pool_grad_kernel<T>
        <<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(dy), static_cast<const T*>(x),
                                            static_cast<T*>(dx), planes, g, include_pad);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
