// Reductions on CUDA (reduce_impl.cu): ReduceSum Mean Max Min Prod SumSquare L1 L2 LogSum
// LogSumExp, accumulating in FP32 for F32/F16/BF16 storage.
// Axes: the 'axes' attribute before opset 18 (ReduceSum: before 13), the optional input 1 after;
// none given reduces every axis, unless noop_with_empty_axes = 1 (then Y = X). keepdims (default
// 1) keeps reduced axes as 1s.
#include <algorithm>

#include "runtime/cpu/broadcast.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/reduce_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

ReducePlan reduce_plan(const Shape& xs, const std::vector<bool>& reduced) {
  const auto strides = cpu::contiguous_strides(xs);
  ReducePlan p;
  p.outputs = 1;
  p.count = 1;
  for (size_t d = 0; d < xs.size(); ++d) {
    const int64_t dim = xs[d];
    if (dim == 1) continue;
    if (reduced[d]) {
      if (p.red_rank == kMaxRank) throw Error("too many reduced dimensions for the CUDA kernel");
      p.red_dims[p.red_rank] = dim;
      p.red_strides[p.red_rank++] = strides[d];
      p.count *= dim;
    } else {
      if (p.kept_rank == kMaxRank) throw Error("too many kept dimensions for the CUDA kernel");
      p.kept_dims[p.kept_rank] = dim;
      p.kept_strides[p.kept_rank++] = strides[d];
      p.outputs *= dim;
    }
  }
  return p;
}

ReducePlan make_reduce_plan(const KernelContext& ctx, const Shape& xs,
                            const std::vector<bool>& reduced) {
  try {
    return reduce_plan(xs, reduced);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
}

namespace {

// Merges dimension d into d + 1 wherever stride[d] = dim[d + 1]·stride[d + 1] (the offset
// i_d·s_d + i_{d+1}·s_{d+1} is then (i_d·dim_{d+1} + i_{d+1})·s_{d+1}); row-major order is kept.
void merge_dims(int& rank, int64_t* dims, int64_t* strides) {
  int out = 0;
  for (int d = 0; d < rank; ++d) {
    if (out > 0 && strides[out - 1] == dims[d] * strides[d]) {
      dims[out - 1] *= dims[d];
      strides[out - 1] = strides[d];
    } else {
      dims[out] = dims[d];
      strides[out++] = strides[d];
    }
  }
  for (int d = out; d < rank; ++d) dims[d] = strides[d] = 0;
  rank = out;
}

}  // namespace

ReduceSchedule schedule_reduce(ReduceOp op, const ReducePlan& plan) {
  ReduceSchedule sc;
  sc.plan = plan;
  ReducePlan& p = sc.plan;
  merge_dims(p.kept_rank, p.kept_dims, p.kept_strides);
  merge_dims(p.red_rank, p.red_dims, p.red_strides);
  const bool lse = op == ReduceOp::LogSumExp;
  sc.columns = !lse && p.kept_rank > 0 && p.kept_strides[p.kept_rank - 1] == 1;
  ReductionSplit split{1, p.count};
  if (!lse && p.outputs > 0) {
    if (sc.columns) {
      // A lane (of 8) sums at least 8 terms of each chunk.
      const int64_t w = p.kept_dims[p.kept_rank - 1];
      split = split_reduction((p.outputs / w) * ((w + 31) / 32), p.count, 64);
    } else {
      split = split_reduction(p.outputs, p.count, 4096);  // 16 terms per thread of 256
    }
  }
  sc.splits = split.splits;
  sc.chunk = split.chunk;
  return sc;
}

void launch_reduce(ReduceOp op, ElemType t, ElemType ty, const void* x, void* y,
                   const ReducePlan& plan, cudaStream_t s) {
  if (plan.outputs == 0) return;
  const ReduceSchedule sc = schedule_reduce(op, plan);
  // Scratch from the caching allocator on this stream: freed here, reused only by work queued
  // after these kernels.
  Tensor scratch;
  if (sc.scratch_floats() > 0) scratch = Tensor(DType::F32, {sc.scratch_floats()}, Device::CUDA);
  launch_reduce_scheduled(op, t, ty, x, y, sc, scratch.defined() ? scratch.data<float>() : nullptr,
                          s);
}

void launch_reduce(ReduceOp op, ElemType t, const void* x, void* y, const ReducePlan& plan,
                   cudaStream_t s) {
  launch_reduce(op, t, t, x, y, plan, s);
}

namespace {

template <ReduceOp Op>
void reduce(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Node& n = ctx.node();
  const int r = x.rank();
  const int64_t axes_input_from = n.op == OpId::ReduceSum ? 13 : 18;
  std::vector<int64_t> axes;
  if (n.opset < axes_input_from) axes = n.attr_ints("axes");
  else if (ctx.has_input(1)) axes = host_input(ctx, 1).to_int_vector();
  const bool keep = n.attr_int("keepdims", 1) != 0;
  if (axes.empty() && n.attr_int("noop_with_empty_axes", 0) != 0) {
    ctx.set_output(0, x);
    return;
  }
  std::vector<bool> red(r, axes.empty());
  for (int64_t a : axes) {
    if (a < -r || a >= r) ctx.fail(cat("axis ", a, " is out of range for ", shape_str(x.shape())));
    red[a < 0 ? a + r : a] = true;
  }
  Shape out;
  for (int d = 0; d < r; ++d) {
    if (!red[d]) out.push_back(x.shape()[d]);
    else if (keep) out.push_back(1);
  }
  const ReducePlan p = make_reduce_plan(ctx, x.shape(), red);
  if (p.outputs > 0 && x.numel() == 0 && p.count == 0 &&
      (Op == ReduceOp::Max || Op == ReduceOp::Min))
    ctx.fail(cat("cannot take the ", Op == ReduceOp::Max ? "max" : "min", " of an empty axis of ",
                 shape_str(x.shape())));
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  launch_reduce(Op, elem_type(x.dtype()), x.raw_data(), y.raw_data(), p, stream_of(ctx));
}

// ArgMax / ArgMin(X), attrs axis (0), keepdims (1), select_last_index (0): int64 indices.
template <bool Max>
void arg_reduce(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Node& n = ctx.node();
  const int r = x.rank();
  int64_t axis = n.attr_int("axis", 0);
  if (axis < -r || axis >= r) ctx.fail(cat("axis ", axis, " is out of range for ", shape_str(x.shape())));
  if (axis < 0) axis += r;
  const int64_t len = x.shape()[axis];
  if (len == 0) ctx.fail(cat("cannot take the arg", Max ? "max" : "min", " of an empty axis"));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int d = static_cast<int>(axis) + 1; d < r; ++d) inner *= x.shape()[d];
  Shape out = x.shape();
  if (n.attr_int("keepdims", 1) != 0) out[axis] = 1;
  else out.erase(out.begin() + axis);
  Tensor& y = ctx.allocate_output(0, DType::I64, out);
  launch_arg_reduce(elem_type(x.dtype()), Max, n.attr_int("select_last_index", 0) != 0,
                    x.raw_data(), y.data<int64_t>(), outer, len, inner, stream_of(ctx));
}

// CumSum(X, axis) attrs exclusive, reverse: running sums along the axis, FP32 accumulator.
// CumSumGrad(dY, axis), the forward's attributes: CumSum(dY) with the opposite 'reverse'
// (dX_j = Σ_{k ≥ j} dY_k, as runtime/cpu/kernels/reduce.cc).
void cumsum(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int r = x.rank();
  const Tensor a = host_input(ctx, 1);
  if (a.numel() != 1) ctx.fail(cat("axis must be a scalar, got ", shape_str(a.shape())));
  int64_t axis = a.item_as_int();
  if (axis < -r || axis >= r) ctx.fail(cat("axis ", axis, " is out of range for ", shape_str(x.shape())));
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int d = static_cast<int>(axis) + 1; d < r; ++d) inner *= x.shape()[d];
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  const Node& n = ctx.node();
  launch_cumsum(elem_type(x.dtype()), x.raw_data(), y.raw_data(), outer, x.shape()[axis], inner,
                n.attr_int("exclusive", 0) != 0,
                (n.attr_int("reverse", 0) != 0) != (n.op == OpId::CumSumGrad), stream_of(ctx));
}

}  // namespace

