// Movement gradients on CUDA (internal domain), as runtime/cpu/kernels/grad_movement.cc:
//   SliceGrad(dY, shape(X), starts, ends, [axes], [steps]) -> dX: dX = 0, dY written into the
//     sliced positions (one-to-one, a strided scatter)
//   ConcatGrad(dY, shape(X_0), .., shape(X_n-1)) -> dX_k: the k-th block of dY along axis (row copies)
//   TileGrad(dY, shape(X)) -> dX: Σ over tiles, dY viewed as [r0, d0, r1, d1, ...] and reduced
//     over the r_k (FP32 accumulation)
//   DropoutGrad(dY, mask, [ratio], [training_mode]) -> dX: dY ⊙ mask / (1 − ratio) in training
//     with ratio > 0, dY otherwise
//   GatherGrad(dY, shape(X), indices) -> dX: scatter-add into FP32 (embedding gradients)
//   GatherElementsGrad(dY, shape(X), indices) -> dX: dX = 0; dX[.., idx[p], ..] += dY[p],
//     scatter-add into FP32 (atomics)
#include <cstdint>

#include "runtime/cpu/broadcast.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/movement_impl.h"
#include "runtime/cuda/kernels/reduce_impl.h"
#include "runtime/cuda/kernels/slice_view.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

void slice_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Shape xs = shape_input(ctx, 1);
  const Node& n = ctx.node();
  std::vector<int64_t> starts = n.attr_ints("starts"), ends = n.attr_ints("ends"),
                       axes = n.attr_ints("axes"), steps;
  if (ctx.has_input(2)) {
    starts = host_input(ctx, 2).to_int_vector();
    ends = host_input(ctx, 3).to_int_vector();
    axes = ctx.has_input(4) ? host_input(ctx, 4).to_int_vector() : std::vector<int64_t>{};
    if (ctx.has_input(5)) steps = host_input(ctx, 5).to_int_vector();
  }
  const SliceView v = slice_view(ctx, xs, starts, ends, axes, steps);
  if (v.shape != dy.shape())
    ctx.fail(cat("dY ", shape_str(dy.shape()), " is not the slice shape ", shape_str(v.shape)));
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
  const cudaStream_t s = stream_of(ctx);
  if (dx.nbytes()) CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, dx.nbytes(), s));
  require_cuda_rank(ctx, v.shape.size());
  const BroadcastIndex ix = make_strided_index(v.shape, {v.strides}, "SliceGrad");
  const size_t es = dtype_size(dy.dtype());
  launch_strided_scatter(static_cast<int>(es), dy.raw_data(),
                         static_cast<char*>(dx.raw_data()) + v.base * static_cast<int64_t>(es),
                         dy.numel(), ix, s);
}

void concat_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const int r = dy.rank();
  const int axis = norm_axis(ctx, ctx.node().attr_int("axis", 0), r);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dy.shape()[d];
  for (int d = axis + 1; d < r; ++d) inner *= dy.shape()[d];
  const int64_t es = static_cast<int64_t>(dtype_size(dy.dtype()));
  const int64_t pitch = dy.shape()[axis] * inner * es;
  int64_t offset = 0, total = 0;
  for (int k = 0; k + 1 < ctx.num_inputs(); ++k) {
    const Shape xs = shape_input(ctx, k + 1);
    if (static_cast<int>(xs.size()) != r)
      ctx.fail(cat("shape of input ", k, " ", shape_str(xs), " does not match dY ",
                   shape_str(dy.shape())));
    total += xs[axis];
    const int64_t width = xs[axis] * inner * es;
    if (ctx.output_requested(k)) {
      Tensor& dx = ctx.allocate_output(k, dy.dtype(), xs);
      copy_rows(ctx, dx.raw_data(), width, static_cast<const char*>(dy.raw_data()) + offset, pitch,
                width, outer);
    }
    offset += width;
  }
  if (total != dy.shape()[axis])
    ctx.fail(cat("the inputs' sizes along axis ", axis, " add to ", total, ", dY has ",
                 dy.shape()[axis]));
}

