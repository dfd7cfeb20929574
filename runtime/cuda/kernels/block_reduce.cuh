// Block-wide sum / max / min of one float per thread (warp shuffles, then one warp over the
// warps' results). Every thread of the block must call it; every thread gets the result.
// blockDim.x must be a multiple of 32 and at most 1024.
#pragma once

#include <cfloat>

namespace oat::cuda {

template <class Op>
__device__ __forceinline__ float block_reduce(float v, Op op, float identity) {
  __shared__ float partial[32];
  __shared__ float result;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>((blockDim.x + 31) >> 5) ? partial[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) result = v;
  }
  __syncthreads();
  const float r = result;
  __syncthreads();  // `partial` and `result` may be reused by the next call
  return r;
}

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MinOp {
  __device__ float operator()(float a, float b) const { return fminf(a, b); }
};
struct ProdOp {
  __device__ float operator()(float a, float b) const { return a * b; }
};

__device__ __forceinline__ float block_sum(float v) { return block_reduce(v, SumOp{}, 0.f); }

// Warp-wide reduction (xor butterfly): every lane of the full warp must call it, and every lane
// gets the result. For kernels that give each warp its own work (a warp per softmax row).
template <class Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float block_max(float v) { return block_reduce(v, MaxOp{}, -FLT_MAX); }

}  // namespace oat::cuda
