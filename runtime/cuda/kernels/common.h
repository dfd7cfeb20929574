// Helpers shared by the .cc halves of the CUDA kernels.
#pragma once

#include <vector>

#include "runtime/cuda/context.h"
#include "runtime/cuda/kernels/launch.h"
#include "runtime/cuda/kernels/reduce_impl.h"
#include "runtime/registry.h"

namespace oat::cuda {

// The device's element type of a dtype; the wider integer types (I16, U16, U32, U64) have none:
// their nodes run on the host (CudaContext::placement), so reaching here with one is a bug.
inline ElemType elem_type(DType t) {
  if (t == DType::Undefined || !has_device_type(t))
    throw Error(cat("no CUDA element type for ", dtype_name(t), " (such nodes run on the host)"));
  return static_cast<ElemType>(static_cast<int>(t));
}

// The executor's stream for this kernel.
inline cudaStream_t stream_of(const KernelContext& ctx) { return cuda_context(ctx).stream(); }

// Input i as a shape (an I64 vector read on the host, as SliceGrad's shape(X)); fails on a
// negative dimension.
Shape shape_input(const KernelContext& ctx, int i);

// Fails "rank R is above the CUDA kernels' 8" when a tensor's rank exceeds the index structs'
// kMaxRank.
void require_cuda_rank(const KernelContext& ctx, size_t rank);

// Indexes `ins` (each broadcastable to `out`) over `out`, dimensions of size 1 dropped and
// adjacent dimensions merged where every operand is contiguous across them. At most 3 operands.
// Throws Error when more than kMaxRank dimensions remain.
BroadcastIndex make_broadcast_index(const Shape& out, const std::vector<Shape>& ins);

// The same over explicit per-operand element strides of `out`'s dims (a transpose's or a slice's
// view; strides may be 0 or negative): size-1 dims dropped, contiguous runs merged. `what` names
// the caller in the rank error.
BroadcastIndex make_strided_index(const Shape& out, const std::vector<std::vector<int64_t>>& strides,
                                  const char* what);

// Sets ix.index32 and ix.divs: 32-bit indexing when the element count and each of the first
// `nops` operands' offsets (Σ_d (dims[d] − 1)·|strides|) fit in int32. The constructors above
// call it; a BroadcastIndex filled by hand without it keeps 64-bit indexing.
void finish_index(BroadcastIndex& ix, int nops);

// out = g summed to out's shape (which must broadcast to g's): over g's extra leading dims and
// wherever out has a 1; FP32 accumulation (grad_reduce.cc). out is in g's dtype, or F32 for an
// F16/BF16 g (the FP32 accumulator stored unrounded: GemmGrad's dC with grad_type = FLOAT).
void sum_to_shape_into(const KernelContext& ctx, const Tensor& g, Tensor& out);

// The plan of reducing a contiguous X of shape xs over the axes flagged in `reduced` (one output
// per kept index, in row-major order of the kept dims; reduce.cc). Fails when more than kMaxRank
// kept or reduced dimensions of size > 1 remain.
ReducePlan make_reduce_plan(const KernelContext& ctx, const Shape& xs,
                            const std::vector<bool>& reduced);
// The same without a kernel context (tests): throws Error with that message.
ReducePlan reduce_plan(const Shape& xs, const std::vector<bool>& reduced);

// Registers a CUDA kernel for F32, F16 and BF16 (the set most CUDA kernels take).
inline void add_floats(KernelRegistry& r, OpId op, const KernelFactory& f) {
  r.add(op, Device::CUDA, {DType::F32, DType::F16, DType::BF16}, f);
}

}  // namespace oat::cuda
