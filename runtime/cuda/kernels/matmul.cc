// MatMul and Gemm through cublasGemmStridedBatchedEx with CUBLAS_COMPUTE_32F: F16/BF16 operands
// run on tensor cores and accumulate in FP32 (the same rule the CPU reference emulates); F32 stays
// true FP32 (no TF32), so it matches the CPU reference.
//
// Row-major C[M,N] = A'[M,K]·B'[K,N] is, read column-major, Cᵀ = B'ᵀ·A'ᵀ: cuBLAS is asked for an
// N×M product with the operands swapped. A row-major [r,c] buffer is a column-major c×r matrix
// with leading dimension c, so an untransposed operand needs CUBLAS_OP_N and a transposed one
// CUBLAS_OP_T.
//
// MatMul follows numpy: 1-D operands get a 1 prepended (A) or appended (B) and removed from the
// result; batch dimensions broadcast. A batch operand that is one matrix (all batch dims 1) has
// stride 0; one whose batch shape equals the result's has stride M·K (or K·N); anything else
// (both sides broadcast partly) loops over the result's batch with one GEMM each.
#include <algorithm>
#include <limits>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/matmul_shape.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/elementwise_impl.h"
#include "runtime/cuda/kernels/gemm.h"
#include "runtime/cuda/register.h"

namespace oat::cuda {

namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    default: break;
  }
  throw Error(cat("cuBLAS: no GEMM for dtype ", dtype_name(t)));
}

void matmul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype())
    ctx.fail(cat("operands have dtypes ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype())));
  const cpu::MatMulShape ms = cpu::matmul_shape(ctx, a.shape(), b.shape());
  const GemmShape g{false, false, ms.M, ms.N, ms.K};
  const Shape &ba = ms.batch_a, &bb = ms.batch_b, &batch = ms.batch;
  Tensor& y = ctx.allocate_output(0, a.dtype(), ms.out);
  const int64_t nb = numel(batch), mk = g.M * g.K, kn = g.K * g.N, mn = g.M * g.N;
  auto stride_of = [&](const Shape& s, int64_t mat) -> int64_t {
    if (numel(s) == 1) return 0;
    Shape padded(batch.size() - s.size(), 1);
    padded.insert(padded.end(), s.begin(), s.end());
    return padded == batch ? mat : -1;
  };
  const int64_t stride_a = stride_of(ba, mk), stride_b = stride_of(bb, kn);
  if (stride_a >= 0 && stride_b >= 0) {
    gemm(ctx, a.dtype(), g, 1.f, a.raw_data(), stride_a, b.raw_data(), stride_b, 0.f, y.raw_data(),
         mn, nb);
    return;
  }
  // Both operands broadcast partly ([B, 1, M, K] x [H, K, N]): over the longest run of trailing
  // batch dims where each operand is either whole (consecutive matrices, stride = its matrix
  // size) or absent (all 1s there, stride 0), one strided-batched GEMM; one per group of the
  // leading dims (B calls instead of B·H).
  const size_t r = batch.size();
  auto padded = [&](const Shape& s) {
    Shape p(r - s.size(), 1);
    p.insert(p.end(), s.begin(), s.end());
    return p;
  };
  const Shape pa = padded(ba), pb = padded(bb);
  // 1: whole over dims [from, r); 0: absent there; -1: neither.
  auto kind = [&](const Shape& p, size_t from) {
    bool ones = true, whole = true;
    for (size_t d = from; d < r; ++d) {
      ones = ones && p[d] == 1;
      whole = whole && p[d] == batch[d];
    }
    return whole ? 1 : (ones ? 0 : -1);
  };
  size_t split = r;
  while (split > 0 && kind(pa, split - 1) >= 0 && kind(pb, split - 1) >= 0) --split;
  int64_t inner = 1;
  for (size_t d = split; d < r; ++d) inner *= batch[d];
  const int64_t sa = kind(pa, split) == 1 ? mk : 0, sb = kind(pb, split) == 1 ? kn : 0;
  const auto off_a = cpu::batch_offsets(ba, batch), off_b = cpu::batch_offsets(bb, batch);
  const size_t es = dtype_size(a.dtype());
  for (int64_t i = 0; i < nb; i += inner)
    gemm(ctx, a.dtype(), g, 1.f, static_cast<const char*>(a.raw_data()) + off_a[i] * mk * es, sa,
         static_cast<const char*>(b.raw_data()) + off_b[i] * kn * es, sb, 0.f,
         static_cast<char*>(y.raw_data()) + i * mn * es, mn, inner);
}

// Gemm: Y = alpha·A'·B' + beta·C, A' = transA ? Aᵀ : A ([M,K]), B' likewise ([K,N]), C
// broadcast to [M,N] (copied into Y first, then the GEMM accumulates with beta).
class GemmKernel : public OpKernel {
 public:
  explicit GemmKernel(const Node& n)
      : ta_(n.attr_int("transA", 0) != 0),
        tb_(n.attr_int("transB", 0) != 0),
        alpha_(n.attr_float("alpha", 1.0f)),
        beta_(n.attr_float("beta", 1.0f)) {}

  void compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.rank() != 2 || b.rank() != 2)
      ctx.fail(cat("Gemm needs 2-D A and B, got ", shape_str(a.shape()), " and ",
                   shape_str(b.shape())));
    if (a.dtype() != b.dtype())
      ctx.fail(cat("A and B have dtypes ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype())));
    GemmShape g{ta_, tb_, ta_ ? a.dim(1) : a.dim(0), tb_ ? b.dim(0) : b.dim(1),
                ta_ ? a.dim(0) : a.dim(1)};
    const int64_t kb = tb_ ? b.dim(1) : b.dim(0);
    if (kb != g.K)
      ctx.fail(cat("inner dimensions differ: A ", shape_str(a.shape()), " (transA=", ta_,
                   ") x B ", shape_str(b.shape()), " (transB=", tb_, ")"));
    Tensor& y = ctx.allocate_output(0, a.dtype(), {g.M, g.N});
    float beta = 0.f;
    if (const Tensor* c = ctx.input_or_null(2); c && beta_ != 0.f) {
      if (c->dtype() != a.dtype())
        ctx.fail(cat("C has dtype ", dtype_name(c->dtype()), ", A ", dtype_name(a.dtype())));
      const Shape mn{g.M, g.N};
      bool ok = c->rank() <= 2;
      for (int d = 0; ok && d < c->rank(); ++d) {
        const int64_t cd = c->shape()[c->rank() - 1 - d];
        ok = cd == 1 || cd == mn[1 - d];
      }
      if (!ok) ctx.fail(cat("C ", shape_str(c->shape()), " does not broadcast to [", g.M, ", ", g.N, "]"));
      launch_broadcast_copy(static_cast<int>(dtype_size(c->dtype())), c->raw_data(), y.raw_data(),
                            y.numel(), make_broadcast_index(mn, {c->shape()}), stream_of(ctx));
      beta = beta_;
    }
    gemm(ctx, a.dtype(), g, alpha_, a.raw_data(), 0, b.raw_data(), 0, beta, y.raw_data(), 0, 1);
  }

 private:
  bool ta_, tb_;
  float alpha_, beta_;
};

}  // namespace