void tile_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Shape xs = shape_input(ctx, 1);
  if (static_cast<int>(xs.size()) != dy.rank())
    ctx.fail(cat("dY ", shape_str(dy.shape()), " and X ", shape_str(xs), " differ in rank"));
  const auto st = cpu::contiguous_strides(dy.shape());
  ReducePlan p;
  p.outputs = p.count = 1;
  for (int d = 0; d < dy.rank(); ++d) {
    // As the CPU kernel: an empty X dim tiles to an empty dY dim (dX is then empty).
    if (xs[d] == 0 ? dy.shape()[d] != 0 : dy.shape()[d] % xs[d] != 0)
      ctx.fail(cat("dY ", shape_str(dy.shape()), " is not a tiling of ", shape_str(xs)));
    if (xs[d] == 0) continue;
    const int64_t reps = dy.shape()[d] / xs[d];
    if (reps > 1) {
      if (p.red_rank == kMaxRank) ctx.fail("too many tiled dimensions for the CUDA kernel");
      p.red_dims[p.red_rank] = reps;
      p.red_strides[p.red_rank++] = xs[d] * st[d];
      p.count *= reps;
    }
    if (xs[d] > 1) {
      if (p.kept_rank == kMaxRank) ctx.fail("too many dimensions for the CUDA kernel");
      p.kept_dims[p.kept_rank] = xs[d];
      p.kept_strides[p.kept_rank++] = st[d];
      p.outputs *= xs[d];
    }
  }
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
  if (dx.numel() == 0) return;
  if (dy.numel() == 0) {  // repeats of 0: X was tiled into nothing, dX = 0 (the plan would read dY)
    CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, dx.nbytes(), stream_of(ctx)));
    return;
  }
  launch_reduce(ReduceOp::Sum, elem_type(dy.dtype()), dy.raw_data(), dx.raw_data(), p,
                stream_of(ctx));
}

void dropout_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Node& n = ctx.node();
  double ratio = n.attr_float("ratio", 0.5f);
  bool training = n.attr_int("training", 1) != 0;
  if (ctx.has_input(2)) ratio = host_input(ctx, 2).item_as_double();
  if (ctx.has_input(3)) training = host_input(ctx, 3).item_as_int() != 0;
  if (!training || ratio <= 0.0) {
    ctx.set_output(0, dy);
    return;
  }
  const Tensor& mask = ctx.input(1);
  if (mask.dtype() != DType::Bool || mask.shape() != dy.shape())
    ctx.fail(cat("mask must be bool ", shape_str(dy.shape()), ", got ", dtype_name(mask.dtype()),
                 " ", shape_str(mask.shape())));
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.shape());
  launch_masked_scale(elem_type(dy.dtype()), dy.raw_data(), mask.data<bool>(), dx.raw_data(),
                      dx.numel(), static_cast<float>(1.0 / (1.0 - ratio)), stream_of(ctx));
}

