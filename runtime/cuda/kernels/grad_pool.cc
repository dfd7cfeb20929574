// Pooling gradients on CUDA (internal domain), through cudnnPoolingBackward:
//   MaxPoolGrad(dY, X) -> dX: Y is recomputed from X (one cheap forward pass), then dY goes to the
//     maximum of each window (CUDNN_POOLING_MAX_DETERMINISTIC: one element per window, as the CPU's
//     first-maximum rule in all but exact ties).
//   AveragePoolGrad(dY, shape(X)) -> dX: dY[o] / count_o spread over window o (count as the
//     forward divides, count_include_pad); cuDNN does not read X or Y in average mode.
//   GlobalAveragePoolGrad(dY, shape(X)): dX = dY broadcast over the spatial dims / positions.
//   GlobalMaxPoolGrad(dY, X): MaxPoolGrad over one window covering the plane.
// Windows cuDNN cannot express (dilation, asymmetric padding, ceil mode) run pool_impl.h's
// gathers instead: one thread per element of dX summing over the windows that read it
//   MaxPoolGrad:     dX[i] = Σ dY[o] over windows o whose first maximum is i (the CPU's rule);
//   AveragePoolGrad: dX[i] = Σ dY[o] / count_o over windows o reading i.
// So do BF16 pools once cuDNN has refused BF16 pooling (pool_window.h, cudnn_refuses_dtype), the
// global ones as one window over the plane (GlobalMaxPoolGrad then scans the plane per element:
// O(plane²), fine for the 7x7 planes of a classifier's head).
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/cudnn_desc.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/pool_window.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

const float kOne = 1.f, kZero = 0.f;

// dX (allocated by the caller, shape x_shape) from dY through cuDNN's pooling backward. x may be
// null in average mode. False, with nothing queued, when cuDNN refuses the dtype (BF16 only).
bool pool_backward(KernelContext& ctx, cudnnPoolingMode_t mode, const PoolWindow& w,
                   const Tensor& dy, const Shape& x_shape, const Tensor* x, Tensor& dx) {
  CudaContext& cc = cuda_context(ctx);
  if (dy.numel() == 0 || numel(x_shape) == 0) {  // cuDNN's descriptors reject 0 dims
    if (dx.nbytes()) CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, dx.nbytes(), cc.stream()));
    return true;
  }
  PoolDesc pd;
  CUDNN_CHECK(cudnnSetPoolingNdDescriptor(pd.get(), mode, CUDNN_PROPAGATE_NAN,
                                          static_cast<int>(w.window.size()), w.window.data(),
                                          w.pad.data(), w.stride.data()));
  TensorDesc xd, yd;
  xd.set(dy.dtype(), x_shape);
  yd.set(dy.dtype(), w.y_shape);
  Tensor y;
  const void* x_data = dx.raw_data();  // not read in average mode
  const void* y_data = dy.raw_data();
  if (x) {
    y = Tensor(dy.dtype(), w.y_shape, Device::CUDA);
    const cudnnStatus_t st = cudnnPoolingForward(cc.cudnn(), pd.get(), &kOne, xd.get(),
                                                 x->raw_data(), &kZero, yd.get(), y.raw_data());
    if (cudnn_refuses_dtype(st, dy.dtype())) return false;
    CUDNN_CHECK_STATUS(st, "cudnnPoolingForward");
    x_data = x->raw_data();
    y_data = y.raw_data();
  }
  const cudnnStatus_t st =
      cudnnPoolingBackward(cc.cudnn(), pd.get(), &kOne, yd.get(), y_data, yd.get(), dy.raw_data(),
                           xd.get(), x_data, &kZero, xd.get(), dx.raw_data());
  if (cudnn_refuses_dtype(st, dy.dtype())) return false;
  CUDNN_CHECK_STATUS(st, "cudnnPoolingBackward");
  return true;
}

void require_pooled_shape(const KernelContext& ctx, const Tensor& dy, const Shape& y_shape) {
  if (dy.shape() != y_shape)
    ctx.fail(
        cat("dY ", shape_str(dy.shape()), " does not match the pooled shape ", shape_str(y_shape)));
}

