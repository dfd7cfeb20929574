// Classification losses and their gradients on CUDA (loss_impl.cu), the semantics of
// runtime/cpu/kernels/loss.cc and grad_loss.cc. Input [N, C, d...] viewed as [N, C, D], target
// [N, d...] (int64/int32), optional weight [C]; j runs over the N·D positions, w_j = weight[t_j]
// (1 without weight), 0 where t_j = ignore_index:
//   NegativeLogLikelihoodLoss(log_prob, target, [weight]):  loss_j = −log_prob[n, t_j, d]·w_j
//   SoftmaxCrossEntropyLoss(scores, target, [weight]) -> (loss, [log_prob]):
//       log_prob = LogSoftmax(scores, axis 1), then NLL
//   reduction: none (loss [N, d...]), sum (Σ loss_j), mean (Σ loss_j / Σ w_j), FP32 sums.
//   NegativeLogLikelihoodLossGrad(dLoss, X_shape, target, [weight]):
//       dX = −[c = t_j]·w_j·dL_j/ν
//   SoftmaxCrossEntropyLossGrad(dLoss, log_prob | scores, target, [weight]) (from_scores):
//       dX = (softmax − [c = t_j])·w_j·dL_j/ν,   ν = Σ_j w_j (mean, dX = 0 when ν = 0) or 1
// Targets on the host (fed labels) are range-checked there before the upload; targets produced
// on the device are not checked: an out-of-range one counts as ignored.
#include <algorithm>

#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/loss_impl.h"
#include "runtime/cuda/kernels/reduce_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

LossShape loss_shape(const KernelContext& ctx, const Shape& x, const Tensor& target) {
  const Node& n = ctx.node();
  if (x.size() < 2) ctx.fail(cat("input must be [N, C, ...], got ", shape_str(x)));
  LossShape s;
  s.N = x[0];
  s.C = x[1];
  for (size_t d = 2; d < x.size(); ++d) s.D *= x[d];
  Shape want{x[0]};
  want.insert(want.end(), x.begin() + 2, x.end());
  if (target.shape() != want)
    ctx.fail(cat("target has shape ", shape_str(target.shape()), ", expected ", shape_str(want)));
  if (target.dtype() != DType::I64 && target.dtype() != DType::I32)
    ctx.fail(cat("target must be int64 or int32, got ", dtype_name(target.dtype())));
  const std::string r = n.attr_string("reduction", "mean");
  if (r == "none") s.reduction = LossReduction::None;
  else if (r == "sum") s.reduction = LossReduction::Sum;
  else if (r == "mean") s.reduction = LossReduction::Mean;
  else ctx.fail(cat("reduction '", r, "' is not one of none, sum, mean"));
  s.has_ignore = n.has_attr("ignore_index");
  s.ignore_index = n.attr_int("ignore_index", -100);
  return s;
}

// The target on the device, range-checked first when it arrives on the host.
Tensor device_target(const KernelContext& ctx, const Tensor& target, const LossShape& s) {
  if (target.device() == Device::CUDA) return target;
  for (int64_t j = 0; j < target.numel(); ++j) {
    const int64_t t = target.item_as_int(j);
    if (!(s.has_ignore && t == s.ignore_index) && (t < 0 || t >= s.C))
      ctx.fail(cat("target ", t, " at position ", j, " is not a class in [0, ", s.C, ")"));
  }
  return cuda_context(ctx).upload(target);
}

const void* weight_of(const KernelContext& ctx, int i, const Tensor& x, int64_t C) {
  const Tensor* w = ctx.input_or_null(i);
  if (!w) return nullptr;
  if (w->numel() != C || w->dtype() != x.dtype())
    ctx.fail(cat("weight ", dtype_name(w->dtype()), " ", shape_str(w->shape()), " must be ",
                 dtype_name(x.dtype()), " [", C, "]"));
  return w->raw_data();
}

Shape loss_out_shape(const LossShape& s, const Tensor& target) {
  return s.reduction == LossReduction::None ? target.shape() : Shape{};
}

