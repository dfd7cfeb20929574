#include <cstdint>
#include <cstring>

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/inverted_maps.cuh"
#include "runtime/cuda/kernels/movement_impl.h"

namespace oat::cuda {

namespace {

// Element e of Y [outer, count, inner] is (o, j, i): two divisions, by multiply and shift
// (IndexDivider) when e < 2^31 (`narrow`), else 64-bit.
template <class W, class I>
__global__ void gather_kernel(const W* x, const I* idx, W* y, int64_t outer, int64_t axis_dim,
                              int64_t inner, int64_t count, int* bad, bool narrow,
                              IndexDivider by_inner, IndexDivider by_count) {
  const int64_t n = outer * count * inner;
  OAT_GRID_STRIDE_LOOP(e, n) {
    int64_t i, j, o;
    if (narrow) {
      const uint32_t e32 = static_cast<uint32_t>(e), q = by_inner.div(e32), r = by_count.div(q);
      i = e32 - q * by_inner.divisor;
      j = q - r * by_count.divisor;
      o = r;
    } else {
      const int64_t q = e / inner;
      i = e - q * inner;
      o = q / count;
      j = q - o * count;
    }
    int64_t k = static_cast<int64_t>(idx[j]);
    if (k < 0) k += axis_dim;
    if (k < 0 || k >= axis_dim) {
      if (bad) *bad = 1;
      y[e] = W{};
    } else {
      y[e] = x[(o * axis_dim + k) * inner + i];
    }
  }
}

// X's offset of GatherElements' element e whose index along the axis is k (in range).
__device__ __forceinline__ int64_t gather_elements_offset(int64_t e, int64_t k,
                                                          const GatherElementsPlan& p) {
  int64_t off = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t q = e / p.idx_dims[d];
    off += (d == p.axis ? k : e - q * p.idx_dims[d]) * p.x_strides[d];
    e = q;
  }
  return off;
}

template <class W, class I>
__global__ void gather_elements_kernel(const W* x, const I* idx, W* y, int64_t n,
                                       GatherElementsPlan p, int* bad) {
  OAT_GRID_STRIDE_LOOP(e, n) {
    int64_t k = static_cast<int64_t>(idx[e]);
    if (k < 0) k += p.axis_dim;
    if (k < 0 || k >= p.axis_dim) {
      if (bad) *bad = 1;
      y[e] = W{};
    } else {
      y[e] = x[gather_elements_offset(e, k, p)];
    }
  }
}

template <class T, class I>
__global__ void gather_elements_grad_kernel(const T* dy, const I* idx, float* acc, int64_t n,
                                            GatherElementsPlan p) {
  OAT_GRID_STRIDE_LOOP(e, n) {
    int64_t k = static_cast<int64_t>(idx[e]);
    if (k < 0) k += p.axis_dim;
    if (k < 0 || k >= p.axis_dim) continue;
    atomicAdd(acc + gather_elements_offset(e, k, p), to_float(dy[e]));
  }
}

// f(y, u) of ScatterReduce: 0 mul, 1 max, 2 min; u != u is u NaN (propagates).
__device__ __forceinline__ float scatter_combine(int op, float y, float u) {
  if (op == 0) return y * u;
  if (op == 1) return (u > y || u != u) ? u : y;
  return (u < y || u != u) ? u : y;
}

template <class T, class I>
__global__ void scatter_reduce_kernel(const T* u, const I* idx, float* acc, int64_t n, int op,
                                      GatherElementsPlan p) {
  OAT_GRID_STRIDE_LOOP(e, n) {
    int64_t k = static_cast<int64_t>(idx[e]);
    if (k < 0) k += p.axis_dim;
    if (k < 0 || k >= p.axis_dim) continue;
    const float v = to_float(u[e]);
    unsigned* a = reinterpret_cast<unsigned*>(acc + gather_elements_offset(e, k, p));
    unsigned old = *a, assumed;
    do {
      assumed = old;
      const unsigned r = __float_as_uint(scatter_combine(op, __uint_as_float(assumed), v));
      if (r == assumed) break;
      old = atomicCAS(a, assumed, r);
    } while (old != assumed);
  }
}

template <class W>
__global__ void trilu_kernel(const W* x, W* y, int64_t n, int64_t rows, int64_t cols, int64_t k,
                             bool upper) {
  OAT_GRID_STRIDE_LOOP(e, n) {
    const int64_t j = e % cols;
    const int64_t i = (e / cols) % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    y[e] = keep ? x[e] : W(0);
  }
}

template <class W>
__global__ void pad_kernel(const W* x, W* y, int64_t n, const int64_t* maps, PadPlan p, W fill) {
  OAT_GRID_STRIDE_LOOP(e, n) {
    int64_t i = e, off = 0;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = i / p.out_dims[d];
      const int64_t src = maps[p.map_offset[d] + (i - q * p.out_dims[d])];
      i = q;
      if (src < 0) inside = false;
      else off += src * p.in_strides[d];
    }
    y[e] = inside ? x[off] : fill;
  }
}

template <class T>
__global__ void pad_grad_kernel(const T* dy, T* dx, int64_t n, const int64_t* inv, PadGradPlan p) {
  OAT_GRID_STRIDE_LOOP(e, n) {
    float acc = 0.f;
    for_each_inverted_source(e, p.rank, p.x_dims, p.first_offset, inv, [&](const int64_t* c) {
      int64_t off = 0;
      for (int d = 0; d < p.rank; ++d) off += inv[p.pos_offset[d] + c[d]] * p.y_strides[d];
      acc += to_float(dy[off]);
    });
    dx[e] = from_float<T>(acc);
  }
}

}  // namespace

