#include <cfloat>

#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/block_reduce.cuh"
#include "runtime/cuda/kernels/device_types.cuh"
#include "runtime/cuda/kernels/reduce_impl.h"

namespace oat::cuda {

namespace {

__device__ __forceinline__ int64_t decompose(int64_t i, int rank, const int64_t* dims,
                                             const int64_t* strides) {
  if (rank == 0) return 0;
  int64_t off = 0;
  for (int d = rank - 1; d > 0; --d) {
    const int64_t q = i / dims[d];
    off += (i - q * dims[d]) * strides[d];
    i = q;
  }
  return off + i * strides[0];  // i < dims[0] here: no division for the outermost dimension
}

// What each reduction does to a term, how terms combine, and the result from the combined value
// (count terms; LogSumExp's shift is the maximum, so exp(x − max) cannot overflow):
//   Sum Σx   Mean Σx/count   SumSquare Σx²   L1 Σ|x|   L2 √Σx²   LogSum log Σx
//   LogSumExp max + log Σ exp(x − max)   Max, Min, Prod
template <ReduceOp Op>
struct Reducer {
  static constexpr bool kMax = Op == ReduceOp::Max, kMin = Op == ReduceOp::Min,
                        kProd = Op == ReduceOp::Prod;
  __device__ static float identity() {
    return kMax ? -INFINITY : (kMin ? INFINITY : (kProd ? 1.f : 0.f));
  }
  __device__ static float map(float v, float shift) {
    if constexpr (Op == ReduceOp::SumSquare || Op == ReduceOp::L2) return v * v;
    else if constexpr (Op == ReduceOp::L1) return fabsf(v);
    else if constexpr (Op == ReduceOp::LogSumExp) return expf(v - shift);
    else return v;
  }
  __device__ float operator()(float a, float b) const {
    if constexpr (kMax) return fmaxf(a, b);
    else if constexpr (kMin) return fminf(a, b);
    else if constexpr (kProd) return a * b;
    else return a + b;
  }
  __device__ static float finish(float acc, int64_t count, float shift) {
    if constexpr (Op == ReduceOp::Mean) return acc / static_cast<float>(count);
    else if constexpr (Op == ReduceOp::L2) return sqrtf(acc);
    else if constexpr (Op == ReduceOp::LogSum) return logf(acc);
    // A +inf maximum: inf − inf would make the sum NaN; log Σ exp = +inf (as the CPU gives).
    else if constexpr (Op == ReduceOp::LogSumExp) return isinf(shift) ? shift : logf(acc) + shift;
    else return acc;
  }
};

// Rows: one block per output (grid-stride over outputs); blockIdx.y takes the terms
// [y·chunk, (y+1)·chunk). One chunk: Y[o] directly; several: the raw partial at
// partial[y·outputs + o] (reduce_finish_kernel combines them).
template <ReduceOp Op, class T, class TY>
__global__ void reduce_rows_kernel(const T* x, TY* y, float* partial, ReducePlan p, int64_t chunk,
                                   int64_t splits) {
  using R = Reducer<Op>;
  const int64_t r0 = blockIdx.y * chunk;
  const int64_t r1 = r0 + chunk < p.count ? r0 + chunk : p.count;
  for (int64_t o = blockIdx.x; o < p.outputs; o += gridDim.x) {
    const T* xb = x + decompose(o, p.kept_rank, p.kept_dims, p.kept_strides);
    auto at = [&](int64_t r) {
      return to_float(xb[decompose(r, p.red_rank, p.red_dims, p.red_strides)]);
    };
    float shift = 0.f;
    if constexpr (Op == ReduceOp::LogSumExp) {  // one chunk (schedule_reduce)
      float m = -FLT_MAX;
      for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) m = fmaxf(m, at(r));
      shift = block_max(m);
    }
    float acc = R::identity();
    for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) acc = R{}(acc, R::map(at(r), shift));
    acc = block_reduce(acc, R{}, R::identity());
    if (threadIdx.x == 0) {
      if (splits > 1) partial[blockIdx.y * p.outputs + o] = acc;
      else y[o] = from_float<TY>(R::finish(acc, p.count, shift));
    }
  }
}

