// Resize (opsets 10, 11, 13), Upsample (7, 9) and ResizeGrad on CUDA. Every mode the CPU has
// (nearest with each nearest_mode, N-D linear, cubic with cubic_coeff_a and exclude_outside,
// every coordinate_transformation_mode including tf_crop_and_resize): the per-axis taps, weights
// and the adjoint lists come from the CPU's rule (runtime/cpu/kernels/resize_geometry.h, which
// has the formulas), built on the host from roi / scales / sizes read on the host, and uploaded
// per call (weights as float):
//   Resize:     Y[o] = Σ over the tap product of Π_d w_d · X[idx] (or extrapolation_value)
//   ResizeGrad(dY, shape(X), [roi], [scales]) -> dX = the adjoint, one thread per dX element
//               summing its inverted taps (no atomics), in the CPU kernel's order.
// Arithmetic in float, one rounding on store; F32, F16, BF16 (F64 stays on the CPU).
#include <vector>

#include "runtime/cpu/kernels/resize_geometry.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/resize_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

// An optional float input read on the host (roi, scales), or nullptr.
const Tensor* host_optional(const KernelContext& ctx, int i, Tensor& keep) {
  if (i < 0 || !ctx.has_input(i)) return nullptr;
  keep = host_input(ctx, i);
  return &keep;
}

class ResizeKernel : public OpKernel {
 public:
  explicit ResizeKernel(const Node& n) : a_(cpu::parse_resize_attrs(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& X = ctx.input(0);
    require_cuda_rank(ctx, X.shape().size());
    Tensor roi_h, scales_h, sizes_h;
    const cpu::ResizeGeometry g = cpu::resize_geometry(
        ctx, a_, X.shape(), host_optional(ctx, a_.roi_input, roi_h),
        host_optional(ctx, a_.scales_input, scales_h), host_optional(ctx, a_.sizes_input, sizes_h));
    Tensor& Y = ctx.allocate_output(0, X.dtype(), g.y);
    if (Y.numel() == 0) return;
    const std::vector<cpu::ResizeAxis> axes = cpu::resize_axes(a_, g);
    const int r = static_cast<int>(g.x.size());
    ResizePlan plan;
    plan.rank = r;
    plan.extrapolation = a_.extrapolation;
    std::vector<int64_t> offs;
    std::vector<float> w;
    int64_t stride = 1;
    std::vector<int64_t> st(r);
    for (int d = r - 1; d >= 0; --d) st[d] = stride, stride *= g.x[d];
    for (int d = 0; d < r; ++d) {
      plan.out_dims[d] = g.y[d];
      plan.taps[d] = axes[d].taps;
      plan.tap_offset[d] = static_cast<int64_t>(offs.size());
      for (int64_t i : axes[d].idx) offs.push_back(i * st[d]);
      for (double v : axes[d].w) w.push_back(static_cast<float>(v));
    }
    for (int d = 0; d < r; ++d) {
      plan.outside_offset[d] = -1;
      if (a_.coord != cpu::ResizeCoord::TfCropAndResize) continue;
      plan.outside_offset[d] = static_cast<int64_t>(offs.size());
      offs.insert(offs.end(), axes[d].outside.begin(), axes[d].outside.end());
    }
    CudaContext& cc = cuda_context(ctx);
    offs.push_back(0), w.push_back(0.f);  // never empty (rank 0)
    const Tensor offs_d =
        cc.upload(Tensor::from_vector<int64_t>({static_cast<int64_t>(offs.size())}, offs));
    const Tensor w_d = cc.upload(Tensor::from_vector<float>({static_cast<int64_t>(w.size())}, w));
    launch_resize(elem_type(X.dtype()), X.raw_data(), Y.raw_data(), Y.numel(),
                  offs_d.data<int64_t>(), w_d.data<float>(), plan, cc.stream());
  }

 private:
  cpu::ResizeAttrs a_;
};

class ResizeGradKernel : public OpKernel {
 public:
  explicit ResizeGradKernel(const Node& n) : a_(cpu::parse_resize_attrs(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dY = ctx.input(0);
    const Shape xs = shape_input(ctx, 1);
    require_cuda_rank(ctx, xs.size());
    Tensor roi_h, scales_h;
    const cpu::ResizeGeometry g =
        cpu::resize_grad_geometry(ctx, a_, xs, dY.shape(), host_optional(ctx, a_.roi_input, roi_h),
                                  host_optional(ctx, a_.scales_input, scales_h));
    Tensor& dX = ctx.allocate_output(0, dY.dtype(), xs);
    CudaContext& cc = cuda_context(ctx);
    if (dX.numel() == 0) return;
    if (dY.numel() == 0) {
      CUDA_CHECK(cudaMemsetAsync(dX.raw_data(), 0, dX.nbytes(), cc.stream()));
      return;
    }
    const std::vector<cpu::ResizeAxis> axes = cpu::resize_axes(a_, g);
    const int r = static_cast<int>(xs.size());
    std::vector<int64_t> yst(r);
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; --d) yst[d] = stride, stride *= g.y[d];
    ResizeGradPlan plan;
    plan.rank = r;
    std::vector<int64_t> inv;
    std::vector<float> w;
    for (int d = 0; d < r; ++d) {
      const cpu::ResizeAxisAdjoint adj = cpu::resize_adjoint(axes[d]);
      plan.x_dims[d] = xs[d];
      plan.first_offset[d] = static_cast<int64_t>(inv.size());
      inv.insert(inv.end(), adj.first.begin(), adj.first.end());
      plan.pos_offset[d] = static_cast<int64_t>(inv.size());
      for (int64_t p : adj.pos) inv.push_back(p * yst[d]);
      plan.w_offset[d] = static_cast<int64_t>(w.size());
      for (double v : adj.w) w.push_back(static_cast<float>(v));
    }
    inv.push_back(0), w.push_back(0.f);  // never empty (rank 0)
    const Tensor inv_d =
        cc.upload(Tensor::from_vector<int64_t>({static_cast<int64_t>(inv.size())}, inv));
    const Tensor w_d = cc.upload(Tensor::from_vector<float>({static_cast<int64_t>(w.size())}, w));
    launch_resize_grad(elem_type(dY.dtype()), dY.raw_data(), dX.raw_data(), dX.numel(),
                       inv_d.data<int64_t>(), w_d.data<float>(), plan, cc.stream());
  }

 private:
  cpu::ResizeAttrs a_;
};

}  // namespace

void register_resize(KernelRegistry& r) {
  add_floats(r, OpId::Resize, kernel_factory<ResizeKernel>());
  add_floats(r, OpId::Upsample, kernel_factory<ResizeKernel>());
  add_floats(r, OpId::ResizeGrad, kernel_factory<ResizeGradKernel>());
}

}  // namespace oat::cuda
