// MatMulGrad and GemmGrad on CUDA (internal domain), the formulas of
// runtime/cpu/kernels/grad_matmul.cc through the cuBLAS GEMM (gemm.h, FP32 compute):
//
// MatMulGrad(dY, A, B) -> (dA, dB):  dA_i = dY_i·B_iᵀ,  dB_i = A_iᵀ·dY_i over the broadcast batch.
//   An operand whose batch is the whole batch gets one strided-batched GEMM. A weight shared by
//   the batch (x[..., M, K]·W[K, N], the common case) gets one GEMM over the flattened batch:
//   dW = Σ_i A_iᵀ·dY_i = A₂ᵀ·dY₂ with A₂ = A as [batch·M, K]. Other broadcasts accumulate one
//   GEMM per batch entry into their target (beta = 1 after the first), in stream order.
// GemmGrad(dY, A, B, [C]) -> (dA, dB, dC), Y = α·A'·B' + β·C:
//   dA' = α·dY·B'ᵀ (dA = α·B'·dYᵀ when transA),  dB' = α·A'ᵀ·dY (dB = α·dYᵀ·A' when transB),
//   dC = β·sum_to(dY, C's shape).
// grad_type = 1 (FLOAT; runtime/grad_type.h): dB (and dC) in F32 for F16/BF16 operands — the GEMM
// writes its FP32 accumulator into an F32 C (cuBLAS: A/B 16-bit, C CUDA_R_32F, COMPUTE_32F), the
// broadcast batches accumulate into it in FP32 (beta = 1), and dC's reduction stores its FP32 sum;
// nothing is rounded to 16 bits. dA stays in the operands' dtype.
#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/matmul_shape.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/gemm.h"
#include "runtime/cuda/register.h"
#include "runtime/grad_type.h"

