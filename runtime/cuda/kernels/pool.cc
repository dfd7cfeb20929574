// Pooling through cuDNN (BatchNormalization: batch_norm.cc).
//
// MaxPool / AveragePool: geometry from the CPU's conv_geometry; cuDNN pads symmetrically, has no
// dilation and computes floor-mode sizes, so windows needing any of those (auto_pad SAME with an
// odd total, ceil_mode, dilations: SqueezeNet's and GoogLeNet's ceil-mode pools) run own kernels
// (pool_impl.h: one thread per output, the CPU's window rule). AveragePool divides by the window
// including padding when count_include_pad = 1, by the real elements otherwise.
// MaxPool with its Indices output runs an own kernel (pool_impl.cu) on the CPU's window, any
// window (dilation, asymmetric pads, ceil mode included): Y = the first maximum of each window,
// Indices = its flat index in X over (N, C, spatial), the spatial part row-major
// (storage_order = 0) or column-major (storage_order = 1), as the CPU's max_pool_with_indices.
// GlobalAveragePool / GlobalMaxPool: one window over all spatial dims.
// BF16: cuDNN first; where it refuses BF16 pooling (pool_window.h, cudnn_refuses_dtype) the
// kernel runs the own kernels from then on (the same window rule as the CPU).

#include <algorithm>

#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/cudnn_desc.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/pool_impl.h"
#include "runtime/cuda/kernels/pool_window.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

const float kOne = 1.f, kZero = 0.f;

// Y (allocated by the caller, shape w.y_shape) through cuDNN. False, with nothing queued, when
// cuDNN refuses X's dtype (BF16 only; pool_window.h).
bool run_pool(KernelContext& ctx, cudnnPoolingMode_t mode, const PoolWindow& w, Tensor& y) {
  const Tensor& x = ctx.input(0);
  if (y.numel() == 0) return true;  // N = 0 or C = 0: cuDNN's descriptors reject 0 dims
  PoolDesc pd;
  CUDNN_CHECK(cudnnSetPoolingNdDescriptor(pd.get(), mode, CUDNN_PROPAGATE_NAN,
                                          static_cast<int>(w.window.size()), w.window.data(),
                                          w.pad.data(), w.stride.data()));
  TensorDesc xd, yd;
  xd.set(x.dtype(), x.shape());
  yd.set(x.dtype(), w.y_shape);
  const cudnnStatus_t st = cudnnPoolingForward(cuda_context(ctx).cudnn(), pd.get(), &kOne, xd.get(),
                                               x.raw_data(), &kZero, yd.get(), y.raw_data());
  if (cudnn_refuses_dtype(st, x.dtype())) return false;
  CUDNN_CHECK_STATUS(st, "cudnnPoolingForward");
  return true;
}

// Y (allocated, shape (N, C, w.out...)) through pool_impl.h's kernels: any window.
void own_pool(KernelContext& ctx, const cpu::Window3& w, bool max, bool include_pad, Tensor& y) {
  const Tensor& x = ctx.input(0);
  const int64_t planes = x.dim(0) * x.dim(1);
  if (max)
    launch_max_pool_indices(elem_type(x.dtype()), x.raw_data(), y.raw_data(), nullptr, planes,
                            pool_geometry(w), false, stream_of(ctx));
  else
    launch_avg_pool(elem_type(x.dtype()), x.raw_data(), y.raw_data(), planes, pool_geometry(w),
                    include_pad, stream_of(ctx));
}

class PoolKernel : public OpKernel {
 public:
  explicit PoolKernel(const Node& n)
      : attrs_(cpu::parse_window_attrs(n)),
        max_(n.op == OpId::MaxPool),
        include_pad_(n.attr_int("count_include_pad", 0) != 0),
        column_major_(n.attr_int("storage_order", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(x.shape())));
    if (max_ && ctx.output_requested(1)) {
      max_pool_with_indices(ctx);
      return;
    }
    const cpu::Window3 cw = cpu::forward_window(ctx, attrs_, x.shape(), attrs_.kernel_shape);
    Shape y_shape = {x.dim(0), x.dim(1)};
    for (int64_t d : cw.out_shape()) y_shape.push_back(d);
    Tensor& y = ctx.allocate_output(0, x.dtype(), y_shape);
    if (cudnn_ && cudnn_pool_window(cw)) {
      const cudnnPoolingMode_t mode =
          max_ ? CUDNN_POOLING_MAX
               : (include_pad_ ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                               : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING);
      if (run_pool(ctx, mode, cudnn_view(cw, x.shape()), y)) return;
      cudnn_ = false;  // cuDNN refuses this dtype: own kernels from now on
    }
    own_pool(ctx, cw, max_, include_pad_, y);
  }

 private:
  void max_pool_with_indices(KernelContext& ctx) const {
    const Tensor& x = ctx.input(0);
    if (attrs_.kernel_shape.empty()) ctx.fail("the kernel_shape attribute is required");
    const cpu::Window3 w = cpu::forward_window(ctx, attrs_, x.shape(), attrs_.kernel_shape);
    Shape y_shape = {x.dim(0), x.dim(1)};
    for (int64_t d : w.out_shape()) y_shape.push_back(d);
    Tensor& y = ctx.allocate_output(0, x.dtype(), y_shape);
    Tensor& indices = ctx.allocate_output(1, DType::I64, y_shape);
    launch_max_pool_indices(elem_type(x.dtype()), x.raw_data(), y.raw_data(),
                            indices.data<int64_t>(), x.dim(0) * x.dim(1), pool_geometry(w),
                            column_major_, stream_of(ctx));
  }

  cpu::WindowAttrs attrs_;
  bool max_;
  bool include_pad_;
  bool column_major_;  // MaxPool storage_order = 1
  bool cudnn_ = true;  // false once cuDNN refused the dtype (BF16)
};

