#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/generator_impl.h"

namespace oat::cuda {

namespace {

__global__ void advance_draw_kernel(uint64_t* draw) { *draw += 1; }

}  // namespace

void launch_advance_draw(uint64_t* draw, cudaStream_t s) {
  advance_draw_kernel<<<1, 1, 0, s>>>(draw);
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
