#include <type_traits>

#include "runtime/cpu/kernels/dropout_mask.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/dropout_impl.h"

namespace oat::cuda {

namespace {

template <class T, class M>
__global__ void dropout_kernel(const T* x, T* y, M* mask, int64_t n, uint64_t key, uint64_t first,
                               uint64_t threshold, float scale) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    const bool keep =
        threshold == 0 || dropout_keep(key, first + static_cast<uint64_t>(i), threshold);
    if (y) y[i] = from_float<T>(keep ? to_float(x[i]) * scale : 0.f);
    if (mask) {
      if constexpr (std::is_same_v<M, bool>)
        mask[i] = keep;
      else
        mask[i] = from_float<M>(keep ? 1.f : 0.f);
    }
  }
}

}  // namespace

void launch_dropout(ElemType t, const void* x, void* y, void* mask, bool mask_is_bool, int64_t n,
                    uint64_t key, uint64_t first, uint64_t threshold, float scale, cudaStream_t s) {
  if (n == 0) return;
  dispatch_float(t, "Dropout", [&](auto tag) {
    using T = decltype(tag);
    if (mask_is_bool)
      dropout_kernel<T, bool><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const T*>(x), static_cast<T*>(y), static_cast<bool*>(mask), n, key, first,
          threshold, scale);
    else
      dropout_kernel<T, T><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const T*>(x), static_cast<T*>(y), static_cast<T*>(mask), n, key, first,
          threshold, scale);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