// C[i] = alpha·A'[i]·B'[i] + beta·C[i] for i < batch, element strides sa/sb/sc between matrices.
void gemm(KernelContext& ctx, DType t, const GemmShape& g, float alpha, const void* A, int64_t sa,
          const void* B, int64_t sb, float beta, void* C, int64_t sc, int64_t batch) {
  gemm(ctx, t, t, g, alpha, A, sa, B, sb, beta, C, sc, batch);
}

CublasGemmArgs cublas_gemm_args(const GemmShape& g, int64_t batch) {
  auto to_int = [&](int64_t v, const char* what) {
    if (v < 0 || v > std::numeric_limits<int>::max())
      throw Error(cat("GEMM ", what, " = ", v, " does not fit cuBLAS's int arguments (M ", g.M,
                      ", N ", g.N, ", K ", g.K, ", batch ", batch, ")"));
    return static_cast<int>(v);
  };
  CublasGemmArgs c;
  c.trans_first = g.tb;
  c.trans_second = g.ta;
  c.m = to_int(g.N, "N");
  c.n = to_int(g.M, "M");
  c.k = to_int(g.K, "K");
  c.ld_first = std::max(1, g.tb ? c.k : c.m);
  c.ld_second = std::max(1, g.ta ? c.n : c.k);
  c.ldc = std::max(1, c.m);
  c.batch = to_int(batch, "batch count");
  return c;
}

// The same with C in `tc` (t, or F32 for F16/BF16 operands).
void gemm(KernelContext& ctx, DType t, DType tc, const GemmShape& g, float alpha, const void* A,
          int64_t sa, const void* B, int64_t sb, float beta, void* C, int64_t sc, int64_t batch) {
  if (tc != t && !(tc == DType::F32 && (t == DType::F16 || t == DType::BF16)))
    ctx.fail(cat("a GEMM of ", dtype_name(t), " operands cannot write ", dtype_name(tc)));
  if (g.M == 0 || g.N == 0 || batch == 0) return;
  if (g.K == 0) {
    // An empty sum: C = beta·C, without cuBLAS (its leading dimensions would be 0 and its k = 0
    // behaviour is not documented). beta = 0 writes zeros and never reads C, as BLAS.
    const int64_t mn = g.M * g.N, count = sc == 0 ? 1 : batch;
    const size_t es = dtype_size(tc);
    const bool packed = count == 1 || sc == mn;
    if (beta == 0.f) {
      if (packed)
        CUDA_CHECK(cudaMemsetAsync(C, 0, static_cast<size_t>(count * mn) * es, stream_of(ctx)));
      else
        CUDA_CHECK(cudaMemset2DAsync(C, static_cast<size_t>(sc) * es, 0,
                                     static_cast<size_t>(mn) * es, static_cast<size_t>(count),
                                     stream_of(ctx)));
    } else if (beta != 1.f) {
      for (int64_t i = 0; i < (packed ? 1 : count); ++i) {
        char* ci = static_cast<char*>(C) + static_cast<size_t>(i * sc) * es;
        launch_unary(UnaryOp::Scale, elem_type(tc), ci, ci, packed ? count * mn : mn, beta, 0.f,
                     stream_of(ctx));
      }
    }
    return;
  }
  CublasGemmArgs c;
  try {
    c = cublas_gemm_args(g, batch);
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  const cudaDataType_t ct = cuda_type(t);
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      cuda_context(ctx).cublas(), c.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N,
      c.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N, c.m, c.n, c.k, &alpha, B, ct, c.ld_first, sb, A,
      ct, c.ld_second, sa, &beta, C, cuda_type(tc), c.ldc, sc, c.batch, CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT));
}

void register_matmul(KernelRegistry& r) {
  add_floats(r, OpId::MatMul, function_kernel(matmul));
  add_floats(r, OpId::Gemm, kernel_factory<GemmKernel>());
}

}  // namespace oat::cuda
