// MaxPool with the Indices output (pool_impl.cu; semantics in pool.cc): the window rule as
// host/device functions, so that the host tests check it against the CPU kernel
// (tests/cuda/conv_pool_host_test.cc) and the device kernel runs the same code.
#pragma once

#include <cfloat>
#include <cstdint>

#include "runtime/cuda/kernels/launch.h"

#ifdef __CUDACC__
#define OAT_POOL_HD __host__ __device__
#else
#define OAT_POOL_HD
#endif

namespace oat::cuda {

// The CPU's Window3 (conv_geometry.h) as plain values: three spatial slots (the first 3 − nd
// trivial), in/out lengths, kernel, stride, dilation and begin padding per slot.
struct PoolGeometry {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
};

// Window o (row-major over out[0..2]) of one plane, read through load(i) (in-plane row-major
// index i -> float): visits the taps inside the plane in the CPU's order (slot 0, then 1, then 2,
// each ascending) and keeps a tap only when it is strictly greater, so the first maximum wins and
// a NaN survives only as the first tap (max_pool_with_indices in runtime/cpu/kernels/pool.cc).
// Returns the in-plane index of that tap, −1 when no tap is inside (*best is then −FLT_MAX, the
// CPU's lowest float).
template <class Load>
OAT_POOL_HD inline int64_t max_pool_window(const PoolGeometry& g, int64_t o, const Load& load,
                                           float* best) {
  const int64_t ox = o % g.out[2], oy = (o / g.out[2]) % g.out[1], oz = o / (g.out[2] * g.out[1]);
  float b = -FLT_MAX;
  int64_t at = -1;
  for (int64_t t0 = 0; t0 < g.k[0]; ++t0) {
    const int64_t iz = oz * g.stride[0] - g.pad[0] + t0 * g.dil[0];
    if (iz < 0 || iz >= g.in[0]) continue;
    for (int64_t t1 = 0; t1 < g.k[1]; ++t1) {
      const int64_t iy = oy * g.stride[1] - g.pad[1] + t1 * g.dil[1];
      if (iy < 0 || iy >= g.in[1]) continue;
      for (int64_t t2 = 0; t2 < g.k[2]; ++t2) {
        const int64_t ix = ox * g.stride[2] - g.pad[2] + t2 * g.dil[2];
        if (ix < 0 || ix >= g.in[2]) continue;
        const int64_t i = (iz * g.in[1] + iy) * g.in[2] + ix;
        const float v = load(i);
        if (at < 0 || v > b) {
          b = v;
          at = i;
        }
      }
    }
  }
  *best = b;
  return at;
}

// The Indices value of in-plane index `at` (row-major, −1: none) of plane p (= n·C + c): the
// flat index p·plane + at, with the in-plane part column-major (z + D·(y + H·x)) when
// `column_major` (storage_order = 1); −1 stays −1.
OAT_POOL_HD inline int64_t max_pool_index(const PoolGeometry& g, int64_t p, int64_t at,
                                          bool column_major) {
  if (at < 0) return -1;
  if (column_major) {
    const int64_t ix = at % g.in[2], iy = (at / g.in[2]) % g.in[1], iz = at / (g.in[2] * g.in[1]);
    at = iz + g.in[0] * (iy + g.in[1] * ix);
  }
  return p * (g.in[0] * g.in[1] * g.in[2]) + at;
}

// y[p, o] and indices[p, o] for the `planes` planes of x (in[0]·in[1]·in[2] elements each):
// the value and Indices entry of max_pool_window, y rounded once to T (F32, F16, BF16).
void launch_max_pool_indices(ElemType t, const void* x, void* y, int64_t* indices, int64_t planes,
                             const PoolGeometry& g, bool column_major, cudaStream_t s);

}  // namespace oat::cuda

#undef OAT_POOL_HD
