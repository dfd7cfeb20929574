// Softmax and LogSoftmax on CUDA (softmax_impl.cu), FP32 accumulation for every storage type.
// Opset 13 normalises along one axis (default −1): X is [outer, dim(axis), inner]. Before
// opset 13 X is coerced to 2-D at `axis` (default 1): [prod(:axis), prod(axis:)] rows.
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/reduce_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

template <bool Log>
void softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Node& n = ctx.node();
  const int r = x.rank();
  const bool v13 = n.opset >= 13;
  int64_t axis = n.attr_int("axis", v13 ? -1 : 1);
  if (axis < -r || axis >= (r == 0 ? 1 : r))
    ctx.fail(cat("axis ", axis, " is out of range for input ", shape_str(x.shape())));
  if (axis < 0) axis += r;
  int64_t outer = 1, len = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  if (v13) {
    len = r ? x.shape()[axis] : 1;
    for (int d = static_cast<int>(axis) + 1; d < r; ++d) inner *= x.shape()[d];
  } else {
    for (int d = static_cast<int>(axis); d < r; ++d) len *= x.shape()[d];
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  launch_softmax(elem_type(x.dtype()), Log, x.raw_data(), y.raw_data(), outer, len, inner,
                 stream_of(ctx));
}

}  // namespace

void register_softmax(KernelRegistry& r) {
  add_floats(r, OpId::Softmax, function_kernel(softmax<false>));
  add_floats(r, OpId::LogSoftmax, function_kernel(softmax<true>));
}

}  // namespace oat::cuda