void register_reduce(KernelRegistry& r) {
  add_floats(r, OpId::ReduceSum, function_kernel(reduce<ReduceOp::Sum>));
  add_floats(r, OpId::ReduceMean, function_kernel(reduce<ReduceOp::Mean>));
  add_floats(r, OpId::ReduceMax, function_kernel(reduce<ReduceOp::Max>));
  add_floats(r, OpId::ReduceMin, function_kernel(reduce<ReduceOp::Min>));
  add_floats(r, OpId::ReduceProd, function_kernel(reduce<ReduceOp::Prod>));
  add_floats(r, OpId::ReduceSumSquare, function_kernel(reduce<ReduceOp::SumSquare>));
  add_floats(r, OpId::ReduceL1, function_kernel(reduce<ReduceOp::L1>));
  add_floats(r, OpId::ReduceL2, function_kernel(reduce<ReduceOp::L2>));
  add_floats(r, OpId::ReduceLogSum, function_kernel(reduce<ReduceOp::LogSum>));
  add_floats(r, OpId::ReduceLogSumExp, function_kernel(reduce<ReduceOp::LogSumExp>));
  add_floats(r, OpId::ArgMax, function_kernel(arg_reduce<true>));
  add_floats(r, OpId::CumSum, function_kernel(cumsum));
  add_floats(r, OpId::CumSumGrad, function_kernel(cumsum));
  add_floats(r, OpId::ArgMin, function_kernel(arg_reduce<false>));
}

}  // namespace oat::cuda
