// Data movement on CUDA: Transpose, Expand, Slice (strided reads through the broadcast-copy
// kernel: out[i] = x[base + Σ idx_d·stride_d]), Concat and Split (row copies with
// cudaMemcpy2DAsync: each input is a [outer, len·inner] block of the [outer, total·inner] output),
// Gather and GatherElements (movement_impl.cu), Tile, DepthToSpace and SpaceToDepth (strided
// reads), Trilu (movement_impl.cu). Every dtype: only bytes move.
#include <algorithm>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/trilu_k.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/movement_impl.h"
#include "runtime/cuda/kernels/slice_view.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

int norm_axis(const KernelContext& ctx, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) ctx.fail(cat("axis ", axis, " is out of range for rank ", rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

GatherElementsPlan gather_elements_plan(const KernelContext& ctx, const Shape& xs,
                                        const Tensor& idx, int64_t axis_attr) {
  if (idx.dtype() != DType::I64 && idx.dtype() != DType::I32)
    ctx.fail(cat("indices must be int64 or int32, got ", dtype_name(idx.dtype())));
  const int r = static_cast<int>(xs.size());
  if (r == 0 || idx.rank() != r)
    ctx.fail(cat("indices ", shape_str(idx.shape()), " must have the rank of data ", shape_str(xs),
                 " (at least 1)"));
  require_cuda_rank(ctx, xs.size());
  const int axis = norm_axis(ctx, axis_attr, r);
  for (int d = 0; d < r; ++d)
    if (d != axis && idx.shape()[d] > xs[d])
      ctx.fail(
          cat("indices ", shape_str(idx.shape()), " exceed data ", shape_str(xs), " on axis ", d));
  const int64_t n = xs[axis];
  if (idx.device() == Device::CPU)
    for (int64_t i = 0; i < idx.numel(); ++i) {
      const int64_t k = idx.item_as_int(i);
      if (k < -n || k >= n)
        ctx.fail(cat("index ", k, " is out of range for axis ", axis, " of data ", shape_str(xs),
                     " (size ", n, ")"));
    }
  GatherElementsPlan p;
  p.rank = r;
  p.axis = axis;
  p.axis_dim = n;
  const auto st = cpu::contiguous_strides(xs);
  for (int d = 0; d < r; ++d) {
    p.idx_dims[d] = idx.shape()[d];
    p.x_strides[d] = st[d];
  }
  return p;
}

namespace {

// out[i] = x[base + Σ idx_d·strides_d] over `out` (strides in elements, may be 0 or negative).
void strided_copy(KernelContext& ctx, const Tensor& x, int64_t base, const Shape& out,
                  const std::vector<int64_t>& strides, Tensor& y) {
  require_cuda_rank(ctx, out.size());
  const BroadcastIndex ix = make_strided_index(out, {strides}, "strided copy");
  const size_t es = dtype_size(x.dtype());
  launch_broadcast_copy(static_cast<int>(es), static_cast<const char*>(x.raw_data()) + base * es,
                        y.raw_data(), y.numel(), ix, stream_of(ctx));
}

// Transpose: Y[i_0..i_r) = X[i_perm⁻¹...]: output dim d reads input dim perm[d]
// (default perm: reversed).
void transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int r = x.rank();
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (perm.empty())
    for (int d = r - 1; d >= 0; --d) perm.push_back(d);
  if (static_cast<int>(perm.size()) != r)
    ctx.fail(cat("perm ", shape_str(perm), " does not match input ", shape_str(x.shape())));
  const auto in_strides = cpu::contiguous_strides(x.shape());
  Shape out(r);
  std::vector<int64_t> strides(r);
  std::vector<bool> seen(r, false);
  for (int d = 0; d < r; ++d) {
    const int p = norm_axis(ctx, perm[d], r);
    if (seen[p]) ctx.fail(cat("perm ", shape_str(perm), " repeats axis ", p));
    seen[p] = true;
    out[d] = x.shape()[p];
    strides[d] = in_strides[p];
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  strided_copy(ctx, x, 0, out, strides, y);
}

// Expand(X, shape): X broadcast to broadcast(X.shape, shape).
void expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape want = host_input(ctx, 1).to_int_vector();
  const Shape out = cpu::broadcast_shapes({x.shape(), want});
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  launch_broadcast_copy(static_cast<int>(dtype_size(x.dtype())), x.raw_data(), y.raw_data(),
                        y.numel(), make_broadcast_index(out, {x.shape()}), stream_of(ctx));
}

}  // namespace

// Slice geometry: per axis, negative starts/ends count from the end; step > 0 clamps both to
// [0, dim], step < 0 to [-1, dim-1]; the count is max(0, ⌈(end − start) / step⌉).
SliceView slice_view(const KernelContext& ctx, const Shape& x, std::vector<int64_t> starts,
                     std::vector<int64_t> ends, std::vector<int64_t> axes,
                     std::vector<int64_t> steps) {
  const int r = static_cast<int>(x.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps must have the same length");
  const auto in_strides = cpu::contiguous_strides(x);
  SliceView v;
  v.shape = x;
  v.strides = in_strides;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int a = norm_axis(ctx, axes[i], r);
    const int64_t dim = x[a], step = steps[i];
    if (step == 0) ctx.fail("slice step must not be 0");
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    const int64_t count = step > 0 ? std::max<int64_t>(0, (e - s + step - 1) / step)
                                   : std::max<int64_t>(0, (s - e - step - 1) / -step);
    v.shape[a] = count;
    v.strides[a] = in_strides[a] * step;
    if (count > 0) v.base += s * in_strides[a];
  }
  return v;
}

std::vector<RowCopy> plan_row_copies(int64_t dst_pitch, int64_t src_pitch, int64_t width,
                                     int64_t rows, int64_t max_pitch) {
  if (width <= 0 || rows <= 0) return {};
  if (rows == 1 || (dst_pitch == width && src_pitch == width)) return {{0, 0, width * rows, 1}};
  if (dst_pitch <= max_pitch && src_pitch <= max_pitch) return {{0, 0, width, rows}};
  std::vector<RowCopy> r;
  r.reserve(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) r.push_back({i * dst_pitch, i * src_pitch, width, 1});
  return r;
}

void copy_rows(const KernelContext& ctx, void* dst, int64_t dst_pitch, const void* src,
               int64_t src_pitch, int64_t width, int64_t rows) {
  const cudaStream_t s = stream_of(ctx);
  for (const RowCopy& c : plan_row_copies(dst_pitch, src_pitch, width, rows)) {
    char* d = static_cast<char*>(dst) + c.dst_offset;
    const char* x = static_cast<const char*>(src) + c.src_offset;
    if (c.rows == 1)
      CUDA_CHECK(cudaMemcpyAsync(d, x, static_cast<size_t>(c.width), cudaMemcpyDeviceToDevice, s));
    else
      CUDA_CHECK(cudaMemcpy2DAsync(d, static_cast<size_t>(dst_pitch), x,
                                   static_cast<size_t>(src_pitch), static_cast<size_t>(c.width),
                                   static_cast<size_t>(c.rows), cudaMemcpyDeviceToDevice, s));
  }
}

namespace {

// Slice(data, starts, ends, axes?, steps?) (attributes before opset 10), a strided read.
void slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Node& n = ctx.node();
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    starts = host_input(ctx, 1).to_int_vector();
    ends = host_input(ctx, 2).to_int_vector();
    if (ctx.has_input(3)) axes = host_input(ctx, 3).to_int_vector();
    if (ctx.has_input(4)) steps = host_input(ctx, 4).to_int_vector();
  }
  const SliceView v = slice_view(ctx, x.shape(), starts, ends, axes, steps);
  Tensor& y = ctx.allocate_output(0, x.dtype(), v.shape);
  strided_copy(ctx, x, v.base, v.shape, v.strides, y);
}

