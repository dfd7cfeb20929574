#include "runtime/cpu/kernels/philox.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/generator_impl.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/dropout_impl.h"

namespace oat::cuda {

namespace {

// One thread per Philox block of four elements (counter = (b, draw)).
__global__ void dropout_philox_kernel(uint64_t key, const uint64_t* draw, double ratio, bool* keep,
                                      int64_t n) {
  const uint64_t d = *draw;
  OAT_GRID_STRIDE_LOOP(b, (n + 3) / 4) {
    const Philox4 w = philox_block(key, d, static_cast<uint64_t>(b));
    for (int k = 0; k < 4; ++k) {
      const int64_t i = b * 4 + k;
      if (i < n) keep[i] = dropout_philox_keep(w.v[k], ratio);
    }
  }
}

}  // namespace

void launch_dropout_philox(uint64_t key, uint64_t* draw, double ratio, bool* keep, int64_t n,
                           cudaStream_t s) {
  if (n == 0) return;
  dropout_philox_kernel<<<blocks_for((n + 3) / 4), kThreads, 0, s>>>(key, draw, ratio, keep, n);
  launch_advance_draw(draw, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