// Columns: the innermost kept dimension (W outputs) is contiguous. A block of 32 x kColumnLanes
// threads takes 32 neighbouring outputs (threadIdx.x) of one tile, grid-stride over the tiles;
// lane threadIdx.y sums terms y, y + lanes, … of its chunk; the lanes combine in lane order.
constexpr int kColumnLanes = 8;
template <ReduceOp Op, class T, class TY>
__global__ void reduce_columns_kernel(const T* x, TY* y, float* partial, ReducePlan p,
                                      int64_t chunk, int64_t splits) {
  using R = Reducer<Op>;
  __shared__ float lanes[kColumnLanes][33];
  const int64_t W = p.kept_dims[p.kept_rank - 1];
  const int64_t tiles_per_row = (W + 31) / 32;
  const int64_t tiles = (p.outputs / W) * tiles_per_row;
  const int64_t r0 = blockIdx.y * chunk;
  const int64_t r1 = r0 + chunk < p.count ? r0 + chunk : p.count;
  for (int64_t b = blockIdx.x; b < tiles; b += gridDim.x) {  // uniform in the block
    const int64_t c = (b % tiles_per_row) * 32 + threadIdx.x;
    const int64_t o = (b / tiles_per_row) * W + c;
    float acc = R::identity();
    if (c < W) {
      const T* xb = x + decompose(o, p.kept_rank, p.kept_dims, p.kept_strides);
      for (int64_t r = r0 + threadIdx.y; r < r1; r += kColumnLanes)
        acc = R{}(acc, R::map(to_float(xb[decompose(r, p.red_rank, p.red_dims, p.red_strides)]),
                              0.f));
    }
    lanes[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < W) {
      float v = lanes[0][threadIdx.x];
      for (int k = 1; k < kColumnLanes; ++k) v = R{}(v, lanes[k][threadIdx.x]);
      if (splits > 1) partial[blockIdx.y * p.outputs + o] = v;
      else y[o] = from_float<TY>(R::finish(v, p.count, 0.f));
    }
    __syncthreads();  // `lanes` is reused by the next tile
  }
}

// Y[o] = finish(partial[0·outputs + o] ∘ partial[1·outputs + o] ∘ …), in chunk order.
template <ReduceOp Op, class TY>
__global__ void reduce_finish_kernel(const float* partial, TY* y, int64_t outputs, int64_t splits,
                                     int64_t count) {
  using R = Reducer<Op>;
  OAT_GRID_STRIDE_LOOP(o, outputs) {
    float v = partial[o];
    for (int64_t k = 1; k < splits; ++k) v = R{}(v, partial[k * outputs + o]);
    y[o] = from_float<TY>(R::finish(v, count, 0.f));
  }
}

// Y in X's type, or in float (ty == F32) for any float X.
template <ReduceOp Op>
void launch_op(ElemType t, ElemType ty, const void* x, void* y, const ReduceSchedule& sc,
               float* scratch, cudaStream_t s) {
  const ReducePlan& p = sc.plan;
  if (ty != t && ty != ElemType::F32) bad_type("Reduce (output)", ty);
  if (sc.splits > 1 && !scratch) throw std::runtime_error("Reduce: split without scratch");
  const unsigned splits = static_cast<unsigned>(sc.splits);
  auto cap = [](int64_t b) { return static_cast<unsigned>(b < 65535 * 4 ? (b < 1 ? 1 : b) : 65535 * 4); };
  dispatch_float(t, "Reduce", [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto* yt) {
      using TY = std::remove_pointer_t<decltype(yt)>;
      const T* xt = static_cast<const T*>(x);
      if (sc.columns) {
        const int64_t W = p.kept_dims[p.kept_rank - 1];
        const int64_t tiles = (p.outputs / W) * ((W + 31) / 32);
        reduce_columns_kernel<Op, T, TY>
            <<<dim3(cap(tiles), splits), dim3(32, kColumnLanes), 0, s>>>(xt, yt, scratch, p,
                                                                          sc.chunk, sc.splits);
      } else {
        const int threads = sc.chunk >= 2048 ? 256 : (sc.chunk >= 256 ? 128 : 32);
        reduce_rows_kernel<Op, T, TY>
            <<<dim3(cap(p.outputs), splits), threads, 0, s>>>(xt, yt, scratch, p, sc.chunk,
                                                              sc.splits);
      }
      if (sc.splits > 1)
        reduce_finish_kernel<Op, TY><<<blocks_for(p.outputs), kThreads, 0, s>>>(
            scratch, yt, p.outputs, sc.splits, p.count);
    };
    if (ty == t) run(static_cast<T*>(y));
    else run(static_cast<float*>(y));
  });
}