// dX (allocated) through pool_impl.h's gathers: any window.
void own_pool_grad(KernelContext& ctx, const cpu::Window3& w, const Tensor& dy, const Shape& xs,
                   const Tensor* x, bool include_pad, Tensor& dx) {
  launch_pool_grad(elem_type(dy.dtype()), dy.raw_data(), x ? x->raw_data() : nullptr, dx.raw_data(),
                   xs[0] * xs[1], pool_geometry(w), include_pad, stream_of(ctx));
}

class PoolGradKernel : public OpKernel {
 public:
  explicit PoolGradKernel(const Node& n)
      : attrs_(cpu::parse_window_attrs(n)),
        max_(n.op == OpId::MaxPoolGrad),
        include_pad_(n.attr_int("count_include_pad", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor* x = max_ ? &ctx.input(1) : nullptr;
    if (x && x->dtype() != dy.dtype()) ctx.fail("dY and X must share a dtype");
    const Shape xs = x ? x->shape() : host_input(ctx, 1).to_int_vector();
    const cpu::Window3 w = cpu::forward_window(ctx, attrs_, xs, attrs_.kernel_shape);
    if (xs.size() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(xs)));
    Shape y_shape = {xs[0], xs[1]};
    for (int64_t d : w.out_shape()) y_shape.push_back(d);
    require_pooled_shape(ctx, dy, y_shape);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
    if (cudnn_ && cudnn_pool_window(w)) {
      const cudnnPoolingMode_t mode = max_           ? CUDNN_POOLING_MAX_DETERMINISTIC
                                      : include_pad_ ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                     : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
      if (pool_backward(ctx, mode, cudnn_view(w, xs), dy, xs, x, dx)) return;
      cudnn_ = false;  // cuDNN refuses this dtype: own kernels from now on
    }
    own_pool_grad(ctx, w, dy, xs, x, include_pad_, dx);
  }

 private:
  cpu::WindowAttrs attrs_;
  bool max_;
  bool include_pad_;
  bool cudnn_ = true;  // false once cuDNN refused the dtype (BF16)
};

void global_average_pool_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Shape xs = host_input(ctx, 1).to_int_vector();
  if (xs.size() < 3 || dy.numel() != xs[0] * xs[1])
    ctx.fail(cat("dY ", shape_str(dy.shape()), " does not match X ", shape_str(xs)));
  Shape kept(xs.size(), 1);
  kept[0] = xs[0];
  kept[1] = xs[1];
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
  const cudaStream_t s = stream_of(ctx);
  launch_broadcast_copy(static_cast<int>(dtype_size(dy.dtype())), dy.raw_data(), dx.raw_data(),
                        dx.numel(), make_broadcast_index(xs, {kept}), s);
  // The spatial positions (not numel / (N·C): N or C may be 0, and dY then has no elements).
  int64_t positions = 1;
  for (size_t d = 2; d < xs.size(); ++d) positions *= xs[d];
  launch_unary(UnaryOp::Scale, elem_type(dx.dtype()), dx.raw_data(), dx.raw_data(), dx.numel(),
               1.f / static_cast<float>(positions ? positions : 1), 0.f, s);
}

class GlobalMaxPoolGradKernel : public OpKernel {
 public:
  explicit GlobalMaxPoolGradKernel(const Node&) {}
  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    if (x.rank() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(x.shape())));
    if (x.dtype() != dy.dtype()) ctx.fail("dY and X must share a dtype");
    const PoolWindow w = global_window(x.shape());
    require_pooled_shape(ctx, dy, w.y_shape);
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), x.shape());
    if (cudnn_) {
      if (pool_backward(ctx, CUDNN_POOLING_MAX_DETERMINISTIC, w, dy, x.shape(), &x, dx)) return;
      cudnn_ = false;
    }
    own_pool_grad(ctx, global_window3(ctx, x.shape()), dy, x.shape(), &x, true, dx);
  }

 private:
  bool cudnn_ = true;
};

}  // namespace

void register_grad_pool(KernelRegistry& r) {
  add_floats(r, OpId::MaxPoolGrad, kernel_factory<PoolGradKernel>());
  add_floats(r, OpId::AveragePoolGrad, kernel_factory<PoolGradKernel>());
  add_floats(r, OpId::GlobalAveragePoolGrad, function_kernel(global_average_pool_grad));
  add_floats(r, OpId::GlobalMaxPoolGrad, kernel_factory<GlobalMaxPoolGradKernel>());
}

}  // namespace oat::cuda