void nll(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const LossShape s = loss_shape(ctx, x.shape(), ctx.input(1));
  const Tensor tgt = device_target(ctx, ctx.input(1), s);
  Tensor& loss = ctx.allocate_output(0, x.dtype(), loss_out_shape(s, tgt));
  launch_nll_forward(elem_type(x.dtype()), x.raw_data(), tgt.raw_data(), tgt.dtype() == DType::I64,
                     weight_of(ctx, 2, x, s.C), loss.raw_data(), s, stream_of(ctx));
}

void softmax_cross_entropy(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const LossShape s = loss_shape(ctx, x.shape(), ctx.input(1));
  const Tensor tgt = device_target(ctx, ctx.input(1), s);
  Tensor lp = ctx.output_requested(1) ? ctx.allocate_output(1, x.dtype(), x.shape())
                                      : Tensor(x.dtype(), x.shape(), Device::CUDA);
  const cudaStream_t st = stream_of(ctx);
  launch_softmax(elem_type(x.dtype()), true, x.raw_data(), lp.raw_data(), s.N, s.C, s.D, st);
  Tensor& loss = ctx.allocate_output(0, x.dtype(), loss_out_shape(s, tgt));
  launch_nll_forward(elem_type(x.dtype()), lp.raw_data(), tgt.raw_data(), tgt.dtype() == DType::I64,
                     weight_of(ctx, 2, x, s.C), loss.raw_data(), s, st);
}

// Shared by both gradients: `lp` is log_prob (softmax term) or null (NLL).
void loss_backward(KernelContext& ctx, const Shape& x_shape, const Tensor* lp, int target_index,
                   int weight_index) {
  const Tensor& dloss = ctx.input(0);
  const LossShape s = loss_shape(ctx, x_shape, ctx.input(target_index));
  const Tensor tgt = device_target(ctx, ctx.input(target_index), s);
  const bool scalar = s.reduction != LossReduction::None;
  if (scalar ? dloss.numel() != 1 : dloss.shape() != tgt.shape())
    ctx.fail(cat("dLoss has shape ", shape_str(dloss.shape()), " for reduction ",
                 ctx.node().attr_string("reduction", "mean")));
  Tensor scratch(DType::F32, {}, Device::CUDA);
  Tensor& dx = ctx.allocate_output(0, dloss.dtype(), x_shape);
  launch_nll_backward(elem_type(dloss.dtype()), dloss.raw_data(), scalar, lp ? lp->raw_data() : nullptr,
                      lp != nullptr, tgt.raw_data(), tgt.dtype() == DType::I64,
                      weight_of(ctx, weight_index, dloss, s.C), dx.raw_data(),
                      scratch.data<float>(), s, stream_of(ctx));
}

void nll_grad(KernelContext& ctx) {
  loss_backward(ctx, host_input(ctx, 1).to_int_vector(), nullptr, 2, 3);
}

void softmax_cross_entropy_grad(KernelContext& ctx) {
  const Tensor& x = ctx.input(1);
  if (x.dtype() != ctx.input(0).dtype())
    ctx.fail(cat("log_prob/scores have dtype ", dtype_name(x.dtype()), ", the loss gradient has ",
                 dtype_name(ctx.input(0).dtype())));
  Tensor lp = x;
  if (ctx.node().attr_int("from_scores", 0) != 0) {
    if (x.rank() < 2) ctx.fail(cat("scores must be [N, C, ...], got ", shape_str(x.shape())));
    lp = Tensor(x.dtype(), x.shape(), Device::CUDA);
    launch_softmax(elem_type(x.dtype()), true, x.raw_data(), lp.raw_data(), x.dim(0), x.dim(1),
                   x.numel() / std::max<int64_t>(1, x.dim(0) * x.dim(1)), stream_of(ctx));
  }
  loss_backward(ctx, x.shape(), &lp, 2, 3);
}

}  // namespace

void register_loss(KernelRegistry& r) {
  add_floats(r, OpId::NegativeLogLikelihoodLoss, function_kernel(nll));
  add_floats(r, OpId::SoftmaxCrossEntropyLoss, function_kernel(softmax_cross_entropy));
  add_floats(r, OpId::NegativeLogLikelihoodLossGrad, function_kernel(nll_grad));
  add_floats(r, OpId::SoftmaxCrossEntropyLossGrad, function_kernel(softmax_cross_entropy_grad));
}

}  // namespace oat::cuda