void concat(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const int r = x0.rank();
  const int axis = norm_axis(ctx, ctx.node().attr_int("axis", 0), r);
  Shape out = x0.shape();
  out[axis] = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    bool ok = t.rank() == r && t.dtype() == x0.dtype();
    for (int d = 0; ok && d < r; ++d) ok = d == axis || t.shape()[d] == x0.shape()[d];
    if (!ok)
      ctx.fail(cat("input ", i, " ", dtype_name(t.dtype()), " ", shape_str(t.shape()),
                   " does not match input 0 ", dtype_name(x0.dtype()), " ", shape_str(x0.shape()),
                   " outside axis ", axis));
    out[axis] += t.shape()[axis];
  }
  Tensor& y = ctx.allocate_output(0, x0.dtype(), out);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= out[d];
  for (int d = axis + 1; d < r; ++d) inner *= out[d];
  const int64_t es = static_cast<int64_t>(dtype_size(x0.dtype()));
  const int64_t pitch = out[axis] * inner * es;
  int64_t offset = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    const int64_t width = t.shape()[axis] * inner * es;
    copy_rows(ctx, static_cast<char*>(y.raw_data()) + offset, pitch, t.raw_data(), width, width,
              outer);
    offset += width;
  }
}

// Split(X, split?) -> Y_0..Y_{n-1}: sizes from the 'split' input (opset 13), attribute (before),
// or equal parts (the last smaller when opset 18's num_outputs does not divide the dim).
void split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Node& n = ctx.node();
  const int axis = norm_axis(ctx, n.attr_int("axis", 0), x.rank());
  const int64_t dim = x.shape()[axis];
  const int parts = ctx.num_outputs();
  std::vector<int64_t> sizes;
  if (n.opset >= 13 && ctx.has_input(1)) sizes = host_input(ctx, 1).to_int_vector();
  else if (n.opset < 13) sizes = n.attr_ints("split");
  if (sizes.empty()) {
    const int64_t each = (dim + parts - 1) / parts;
    for (int i = 0; i < parts; ++i) sizes.push_back(std::clamp<int64_t>(dim - each * i, 0, each));
  }
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (static_cast<int>(sizes.size()) != parts || total != dim)
    ctx.fail(cat("split sizes ", shape_str(sizes), " do not cover dim ", dim, " in ", parts,
                 " outputs"));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  const int64_t es = static_cast<int64_t>(dtype_size(x.dtype()));
  int64_t offset = 0;
  for (int i = 0; i < parts; ++i) {
    Shape s = x.shape();
    s[axis] = sizes[i];
    const int64_t width = sizes[i] * inner * es;
    if (ctx.output_requested(i)) {
      Tensor& y = ctx.allocate_output(i, x.dtype(), s);
      copy_rows(ctx, y.raw_data(), width, static_cast<const char*>(x.raw_data()) + offset,
                dim * inner * es, width, outer);
    }
    offset += width;
  }
}