// One block per output, as reduce_kernel: ties with Y (Max/Min) or zeros and the product of the
// nonzero elements (Prod).
template <class T>
__global__ void reduce_xy_stats_kernel(XYGrad kind, const T* x, const T* y, float* count,
                                       float* nonzero_prod, ReducePlan p) {
  const bool prod = kind == XYGrad::Prod;
  for (int64_t o = blockIdx.x; o < p.outputs; o += gridDim.x) {
    const T* xb = x + decompose(o, p.kept_rank, p.kept_dims, p.kept_strides);
    const float m = to_float(y[o]);
    float c = 0.f, nz = 1.f;
    for (int64_t r = threadIdx.x; r < p.count; r += blockDim.x) {
      const float v = to_float(xb[decompose(r, p.red_rank, p.red_dims, p.red_strides)]);
      if (!prod) c += v == m ? 1.f : 0.f;
      else if (v == 0.f) c += 1.f;
      else nz *= v;
    }
    c = block_sum(c);
    nz = block_reduce(nz, ProdOp{}, 1.f);
    if (threadIdx.x == 0) {
      count[o] = c;
      nonzero_prod[o] = nz;
    }
  }
}

// g = dY[k], m = Y[k], v = X[i] (runtime/cpu/kernels/grad_reduce.cc):
//   Max, Min   v = m ? g / #ties : 0           Prod       no zero: g·(m / v); one zero: g·Π(nonzero)
//   SumSquare  2·g·v                           at the zero, 0 elsewhere; two or more zeros: 0
//   L1         g·sign(v)                       L2         m = 0 ? 0 : g·(v / m)
//   LogSum     g·exp(−m)                       LogSumExp  g·exp(v − m)
template <class T>
__global__ void reduce_xy_grad_kernel(XYGrad kind, const T* dy, const T* x, const T* y,
                                      const float* count, const float* nonzero_prod, T* dx,
                                      int64_t n, BroadcastIndex ix) {
  OAT_GRID_STRIDE_LOOP(i, n) {
    int64_t off[1];
    broadcast_offsets<1>(ix, i, off);
    const int64_t k = off[0];
    const float v = to_float(x[i]), m = to_float(y[k]), g = to_float(dy[k]);
    float d = 0.f;
    switch (kind) {
      case XYGrad::Max:
      case XYGrad::Min: d = v == m ? g / count[k] : 0.f; break;
      case XYGrad::Prod:
        if (count[k] == 0.f) d = g * (m / v);
        else if (count[k] == 1.f && v == 0.f) d = g * nonzero_prod[k];
        break;
      case XYGrad::SumSquare: d = 2.f * g * v; break;
      case XYGrad::L1: d = v > 0.f ? g : (v < 0.f ? -g : 0.f); break;
      case XYGrad::L2: d = m == 0.f ? 0.f : g * (v / m); break;
      case XYGrad::LogSum: d = g * expf(-m); break;
      case XYGrad::LogSumExp: d = g * expf(v - m); break;
    }
    dx[i] = from_float<T>(d);
  }
}

template <class T>
__global__ void arg_reduce_kernel(const T* x, int64_t* y, bool max, bool last, int64_t outer,
                                  int64_t len, int64_t inner) {
  OAT_GRID_STRIDE_LOOP(c, outer * inner) {
    const int64_t o = c / inner, i = c - o * inner;
    const T* xc = x + o * len * inner + i;
    int64_t best = 0;
    float bv = to_float(xc[0]);
    for (int64_t j = 1; j < len; ++j) {
      const float v = to_float(xc[j * inner]);
      const bool better = max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
      if (better) {
        bv = v;
        best = j;
      }
    }
    y[c] = best;
  }
}

template <class T>
__global__ void hardmax_kernel(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  OAT_GRID_STRIDE_LOOP(c, outer * inner) {
    const int64_t o = c / inner, i = c - o * inner, base = o * len * inner + i;
    int64_t best = 0;
    float bv = to_float(x[base]);
    for (int64_t j = 1; j < len; ++j) {
      const float v = to_float(x[base + j * inner]);
      if (v > bv) {
        bv = v;
        best = j;
      }
    }
    for (int64_t j = 0; j < len; ++j) y[base + j * inner] = from_float<T>(j == best ? 1.f : 0.f);
  }
}

