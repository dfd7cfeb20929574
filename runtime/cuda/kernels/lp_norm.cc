// LpNormalization and LpNormalizationGrad on CUDA (lp_norm_impl.cu), the semantics of
// runtime/cpu/kernels/lp_norm.cc with its attribute checks (lp_norm_args.h), F32/F16/BF16 with
// FP32 sums (the CPU sums in double):
//   n = Σ|x| (p = 1) or sqrt(Σx²) (p = 2) along axis,  y = x / n (0 where n = 0)
//   dX = (dY − ∂n/∂x · Σ dY⊙y) / n with ∂n/∂x = y (p = 2) or sign(x) (p = 1); 0 where n = 0.
#include "runtime/cpu/kernels/lp_norm_args.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/lp_norm_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

void lp_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const cpu::LpNormArgs a = cpu::lp_norm_args(ctx, x.shape());
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  launch_lp_norm(elem_type(x.dtype()), a.p, x.raw_data(), y.raw_data(), a.outer, a.len, a.inner,
                 stream_of(ctx));
}

// LpNormalizationGrad(dY, X) -> dX.
void lp_norm_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (dy.shape() != x.shape() || dy.dtype() != x.dtype())
    ctx.fail(cat("dY ", dtype_name(dy.dtype()), " ", shape_str(dy.shape()), " and X ",
                 dtype_name(x.dtype()), " ", shape_str(x.shape()), " must match"));
  const cpu::LpNormArgs a = cpu::lp_norm_args(ctx, x.shape());
  Tensor& dx = ctx.allocate_output(0, x.dtype(), x.shape());
  launch_lp_norm_grad(elem_type(x.dtype()), a.p, dy.raw_data(), x.raw_data(), dx.raw_data(),
                      a.outer, a.len, a.inner, stream_of(ctx));
}

}  // namespace

void register_lp_norm(KernelRegistry& r) {
  add_floats(r, OpId::LpNormalization, function_kernel(lp_norm));
  add_floats(r, OpId::LpNormalizationGrad, function_kernel(lp_norm_grad));
}

}  // namespace oat::cuda