// Gather(X, indices, axis): Y = X[..., indices, ...]; indices checked on the host when they are
// there (constants and feeds), by a device flag (one synchronisation) otherwise, except during a
// CUDA-graph capture: there the indices are the trainer's fixed batch buffers (token ids, checked
// on the host against the table's rows before their upload: train/data/batches.cc) and a flag
// read would make every capture of an embedding model fail, so an out-of-range index is not
// reported (its row is 0), as the loss kernels treat captured targets (README).
void gather(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  if (idx.dtype() != DType::I64 && idx.dtype() != DType::I32)
    ctx.fail(cat("indices must be int64 or int32, got ", dtype_name(idx.dtype())));
  const int axis = norm_axis(ctx, ctx.node().attr_int("axis", 0), x.rank());
  const int64_t dim = x.shape()[axis];
  Shape out(x.shape().begin(), x.shape().begin() + axis);
  out.insert(out.end(), idx.shape().begin(), idx.shape().end());
  out.insert(out.end(), x.shape().begin() + axis + 1, x.shape().end());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  CudaContext& cc = cuda_context(ctx);
  Tensor dev_idx = idx;
  Tensor flag;
  if (idx.device() == Device::CPU) {
    for (int64_t i = 0; i < idx.numel(); ++i) {
      const int64_t k = idx.item_as_int(i);
      if (k < -dim || k >= dim)
        ctx.fail(cat("index ", k, " is out of range for axis ", axis, " of ", shape_str(x.shape())));
    }
    dev_idx = cc.upload(idx);
  } else if (!cc.capturing()) {
    flag = Tensor(DType::I32, {}, Device::CUDA);
    CUDA_CHECK(cudaMemsetAsync(flag.raw_data(), 0, sizeof(int32_t), cc.stream()));
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  launch_gather(static_cast<int>(dtype_size(x.dtype())), x.raw_data(), dev_idx.raw_data(),
                idx.dtype() == DType::I64, y.raw_data(), outer, dim, inner, idx.numel(),
                flag.defined() ? flag.data<int32_t>() : nullptr, cc.stream());
  if (flag.defined() && cc.download(flag).item_as_int() != 0)
    ctx.fail(cat("an index is out of range for axis ", axis, " of ", shape_str(x.shape())));
}

// GatherElements(X, indices, axis): Y[c] = X[c with c_axis = idx[c]], Y has the indices' shape;
// indices checked on the host when they are there, by a device flag (one synchronisation)
// otherwise, not at all during a CUDA-graph capture (as Gather).
void gather_elements(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const GatherElementsPlan plan =
      gather_elements_plan(ctx, x.shape(), idx, ctx.node().attr_int("axis", 0));
  CudaContext& cc = cuda_context(ctx);
  Tensor& y = ctx.allocate_output(0, x.dtype(), idx.shape());
  if (y.numel() == 0) return;
  Tensor dev_idx = idx, flag;
  if (idx.device() == Device::CPU) {
    dev_idx = cc.upload(idx);
  } else if (!cc.capturing()) {
    flag = Tensor(DType::I32, {}, Device::CUDA);
    CUDA_CHECK(cudaMemsetAsync(flag.raw_data(), 0, sizeof(int32_t), cc.stream()));
  }
  launch_gather_elements(static_cast<int>(dtype_size(x.dtype())), x.raw_data(), dev_idx.raw_data(),
                         idx.dtype() == DType::I64, y.raw_data(), y.numel(), plan,
                         flag.defined() ? flag.data<int32_t>() : nullptr, cc.stream());
  if (flag.defined() && cc.download(flag).item_as_int() != 0)
    ctx.fail(cat("an index is out of range for axis ", plan.axis, " of data ",
                 shape_str(x.shape()), " (size ", plan.axis_dim, ")"));
}

// Tile(X, repeats): Y viewed as [r0, d0, r1, d1, ...] reads X with stride 0 along each r_k
// (dimensions repeated once are not split).
void tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> reps = host_input(ctx, 1).to_int_vector();
  if (static_cast<int>(reps.size()) != x.rank())
    ctx.fail(cat("repeats ", shape_str(reps), " must have one value per dim of ", shape_str(x.shape())));
  const auto in_strides = cpu::contiguous_strides(x.shape());
  Shape out, view;
  std::vector<int64_t> strides;
  for (int d = 0; d < x.rank(); ++d) {
    if (reps[d] < 0) ctx.fail(cat("repeats ", shape_str(reps), " has a negative value"));
    out.push_back(x.shape()[d] * reps[d]);
    if (reps[d] != 1) {
      view.push_back(reps[d]);
      strides.push_back(0);
    }
    view.push_back(x.shape()[d]);
    strides.push_back(in_strides[d]);
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  strided_copy(ctx, x, 0, view, strides, y);
}

// DepthToSpace (blocksize b; DCR: channels as [b, b, C'], CRD: [C', b, b]) and SpaceToDepth as
// one strided read each: Y [N, C', H·b, W·b] is [N, C', H, b, W, b] over X's view.
void depth_to_space(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = ctx.node().attr_int("blocksize", 0);
  if (x.rank() != 4 || b < 1 || x.dim(1) % (b * b) != 0)
    ctx.fail(cat("needs X [N, C, H, W] with C divisible by blocksize² (", b, "), got ",
                 shape_str(x.shape())));
  const int64_t N = x.dim(0), C = x.dim(1) / (b * b), H = x.dim(2), W = x.dim(3), hw = H * W;
  const bool crd = ctx.node().attr_string("mode", "DCR") == "CRD";
  // strides of (b1, b2, c') in X's channel dimension
  const int64_t sb1 = crd ? b * hw : b * C * hw, sb2 = crd ? hw : C * hw, sc = crd ? b * b * hw : hw;
  Tensor& y = ctx.allocate_output(0, x.dtype(), {N, C, H * b, W * b});
  strided_copy(ctx, x, 0, {N, C, H, b, W, b}, {x.dim(1) * hw, sc, W, sb1, 1, sb2}, y);
}

void space_to_depth(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = ctx.node().attr_int("blocksize", 0);
  if (x.rank() != 4 || b < 1 || x.dim(2) % b != 0 || x.dim(3) % b != 0)
    ctx.fail(cat("needs X [N, C, H, W] with H and W divisible by blocksize (", b, "), got ",
                 shape_str(x.shape())));
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  Tensor& y = ctx.allocate_output(0, x.dtype(), {N, C * b * b, H / b, W / b});
  // Y [N, (b1, b2, C), H', W'] reads X[n, c, h'·b + b1, w'·b + b2].
  strided_copy(ctx, x, 0, {N, b, b, C, H / b, W / b}, {C * H * W, W, 1, H * W, b * W, b}, y);
}

// Trilu(X, k): the checks of the CPU kernel (trilu_k.h), k read on the host.
void trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor k;
  if (ctx.has_input(1)) k = host_input(ctx, 1);
  const int64_t kv = cpu::trilu_k(ctx, k.defined() ? &k : nullptr, x.shape());
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  launch_trilu(static_cast<int>(dtype_size(x.dtype())), x.raw_data(), y.raw_data(), y.numel(),
               x.dim(-2), x.dim(-1), kv, ctx.node().attr_int("upper", 1) != 0, stream_of(ctx));
}

}  // namespace

void register_movement(KernelRegistry& r) {
  const Device D = Device::CUDA;
  r.add(OpId::Transpose, D, kAnyDType, function_kernel(transpose));
  r.add(OpId::Expand, D, kAnyDType, function_kernel(expand));
  r.add(OpId::Slice, D, kAnyDType, function_kernel(slice));
  r.add(OpId::Concat, D, kAnyDType, function_kernel(concat));
  r.add(OpId::Split, D, kAnyDType, function_kernel(split));
  r.add(OpId::Gather, D, kAnyDType, function_kernel(gather));
  r.add(OpId::GatherElements, D, kAnyDType, function_kernel(gather_elements));
  r.add(OpId::Tile, D, kAnyDType, function_kernel(tile));
  r.add(OpId::DepthToSpace, D, kAnyDType, function_kernel(depth_to_space));
  r.add(OpId::SpaceToDepth, D, kAnyDType, function_kernel(space_to_depth));
  r.add(OpId::Trilu, D, kAnyDType, function_kernel(trilu));
}

}  // namespace oat::cuda
