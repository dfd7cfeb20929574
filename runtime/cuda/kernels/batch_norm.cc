// BatchNormalization (inference and training mode), InstanceNormalization and
// BatchNormalizationGrad on CUDA (batch_norm_impl.cu), the semantics of runtime/cpu/kernels/norm.cc
// and grad_norm.cc. X is [N, C, S...] viewed as [N, C, S]; statistics and per-channel parameters
// in FP32 (parameters that arrive as F16/BF16 are widened on the device), as DESIGN.md prescribes
// for FP16 data.
//   Y = (x − μ)/√(var + ε)·scale + B
//   inference: μ, var = input_mean, input_var
//   training (training_mode = 1 from opset 14; optional outputs present before): μ, var = the
//     batch statistics (population variance, ONNX's definition), and
//     running_mean = input_mean·momentum + μ·(1 − momentum)   (running_var likewise with var);
//     before opset 14 outputs 3 and 4 are the batch μ and var.
//   spatial = 0 (before opset 9): every (c, s) is its own channel (C·S channels of one element
//     per image; scale, B, mean, var have C·S values).
//   Statistics outputs in the CPU's dtypes: F32 data: input_mean's dtype; F16/BF16 data: the
//     running statistics (1, 2) in F32, the batch statistics (3, 4) rounded to the data type.
// InstanceNormalization(X, scale, B): μ, var per (n, c) plane (training-mode statistics of N·C
//   channels), scale and B per c.
// BatchNormalizationGrad(dY, X, scale, [mean, var]) -> (dX, dScale, dBias), attrs training_mode,
//   epsilon; x̂ = (x − μ)/σ:
//     training: dX = γ/σ·(dY − mean(dY) − x̂·mean(dY⊙x̂))   (μ, σ recomputed from X)
//     else:     dX = γ/σ·dY
//     dScale = Σ dY⊙x̂,  dBias = Σ dY  (scale's shape; scale's dtype for F32 data, F32 for
//     F16/BF16 data, as the CPU's in_fp32 wrapper writes them)
//   spatial = 0: as the forward, C·S channels.
//   instance = 1 (InstanceNormalization's gradient): training mode with μ, σ per (n, c) plane;
//     dScale[c] = Σ_n (Σ_s dY⊙x̂)[n, c],  dBias[c] = Σ_n (Σ_s dY)[n, c].
#include <algorithm>

#include "runtime/cuda/kernels/batch_norm_impl.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

ChannelShape channels_of(const KernelContext& ctx, const Tensor& x) {
  if (x.rank() < 2) ctx.fail(cat("X must be [N, C, ...], got ", shape_str(x.shape())));
  ChannelShape sh;
  sh.N = x.dim(0);
  sh.C = x.dim(1);
  sh.S = x.numel() / std::max<int64_t>(1, sh.N * sh.C);
  return sh;
}

// Input i as FP32 [C] on the device.
Tensor param_f32(KernelContext& ctx, int i, int64_t c, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != c || !is_floating(t.dtype()) || t.dtype() == DType::F64)
    ctx.fail(cat(what, " (input ", i, ") is ", dtype_name(t.dtype()), " ", shape_str(t.shape()),
                 ", expected ", c, " float32/float16/bfloat16 values"));
  if (t.dtype() == DType::F32) return t;
  Tensor f(DType::F32, t.shape(), Device::CUDA);
  launch_cast(elem_type(t.dtype()), ElemType::F32, t.raw_data(), f.raw_data(), c, stream_of(ctx));
  return f;
}

// Output i with `dtype` and `shape` holding the FP32 values `v` (cast when dtype is not F32).
void write_f32(KernelContext& ctx, int i, DType dtype, const Shape& shape, const Tensor& v) {
  Tensor& o = ctx.allocate_output(i, dtype, shape);
  launch_cast(ElemType::F32, elem_type(dtype), v.raw_data(), o.raw_data(), o.numel(),
              stream_of(ctx));
}

