// Dropout(X, ratio?, training_mode?) -> Y, mask? on CUDA.
//   inference (or ratio 0): Y = X (shared storage), mask all true
//   training: keep drawn as the CPU draws it (dropout_mask.h), Y = keep ? X / (1 − ratio) : 0 in
//     float, rounded once (launch_masked_scale), mask = keep
// Unseeded nodes (torch.onnx's and tf2onnx's training-mode Dropout): the Philox stream, computed
// on the device (dropout_impl.cu); the draw number lives in device memory and is advanced by a
// kernel, so a captured CUDA graph draws the next mask at every replay, as eager steps would.
// Seeded nodes (ONNX's conformance cases): numpy's MT19937 stream, sequential, so drawn on the
// host in stream order: a host function enqueued on the stream (cudaLaunchHostFunc) advances the
// kernel's generator into a pinned buffer, and an async copy moves it to the device; a CUDA graph
// captures the draw as a host node. Either way the CUDA kernel keeps the same elements as the
// CPU reference for the same node and step.
#include <memory>
#include <random>
#include <vector>

#include "runtime/cpu/kernels/dropout_mask.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/draw_counter.h"
#include "runtime/cuda/kernels/dropout_impl.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

class DropoutKernel : public OpKernel {
 public:
  explicit DropoutKernel(const Node& n)
      : seeded_(cpu::dropout_is_seeded(n)),
        key_(cpu::dropout_philox_key(n)),
        gen_(cpu::dropout_generator(n)) {}

  ~DropoutKernel() override {
    // Pending host functions use gen_ and the pinned buffers.
    if (stream_) cudaStreamSynchronize(stream_);
    for (uint8_t* b : buffers_) cudaFreeHost(b);
  }

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor ratio, training;
    if (ctx.has_input(1)) ratio = host_input(ctx, 1);
    if (ctx.has_input(2)) training = host_input(ctx, 2);
    const cpu::DropoutMode mode = cpu::dropout_mode(ctx, ratio.defined() ? &ratio : nullptr,
                                                    training.defined() ? &training : nullptr);
    const bool want_mask = ctx.output_requested(1);
    const int64_t count = x.numel();
    const cudaStream_t s = stream_of(ctx);
    stream_ = s;
    const bool mask_is_bool = mode.mask_dtype == DType::Bool;
    if (!mode.drops()) ctx.set_output(0, x);
    if (!mode.drops() && !want_mask) return;
    // The bool keep mask on the device: the mask output itself when that is bool.
    Tensor keep = want_mask && mask_is_bool
                      ? ctx.allocate_output(1, DType::Bool, x.shape())
                      : Tensor(DType::Bool, x.shape(), Device::CUDA);
    if (!mode.drops()) {
      if (count) CUDA_CHECK(cudaMemsetAsync(keep.raw_data(), 1, static_cast<size_t>(count), s));
    } else {
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      if (count) {
        if (seeded_) draw_into(ctx, keep, count, mode.ratio, s);
        else
          launch_dropout_philox(key_, draws_.get(ctx), mode.ratio, keep.data<bool>(), count, s);
        launch_masked_scale(elem_type(x.dtype()), x.raw_data(), keep.data<bool>(), y.raw_data(),
                            count, static_cast<float>(1.0 / (1.0 - mode.ratio)), s);
      }
    }
    if (want_mask && !mask_is_bool) {  // opsets before 10: the mask in X's dtype
      Tensor& m = ctx.allocate_output(1, mode.mask_dtype, x.shape());
      launch_cast(ElemType::Bool, elem_type(mode.mask_dtype), keep.raw_data(), m.raw_data(), count,
                  s);
    }
  }

 private:
  // One draw: `count` keep flags for `ratio` into `buf` (pinned). Eager draws are deleted by
  // their host function; a captured draw runs on every replay and lives with the kernel.
  struct Draw {
    DropoutKernel* kernel;
    uint8_t* buf;
    int64_t count;
    double ratio;
    bool once;
  };

  static void CUDART_CB run_draw(void* p) {
    Draw* d = static_cast<Draw*>(p);
    cpu::draw_dropout_keep(d->kernel->gen_, d->ratio, d->count, d->buf);
    if (d->once) delete d;
  }

  // Enqueues the draw and its copy into `keep` on s.
  void draw_into(const KernelContext& ctx, Tensor& keep, int64_t count, double ratio,
                 cudaStream_t s) {
    const bool capturing = cuda_context(ctx).capturing();
    if (count > capacity_) {
      if (capturing)
        ctx.fail(cat("the mask (", count, " elements) outgrew its pinned buffer (", capacity_,
                     ") during a CUDA graph capture; run one eager step of this size first"));
      // Older buffers stay allocated: a captured graph may still copy from them.
      uint8_t* b = nullptr;
      CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&b), static_cast<size_t>(count),
                               cudaHostAllocDefault));
      buffers_.push_back(b);
      capacity_ = count;
    }
    uint8_t* buf = buffers_.back();
    auto draw = std::make_unique<Draw>(Draw{this, buf, count, ratio, !capturing});
    CUDA_CHECK(cudaLaunchHostFunc(s, run_draw, draw.get()));
    if (capturing) {
      captured_.push_back(std::move(draw));
    } else {
      draw.release();  // run_draw deletes it
    }
    // Stream order: this copy follows the draw, and the next draw into buf follows this copy.
    CUDA_CHECK(cudaMemcpyAsync(keep.raw_data(), buf, static_cast<size_t>(count),
                               cudaMemcpyHostToDevice, s));
  }

  bool seeded_;
  uint64_t key_;
  DeviceDrawCounter draws_;            // Philox draws so far, on the device
  std::mt19937 gen_;                   // advanced only by run_draw, in stream order
  std::vector<uint8_t*> buffers_;      // pinned; the last is the current one
  int64_t capacity_ = 0;
  std::vector<std::unique_ptr<Draw>> captured_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

void register_dropout(KernelRegistry& r) {
  add_floats(r, OpId::Dropout, kernel_factory<DropoutKernel>());
}

}  // namespace oat::cuda
