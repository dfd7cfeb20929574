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
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/cudnn_desc.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/pool_window.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

const float kOne = 1.f, kZero = 0.f;

// dX from dY through cuDNN's pooling backward. x, y may be null in average mode.
void pool_backward(KernelContext& ctx, cudnnPoolingMode_t mode, const PoolWindow& w,
                   const Tensor& dy, const Shape& x_shape, const Tensor* x) {
  if (dy.shape() != w.y_shape)
    ctx.fail(cat("dY ", shape_str(dy.shape()), " does not match the pooled shape ",
                 shape_str(w.y_shape)));
  CudaContext& cc = cuda_context(ctx);
  if (dy.numel() == 0 || numel(x_shape) == 0) {  // cuDNN's descriptors reject 0 dims
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), x_shape);
    if (dx.nbytes()) CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, dx.nbytes(), cc.stream()));
    return;
  }
  PoolDesc pd;
  CUDNN_CHECK(cudnnSetPoolingNdDescriptor(pd.get(), mode, CUDNN_PROPAGATE_NAN,
                                          static_cast<int>(w.window.size()), w.window.data(),
                                          w.pad.data(), w.stride.data()));
  TensorDesc xd, yd;
  xd.set(dy.dtype(), x_shape);
  yd.set(dy.dtype(), w.y_shape);
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), x_shape);
  Tensor y;
  const void* x_data = dx.raw_data();  // not read in average mode
  const void* y_data = dy.raw_data();
  if (x) {
    y = Tensor(dy.dtype(), w.y_shape, Device::CUDA);
    CUDNN_CHECK(cudnnPoolingForward(cc.cudnn(), pd.get(), &kOne, xd.get(), x->raw_data(), &kZero,
                                    yd.get(), y.raw_data()));
    x_data = x->raw_data();
    y_data = y.raw_data();
  }
  CUDNN_CHECK(cudnnPoolingBackward(cc.cudnn(), pd.get(), &kOne, yd.get(), y_data, yd.get(),
                                   dy.raw_data(), xd.get(), x_data, &kZero, xd.get(),
                                   dx.raw_data()));
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
    if (!cudnn_pool_window(w)) {
      own_pool_grad(ctx, w, dy, xs, x);
      return;
    }
    pool_backward(ctx,
                  max_           ? CUDNN_POOLING_MAX_DETERMINISTIC
                  : include_pad_ ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                 : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
                  cudnn_view(w, xs), dy, xs, x);
  }

 private:
  void own_pool_grad(KernelContext& ctx, const cpu::Window3& w, const Tensor& dy, const Shape& xs,
                     const Tensor* x) const {
    if (xs.size() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(xs)));
    Shape y_shape = {xs[0], xs[1]};
    for (int64_t d : w.out_shape()) y_shape.push_back(d);
    if (dy.shape() != y_shape)
      ctx.fail(cat("dY ", shape_str(dy.shape()), " does not match the pooled shape ",
                   shape_str(y_shape)));
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
    launch_pool_grad(elem_type(dy.dtype()), dy.raw_data(), x ? x->raw_data() : nullptr,
                     dx.raw_data(), xs[0] * xs[1], pool_geometry(w), include_pad_, stream_of(ctx));
  }

  cpu::WindowAttrs attrs_;
  bool max_;
  bool include_pad_;
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

void global_max_pool_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (x.rank() < 3) ctx.fail(cat("X must be (N, C, spatial...), got ", shape_str(x.shape())));
  pool_backward(ctx, CUDNN_POOLING_MAX_DETERMINISTIC, global_window(x.shape()), dy, x.shape(), &x);
}

}  // namespace

void register_grad_pool(KernelRegistry& r) {
  add_floats(r, OpId::MaxPoolGrad, kernel_factory<PoolGradKernel>());
  add_floats(r, OpId::AveragePoolGrad, kernel_factory<PoolGradKernel>());
  add_floats(r, OpId::GlobalAveragePoolGrad, function_kernel(global_average_pool_grad));
  add_floats(r, OpId::GlobalMaxPoolGrad, function_kernel(global_max_pool_grad));
}

}  // namespace oat::cuda