template <bool Max>
class GlobalPoolKernel : public OpKernel {
 public:
  explicit GlobalPoolKernel(const Node&) {}
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(x.shape())));
    const PoolWindow w = global_window(x.shape());
    Tensor& y = ctx.allocate_output(0, x.dtype(), w.y_shape);
    if (cudnn_) {
      if (run_pool(ctx, Max ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, w,
                   y))
        return;
      cudnn_ = false;
    }
    own_pool(ctx, global_window3(ctx, x.shape()), Max, true, y);
  }

 private:
  bool cudnn_ = true;
};

}  // namespace

bool cudnn_pool_window(const cpu::Window3& w) {
  for (int s = 0; s < 3; ++s) {
    const int64_t floor_out = (w.in[s] + 2 * w.pad[s] - w.k[s]) / w.stride[s] + 1;
    if (w.dil[s] != 1 || w.pad[s] != w.pad_end[s] || floor_out != w.out[s]) return false;
  }
  return true;
}

PoolWindow cudnn_view(const cpu::Window3& w, const Shape& x) {
  const int sd = std::max(w.nd, 2);
  PoolWindow p;
  for (int s = 3 - sd; s < 3; ++s) {
    p.window.push_back(static_cast<int>(w.k[s]));
    p.pad.push_back(static_cast<int>(w.pad[s]));
    p.stride.push_back(static_cast<int>(w.stride[s]));
  }
  p.y_shape = {x[0], x[1]};
  for (int64_t d : w.out_shape()) p.y_shape.push_back(d);
  return p;
}

PoolGeometry pool_geometry(const cpu::Window3& w) {
  PoolGeometry g;
  for (int s = 0; s < 3; ++s) {
    g.in[s] = w.in[s];
    g.out[s] = w.out[s];
    g.k[s] = w.k[s];
    g.stride[s] = w.stride[s];
    g.dil[s] = w.dil[s];
    g.pad[s] = w.pad[s];
    g.pad_end[s] = w.pad_end[s];
  }
  return g;
}

cpu::Window3 global_window3(const KernelContext& ctx, const Shape& x) {
  if (x.size() > 5)
    ctx.fail(cat("the own pooling kernels take up to 3 spatial dims, X is ", shape_str(x)));
  cpu::Window3 w;
  w.nd = static_cast<int>(x.size()) - 2;
  for (int d = 0; d < w.nd; ++d) {  // the last nd slots, as forward_window fills them
    const int s = 3 - w.nd + d;
    w.in[s] = w.k[s] = x[2 + d];
  }
  return w;
}

PoolWindow global_window(const Shape& x) {
  const std::vector<int> dims = cudnn_dims(x);
  PoolWindow p;
  p.window.assign(dims.begin() + 2, dims.end());
  p.pad.assign(p.window.size(), 0);
  p.stride.assign(p.window.size(), 1);
  p.y_shape.assign(x.size(), 1);
  p.y_shape[0] = x[0];
  p.y_shape[1] = x[1];
  return p;
}

void register_pool(KernelRegistry& r) {
  add_floats(r, OpId::MaxPool, kernel_factory<PoolKernel>());
  add_floats(r, OpId::AveragePool, kernel_factory<PoolKernel>());
  add_floats(r, OpId::GlobalAveragePool, kernel_factory<GlobalPoolKernel<false>>());
  add_floats(r, OpId::GlobalMaxPool, kernel_factory<GlobalPoolKernel<true>>());
}

}  // namespace oat::cuda