// The dtype of a statistics output (BatchNormalization's 1..4, the gradient's dScale/dBias) as
// the CPU writes it: F32 data: `param` (the parameter input it mirrors); F16/BF16 data, where the
// CPU's in_fp32 wrapper hands the FP32 kernel F32 parameters: F32, or the data type for the
// outputs that wrapper rounds (`rounded`: BatchNormalization's batch statistics 3 and 4).
DType stat_dtype(DType data, DType param, bool rounded) {
  if (data == DType::F32) return param;
  return rounded ? data : DType::F32;
}

// Per-activation statistics (spatial = 0, BatchNormalization before opset 9): C·S channels.
ChannelShape per_activation(ChannelShape sh) {
  sh.C *= sh.S;
  sh.S = 1;
  return sh;
}

// mean, var [C] (F32) <- the batch statistics of x viewed as sh (scratch from the allocator).
void batch_stats(const Tensor& x, Tensor& mean, Tensor& var, const ChannelShape& sh,
                 cudaStream_t s) {
  Tensor partials(DType::F32, {bn_partial_floats(sh)}, Device::CUDA);
  launch_bn_stats(elem_type(x.dtype()), x.raw_data(), mean.data<float>(), var.data<float>(),
                  partials.data<float>(), sh, s);
}

void batch_norm(KernelContext& ctx) {
  const Node& n = ctx.node();
  bool training;
  if (n.opset >= 14) {
    training = n.attr_int("training_mode", 0) != 0;
  } else {
    int present = 0;
    for (size_t i = 1; i < n.outputs.size(); ++i) present += !n.outputs[i].empty();
    training = present > 0 && !(n.opset <= 6 && n.attr_int("is_test", 0) != 0);
  }
  const Tensor& x = ctx.input(0);
  ChannelShape sh = channels_of(ctx, x);
  if (n.opset < 9 && n.attr_int("spatial", 1) == 0) sh = per_activation(sh);
  const float eps = n.attr_float("epsilon", 1e-5f);
  const Tensor scale = param_f32(ctx, 1, sh.C, "scale");
  const Tensor bias = param_f32(ctx, 2, sh.C, "B");
  const Tensor in_mean = param_f32(ctx, 3, sh.C, "input_mean");
  const Tensor in_var = param_f32(ctx, 4, sh.C, "input_var");
  const cudaStream_t s = stream_of(ctx);
  Tensor mean = in_mean, var = in_var;
  if (training) {
    mean = Tensor(DType::F32, {sh.C}, Device::CUDA);
    var = Tensor(DType::F32, {sh.C}, Device::CUDA);
    batch_stats(x, mean, var, sh, s);
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  launch_bn_apply(elem_type(x.dtype()), x.raw_data(), y.raw_data(), mean.data<float>(),
                  var.data<float>(), scale.data<float>(), bias.data<float>(), eps, sh, s);
  if (!training) return;
  const float mom = n.attr_float("momentum", 0.9f);
  const Shape& ps = ctx.input(3).shape();
  const DType pt = ctx.input(3).dtype();
  for (int k = 1; k <= 2; ++k) {
    if (!ctx.output_requested(k)) continue;
    Tensor run(DType::F32, {sh.C}, Device::CUDA);
    launch_bn_blend((k == 1 ? in_mean : in_var).data<float>(), (k == 1 ? mean : var).data<float>(),
                    run.data<float>(), mom, sh.C, s);
    write_f32(ctx, k, stat_dtype(x.dtype(), pt, false), ps, run);
  }
  if (n.opset < 14) {
    const DType bt = stat_dtype(x.dtype(), pt, true);
    if (ctx.output_requested(3)) write_f32(ctx, 3, bt, ps, mean);
    if (ctx.output_requested(4)) write_f32(ctx, 4, bt, ps, var);
  }
}

void instance_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const ChannelShape planes = channels_of(ctx, x);
  const int64_t C = planes.C;
  const ChannelShape sh{1, planes.N * C, planes.S, C};
  const float eps = ctx.node().attr_float("epsilon", 1e-5f);
  const Tensor scale = param_f32(ctx, 1, C, "scale");
  const Tensor bias = param_f32(ctx, 2, C, "B");
  const cudaStream_t s = stream_of(ctx);
  Tensor mean(DType::F32, {sh.C}, Device::CUDA), var(DType::F32, {sh.C}, Device::CUDA);
  batch_stats(x, mean, var, sh, s);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  launch_bn_apply(elem_type(x.dtype()), x.raw_data(), y.raw_data(), mean.data<float>(),
                  var.data<float>(), scale.data<float>(), bias.data<float>(), eps, sh, s);
}

