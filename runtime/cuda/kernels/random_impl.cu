#include "runtime/cpu/kernels/philox.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/generator_impl.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/random_impl.h"

namespace oat::cuda {

namespace {

// One thread per element (each computes its Philox block; the work is the four rounds' products,
// the memory traffic one store).
template <class T>
__global__ void random_philox_kernel(bool normal, uint64_t key, const uint64_t* draw, float a,
                                     float b, float top, double high, T* y, int64_t n) {
  const uint64_t d = *draw;
  OAT_GRID_STRIDE_LOOP(i, n) {
    const uint64_t e = static_cast<uint64_t>(i);
    if (normal) {
      y[i] = from_float<T>(a + b * static_cast<float>(philox_normal(key, d, e)));
    } else {
      const T v = from_float<T>(a + (b - a) * static_cast<float>(philox_uniform01(key, d, e)));
      y[i] = static_cast<double>(to_float(v)) >= high ? from_float<T>(top) : v;
    }
  }
}

}  // namespace

void launch_random_philox(ElemType t, bool normal, uint64_t key, uint64_t* draw, double a, double b,
                          float top, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  dispatch_float(t, "random generator", [&](auto tag) {
    using T = decltype(tag);
    random_philox_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
        normal, key, draw, static_cast<float>(a), static_cast<float>(b), top, b,
        static_cast<T*>(y), n);
  });
  launch_advance_draw(draw, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
