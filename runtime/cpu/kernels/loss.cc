// Classification losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12/13).
//
// input [N, C, d1, ...] (log-probabilities for NLL, scores for SCE), target [N, d1, ...] with
// class indices (int32/int64), optional weight [C]. For every position j = (n, d1, ...):
//   t = target[j];  w_j = weight[t] (1 without weight);  loss_j = -input[n, t, d...] * w_j
// and a target equal to ignore_index contributes loss 0 and weight 0. Reduction:
//   none: loss [N, d1, ...];  sum: Σ loss_j;  mean: Σ loss_j / Σ w_j (ONNX and PyTorch).
// SoftmaxCrossEntropyLoss is NLL of log_prob = LogSoftmax(scores, axis 1); log_prob is its
// optional second output. Sums run in double.

#include "runtime/cpu/kernels/loss_common.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/softmax.h"
#include "runtime/cpu/register.h"

namespace oat::cpu {
namespace {

// The NLL of `logp` [N, C, D...] against input `target_input`, written to output 0.
template <class T>
void nll(KernelContext& ctx, const LossAttrs& attrs, const T* logp, const Shape& in_shape,
         int target_input, int weight_input) {
  const Tensor& target = ctx.input(target_input);
  const Tensor* weight = ctx.input_or_null(weight_input);
  const Shape want = loss_target_shape(ctx, in_shape, target);
  const int64_t N = in_shape[0], C = in_shape[1];
  check_loss_weight(ctx, weight, C, dtype_of<T>());
  const T* w = weight ? weight->data<T>() : nullptr;
  const std::vector<int64_t> tgt = target_indices(ctx, target);
  const int64_t D = N > 0 ? target.numel() / N : 0;

  std::vector<double> loss(tgt.size());
  double loss_sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t d = 0; d < D; ++d) {
      const int64_t j = n * D + d, t = tgt[j];
      if (attrs.ignore_index && t == *attrs.ignore_index) {
        loss[j] = 0;
        continue;
      }
      if (t < 0 || t >= C)
        ctx.fail(cat("target value ", t, " at position ", j, " is outside [0, ", C, ")"));
      const double wt = w ? static_cast<double>(w[t]) : 1.0;
      loss[j] = -static_cast<double>(logp[(n * C + t) * D + d]) * wt;
      loss_sum += loss[j];
      weight_sum += wt;
    }
  }
  if (attrs.reduction == Reduction::None) {
    T* out = ctx.allocate_output(0, dtype_of<T>(), want).template data<T>();
    for (size_t j = 0; j < loss.size(); ++j) out[j] = static_cast<T>(loss[j]);
    return;
  }
  const double v = attrs.reduction == Reduction::Sum ? loss_sum : loss_sum / weight_sum;
  ctx.allocate_output(0, dtype_of<T>(), {}).template data<T>()[0] = static_cast<T>(v);
}

template <class T>
class NllLossKernel : public OpKernel {
 public:
  explicit NllLossKernel(const Node& n) : attrs_(parse_loss_attrs(n)) {}
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    nll<T>(ctx, attrs_, x.data<T>(), x.shape(), 1, 2);
  }

 private:
  LossAttrs attrs_;
};

template <class T>
class SoftmaxCrossEntropyKernel : public OpKernel {
 public:
  explicit SoftmaxCrossEntropyKernel(const Node& n) : attrs_(parse_loss_attrs(n)) {}
  void compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail(cat("scores must be [N, C, ...], got ", shape_str(x.shape())));
    const int64_t N = x.dim(0), C = x.dim(1);
    const int64_t D = N * C > 0 ? x.numel() / (N * C) : 0;
    // log_prob goes straight into output 1 when the model asks for it.
    Tensor log_prob = ctx.output_requested(1) ? Tensor() : Tensor(dtype_of<T>(), x.shape());
    if (ctx.output_requested(1)) log_prob = ctx.allocate_output(1, dtype_of<T>(), x.shape());
    softmax_along<T>(x.data<T>(), log_prob.data<T>(), N, C, D, SoftmaxKind::LogSoftmax);
    nll<T>(ctx, attrs_, log_prob.data<T>(), x.shape(), 1, 2);
  }

 private:
  LossAttrs attrs_;
};

}  // namespace

void register_loss(KernelRegistry& r) {
  r.add(OpId::NegativeLogLikelihoodLoss, Device::CPU, DType::F32,
        kernel_factory<NllLossKernel<float>>());
  r.add(OpId::NegativeLogLikelihoodLoss, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<NllLossKernel<float>>()));
  r.add(OpId::NegativeLogLikelihoodLoss, Device::CPU, DType::F64,
        kernel_factory<NllLossKernel<double>>());
  r.add(OpId::SoftmaxCrossEntropyLoss, Device::CPU, DType::F32,
        kernel_factory<SoftmaxCrossEntropyKernel<float>>());
  r.add(OpId::SoftmaxCrossEntropyLoss, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<SoftmaxCrossEntropyKernel<float>>()));
  r.add(OpId::SoftmaxCrossEntropyLoss, Device::CPU, DType::F64,
        kernel_factory<SoftmaxCrossEntropyKernel<double>>());
}

}  // namespace oat::cpu
