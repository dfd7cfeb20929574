// Activation gradients on CUDA (internal domain; grad_activation_impl.cu): ReluGrad(dY, Y),
// LeakyReluGrad(dY, X), SigmoidGrad(dY, Y), TanhGrad(dY, Y), GeluGrad(dY, X), ClipGrad(dY, X,
// [min], [max]), EluGrad(dY, X), SoftplusGrad(dY, X), HardSigmoidGrad(dY, X), HardSwishGrad(dY,
// X): dX = dY ⊙ f'(V), formulas and attributes as runtime/cpu/kernels/grad_activation.cc.
// PReluGrad(dY, X, slope) -> (dX, dSlope): dX = dY ⊙ (X < 0 ? slope : 1) and
// dSlope = sum_to(dY ⊙ (X < 0 ? X : 0), slope's shape), the product and the sum in FP32, one
// rounding; attr legacy_slope = 1 (PRelu before opset 7) reads a 1-D slope of size C per channel.
#include <limits>

#include "runtime/cpu/broadcast.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/grad_activation_impl.h"
#include "runtime/cpu/kernels/gelu_mode.h"
#include "runtime/cpu/kernels/prelu_slope.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

std::pair<float, float> params_of(ActGrad op, const KernelContext& ctx) {
  const Node& n = ctx.node();
  switch (op) {
    case ActGrad::LeakyRelu: return {n.attr_float("alpha", 0.01f), 0.f};
    case ActGrad::Elu: return {n.attr_float("alpha", 1.f), n.attr_float("gamma", 1.f)};
    case ActGrad::HardSigmoid: return {n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
    case ActGrad::Clip: {
      float lo = -std::numeric_limits<float>::infinity();
      float hi = std::numeric_limits<float>::infinity();
      if (n.has_attr("min")) lo = n.attr_float("min", lo);
      else if (ctx.has_input(2)) lo = static_cast<float>(host_input(ctx, 2).item_as_double());
      if (n.has_attr("max")) hi = n.attr_float("max", hi);
      else if (ctx.has_input(3)) hi = static_cast<float>(host_input(ctx, 3).item_as_double());
      return {lo, hi};
    }
    default: return {0.f, 0.f};
  }
}

template <ActGrad Op>
void activation_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& v = ctx.input(1);
  if (dy.shape() != v.shape() || dy.dtype() != v.dtype())
    ctx.fail(cat("dY ", dtype_name(dy.dtype()), " ", shape_str(dy.shape()), " and the saved value ",
                 dtype_name(v.dtype()), " ", shape_str(v.shape()), " must match"));
  ActGrad op = Op;
  if (Op == ActGrad::Gelu && gelu_uses_tanh(ctx.node()))
    op = ActGrad::GeluTanh;
  const auto [a, b] = params_of(Op, ctx);
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.shape());
  launch_activation_grad(op, elem_type(dy.dtype()), dy.raw_data(), v.raw_data(), dx.raw_data(),
                         dx.numel(), a, b, stream_of(ctx));
}

class PReluGradKernel : public OpKernel {
 public:
  explicit PReluGradKernel(const Node& n) : legacy_(n.attr_int("legacy_slope", 0) != 0) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    const Tensor& slope = ctx.input(2);
    const Shape ss = cpu::checked_prelu_grad_slope(ctx, dy, x, slope, legacy_);  // [C]: [C, 1..]
    const Shape& xs = x.shape();
    const bool want_dx = ctx.output_requested(0), want_ds = ctx.output_requested(1);
    const cudaStream_t s = stream_of(ctx);
    void* dx = want_dx ? ctx.allocate_output(0, x.dtype(), xs).raw_data() : nullptr;
    Tensor prod;
    if (want_ds) prod = Tensor(DType::F32, xs, Device::CUDA);
    launch_prelu_grad(elem_type(x.dtype()), dy.raw_data(), x.raw_data(), slope.raw_data(), dx,
                      want_ds ? prod.data<float>() : nullptr, x.numel(),
                      make_broadcast_index(xs, {ss}), s);
    if (!want_ds) return;
    Tensor& ds = ctx.allocate_output(1, slope.dtype(), slope.shape());
    // Σ over the broadcast dimensions in FP32: into dSlope itself (viewed as ss) for F32, into
    // a float copy rounded once otherwise.
    Tensor acc = slope.dtype() == DType::F32 ? ds.reshaped(ss)
                                              : Tensor(DType::F32, ss, Device::CUDA);
    sum_to_shape_into(ctx, prod, acc);
    if (slope.dtype() != DType::F32)
      launch_cast(ElemType::F32, elem_type(slope.dtype()), acc.raw_data(), ds.raw_data(),
                  ds.numel(), s);
  }

 private:
  bool legacy_;
};

}  // namespace

void register_grad_activation(KernelRegistry& r) {
  add_floats(r, OpId::ReluGrad, function_kernel(activation_grad<ActGrad::Relu>));
  add_floats(r, OpId::LeakyReluGrad, function_kernel(activation_grad<ActGrad::LeakyRelu>));
  add_floats(r, OpId::SigmoidGrad, function_kernel(activation_grad<ActGrad::Sigmoid>));
  add_floats(r, OpId::TanhGrad, function_kernel(activation_grad<ActGrad::Tanh>));
  add_floats(r, OpId::GeluGrad, function_kernel(activation_grad<ActGrad::Gelu>));
  add_floats(r, OpId::ClipGrad, function_kernel(activation_grad<ActGrad::Clip>));
  add_floats(r, OpId::EluGrad, function_kernel(activation_grad<ActGrad::Elu>));
  add_floats(r, OpId::SoftplusGrad, function_kernel(activation_grad<ActGrad::Softplus>));
  add_floats(r, OpId::HardSigmoidGrad, function_kernel(activation_grad<ActGrad::HardSigmoid>));
  add_floats(r, OpId::HardSwishGrad, function_kernel(activation_grad<ActGrad::HardSwish>));
  add_floats(r, OpId::PReluGrad, kernel_factory<PReluGradKernel>());
}

}  // namespace oat::cuda
