// Resize and ResizeGrad kernels (resize_impl.h has the formulas): one thread per output element,
// arithmetic in float, one rounding on store; no atomics.
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/inverted_maps.cuh"
#include "runtime/cuda/kernels/resize_impl.h"

namespace oat::cuda {

namespace {

template <class T>
__global__ void resize_kernel(const T* x, T* y, int64_t n, const int64_t* offs, const float* w,
                              ResizePlan p) {
  OAT_GRID_STRIDE_LOOP(e, n) {
    int64_t o[kMaxRank];
    int k[kMaxRank];
    int64_t i = e;
    bool outside = false;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = i / p.out_dims[d];
      o[d] = i - q * p.out_dims[d];
      i = q;
      k[d] = 0;
      if (p.outside_offset[d] >= 0 && offs[p.outside_offset[d] + o[d]] != 0) outside = true;
    }
    if (outside) {
      y[e] = from_float<T>(p.extrapolation);
      continue;
    }
    float acc = 0.f;
    for (;;) {
      float wt = 1.f;
      int64_t at = 0;
      for (int d = 0; d < p.rank; ++d) {
        const int64_t t = p.tap_offset[d] + o[d] * p.taps[d] + k[d];
        wt *= w[t];
        at += offs[t];
      }
      acc += wt * to_float(x[at]);
      int d = p.rank - 1;  // next tap combination, last axis fastest
      for (; d >= 0; --d) {
        if (++k[d] < p.taps[d]) break;
        k[d] = 0;
      }
      if (d < 0) break;
    }
    y[e] = from_float<T>(acc);
  }
}

template <class T>
__global__ void resize_grad_kernel(const T* dy, T* dx, int64_t n, const int64_t* inv,
                                   const float* w, ResizeGradPlan p) {
  OAT_GRID_STRIDE_LOOP(e, n) {
    float acc = 0.f;
    for_each_inverted_source(e, p.rank, p.x_dims, p.first_offset, inv, [&](const int64_t* c) {
      float wt = 1.f;
      int64_t at = 0;
      for (int d = 0; d < p.rank; ++d) {
        wt *= w[p.w_offset[d] + c[d]];
        at += inv[p.pos_offset[d] + c[d]];
      }
      acc += wt * to_float(dy[at]);
    });
    dx[e] = from_float<T>(acc);
  }
}

}  // namespace

void launch_resize(ElemType t, const void* x, void* y, int64_t n, const int64_t* offs,
                   const float* w, const ResizePlan& plan, cudaStream_t s) {
  if (n == 0) return;
  dispatch_float(t, "Resize", [&](auto tag) {
    using T = decltype(tag);
    resize_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x),
                                                        static_cast<T*>(y), n, offs, w, plan);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_resize_grad(ElemType t, const void* dy, void* dx, int64_t n, const int64_t* inv,
                        const float* w, const ResizeGradPlan& plan, cudaStream_t s) {
  if (n == 0) return;
  dispatch_float(t, "ResizeGrad", [&](auto tag) {
    using T = decltype(tag);
    resize_grad_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(dy),
                                                             static_cast<T*>(dx), n, inv, w, plan);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