void launch_pad_grad(ElemType t, const void* dy, void* dx, int64_t n, const int64_t* inv,
                     const PadGradPlan& plan, cudaStream_t s) {
  if (n == 0) return;
  dispatch_float(t, "PadGrad", [&](auto tag) {
    using T = decltype(tag);
    pad_grad_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(dy),
                                                          static_cast<T*>(dx), n, inv, plan);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_pad(int elem_bytes, const void* x, void* y, int64_t n, const int64_t* maps,
                const PadPlan& plan, uint64_t fill, cudaStream_t s) {
  if (n == 0) return;
  auto go = [&](auto word) {
    using W = decltype(word);
    W f;
    memcpy(&f, &fill, sizeof(W));
    pad_kernel<W><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const W*>(x), static_cast<W*>(y),
                                                     n, maps, plan, f);
  };
  switch (elem_bytes) {
    case 1: go(uint8_t{}); break;
    case 2: go(uint16_t{}); break;
    case 4: go(uint32_t{}); break;
    case 8: go(uint64_t{}); break;
    default: throw std::runtime_error("Pad: unsupported element size");
  }
  CUDA_CHECK_LAUNCH();
}

void launch_trilu(int elem_bytes, const void* x, void* y, int64_t n, int64_t rows, int64_t cols,
                  int64_t k, bool upper, cudaStream_t s) {
  if (n == 0) return;
  auto go = [&](auto word) {
    using W = decltype(word);
    trilu_kernel<W><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const W*>(x),
                                                       static_cast<W*>(y), n, rows, cols, k, upper);
  };
  switch (elem_bytes) {
    case 1: go(uint8_t{}); break;
    case 2: go(uint16_t{}); break;
    case 4: go(uint32_t{}); break;
    case 8: go(uint64_t{}); break;
    default: throw std::runtime_error("Trilu: unsupported element size");
  }
  CUDA_CHECK_LAUNCH();
}

void launch_gather(int elem_bytes, const void* x, const void* indices, bool indices_i64, void* y,
                   int64_t outer, int64_t axis_dim, int64_t inner, int64_t count, int* bad,
                   cudaStream_t s) {
  const int64_t n = outer * count * inner;
  if (n == 0) return;
  const bool narrow = n <= INT32_MAX;
  const IndexDivider by_inner =
      narrow ? IndexDivider(static_cast<uint32_t>(inner)) : IndexDivider();
  const IndexDivider by_count =
      narrow ? IndexDivider(static_cast<uint32_t>(count)) : IndexDivider();
  auto go = [&](auto word) {
    using W = decltype(word);
    if (indices_i64)
      gather_kernel<W, int64_t><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const W*>(x), static_cast<const int64_t*>(indices), static_cast<W*>(y),
          outer, axis_dim, inner, count, bad, narrow, by_inner, by_count);
    else
      gather_kernel<W, int32_t><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const W*>(x), static_cast<const int32_t*>(indices), static_cast<W*>(y),
          outer, axis_dim, inner, count, bad, narrow, by_inner, by_count);
  };
  switch (elem_bytes) {
    case 1: go(uint8_t{}); break;
    case 2: go(uint16_t{}); break;
    case 4: go(uint32_t{}); break;
    case 8: go(uint64_t{}); break;
    default: throw std::runtime_error("Gather: unsupported element size");
  }
  CUDA_CHECK_LAUNCH();
}

void launch_gather_elements(int elem_bytes, const void* x, const void* indices, bool indices_i64,
                            void* y, int64_t n, const GatherElementsPlan& plan, int* bad,
                            cudaStream_t s) {
  if (n == 0) return;
  auto go = [&](auto word) {
    using W = decltype(word);
    if (indices_i64)
      gather_elements_kernel<W, int64_t><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const W*>(x), static_cast<const int64_t*>(indices), static_cast<W*>(y), n,
          plan, bad);
    else
      gather_elements_kernel<W, int32_t><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const W*>(x), static_cast<const int32_t*>(indices), static_cast<W*>(y), n,
          plan, bad);
  };
  switch (elem_bytes) {
    case 1: go(uint8_t{}); break;
    case 2: go(uint16_t{}); break;
    case 4: go(uint32_t{}); break;
    case 8: go(uint64_t{}); break;
    default: throw std::runtime_error("GatherElements: unsupported element size");
  }
  CUDA_CHECK_LAUNCH();
}

void launch_gather_elements_grad(ElemType t, const void* dy, const void* indices,
                                 bool indices_i64, float* acc, int64_t n,
                                 const GatherElementsPlan& plan, cudaStream_t s) {
  if (n == 0) return;
  dispatch_float(t, "GatherElementsGrad", [&](auto tag) {
    using T = decltype(tag);
    if (indices_i64)
      gather_elements_grad_kernel<T, int64_t><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const T*>(dy), static_cast<const int64_t*>(indices), acc, n, plan);
    else
      gather_elements_grad_kernel<T, int32_t><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const T*>(dy), static_cast<const int32_t*>(indices), acc, n, plan);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_scatter_reduce(ElemType t, const void* updates, const void* indices, bool indices_i64,
                           float* acc, int64_t n, int reduction, const GatherElementsPlan& plan,
                           cudaStream_t s) {
  if (n == 0) return;
  dispatch_float(t, "ScatterReduce", [&](auto tag) {
    using T = decltype(tag);
    if (indices_i64)
      scatter_reduce_kernel<T, int64_t><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const T*>(updates), static_cast<const int64_t*>(indices), acc, n, reduction,
          plan);
    else
      scatter_reduce_kernel<T, int32_t><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const T*>(updates), static_cast<const int32_t*>(indices), acc, n, reduction,
          plan);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
