// Dropout on CUDA, as runtime/cpu/kernels/generator.cc: inference (the default, training_mode
// false, or ratio 0) is Y = X with an all-true mask; training keeps element i when its
// counter-based draw u_i ≥ ratio (runtime/cpu/kernels/dropout_mask.h: SplitMix64 of the node's
// seed and the element's counter, the CPU's rule, so both backends draw the same mask) and
// writes Y = keep ? X / (1 − ratio) : 0 (in float, one rounding). The ratio is input 1 from
// opset 12 (default 0.5) and an attribute before; training mode is input 2 from opset 12,
// is_test == 0 before opset 7, and off for opsets 7-11 (both inputs read on the host). The mask
// is bool from opset 10 and X's dtype before. Each kernel counts the elements it has drawn, so
// successive training steps draw fresh masks. F32, F16, BF16 (dropout_impl.cu).
#include "runtime/cpu/kernels/dropout_mask.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/dropout_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

class DropoutKernel : public OpKernel {
 public:
  explicit DropoutKernel(const Node& n)
      : ratio_attr_(n.attr_float("ratio", 0.5f)),
        old_training_(n.opset < 7 && n.attr_int("is_test", 0) == 0),
        key_(dropout_node_key(n)) {}

  void compute(KernelContext& ctx) override {
    const Node& n = ctx.node();
    const Tensor& x = ctx.input(0);
    double ratio = ratio_attr_;
    bool training = old_training_;
    if (n.opset >= 12) {
      if (ctx.has_input(1)) ratio = host_input(ctx, 1).item_as_double();
      if (ctx.has_input(2)) training = host_input(ctx, 2).item_as_int() != 0;
    }
    if (ratio < 0 || ratio > 1) ctx.fail(cat("ratio ", ratio, " is outside [0, 1]"));
    const DType mask_dtype = n.opset >= 10 ? DType::Bool : x.dtype();
    void* mask = ctx.output_requested(1) ? ctx.allocate_output(1, mask_dtype, x.shape()).raw_data()
                                         : nullptr;
    const int64_t count = x.numel();
    const cudaStream_t s = stream_of(ctx);
    if (!training || ratio == 0) {
      ctx.set_output(0, x);
      if (mask)  // threshold 0 keeps everything
        launch_dropout(elem_type(x.dtype()), x.raw_data(), nullptr, mask, mask_dtype == DType::Bool,
                       count, key_, 0, 0, 1.f, s);
      return;
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    const uint64_t first = drawn_;
    drawn_ += static_cast<uint64_t>(count);
    launch_dropout(elem_type(x.dtype()), x.raw_data(), y.raw_data(), mask,
                   mask_dtype == DType::Bool, count, key_, first, dropout_threshold(ratio),
                   static_cast<float>(1.0 / (1.0 - ratio)), s);
  }

 private:
  float ratio_attr_;
  bool old_training_;
  uint64_t key_;
  uint64_t drawn_ = 0;  // elements drawn by earlier training calls: the next call's first counter
};

}  // namespace

void register_dropout(KernelRegistry& r) {
  add_floats(r, OpId::Dropout, kernel_factory<DropoutKernel>());
}

}  // namespace oat::cuda