namespace oat::cuda {

namespace {

const char* at(const Tensor& t, int64_t elements) {
  return static_cast<const char*>(t.raw_data()) + elements * static_cast<int64_t>(dtype_size(t.dtype()));
}
char* at(Tensor& t, int64_t elements) {
  return static_cast<char*>(t.raw_data()) + elements * static_cast<int64_t>(dtype_size(t.dtype()));
}

void zero_fill(const KernelContext& ctx, Tensor& t) {
  if (t.nbytes()) CUDA_CHECK(cudaMemsetAsync(t.raw_data(), 0, t.nbytes(), stream_of(ctx)));
}

void matmul_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& a = ctx.input(1);
  const Tensor& b = ctx.input(2);
  if (a.rank() < 1 || b.rank() < 1 || a.dtype() != b.dtype() || dy.dtype() != a.dtype())
    ctx.fail(cat("dY ", dtype_name(dy.dtype()), ", A ", dtype_name(a.dtype()), " ",
                 shape_str(a.shape()), " and B ", dtype_name(b.dtype()), " ", shape_str(b.shape()),
                 " must be one float dtype, rank >= 1"));
  const cpu::MatMulShape ms = cpu::matmul_shape(ctx, a.shape(), b.shape());
  const int64_t M = ms.M, K = ms.K, N = ms.N;
  const Shape &ba = ms.batch_a, &bb = ms.batch_b, &batch = ms.batch;
  const int64_t nb = numel(batch), mk = M * K, kn = K * N, mn = M * N;
  if (dy.shape() != ms.out)
    ctx.fail(cat("dY ", shape_str(dy.shape()), " does not match A ", shape_str(a.shape()), " x B ",
                 shape_str(b.shape()), " = ", shape_str(ms.out)));
  auto full = [&](const Shape& s) {
    Shape padded(batch.size() - s.size(), 1);
    padded.insert(padded.end(), s.begin(), s.end());
    return padded == batch;
  };
  const bool a_full = full(ba), b_full = full(bb);
  const bool a_single = numel(ba) == 1, b_single = numel(bb) == 1;
  // Matrix index of batch entry i in A and in B.
  const auto off_a = cpu::batch_offsets(ba, batch), off_b = cpu::batch_offsets(bb, batch);
  const DType t = a.dtype();
  const DType tw = weight_grads_in_fp32(ctx.node()) ? DType::F32 : t;  // dB's dtype
  if (ctx.output_requested(0)) {
    Tensor& da = ctx.allocate_output(0, t, a.shape());
    const GemmShape g{false, true, M, K, N};  // dY_i [M,N] · B_iᵀ
    if (a_full && (b_full || b_single)) {
      gemm(ctx, t, g, 1.f, dy.raw_data(), mn, b.raw_data(), b_single ? 0 : kn, 0.f, da.raw_data(),
           mk, nb);
    } else {
      std::vector<bool> written(static_cast<size_t>(numel(ba)), false);
      for (int64_t i = 0; i < nb; ++i) {
        const int64_t ia = off_a[i], ib = off_b[i];
        gemm(ctx, t, g, 1.f, at(dy, i * mn), 0, at(b, ib * kn), 0, written[ia] ? 1.f : 0.f,
             at(da, ia * mk), 0, 1);
        written[ia] = true;
      }
      if (nb == 0) zero_fill(ctx, da);  // an empty batch broadcast against A's 1s: dA = 0
    }
  }
  if (ctx.output_requested(1)) {
    Tensor& db = ctx.allocate_output(1, tw, b.shape());
    if (b_full && (a_full || a_single)) {
      gemm(ctx, t, tw, GemmShape{true, false, K, N, M}, 1.f, a.raw_data(), a_single ? 0 : mk,
           dy.raw_data(), mn, 0.f, db.raw_data(), kn, nb);
    } else if (b_single && a_full) {
      // dB = A₂ᵀ·dY₂ over the flattened batch: [K, nb·M]·[nb·M, N].
      gemm(ctx, t, tw, GemmShape{true, false, K, N, nb * M}, 1.f, a.raw_data(), 0, dy.raw_data(),
           0, 0.f, db.raw_data(), 0, 1);
    } else {
      std::vector<bool> written(static_cast<size_t>(numel(bb)), false);
      for (int64_t i = 0; i < nb; ++i) {
        const int64_t ia = off_a[i], ib = off_b[i];
        gemm(ctx, t, tw, GemmShape{true, false, K, N, M}, 1.f, at(a, ia * mk), 0, at(dy, i * mn),
             0, written[ib] ? 1.f : 0.f, at(db, ib * kn), 0, 1);
        written[ib] = true;
      }
      if (nb == 0) zero_fill(ctx, db);
    }
  }
}

class GemmGradKernel : public OpKernel {
 public:
  explicit GemmGradKernel(const Node& n)
      : ta_(n.attr_int("transA", 0) != 0),
        tb_(n.attr_int("transB", 0) != 0),
        alpha_(n.attr_float("alpha", 1.0f)),
        beta_(n.attr_float("beta", 1.0f)),
        fp32_weight_grads_(weight_grads_in_fp32(n)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& a = ctx.input(1);
    const Tensor& b = ctx.input(2);
    if (a.rank() != 2 || b.rank() != 2 || dy.rank() != 2)
      ctx.fail(cat("Gemm needs 2-D A, B and dY, got ", shape_str(a.shape()), ", ",
                   shape_str(b.shape()), ", ", shape_str(dy.shape())));
    const int64_t M = ta_ ? a.dim(1) : a.dim(0), K = ta_ ? a.dim(0) : a.dim(1);
    const int64_t N = tb_ ? b.dim(0) : b.dim(1);
    if (dy.shape() != Shape{M, N} || dy.dtype() != a.dtype() || b.dtype() != a.dtype())
      ctx.fail(cat("dY ", shape_str(dy.shape()), " must be [", M, ", ", N, "] in A's dtype"));
    const DType t = a.dtype();
    const DType tw = fp32_weight_grads_ ? DType::F32 : t;  // dB's and dC's dtype
    if (ctx.output_requested(0)) {
      Tensor& da = ctx.allocate_output(0, t, a.shape());
      if (!ta_)  // dA = α·dY·B'ᵀ  [M,K]
        gemm(ctx, t, GemmShape{false, !tb_, M, K, N}, alpha_, dy.raw_data(), 0, b.raw_data(), 0,
             0.f, da.raw_data(), 0, 1);
      else  // dA = α·B'·dYᵀ  [K,M]
        gemm(ctx, t, GemmShape{tb_, true, K, M, N}, alpha_, b.raw_data(), 0, dy.raw_data(), 0,
             0.f, da.raw_data(), 0, 1);
    }
    if (ctx.output_requested(1)) {
      Tensor& db = ctx.allocate_output(1, tw, b.shape());
      if (!tb_)  // dB = α·A'ᵀ·dY  [K,N]
        gemm(ctx, t, tw, GemmShape{!ta_, false, K, N, M}, alpha_, a.raw_data(), 0, dy.raw_data(),
             0, 0.f, db.raw_data(), 0, 1);
      else  // dB = α·dYᵀ·A'  [N,K]
        gemm(ctx, t, tw, GemmShape{true, ta_, N, K, M}, alpha_, dy.raw_data(), 0, a.raw_data(),
             0, 0.f, db.raw_data(), 0, 1);
    }
    if (ctx.output_requested(2)) {
      const Tensor* c = ctx.input_or_null(3);
      if (!c) ctx.fail("dC was asked for but C is absent");
      Tensor& dc = ctx.allocate_output(2, tw, c->shape());
      sum_to_shape_into(ctx, dy, dc);
      launch_unary(UnaryOp::Scale, elem_type(tw), dc.raw_data(), dc.raw_data(), dc.numel(), beta_,
                   0.f, stream_of(ctx));
    }
  }

 private:
  bool ta_, tb_;
  float alpha_, beta_;
  bool fp32_weight_grads_;  // grad_type = FLOAT
};

}  // namespace

void register_grad_matmul(KernelRegistry& r) {
  add_floats(r, OpId::MatMulGrad, function_kernel(matmul_grad));
  add_floats(r, OpId::GemmGrad, kernel_factory<GemmGradKernel>());
}

}  // namespace oat::cuda
