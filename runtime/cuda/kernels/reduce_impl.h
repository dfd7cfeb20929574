// Launchers of the softmax and reduction kernels (softmax_impl.cu, reduce_impl.cu). Both
// accumulate in FP32 whatever the storage type (F32, F16, BF16).
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// x, y viewed as [outer, len, inner]; along the middle axis:
//   Softmax    y = exp(x − max) / Σ exp(x − max)
//   LogSoftmax y = x − max − log Σ exp(x − max)
void launch_softmax(ElemType t, bool log, const void* x, void* y, int64_t outer, int64_t len,
                    int64_t inner, cudaStream_t s);

// The gradients, on the same [outer, len, inner] view, from dY and the forward output Y:
//   Softmax    dX = Y ⊙ (dY − Σ dY ⊙ Y)        LogSoftmax dX = dY − exp(Y) ⊙ Σ dY
void launch_softmax_grad(ElemType t, bool log, const void* dy, const void* y, void* dx,
                         int64_t outer, int64_t len, int64_t inner, cudaStream_t s);

enum class ReduceOp : int { Sum, Mean, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };

// One output per kept index: Y[o] = reduce over r of X[base(o) + offset(r)], where base(o)
// decomposes o over kept dims/strides and offset(r) decomposes r over reduced dims/strides
// (element strides of X). count = product of the reduced dims.
struct ReducePlan {
  int kept_rank = 0, red_rank = 0;
  int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};
  int64_t red_dims[kMaxRank] = {}, red_strides[kMaxRank] = {};
  int64_t outputs = 0, count = 0;
};
// Defined in reduce.cc: schedules the plan (schedule_reduce) and takes the scratch it needs from
// the caching allocator on the current stream, then calls launch_reduce_scheduled.
void launch_reduce(ReduceOp op, ElemType t, const void* x, void* y, const ReducePlan& plan,
                   cudaStream_t s);
// The same with Y stored in `ty`: t, or F32 for F16/BF16 X (the FP32 bias gradients of the
// weight-gradient ops with grad_type = FLOAT: the FP32 accumulator stored without rounding).
void launch_reduce(ReduceOp op, ElemType t, ElemType ty, const void* x, void* y,
                   const ReducePlan& plan, cudaStream_t s);

// How a reduction runs (reduce.cc, host only; tests/cuda/launch_plan_test.cc):
//  - the plan with adjacent dimensions merged where their strides allow (fewer divisions per
//    term: [N, S, D] summed over N and S is one reduced dimension of N·S);
//  - rows: a block per output, its threads striding over the terms (coalesced when the innermost
//    reduced dimension is contiguous: softmax-like rows, a conv bias's H·W);
//  - columns: when the innermost kept dimension is contiguous (a bias gradient [M, D] -> [D]),
//    a block of 32 x 8 threads takes 32 neighbouring outputs, so a warp reads 32 neighbouring
//    elements, and 8 lanes of terms each;
//  - splits (launch.h split_reduction): chunks of the terms over blockIdx.y when the outputs
//    alone give too few blocks, partials in FP32 scratch combined in chunk order by a second
//    kernel. LogSumExp (its max shift is per output) always runs as rows in one chunk.
struct ReduceSchedule {
  ReducePlan plan;
  bool columns = false;
  int64_t splits = 1, chunk = 0;
  int64_t scratch_floats() const { return splits > 1 ? splits * plan.outputs : 0; }
};
ReduceSchedule schedule_reduce(ReduceOp op, const ReducePlan& plan);
// Runs a schedule; `scratch` holds schedule.scratch_floats() floats (may be null when 0).
void launch_reduce_scheduled(ReduceOp op, ElemType t, ElemType ty, const void* x, void* y,
                             const ReduceSchedule& schedule, float* scratch, cudaStream_t s);

// ReduceXYGrad, the gradient of the reductions whose dX needs X and Y (formulas and tie rules in
// runtime/cpu/kernels/grad_reduce.cc), in two launches:
//  1. Max, Min, Prod only: per output k (the plan of reducing X, as launch_reduce), count[k] =
//     #{i : X[i] = Y[k]} (Max/Min ties) or #{i : X[i] = 0} (Prod), and nonzero_prod[k] = Π of
//     the nonzero X[i] (Prod), in FP32 (counts exact below 2^24 per output).
//  2. dX[i] = f(X[i], Y[k], dY[k], count[k], nonzero_prod[k]) with k the offset of i under `ix`
//     (X's shape indexing Y's keepdims shape, one operand), in float, one rounding.
enum class XYGrad : int { Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };
void launch_reduce_xy_stats(XYGrad kind, ElemType t, const void* x, const void* y, float* count,
                            float* nonzero_prod, const ReducePlan& plan, cudaStream_t s);
void launch_reduce_xy_grad(XYGrad kind, ElemType t, const void* dy, const void* x, const void* y,
                           const float* count, const float* nonzero_prod, void* dx, int64_t n,
                           const BroadcastIndex& ix, cudaStream_t s);

// Hardmax along the middle axis: 1 at the first maximum, 0 elsewhere.
void launch_hardmax(ElemType t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner,
                    cudaStream_t s);
// CumSum along the middle axis (FP32 running sum): y_j = Σ_{k ≤ j} x_k, or k < j (exclusive),
// summed from the end (reverse).
void launch_cumsum(ElemType t, const void* x, void* y, int64_t outer, int64_t len, int64_t inner,
                   bool exclusive, bool reverse, cudaStream_t s);

// ArgMax / ArgMin along the middle axis of [outer, len, inner] into int64 [outer, inner]; ties go
// to the first index, or the last with select_last.
void launch_arg_reduce(ElemType t, bool max, bool select_last, const void* x, int64_t* y,
                       int64_t outer, int64_t len, int64_t inner, cudaStream_t s);

}  // namespace oat::cuda
