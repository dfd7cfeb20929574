// LayerNormalization (opset 17) and LayerNormalizationGrad on CUDA (norm_impl.cu), the semantics
// of runtime/cpu/kernels/norm.cc and grad_norm.cc. Rows = prod(shape[:axis]), each of
// n = prod(shape[axis:]) elements, statistics in FP32:
//   μ = Σx/n,  σ⁻¹ = 1/√(Σ(x − μ)²/n + ε),  Y = (x − μ)·σ⁻¹·Scale + B
//   optional outputs Mean and InvStdDev (FP32, shape[axis:] set to 1).
// LayerNormalizationGrad(dY, X, Scale, [Mean, InvStdDev]) -> (dX, dScale, dBias), g = dY⊙γ:
//   dX = σ⁻¹·(g − mean(g) − x̂·mean(g⊙x̂)),  dScale = Σ_rows dY⊙x̂,  dBias = Σ_rows dY
//   (dScale, dBias of shape shape[axis:] in X's dtype).
// Scale and B may broadcast to shape[axis:]; they are expanded to FP32 rows on the device.
#include <algorithm>

#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/norm_impl.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

struct RowView {
  Shape norm_shape, stat_shape;
  int64_t rows = 0, n = 0;
};

RowView row_view(const KernelContext& ctx, const Tensor& x) {
  const int r = x.rank();
  const int64_t a = ctx.node().attr_int("axis", -1);
  const int64_t axis = a < 0 ? a + r : a;
  if (axis < 0 || axis >= std::max(r, 1))
    ctx.fail(cat("axis ", a, " is out of range for X ", shape_str(x.shape())));
  RowView v;
  v.norm_shape.assign(x.shape().begin() + axis, x.shape().end());
  v.stat_shape = x.shape();
  for (int d = static_cast<int>(axis); d < r; ++d) v.stat_shape[d] = 1;
  v.n = numel(v.norm_shape);
  v.rows = v.n > 0 ? x.numel() / v.n : 0;
  return v;
}

// Input i broadcast to the normalised shape as FP32 [n]; undefined when the input is omitted.
Tensor row_param(KernelContext& ctx, int i, const Shape& norm_shape, const char* what) {
  const Tensor* t = ctx.input_or_null(i);
  if (!t) return Tensor();
  bool ok = t->rank() <= static_cast<int>(norm_shape.size()) && is_floating(t->dtype()) &&
            t->dtype() != DType::F64;
  for (int d = 0; ok && d < t->rank(); ++d) {
    const int64_t td = t->shape()[d], sd = norm_shape[norm_shape.size() - t->rank() + d];
    ok = td == sd || td == 1;
  }
  if (!ok)
    ctx.fail(cat(what, " ", dtype_name(t->dtype()), " ", shape_str(t->shape()),
                 " does not broadcast to the normalised shape ", shape_str(norm_shape)));
  const cudaStream_t s = stream_of(ctx);
  Tensor full = *t;
  if (t->shape() != norm_shape) {
    full = Tensor(t->dtype(), norm_shape, Device::CUDA);
    launch_broadcast_copy(static_cast<int>(dtype_size(t->dtype())), t->raw_data(), full.raw_data(),
                          full.numel(), make_broadcast_index(norm_shape, {t->shape()}), s);
  }
  if (full.dtype() == DType::F32) return full;
  Tensor f(DType::F32, norm_shape, Device::CUDA);
  launch_cast(elem_type(full.dtype()), ElemType::F32, full.raw_data(), f.raw_data(), f.numel(), s);
  return f;
}

const float* ptr(const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; }

void layer_norm(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const RowView v = row_view(ctx, x);
  const Tensor scale = row_param(ctx, 1, v.norm_shape, "Scale");
  const Tensor bias = row_param(ctx, 2, v.norm_shape, "B");
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  float* mean = ctx.output_requested(1)
                    ? ctx.allocate_output(1, DType::F32, v.stat_shape).data<float>()
                    : nullptr;
  float* inv = ctx.output_requested(2)
                   ? ctx.allocate_output(2, DType::F32, v.stat_shape).data<float>()
                   : nullptr;
  launch_layer_norm(elem_type(x.dtype()), x.raw_data(), ptr(scale), ptr(bias), y.raw_data(), mean,
                    inv, v.rows, v.n, ctx.node().attr_float("epsilon", 1e-5f), stream_of(ctx));
}

void layer_norm_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  if (dy.shape() != x.shape() || dy.dtype() != x.dtype())
    ctx.fail(cat("gradient dY ", dtype_name(dy.dtype()), " ", shape_str(dy.shape()),
                 " does not match X ", dtype_name(x.dtype()), " ", shape_str(x.shape())));
  const RowView v = row_view(ctx, x);
  const Tensor scale = row_param(ctx, 2, v.norm_shape, "Scale");
  const Tensor* saved_mean = ctx.input_or_null(3);
  const Tensor* saved_inv = ctx.input_or_null(4);
  const bool have = saved_mean && saved_inv;
  Tensor mean, inv;
  if (have) {
    for (const Tensor* t : {saved_mean, saved_inv})
      if (t->dtype() != DType::F32 || t->numel() != v.rows)
        ctx.fail(cat("Mean/InvStdDev must be float32 with ", v.rows, " elements, got ",
                     dtype_name(t->dtype()), " ", shape_str(t->shape())));
    mean = *saved_mean;
    inv = *saved_inv;
  } else {
    mean = Tensor(DType::F32, {v.rows}, Device::CUDA);
    inv = Tensor(DType::F32, {v.rows}, Device::CUDA);
  }
  void* dx = ctx.output_requested(0) ? ctx.allocate_output(0, x.dtype(), x.shape()).raw_data() : nullptr;
  void* dscale =
      ctx.output_requested(1) ? ctx.allocate_output(1, x.dtype(), v.norm_shape).raw_data() : nullptr;
  void* dbias =
      ctx.output_requested(2) ? ctx.allocate_output(2, x.dtype(), v.norm_shape).raw_data() : nullptr;
  if (v.rows == 0) {  // no rows: dScale and dBias are empty sums (the launcher writes nothing)
    for (void* p : {dscale, dbias})
      if (p) CUDA_CHECK(cudaMemsetAsync(p, 0, v.n * dtype_size(x.dtype()), stream_of(ctx)));
    return;
  }
  Tensor scratch;  // the column sums' partials when the rows are split over blocks
  const int64_t floats = (dscale || dbias) ? layer_norm_grad_scratch_floats(v.rows, v.n) : 0;
  if (floats > 0) scratch = Tensor(DType::F32, {floats}, Device::CUDA);
  launch_layer_norm_grad(elem_type(x.dtype()), dy.raw_data(), x.raw_data(), ptr(scale),
                         mean.data<float>(), inv.data<float>(), have, dx, dscale, dbias,
                         scratch.defined() ? scratch.data<float>() : nullptr, v.rows, v.n,
                         ctx.node().attr_float("epsilon", 1e-5f), stream_of(ctx));
}

}  // namespace

void register_layer_norm(KernelRegistry& r) {
  add_floats(r, OpId::LayerNormalization, function_kernel(layer_norm));
  add_floats(r, OpId::LayerNormalizationGrad, function_kernel(layer_norm_grad));
}

}  // namespace oat::cuda
