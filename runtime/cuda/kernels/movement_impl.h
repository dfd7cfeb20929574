// Launchers for the movement kernels that are not broadcast copies (movement_impl.cu).
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// Gather along an axis: X viewed as [outer, axis_dim, inner], indices (I64 or I32, negative
// values count from the end) flattened to [count]; Y[o, j, i] = X[o, idx[j], i]. An index out
// of range writes 0 and sets *bad (a device flag; may be null when the caller checked the
// indices on the host).
void launch_gather(int elem_bytes, const void* x, const void* indices, bool indices_i64, void* y,
                   int64_t outer, int64_t axis_dim, int64_t inner, int64_t count, int* bad,
                   cudaStream_t s);

// GatherGrad: acc[o, k, i] = Σ_{j: idx[j] = k} dY[o, j, i] in FP32, j ascending, without
// atomics (gather_grad_impl.cu: indices sorted stably, one thread per run), so the sums are the
// CPU kernel's bit for bit. dY of type t viewed as [outer, count, inner], acc as
// [outer, axis_dim, inner], zeroed by the caller (rows no index names stay 0); out-of-range
// indices (only possible when they were produced on the device) are skipped. count < 2^31,
// axis_dim < 2^32 - 1; `scratch` holds gather_grad_scratch_bytes(count) bytes.
size_t gather_grad_scratch_bytes(int64_t count);
void launch_gather_grad(ElemType t, const void* dy, const void* indices, bool indices_i64,
                        float* acc, int64_t outer, int64_t axis_dim, int64_t inner, int64_t count,
                        void* scratch, size_t scratch_bytes, cudaStream_t s);

// GatherElements: output element e, with coordinates c_d over idx_dims (the indices' shape),
// reads X at Σ_{d≠axis} c_d·x_strides[d] + k·x_strides[axis], k = idx[e] (I64 or I32, negative
// values count from axis_dim). An index out of range writes 0 and sets *bad (may be null when
// the caller checked the indices on the host).
struct GatherElementsPlan {
  int rank = 0, axis = 0;
  int64_t axis_dim = 0;
  int64_t idx_dims[kMaxRank] = {};
  int64_t x_strides[kMaxRank] = {};
};
void launch_gather_elements(int elem_bytes, const void* x, const void* indices, bool indices_i64,
                            void* y, int64_t n, const GatherElementsPlan& plan, int* bad,
                            cudaStream_t s);
// GatherElementsGrad: acc[offset(e)] += dY[e] in FP32 (atomics; acc zeroed by the caller), the
// offsets of GatherElements over X's shape; dY of type t has the indices' shape (n elements).
// Out-of-range indices (only possible when produced on the device) are skipped.
void launch_gather_elements_grad(ElemType t, const void* dy, const void* indices,
                                 bool indices_i64, float* acc, int64_t n,
                                 const GatherElementsPlan& plan, cudaStream_t s);

// ScatterReduce: acc[offset(e)] = f(acc[offset(e)], U[e]) in FP32 with a compare-and-swap loop
// (acc holds data on entry), the offsets of GatherElements over data's shape; U of type t has the
// indices' shape (n elements). reduction 0 mul, 1 max, 2 min (f as runtime/cpu/kernels/
// scatter_reduce.cc: NaN propagates through max and min). Out-of-range indices are skipped (the
// kernel reads the indices on the host and checks them there).
void launch_scatter_reduce(ElemType t, const void* updates, const void* indices, bool indices_i64,
                           float* acc, int64_t n, int reduction, const GatherElementsPlan& plan,
                           cudaStream_t s);

// Pad through per-axis source maps: out element with coordinates (o_0..o_r) reads X at
// Σ map_d[o_d]·stride_d, or is `fill` (the element's bytes, little-endian) when any map_d[o_d]
// is −1. `maps` is the concatenation of the r maps (offsets[d] = start of map d), in device memory.
struct PadPlan {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t map_offset[kMaxRank] = {};
};
void launch_pad(int elem_bytes, const void* x, void* y, int64_t n, const int64_t* maps,
                const PadPlan& plan, uint64_t fill, cudaStream_t s);

// PadGrad: dX element j (coordinates j_d over x_dims) sums dY over the Cartesian product of the
// per-axis output positions pos_d[first_d[j_d] .. first_d[j_d + 1]) (inverted Pad maps), at
// Σ pos·y_strides[d]; FP32 sum, last axis fastest (the CPU's order), one rounding. `inv` holds
// every axis's `first` (x_dims[d] + 1 entries from first_offset[d]) and `pos` (from
// pos_offset[d]), in device memory. t = F32/F16/BF16.
struct PadGradPlan {
  int rank = 0;
  int64_t x_dims[kMaxRank] = {};
  int64_t y_strides[kMaxRank] = {};
  int64_t first_offset[kMaxRank] = {};
  int64_t pos_offset[kMaxRank] = {};
};
void launch_pad_grad(ElemType t, const void* dy, void* dx, int64_t n, const int64_t* inv,
                     const PadGradPlan& plan, cudaStream_t s);

// Trilu: X viewed as [batch, rows, cols]; y[b, i, j] = keep ? x[b, i, j] : 0 with
// keep = j − i ≥ k (upper) or j − i ≤ k (lower). Any element type of 1, 2, 4 or 8 bytes (the
// all-zero word is zero for every dtype).
void launch_trilu(int elem_bytes, const void* x, void* y, int64_t n, int64_t rows, int64_t cols,
                  int64_t k, bool upper, cudaStream_t s);

}  // namespace oat::cuda
