// Resize and ResizeGrad on CUDA: the device half (resize_impl.cu). The per-axis tables are the
// CPU's (runtime/cpu/kernels/resize_geometry.h), built on the host and uploaded per call.
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// Forward: output element with coordinates (o_0..o_r) is `extrapolation` when some axis with
// outside_offset[d] ≥ 0 has flags[outside_offset[d] + o_d] ≠ 0; otherwise
//   Σ_{k_0..k_{r-1}} (Π_d w[tap_offset[d] + o_d·taps_d + k_d]) · x[Σ_d offs[tap_offset[d] + ..]]
// with the last axis's taps fastest and the weight product from axis 0 up (the CPU's order), in
// FP32. `offs` holds X offsets (index · stride) and, after them, the outside flags, in int64.
struct ResizePlan {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int taps[kMaxRank] = {};
  int64_t tap_offset[kMaxRank] = {};
  int64_t outside_offset[kMaxRank] = {};
  float extrapolation = 0.f;
};
void launch_resize(ElemType t, const void* x, void* y, int64_t n, const int64_t* offs,
                   const float* w, const ResizePlan& plan, cudaStream_t s);

// Gradient: dX element j sums, over the Cartesian product of the per-axis adjoint lists
// [inv[first_offset[d] + j_d], inv[first_offset[d] + j_d + 1]), (Π_d w[pos index]) · dY at
// Σ_d inv[pos_offset[d] + pos index] (dY offsets); FP32, last axis fastest, one rounding.
struct ResizeGradPlan {
  int rank = 0;
  int64_t x_dims[kMaxRank] = {};
  int64_t first_offset[kMaxRank] = {};
  int64_t pos_offset[kMaxRank] = {};
  int64_t w_offset[kMaxRank] = {};
};
void launch_resize_grad(ElemType t, const void* dy, void* dx, int64_t n, const int64_t* inv,
                        const float* w, const ResizeGradPlan& plan, cudaStream_t s);

}  // namespace oat::cuda
