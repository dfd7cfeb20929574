// MatMul and Gemm: dense matrix products through Eigen's GEMM.
//
// Matrices are Eigen::Maps over the tensors' row-major buffers, so no operand is copied.
// Transposed operands are expressed as .transpose() of a Map, which Eigen's GEMM reads in place;
// OpenMP threads split the product into strips (gemm_split.h, row_major_gemm). F16/BF16 widen to float first: see gemm() below.
// GCC 12 reports a false "(may be) used uninitialized" inside the AVX-512 intrinsics of Eigen's
// GEMM packing (GCC bug 105593); it must be silenced before the first include.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#include <type_traits>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/gemm_split.h"
#include "runtime/cpu/kernels/matmul_shape.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {
namespace {

template <class T>
constexpr bool kLowPrecision = std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

// C[M,N] = alpha * op(A) * op(B) (+ C when accumulate), op(X) = Xᵀ when the flag is set.
// A is stored [M,K] (or [K,M] when ta), B is stored [K,N] (or [N,K] when tb), all row-major.
// Low-precision operands are widened to float first so the products accumulate in FP32.
template <class T>
void gemm(const T* a, bool ta, const T* b, bool tb, T* c, int64_t M, int64_t N, int64_t K, T alpha,
          bool accumulate) {
  if constexpr (kLowPrecision<T>) {
    Eigen::Map<const RowMajorMatrix<T>> A(a, ta ? K : M, ta ? M : K), B(b, tb ? N : K, tb ? K : N);
    RowMajorMatrix<float> af = A.template cast<float>(), bf = B.template cast<float>();
    Eigen::Map<RowMajorMatrix<T>> C(c, M, N);
    RowMajorMatrix<float> cf =
        accumulate ? RowMajorMatrix<float>(C.template cast<float>()) : RowMajorMatrix<float>::Zero(M, N);
    row_major_gemm<float>(af.data(), ta, bf.data(), tb, cf.data(), M, N, K, static_cast<float>(alpha),
                          true);
    C = cf.template cast<T>();
  } else {
    row_major_gemm<T>(a, ta, b, tb, c, M, N, K, alpha, accumulate);
  }
}

// MatMul: numpy matmul. A [..., M, K] x B [..., K, N] -> [..., M, N] with the batch dims
// broadcast; a 1-D A is [1, K] and a 1-D B is [K, 1], and the added dim is removed again
// (matmul_shape.h).
template <class T>
void matmul_kernel(KernelContext& ctx) {
  const Tensor& ta = ctx.input(0);
  const Tensor& tb = ctx.input(1);
  const MatMulShape ms = matmul_shape(ctx, ta.shape(), tb.shape());
  const int64_t M = ms.M, K = ms.K, N = ms.N;
  const Shape &batch_a = ms.batch_a, &batch_b = ms.batch_b, &batch = ms.batch;
  Tensor& out = ctx.allocate_output(0, dtype_of<T>(), ms.out);
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  T* c = out.data<T>();
  const int64_t nb = numel(batch);
  if (nb == 0 || M == 0 || N == 0) return;

  // B shared by every batch and A not broadcast: one GEMM [nb*M, K] x [K, N].
  if (numel(batch_b) == 1 && numel(batch_a) == nb) {
    gemm<T>(a, false, b, false, c, nb * M, N, K, T(1), false);
    return;
  }
  // Element offsets of each batch entry's matrices in A and B (broadcast dims have stride 0).
  std::vector<int64_t> off_a = batch_offsets(batch_a, batch), off_b = batch_offsets(batch_b, batch);
  for (int64_t i = 0; i < nb; ++i) {
    off_a[i] *= M * K;
    off_b[i] *= K * N;
  }
  // Many small products (attention heads): one GEMM per thread, each single-threaded (Eigen
  // does not nest its OpenMP GEMM inside a parallel region). Few large ones: each split over the
  // threads (gemm_split.h).
  const bool per_batch_threads = nb >= num_threads() && M * N * K < (int64_t{1} << 24);
#pragma omp parallel for schedule(dynamic) if (per_batch_threads)
  for (int64_t i = 0; i < nb; ++i)
    gemm<T>(a + off_a[i], false, b + off_b[i], false, c + i * M * N, M, N, K, T(1), false);
}

// Gemm: Y = alpha * A' * B' + beta * C, A' = transA ? Aᵀ : A (A' is [M,K]), B' likewise [K,N];
// C (optional from opset 11) broadcasts unidirectionally to [M, N].
struct GemmAttrs {
  bool trans_a, trans_b;
  float alpha, beta;
};

template <class T>
class GemmKernel : public OpKernel {
 public:
  explicit GemmKernel(const Node& n)
      : attrs_{n.attr_int("transA", 0) != 0, n.attr_int("transB", 0) != 0,
               n.attr_float("alpha", 1.0f), n.attr_float("beta", 1.0f)} {}

