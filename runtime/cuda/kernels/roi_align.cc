// RoiAlign and RoiAlignGrad on CUDA (roi_align_impl.cu): the CPU kernels' checks and geometry
// (runtime/cpu/kernels/roi_align_args.h), F32/F16/BF16 with FP32 sums. batch_indices are read on
// the host (reads_on_host), range-checked there and uploaded; X and rois stay on the device.
#include "runtime/cpu/kernels/roi_align_args.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/roi_align_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

class RoiAlignKernel : public OpKernel {
 public:
  explicit RoiAlignKernel(const Node& n) : a_(cpu::roi_align_args(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& rois = ctx.input(1);
    const Tensor bi = host_input(ctx, 2);
    const Shape ys = cpu::roi_align_shape(ctx, a_, x, rois, bi, true);
    CudaContext& cc = cuda_context(ctx);
    const Tensor dev_bi = cc.upload(bi.dtype() == DType::I64 ? bi : cast_tensor(bi, DType::I64));
    Tensor& y = ctx.allocate_output(0, x.dtype(), ys);
    RoiAlignLaunch p;
    p.rois = ys[0];
    p.channels = ys[1];
    p.height = x.dim(2);
    p.width = x.dim(3);
    p.out_h = a_.out_h;
    p.out_w = a_.out_w;
    p.sampling_ratio = a_.sampling_ratio;
    p.spatial_scale = a_.spatial_scale;
    p.half_pixel = a_.half_pixel;
    p.max_mode = a_.max_mode;
    launch_roi_align(elem_type(x.dtype()), p, x.raw_data(), rois.raw_data(),
                     dev_bi.data<int64_t>(), y.raw_data(), cc.stream());
  }

 private:
  cpu::RoiAlignArgs a_;
};

// RoiAlignGrad(dY, shape(X), rois, batch_indices), avg mode: FP32 atomics into dX (or an FP32
// scratch, cast once, for F16/BF16 dY). shape(X) and batch_indices are read on the host.
class RoiAlignGradKernel : public OpKernel {
 public:
  explicit RoiAlignGradKernel(const Node& n) : a_(cpu::roi_align_args(n)) {
    if (a_.max_mode)
      throw Error(cat(n.describe(), ": RoiAlignGrad supports mode \"avg\" only"));
  }

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Shape xs = shape_input(ctx, 1);
    const Tensor& rois = ctx.input(2);
    const Tensor bi = host_input(ctx, 3);
    if (xs.size() != 4) ctx.fail(cat("shape(X) must have 4 values, got ", shape_str(xs)));
    const Shape ys = cpu::roi_align_shape(ctx, a_, Tensor(dy.dtype(), {xs[0], xs[1], 0, 0}),
                                          rois, bi, true);
    if (dy.shape() != ys)
      ctx.fail(cat("dY must be ", shape_str(ys), ", got ", shape_str(dy.shape())));
    CudaContext& cc = cuda_context(ctx);
    const Tensor dev_bi = cc.upload(bi.dtype() == DType::I64 ? bi : cast_tensor(bi, DType::I64));
    Tensor& dx = ctx.allocate_output(0, dy.dtype(), xs);
    Tensor acc = dy.dtype() == DType::F32 ? dx : Tensor(DType::F32, xs, Device::CUDA);
    if (acc.nbytes()) CUDA_CHECK(cudaMemsetAsync(acc.raw_data(), 0, acc.nbytes(), cc.stream()));
    RoiAlignLaunch p;
    p.rois = ys[0];
    p.channels = ys[1];
    p.height = xs[2];
    p.width = xs[3];
    p.out_h = a_.out_h;
    p.out_w = a_.out_w;
    p.sampling_ratio = a_.sampling_ratio;
    p.spatial_scale = a_.spatial_scale;
    p.half_pixel = a_.half_pixel;
    if (dx.numel() > 0)
      launch_roi_align_grad(elem_type(dy.dtype()), p, dy.raw_data(), rois.raw_data(),
                            dev_bi.data<int64_t>(), acc.data<float>(), cc.stream());
    if (dy.dtype() != DType::F32)
      launch_cast(ElemType::F32, elem_type(dy.dtype()), acc.raw_data(), dx.raw_data(), dx.numel(),
                  cc.stream());
  }

 private:
  cpu::RoiAlignArgs a_;
};

}  // namespace

void register_roi_align(KernelRegistry& r) {
  add_floats(r, OpId::RoiAlign, kernel_factory<RoiAlignKernel>());
  add_floats(r, OpId::RoiAlignGrad, kernel_factory<RoiAlignGradKernel>());
}

}  // namespace oat::cuda