template <class T>
__global__ void cumsum_kernel(const T* x, T* y, int64_t outer, int64_t len, int64_t inner,
                              bool exclusive, bool reverse) {
  OAT_GRID_STRIDE_LOOP(c, outer * inner) {
    const int64_t o = c / inner, i = c - o * inner, base = o * len * inner + i;
    float acc = 0.f;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t j = reverse ? len - 1 - k : k;
      const float v = to_float(x[base + j * inner]);
      if (exclusive) {
        y[base + j * inner] = from_float<T>(acc);
        acc += v;
      } else {
        acc += v;
        y[base + j * inner] = from_float<T>(acc);
      }
    }
  }
}

}  // namespace

void launch_hardmax(ElemType t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner,
                    cudaStream_t s) {
  if (outer * inner == 0 || len == 0) return;
  dispatch_float(t, "Hardmax", [&](auto tag) {
    using T = decltype(tag);
    hardmax_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(y), outer, len, inner);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_cumsum(ElemType t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner,
                   bool exclusive, bool reverse, cudaStream_t s) {
  if (outer * inner == 0 || len == 0) return;
  dispatch_float(t, "CumSum", [&](auto tag) {
    using T = decltype(tag);
    cumsum_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(y), outer, len, inner, exclusive, reverse);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_arg_reduce(ElemType t, bool max, bool select_last, const void* x, int64_t* y,
                       int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  if (outer * inner == 0) return;
  dispatch_float(t, "ArgMax/ArgMin", [&](auto tag) {
    using T = decltype(tag);
    arg_reduce_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(
        static_cast<const T*>(x), y, max, select_last, outer, len, inner);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_reduce_xy_stats(XYGrad kind, ElemType t, const void* x, const void* y, float* count,
                            float* nonzero_prod, const ReducePlan& p, cudaStream_t s) {
  if (p.outputs == 0) return;
  const int threads = p.count >= 2048 ? 256 : (p.count >= 256 ? 128 : 32);
  const unsigned blocks = static_cast<unsigned>(p.outputs < 65535 * 4 ? p.outputs : 65535 * 4);
  dispatch_float(t, "ReduceXYGrad", [&](auto tag) {
    using T = decltype(tag);
    reduce_xy_stats_kernel<T><<<blocks, threads, 0, s>>>(
        kind, static_cast<const T*>(x), static_cast<const T*>(y), count, nonzero_prod, p);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_reduce_xy_grad(XYGrad kind, ElemType t, const void* dy, const void* x, const void* y,
                           const float* count, const float* nonzero_prod, void* dx, int64_t n,
                           const BroadcastIndex& ix, cudaStream_t s) {
  if (n == 0) return;
  dispatch_float(t, "ReduceXYGrad", [&](auto tag) {
    using T = decltype(tag);
    reduce_xy_grad_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(
        kind, static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(y), count,
        nonzero_prod, static_cast<T*>(dx), n, ix);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_reduce_scheduled(ReduceOp op, ElemType t, ElemType ty, const void* x, void* y,
                             const ReduceSchedule& sc, float* scratch, cudaStream_t s) {
  if (sc.plan.outputs == 0) return;
  switch (op) {
    case ReduceOp::Sum: launch_op<ReduceOp::Sum>(t, ty, x, y, sc, scratch, s); break;
    case ReduceOp::Mean: launch_op<ReduceOp::Mean>(t, ty, x, y, sc, scratch, s); break;
    case ReduceOp::Max: launch_op<ReduceOp::Max>(t, ty, x, y, sc, scratch, s); break;
    case ReduceOp::Min: launch_op<ReduceOp::Min>(t, ty, x, y, sc, scratch, s); break;
    case ReduceOp::Prod: launch_op<ReduceOp::Prod>(t, ty, x, y, sc, scratch, s); break;
    case ReduceOp::SumSquare: launch_op<ReduceOp::SumSquare>(t, ty, x, y, sc, scratch, s); break;
    case ReduceOp::L1: launch_op<ReduceOp::L1>(t, ty, x, y, sc, scratch, s); break;
    case ReduceOp::L2: launch_op<ReduceOp::L2>(t, ty, x, y, sc, scratch, s); break;
    case ReduceOp::LogSum: launch_op<ReduceOp::LogSum>(t, ty, x, y, sc, scratch, s); break;
    case ReduceOp::LogSumExp: launch_op<ReduceOp::LogSumExp>(t, ty, x, y, sc, scratch, s); break;
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace oat::cuda