  void compute(KernelContext& ctx) override {
    const Tensor& ta = ctx.input(0);
    const Tensor& tb = ctx.input(1);
    const Tensor* tc = ctx.input_or_null(2);
    if (ta.rank() != 2 || tb.rank() != 2)
      ctx.fail(cat("Gemm needs 2-D A and B, got ", shape_str(ta.shape()), " and ",
                   shape_str(tb.shape())));
    const int64_t M = attrs_.trans_a ? ta.dim(1) : ta.dim(0);
    const int64_t K = attrs_.trans_a ? ta.dim(0) : ta.dim(1);
    const int64_t Kb = attrs_.trans_b ? tb.dim(1) : tb.dim(0);
    const int64_t N = attrs_.trans_b ? tb.dim(0) : tb.dim(1);
    if (K != Kb)
      ctx.fail(cat("inner dimensions differ: A ", shape_str(ta.shape()),
                   " (transA=", attrs_.trans_a, ") x B ", shape_str(tb.shape()),
                   " (transB=", attrs_.trans_b, ")"));
    Tensor& out = ctx.allocate_output(0, dtype_of<T>(), {M, N});
    T* y = out.data<T>();
    const bool add_c = tc && attrs_.beta != 0.0f && tc->numel() > 0;
    if (add_c) {
      // Y = beta * C broadcast to [M, N]: C is a scalar, [N], [1], or [M|1, N|1].
      const Shape& cs = tc->shape();
      bool ok = cs.size() <= 2;
      for (size_t d = 0; ok && d < cs.size(); ++d) {
        const int64_t want = (cs.size() - d == 1) ? N : M;
        ok = cs[d] == want || cs[d] == 1;
      }
      if (!ok) ctx.fail(cat("C ", shape_str(cs), " does not broadcast to [", M, ", ", N, "]"));
      const auto st = broadcast_strides(cs, {M, N});
      const T* cp = tc->data<T>();
      const T beta = static_cast<T>(attrs_.beta);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) y[i * N + j] = beta * cp[i * st[0] + j * st[1]];
    }
    if (M == 0 || N == 0) return;
    gemm<T>(ta.data<T>(), attrs_.trans_a, tb.data<T>(), attrs_.trans_b, y, M, N, K,
            static_cast<T>(attrs_.alpha), add_c);
  }

 private:
  GemmAttrs attrs_;
};

}  // namespace

void register_matmul(KernelRegistry& r) {
  r.add(OpId::MatMul, Device::CPU, DType::F32, function_kernel(matmul_kernel<float>));
  r.add(OpId::MatMul, Device::CPU, kLowFloats, in_fp32(function_kernel(matmul_kernel<float>)));
  r.add(OpId::MatMul, Device::CPU, DType::F64, function_kernel(matmul_kernel<double>));
  r.add(OpId::MatMul, Device::CPU, DType::I32, function_kernel(matmul_kernel<int32_t>));
  r.add(OpId::MatMul, Device::CPU, DType::I64, function_kernel(matmul_kernel<int64_t>));
  r.add(OpId::Gemm, Device::CPU, DType::F32, kernel_factory<GemmKernel<float>>());
  r.add(OpId::Gemm, Device::CPU, kLowFloats, in_fp32(kernel_factory<GemmKernel<float>>()));
  r.add(OpId::Gemm, Device::CPU, DType::F64, kernel_factory<GemmKernel<double>>());
  r.add(OpId::Gemm, Device::CPU, DType::I32, kernel_factory<GemmKernel<int32_t>>());
  r.add(OpId::Gemm, Device::CPU, DType::I64, kernel_factory<GemmKernel<int64_t>>());
}

}  // namespace oat::cpu
