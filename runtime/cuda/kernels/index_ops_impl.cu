// MaxUnpool's scatter and BitShift on CUDA (see index_ops_impl.h and the CPU kernels
// runtime/cpu/kernels/max_unpool.cc, bitshift.cc for the formulas).
#include <stdexcept>

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/index_ops_impl.h"

namespace oat::cuda {

namespace {

// One thread per X element. Repeated indices (MaxPool windows that overlap and pick the same
// element) carry the same value, so whichever write lands last gives the CPU's result.
template <class W>
__global__ void max_unpool_kernel(const W* x, const int64_t* idx, W* y, int64_t n_x, int64_t n_y,
                                  int* bad) {
  OAT_GRID_STRIDE_LOOP(j, n_x) {
    const int64_t t = idx[j];
    if (t < 0 || t >= n_y) {
      if (bad) *bad = 1;
      continue;
    }
    y[t] = x[j];
  }
}

__global__ void bitshift_kernel(bool left, const uint8_t* x, const uint8_t* y, uint8_t* z,
                                int64_t n, BroadcastIndex ix) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    broadcast_offsets<2>(ix, i, off);
    const unsigned a = x[off[0]], b = y[off[1]];
    z[i] = static_cast<uint8_t>(b >= 32u ? 0u : (left ? a << b : a >> b));
  }
}

}  // namespace

void launch_max_unpool(int elem_bytes, const void* x, const int64_t* idx, void* y, int64_t n_x,
                       int64_t n_y, int* bad, cudaStream_t s) {
  if (n_x == 0) return;
  auto go = [&](auto tag) {
    using W = decltype(tag);
    max_unpool_kernel<W><<<blocks_for(n_x), kThreads, 0, s>>>(
        static_cast<const W*>(x), idx, static_cast<W*>(y), n_x, n_y, bad);
  };
  switch (elem_bytes) {
    case 1: go(uint8_t{}); break;
    case 2: go(uint16_t{}); break;
    case 4: go(uint32_t{}); break;
    case 8: go(uint64_t{}); break;
    default: throw std::runtime_error("MaxUnpool: unsupported element size");
  }
  CUDA_CHECK_LAUNCH();
}

void launch_bitshift(bool left, const uint8_t* x, const uint8_t* y, uint8_t* z, int64_t n,
                     const BroadcastIndex& ix, cudaStream_t s) {
  if (n == 0) return;
  bitshift_kernel<<<blocks_for(n), kThreads, 0, s>>>(left, x, y, z, n, ix);
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