void batch_norm_grad(KernelContext& ctx) {
  const Node& n = ctx.node();
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (dy.shape() != x.shape() || dy.dtype() != x.dtype())
    ctx.fail(cat("dY ", dtype_name(dy.dtype()), " ", shape_str(dy.shape()), " does not match X ",
                 dtype_name(x.dtype()), " ", shape_str(x.shape())));
  const bool instance = n.attr_int("instance", 0) != 0;
  const bool training = n.attr_int("training_mode", 0) != 0 || instance;
  ChannelShape sh = channels_of(ctx, x);
  const int64_t N = sh.N;
  if (instance) {
    sh = ChannelShape{1, N * sh.C, sh.S, sh.C};  // one statistics channel per (n, c) plane
  } else if (n.attr_int("spatial", 1) == 0) {
    sh = per_activation(sh);
  }
  const int64_t C = instance ? sh.params : sh.C;  // values of scale (and mean, var)
  const float eps = n.attr_float("epsilon", 1e-5f);
  const Tensor scale = param_f32(ctx, 2, C, "scale");
  const cudaStream_t s = stream_of(ctx);
  Tensor mean, var;
  if (training) {
    mean = Tensor(DType::F32, {sh.C}, Device::CUDA);
    var = Tensor(DType::F32, {sh.C}, Device::CUDA);
    batch_stats(x, mean, var, sh, s);
  } else {
    if (!ctx.has_input(3) || !ctx.has_input(4))
      ctx.fail("inference-mode gradient needs the mean and var inputs");
    mean = param_f32(ctx, 3, C, "mean");
    var = param_f32(ctx, 4, C, "var");
  }
  Tensor sum_dy(DType::F32, {sh.C}, Device::CUDA), sum_dyxh(DType::F32, {sh.C}, Device::CUDA);
  Tensor partials(DType::F32, {bn_partial_floats(sh)}, Device::CUDA);
  launch_bn_grad_sums(elem_type(x.dtype()), dy.raw_data(), x.raw_data(), mean.data<float>(),
                      var.data<float>(), eps, sum_dy.data<float>(), sum_dyxh.data<float>(),
                      partials.data<float>(), sh, s);
  if (ctx.output_requested(0)) {
    Tensor& dx = ctx.allocate_output(0, x.dtype(), x.shape());
    launch_bn_grad_dx(elem_type(x.dtype()), dy.raw_data(), x.raw_data(), mean.data<float>(),
                      var.data<float>(), scale.data<float>(), sum_dy.data<float>(),
                      sum_dyxh.data<float>(), training, eps, dx.raw_data(), sh, s);
  }
  const Tensor& sc = ctx.input(2);
  const DType pt = stat_dtype(x.dtype(), sc.dtype(), false);
  for (int k = 1; k <= 2; ++k) {
    if (!ctx.output_requested(k)) continue;
    const Tensor& sums = k == 1 ? sum_dyxh : sum_dy;
    if (!instance) {
      write_f32(ctx, k, pt, sc.shape(), sums);
      continue;
    }
    // Σ over n of the per-plane sums, [N, C] -> [C] (FP32 reduction).
    Tensor total(DType::F32, {C}, Device::CUDA);
    sum_to_shape_into(ctx, sums.reshaped({N, C}), total);
    write_f32(ctx, k, pt, sc.shape(), total);
  }
}

}  // namespace

void register_batch_norm(KernelRegistry& r) {
  add_floats(r, OpId::BatchNormalization, function_kernel(batch_norm));
  add_floats(r, OpId::BatchNormalizationGrad, function_kernel(batch_norm_grad));
  add_floats(r, OpId::InstanceNormalization, function_kernel(instance_norm));
}

}  // namespace oat::cuda
