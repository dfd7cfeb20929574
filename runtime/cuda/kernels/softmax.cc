// Softmax, LogSoftmax and their gradients on CUDA (softmax_impl.cu), FP32 accumulation for
// every storage type.
// Opset 13 normalises along one axis (default −1): X is [outer, dim(axis), inner]. Before
// opset 13 X is coerced to 2-D at `axis` (default 1): [prod(:axis), prod(axis:)] rows.
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/reduce_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

// The [outer, len, inner] view of x along `axis`; `coerce_2d` (the forward before opset 13)
// makes len everything from axis on.
void view_of(const KernelContext& ctx, const Tensor& x, int64_t axis, bool coerce_2d,
             int64_t& outer, int64_t& len, int64_t& inner) {
  const int r = x.rank();
  if (axis < -r || axis >= (r == 0 ? 1 : r))
    ctx.fail(cat("axis ", axis, " is out of range for input ", shape_str(x.shape())));
  if (axis < 0) axis += r;
  outer = len = inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  if (!coerce_2d) {
    len = r ? x.shape()[axis] : 1;
    for (int d = static_cast<int>(axis) + 1; d < r; ++d) inner *= x.shape()[d];
  } else {
    for (int d = static_cast<int>(axis); d < r; ++d) len *= x.shape()[d];
  }
}

// SoftmaxGrad / LogSoftmaxGrad(dY, Y), attrs axis and coerce_2d as the CPU kernels.
template <bool Log>
void softmax_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& y = ctx.input(1);
  if (dy.shape() != y.shape() || dy.dtype() != y.dtype())
    ctx.fail(cat("dY ", shape_str(dy.shape()), " and Y ", shape_str(y.shape()), " must match"));
  int64_t outer, len, inner;
  view_of(ctx, y, ctx.node().attr_int("axis", -1), ctx.node().attr_int("coerce_2d", 0) != 0, outer,
          len, inner);
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.shape());
  launch_softmax_grad(elem_type(dy.dtype()), Log, dy.raw_data(), y.raw_data(), dx.raw_data(), outer,
                      len, inner, stream_of(ctx));
}

template <bool Log>
void softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool v13 = ctx.node().opset >= 13;
  int64_t outer, len, inner;
  view_of(ctx, x, ctx.node().attr_int("axis", v13 ? -1 : 1), !v13, outer, len, inner);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  launch_softmax(elem_type(x.dtype()), Log, x.raw_data(), y.raw_data(), outer, len, inner,
                 stream_of(ctx));
}

// Hardmax: 1 at the first maximum along the axis (opset 13) or of each coerced 2-D row (before).
void hardmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool v13 = ctx.node().opset >= 13;
  int64_t outer, len, inner;
  view_of(ctx, x, ctx.node().attr_int("axis", v13 ? -1 : 1), !v13, outer, len, inner);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  launch_hardmax(elem_type(x.dtype()), x.raw_data(), y.raw_data(), outer, len, inner,
                 stream_of(ctx));
}

}  // namespace

void register_softmax(KernelRegistry& r) {
  add_floats(r, OpId::Softmax, function_kernel(softmax<false>));
  add_floats(r, OpId::LogSoftmax, function_kernel(softmax<true>));
  add_floats(r, OpId::Hardmax, function_kernel(hardmax));
  add_floats(r, OpId::SoftmaxGrad, function_kernel(softmax_grad<false>));
  add_floats(r, OpId::LogSoftmaxGrad, function_kernel(softmax_grad<true>));
}

}  // namespace oat::cuda
