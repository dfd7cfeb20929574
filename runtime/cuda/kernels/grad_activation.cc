// Activation gradients on CUDA (internal domain; grad_activation_impl.cu): ReluGrad(dY, Y),
// LeakyReluGrad(dY, X), SigmoidGrad(dY, Y), TanhGrad(dY, Y), GeluGrad(dY, X), ClipGrad(dY, X,
// [min], [max]), EluGrad(dY, X), SoftplusGrad(dY, X), HardSigmoidGrad(dY, X), HardSwishGrad(dY,
// X): dX = dY ⊙ f'(V), formulas and attributes as runtime/cpu/kernels/grad_activation.cc.
#include <limits>

#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/grad_activation_impl.h"
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
  if (Op == ActGrad::Gelu && ctx.node().attr_string("approximate", "none") == "tanh")
    op = ActGrad::GeluTanh;
  const auto [a, b] = params_of(Op, ctx);
  Tensor& dx = ctx.allocate_output(0, dy.dtype(), dy.shape());
  launch_activation_grad(op, elem_type(dy.dtype()), dy.raw_data(), v.raw_data(), dx.raw_data(),
                         dx.numel(), a, b, stream_of(ctx));
}

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
}

}  // namespace oat::cuda
