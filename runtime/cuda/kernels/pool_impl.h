// Pooling windows cuDNN cannot express (pool_impl.cu; semantics in pool.cc and grad_pool.cc):
// MaxPool with the Indices output, and MaxPool / AveragePool and their gradients over windows
// with dilation, asymmetric padding or a ceil-mode size. The window rules are host/device
// functions, so that the host tests check them against the CPU kernels
// (tests/cuda/conv_pool_host_test.cc) and the device kernels run the same code.
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
  int64_t pad_end[3] = {0, 0, 0};  // end padding (AveragePool's count_include_pad)
};

// Along slot s, window o_s's taps t in [0, k) read t·dil + o_s·stride − pad; *inside counts those
// within the input [0, in), *padded those within the padded input [−pad, in + pad_end) (the
// CPU's TapRange: a ceil-mode window running past the end padding is not charged for it).
OAT_POOL_HD inline void pool_taps(const PoolGeometry& g, int s, int64_t o_s, int64_t* inside,
                                  int64_t* padded) {
  int64_t a = 0, b = 0;
  for (int64_t t = 0; t < g.k[s]; ++t) {
    const int64_t i = o_s * g.stride[s] - g.pad[s] + t * g.dil[s];
    a += i >= 0 && i < g.in[s];
    b += i >= -g.pad[s] && i < g.in[s] + g.pad_end[s];
  }
  *inside = a;
  *padded = b;
}

// Calls visit(i) for each tap of window o (row-major over out[0..2]) that lies inside the input,
// i its in-plane row-major index, in the CPU's order: slot 0, then 1, then 2, each ascending.
template <class Visit>
OAT_POOL_HD inline void pool_window_taps(const PoolGeometry& g, int64_t o, const Visit& visit) {
  const int64_t ox = o % g.out[2], oy = (o / g.out[2]) % g.out[1], oz = o / (g.out[2] * g.out[1]);
  for (int64_t t0 = 0; t0 < g.k[0]; ++t0) {
    const int64_t iz = oz * g.stride[0] - g.pad[0] + t0 * g.dil[0];
    if (iz < 0 || iz >= g.in[0]) continue;
    for (int64_t t1 = 0; t1 < g.k[1]; ++t1) {
      const int64_t iy = oy * g.stride[1] - g.pad[1] + t1 * g.dil[1];
      if (iy < 0 || iy >= g.in[1]) continue;
      for (int64_t t2 = 0; t2 < g.k[2]; ++t2) {
        const int64_t ix = ox * g.stride[2] - g.pad[2] + t2 * g.dil[2];
        if (ix < 0 || ix >= g.in[2]) continue;
        visit((iz * g.in[1] + iy) * g.in[2] + ix);
      }
    }
  }
}

// AveragePool's divisor of window o (row-major over out[0..2]): the taps inside the input, or
// with include_pad those inside the padded input (pool.cc).
OAT_POOL_HD inline int64_t avg_pool_count(const PoolGeometry& g, int64_t o, bool include_pad) {
  const int64_t os[3] = {o / (g.out[2] * g.out[1]), (o / g.out[2]) % g.out[1], o % g.out[2]};
  int64_t count = 1;
  for (int s = 0; s < 3; ++s) {
    int64_t inside, padded;
    pool_taps(g, s, os[s], &inside, &padded);
    count *= include_pad ? padded : inside;
  }
  return count;
}

// AveragePool's window o of one plane: Σ taps inside the input (float, in window order) / count,
// 0 when the count is 0 (every tap in the padding without include_pad).
template <class Load>
OAT_POOL_HD inline float avg_pool_window(const PoolGeometry& g, int64_t o, const Load& load,
                                         bool include_pad) {
  float sum = 0.f;
  pool_window_taps(g, o, [&](int64_t i) { sum += load(i); });
  const int64_t count = avg_pool_count(g, o, include_pad);
  return count > 0 ? sum / static_cast<float>(count) : 0.f;
}

