// MaxUnpool (opsets 9, 11): the partial inverse of MaxPool. X [N, C, D1..Dk] holds pooled values,
// I (same shape, int64) the flat indices MaxPool's Indices output gave them in the unpooled
// tensor [N, C, O1..Ok] (row-major over the whole tensor, storage_order 0); every other element
// of Y is 0:
//   Y = 0; Y.flat[I.flat[j]] = X.flat[j] for every j (a later j wins on a repeated index, as in
//   ONNX Runtime)
//   Y's shape: output_shape (input 2, optional, the full shape) when given, else
//   O_i = (D_i − 1)·strides_i + kernel_shape_i − pads_begin_i − pads_end_i.
// With output_shape the indices address that shape directly, as in ONNX Runtime (since its PR
// #2193) and PyTorch's max_unpool(output_size): MaxPool's indices of a 5x5 input that pooled to
// 2x2 are 5x5 positions. (ONNX's test_maxunpool_export_with_output_shape instead scatters into the
// 4x4 inferred shape and pads; the conformance test lists it as a deviation, onnx/onnx#2398.)
// Attributes: kernel_shape (required), strides (default 1), pads (default 0). Every index must
// lie in [0, numel(Y)). Data movement, so any dtype (bytes). It trains: dX gathers dY at I
// (train/autodiff/grads/conv.cc, PyTorch's rule).
#include <cstring>

#include "runtime/cpu/kernels/max_unpool_args.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {

namespace {

class MaxUnpoolKernel : public OpKernel {
 public:
  explicit MaxUnpoolKernel(const Node& n) : attrs_(n) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& idx = ctx.input(1);
    const Shape ys = attrs_.output_shape(ctx, x, idx, ctx.input_or_null(2));
    Tensor& y = ctx.allocate_output(0, x.dtype(), ys);
    const size_t es = dtype_size(x.dtype());
    if (y.nbytes() > 0) std::memset(y.raw_data(), 0, y.nbytes());
    const int64_t n = y.numel();
    const int64_t* ip = idx.data<int64_t>();
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y.raw_data());
    for (int64_t j = 0; j < x.numel(); ++j) {
      const int64_t t = ip[j];
      if (t < 0 || t >= n)
        ctx.fail(cat("I[", j, "] = ", t, " is out of range for the output ", shape_str(ys)));
      std::memcpy(dst + static_cast<size_t>(t) * es, src + static_cast<size_t>(j) * es, es);
    }
  }

 private:
  MaxUnpoolAttrs attrs_;
};

}  // namespace

void register_max_unpool(KernelRegistry& r) {
  r.add(OpId::MaxUnpool, Device::CPU, kAnyDType, kernel_factory<MaxUnpoolKernel>());
}

}  // namespace oat::cpu