// GatherGrad(dY, shape(X), indices) attr axis: dX = 0; dX[o, idx[j], i] += dY[o, j, i], summed
// in FP32 in j order without atomics (gather_grad_impl.cu): deterministic, the CPU's sum exactly.
void gather_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Shape xs = shape_input(ctx, 1);
  const Tensor& idx = ctx.input(2);
  if (idx.dtype() != DType::I64 && idx.dtype() != DType::I32)
    ctx.fail(cat("indices must be int64 or int32, got ", dtype_name(idx.dtype())));
  const int r = static_cast<int>(xs.size());
  const int axis = norm_axis(ctx, ctx.node().attr_int("axis", 0), r);
  const int64_t dim = xs[axis];
  Shape want(xs.begin(), xs.begin() + axis);
  want.insert(want.end(), idx.shape().begin(), idx.shape().end());
  want.insert(want.end(), xs.begin() + axis + 1, xs.end());
  if (dy.shape() != want)
    ctx.fail(cat("dY ", shape_str(dy.shape()), " does not match the gather shape ", shape_str(want)));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= xs[d];
  for (int d = axis + 1; d < r; ++d) inner *= xs[d];
  CudaContext& cc = cuda_context(ctx);
  Tensor dev_idx = idx;
  if (idx.device() == Device::CPU) {
    for (int64_t i = 0; i < idx.numel(); ++i) {
      const int64_t k = idx.item_as_int(i);
      if (k < -dim || k >= dim)
        ctx.fail(cat("index ", k, " is out of range for axis ", axis, " of ", shape_str(xs)));
    }
    dev_idx = cc.upload(idx);
  }
  if (idx.numel() > INT32_MAX || dim >= static_cast<int64_t>(UINT32_MAX))
    ctx.fail(cat("the CUDA GatherGrad sorts at most 2^31 - 1 indices into an axis below 2^32 - 1; "
                 "got ", idx.numel(), " indices, axis ", axis, " of ", shape_str(xs)));
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
  Tensor acc = dy.dtype() == DType::F32 ? dx : Tensor(DType::F32, xs, Device::CUDA);
  if (acc.nbytes()) CUDA_CHECK(cudaMemsetAsync(acc.raw_data(), 0, acc.nbytes(), cc.stream()));
  const size_t bytes = idx.numel() > 0 ? gather_grad_scratch_bytes(idx.numel()) : 0;
  Tensor scratch = cc.scratch(bytes);
  launch_gather_grad(elem_type(dy.dtype()), dy.raw_data(), dev_idx.raw_data(),
                     idx.dtype() == DType::I64, acc.data<float>(), outer, dim, inner, idx.numel(),
                     scratch.raw_data(), bytes, cc.stream());
  if (dy.dtype() != DType::F32)
    launch_cast(ElemType::F32, elem_type(dy.dtype()), acc.raw_data(), dx.raw_data(), dx.numel(),
                cc.stream());
}

// GatherElementsGrad(dY, shape(X), indices) attr axis: dX = 0; dX[c with c_axis = idx[c]] +=
// dY[c], summed in FP32 with atomics (order-dependent in the last bits, unlike the CPU's
// sequential sum). Indices are read on the host and checked there when they come from the host.
void gather_elements_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Shape xs = shape_input(ctx, 1);
  const Tensor& idx = ctx.input(2);
  const GatherElementsPlan plan =
      gather_elements_plan(ctx, xs, idx, ctx.node().attr_int("axis", 0));
  if (dy.shape() != idx.shape())
    ctx.fail(cat("gradient shape ", shape_str(dy.shape()), " does not match the indices ",
                 shape_str(idx.shape())));
  CudaContext& cc = cuda_context(ctx);
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
  if (dx.numel() == 0) return;
  Tensor acc = dy.dtype() == DType::F32 ? dx : Tensor(DType::F32, xs, Device::CUDA);
  CUDA_CHECK(cudaMemsetAsync(acc.raw_data(), 0, acc.nbytes(), cc.stream()));
  if (dy.numel() > 0) {
    const Tensor dev_idx = idx.device() == Device::CPU ? cc.upload(idx) : idx;
    launch_gather_elements_grad(elem_type(dy.dtype()), dy.raw_data(), dev_idx.raw_data(),
                                idx.dtype() == DType::I64, acc.data<float>(), dy.numel(), plan,
                                cc.stream());
  }
  if (dy.dtype() != DType::F32)
    launch_cast(ElemType::F32, elem_type(dy.dtype()), acc.raw_data(), dx.raw_data(), dx.numel(),
                cc.stream());
}

}  // namespace

void register_grad_movement(KernelRegistry& r) {
  r.add(OpId::SliceGrad, Device::CUDA, kAnyDType, function_kernel(slice_grad));
  r.add(OpId::ConcatGrad, Device::CUDA, kAnyDType, function_kernel(concat_grad));
  add_floats(r, OpId::TileGrad, function_kernel(tile_grad));
  add_floats(r, OpId::DropoutGrad, function_kernel(dropout_grad));
  add_floats(r, OpId::GatherGrad, function_kernel(gather_grad));
  add_floats(r, OpId::GatherElementsGrad, function_kernel(gather_elements_grad));
}

}  // namespace oat::cuda