// The gradients as gathers (one input element each, no atomics, deterministic): the windows that
// read in-plane index i are, per slot s, o_s = (i_s + pad − t·dil) / stride for each tap t where
// that divides exactly and 0 <= o_s < out (one o_s per t). visit(o) is called for each.
template <class Visit>
OAT_POOL_HD inline void pool_windows_reading(const PoolGeometry& g, int64_t i, const Visit& visit) {
  const int64_t is[3] = {i / (g.in[2] * g.in[1]), (i / g.in[2]) % g.in[1], i % g.in[2]};
  for (int64_t t0 = 0; t0 < g.k[0]; ++t0) {
    const int64_t n0 = is[0] + g.pad[0] - t0 * g.dil[0];
    if (n0 < 0 || n0 % g.stride[0] != 0 || n0 / g.stride[0] >= g.out[0]) continue;
    for (int64_t t1 = 0; t1 < g.k[1]; ++t1) {
      const int64_t n1 = is[1] + g.pad[1] - t1 * g.dil[1];
      if (n1 < 0 || n1 % g.stride[1] != 0 || n1 / g.stride[1] >= g.out[1]) continue;
      for (int64_t t2 = 0; t2 < g.k[2]; ++t2) {
        const int64_t n2 = is[2] + g.pad[2] - t2 * g.dil[2];
        if (n2 < 0 || n2 % g.stride[2] != 0 || n2 / g.stride[2] >= g.out[2]) continue;
        visit(((n0 / g.stride[0]) * g.out[1] + n1 / g.stride[1]) * g.out[2] + n2 / g.stride[2]);
      }
    }
  }
}

// AveragePoolGrad at in-plane index i: Σ over the windows o reading i of dY[o] / count_o.
template <class LoadDy>
OAT_POOL_HD inline float avg_pool_grad_at(const PoolGeometry& g, int64_t i, const LoadDy& dy,
                                          bool include_pad) {
  float sum = 0.f;
  pool_windows_reading(g, i, [&](int64_t o) {
    const int64_t count = avg_pool_count(g, o, include_pad);
    if (count > 0) sum += dy(o) / static_cast<float>(count);
  });
  return sum;
}

// Window o (row-major over out[0..2]) of one plane, read through load(i) (in-plane row-major
// index i -> float): visits the taps inside the plane in the CPU's order (slot 0, then 1, then 2,
// each ascending) and keeps a tap only when it is strictly greater, so the first maximum wins and
// a NaN survives only as the first tap (max_pool_with_indices in runtime/cpu/kernels/pool.cc).
// Returns the in-plane index of that tap, −1 when no tap is inside (*best is then −FLT_MAX, the
// CPU's lowest float).
template <class Load>
OAT_POOL_HD inline int64_t max_pool_window(const PoolGeometry& g, int64_t o, const Load& load,
                                           float* best) {
  float b = -FLT_MAX;
  int64_t at = -1;
  pool_window_taps(g, o, [&](int64_t i) {
    const float v = load(i);
    if (at < 0 || v > b) {
      b = v;
      at = i;
    }
  });
  *best = b;
  return at;
}

// MaxPoolGrad at in-plane index i: Σ over the windows o reading i (pool_windows_reading above)
// whose maximum (max_pool_window: the first maximum) is i, of dY[o].
template <class LoadX, class LoadDy>
OAT_POOL_HD inline float max_pool_grad_at(const PoolGeometry& g, int64_t i, const LoadX& x,
                                          const LoadDy& dy) {
  float sum = 0.f;
  pool_windows_reading(g, i, [&](int64_t o) {
    float best;
    if (max_pool_window(g, o, x, &best) == i) sum += dy(o);
  });
  return sum;
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
// `indices` may be null (MaxPool without it, over a window cuDNN cannot express).
void launch_max_pool_indices(ElemType t, const void* x, void* y, int64_t* indices, int64_t planes,
                             const PoolGeometry& g, bool column_major, cudaStream_t s);

// y[p, o] = avg_pool_window of plane p, rounded once to T.
void launch_avg_pool(ElemType t, const void* x, void* y, int64_t planes, const PoolGeometry& g,
                     bool include_pad, cudaStream_t s);

// dx[p, i] = max_pool_grad_at (x given) or avg_pool_grad_at (x null) of plane p, rounded once.
void launch_pool_grad(ElemType t, const void* dy, const void* x, void* dx, int64_t planes,
                      const PoolGeometry& g, bool include_pad, cudaStream_t s);

}  // namespace oat::cuda

#undef OAT_POOL_HD
