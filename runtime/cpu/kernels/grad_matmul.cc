// Gradient kernels of MatMul and Gemm (internal domain).
//
// MatMulGrad(dY, A, B) -> (dA, dB), the gradient of numpy matmul Y = A·B:
//   dA_i = dY_i · B_iᵀ,   dB_i = A_iᵀ · dY_i        for every entry i of the broadcast batch;
//   an operand broadcast over batch dimensions receives the sum over them (dA[j] = Σ_{i→j} dA_i).
//   A 1-D A is [1, K] (dA is [K] again), a 1-D B is [K, 1].
// GemmGrad(dY, A, B, [C]) -> (dA, dB, dC), Y = α·A'·B' + β·C, A' = transA ? Aᵀ : A, B' likewise:
//   dA' = α·dY·B'ᵀ  (dA = dA'ᵀ = α·B'·dYᵀ when transA),
//   dB' = α·A'ᵀ·dY  (dB = dB'ᵀ = α·dYᵀ·A' when transB),
//   dC  = β·sum_to(dY, C)                       attrs transA, transB, alpha, beta as Gemm.
// grad_type = 1 (FLOAT; runtime/grad_type.h): dB (and dC) in float32. The F16/BF16 kernels run
// the float kernel on widened operands (low_precision.h in_fp32), so those outputs are its FP32
// accumulation itself, not rounded to 16 bits; dA stays in the operands' dtype.
// Only the requested outputs are computed. Products are Eigen GEMMs on row-major Maps of the
// tensors (transposes are .transpose() of a Map, read in place: nothing is copied).
// GCC 12 reports a false "(may be) used uninitialized" inside the AVX-512 intrinsics of Eigen's
// GEMM packing (GCC bug 105593); it must be silenced before the first include, as in matmul.cc.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>
#include <algorithm>
#include <type_traits>

#include "runtime/cpu/broadcast.h"
#include "runtime/cpu/kernels/low_precision.h"
#include "runtime/cpu/kernels/gemm_split.h"
#include "runtime/cpu/kernels/matmul_shape.h"
#include "runtime/cpu/register.h"
#include "runtime/threads.h"

namespace oat::cpu {
namespace {

// Fails unless every present input has the dtype of dY (input 0).
void require_dtype_of_grad(const KernelContext& ctx) {
  const DType want = ctx.input(0).dtype();
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const Tensor* t = ctx.input_or_null(i);
    if (t && t->dtype() != want)
      ctx.fail(cat("input ", i, " is ", dtype_name(t->dtype()), " but the gradient dY is ",
                   dtype_name(want)));
  }
}

// out[t] = Σ_{i : target[i] == t} product(i, out[t]) for t < targets: each target matrix is
// owned by one thread, so a broadcast operand's sum needs no locks. `product(i, dst, acc)`
// writes (acc=false) or adds (acc=true) batch entry i's term into dst. Many small targets run
// one per thread (each GEMM single-threaded); few or large ones split each GEMM over the threads
// (gemm_split.h).
template <class F>
void accumulate_batches(const std::vector<int64_t>& target, int64_t targets, int64_t flops,
                        const F& product) {
  std::vector<std::vector<int64_t>> members(targets);
  for (int64_t i = 0; i < static_cast<int64_t>(target.size()); ++i) members[target[i]].push_back(i);
  const bool per_target_threads = targets >= num_threads() && flops < (int64_t{1} << 24);
#pragma omp parallel for schedule(dynamic) if (per_target_threads)
  for (int64_t t = 0; t < targets; ++t) {
    const auto& m = members[t];
    for (size_t k = 0; k < m.size(); ++k) product(m[k], t, k > 0);
  }
}

template <class T>
void matmul_grad(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& ta = ctx.input(1);
  const Tensor& tb = ctx.input(2);
  require_dtype_of_grad(ctx);
  check_weight_grad_type(ctx.node(), dy.dtype());
  const MatMulShape ms = matmul_shape(ctx, ta.shape(), tb.shape());
  const int64_t M = ms.M, K = ms.K, N = ms.N;
  const Shape &batch_a = ms.batch_a, &batch_b = ms.batch_b, &batch = ms.batch,
              &out_shape = ms.out;
  if (dy.shape() != out_shape)
    ctx.fail(cat("gradient dY ", shape_str(dy.shape()), " does not match the product ",
                 shape_str(ta.shape()), " x ", shape_str(tb.shape()), " = ", shape_str(out_shape)));
  const DType dt = dy.dtype();
  T* da =
      ctx.output_requested(0) ? ctx.allocate_output(0, dt, ta.shape()).template data<T>() : nullptr;
  T* db =
      ctx.output_requested(1) ? ctx.allocate_output(1, dt, tb.shape()).template data<T>() : nullptr;
  const T* g = dy.data<T>();
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  const int64_t nb = numel(batch), na = numel(batch_a), nbb = numel(batch_b);
  if (nb == 0 || M == 0 || N == 0) {  // empty product: the gradients are zero
    if (da) std::fill(da, da + ta.numel(), T(0));
    if (db) std::fill(db, db + tb.numel(), T(0));
    return;
  }

  // B shared by every batch entry and A not broadcast (Linear layers, [B, S, K] x [K, N]):
  // stack the batch into rows, one GEMM per gradient.
  //   dA[nb·M, K] = dY[nb·M, N] · Bᵀ,   dB[K, N] = A[nb·M, K]ᵀ · dY[nb·M, N]
  if (nbb == 1 && na == nb) {
    if (da) row_major_gemm<T>(g, false, b, true, da, nb * M, K, N, T(1), false);
    if (db) row_major_gemm<T>(a, true, g, false, db, K, N, nb * M, T(1), false);
    return;
  }
  const auto off_a = batch_offsets(batch_a, batch), off_b = batch_offsets(batch_b, batch);
  const int64_t flops = M * N * K;
  if (da)
    accumulate_batches(off_a, na, flops, [&](int64_t i, int64_t t, bool acc) {
      row_major_gemm<T>(g + i * M * N, false, b + off_b[i] * K * N, true, da + t * M * K, M, K, N, T(1), acc);
    });
  if (db)
    accumulate_batches(off_b, nbb, flops, [&](int64_t i, int64_t t, bool acc) {
      row_major_gemm<T>(a + off_a[i] * M * K, true, g + i * M * N, false, db + t * K * N, K, N, M, T(1), acc);
    });
  // Every entry of an operand's own batch is reached by at least one product (its dims are
  // those of the broadcast batch or 1), so every target matrix was written.
}

struct GemmAttrs {
  bool trans_a, trans_b;
  float alpha, beta;
};

template <class T>
class GemmGradKernel : public OpKernel {
 public:
  explicit GemmGradKernel(const Node& n)
      : attrs_{n.attr_int("transA", 0) != 0, n.attr_int("transB", 0) != 0,
               n.attr_float("alpha", 1.0f), n.attr_float("beta", 1.0f)} {
    check_weight_grad_type(n, std::is_same_v<T, double> ? DType::F64 : DType::F32);
  }

  void compute(KernelContext& ctx) override {
    const Tensor& dy = ctx.input(0);
    const Tensor& ta = ctx.input(1);
    const Tensor& tb = ctx.input(2);
    const Tensor* tc = ctx.input_or_null(3);
    require_dtype_of_grad(ctx);
    if (ta.rank() != 2 || tb.rank() != 2)
      ctx.fail(cat("Gemm needs 2-D A and B, got ", shape_str(ta.shape()), " and ",
                   shape_str(tb.shape())));
    const bool tA = attrs_.trans_a, tB = attrs_.trans_b;
    const int64_t M = tA ? ta.dim(1) : ta.dim(0), K = tA ? ta.dim(0) : ta.dim(1);
    const int64_t Kb = tB ? tb.dim(1) : tb.dim(0), N = tB ? tb.dim(0) : tb.dim(1);
    if (K != Kb)
      ctx.fail(cat("inner dimensions differ: A ", shape_str(ta.shape()), " (transA=", tA, ") x B ",
                   shape_str(tb.shape()), " (transB=", tB, ")"));
    if (dy.shape() != Shape{M, N})
      ctx.fail(cat("gradient dY ", shape_str(dy.shape()), " does not match Y [", M, ", ", N, "]"));
    const DType dt = dy.dtype();
    const T alpha = static_cast<T>(attrs_.alpha);
    const T* g = dy.data<T>();
    const T* a = ta.data<T>();
    const T* b = tb.data<T>();
    if (ctx.output_requested(0)) {
      T* da = ctx.allocate_output(0, dt, ta.shape()).template data<T>();
      if (!tA)
        row_major_gemm<T>(g, false, b, !tB, da, M, K, N, alpha, false);  // α·dY·B'ᵀ   [M, K]
      else
        row_major_gemm<T>(b, tB, g, true, da, K, M, N, alpha, false);  // α·B'·dYᵀ   [K, M]
    }
    if (ctx.output_requested(1)) {
      T* db = ctx.allocate_output(1, dt, tb.shape()).template data<T>();
      if (!tB)
        row_major_gemm<T>(a, !tA, g, false, db, K, N, M, alpha, false);  // α·A'ᵀ·dY   [K, N]
      else
        row_major_gemm<T>(g, true, a, tA, db, N, K, M, alpha, false);  // α·dYᵀ·A'   [N, K]
    }
    if (ctx.output_requested(2)) {
      if (!tc) ctx.fail("dC is requested but the forward Gemm has no C (input 3)");
      sum_to_c(ctx, g, M, N, *tc);
    }
  }

 private:
  // dC = β·sum_to(dY, C): C is [M, N], [1|M, 1|N], [N], [1] or a scalar (unidirectional).
  void sum_to_c(KernelContext& ctx, const T* g, int64_t M, int64_t N, const Tensor& tc) const {
    const Shape& cs = tc.shape();
    bool ok = cs.size() <= 2;
    for (size_t d = 0; ok && d < cs.size(); ++d) {
      const int64_t want = (cs.size() - d == 1) ? N : M;
      ok = cs[d] == want || cs[d] == 1;
    }
    if (!ok) ctx.fail(cat("C ", shape_str(cs), " does not broadcast to [", M, ", ", N, "]"));
    T* dc = ctx.allocate_output(2, tc.dtype(), cs).template data<T>();
    const T beta = static_cast<T>(attrs_.beta);
    const auto st = broadcast_strides(cs, {M, N});
    Eigen::Map<const RowMajorMatrix<T>> G(g, M, N);
    using Vec = Eigen::Array<T, 1, Eigen::Dynamic>;
    if (st[1] == 1 && st[0] == N) {  // same shape
      Eigen::Map<RowMajorMatrix<T>>(dc, M, N) = beta * G;
    } else if (st[1] == 1) {  // a row broadcast down: column sums, row by row (contiguous)
      Vec acc = Vec::Zero(N);
      for (int64_t i = 0; i < M; ++i) acc += G.row(i).array();
      Eigen::Map<Vec>(dc, N) = beta * acc;
    } else if (st[0] != 0) {  // a column broadcast across: row sums
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(dc, M) = beta * G.rowwise().sum().array();
    } else {  // one element
      dc[0] = beta * G.sum();
    }
  }

  GemmAttrs attrs_;
};

}  // namespace

void register_grad_matmul(KernelRegistry& r) {
  r.add(OpId::MatMulGrad, Device::CPU, DType::F32, function_kernel(matmul_grad<float>));
  r.add(OpId::MatMulGrad, Device::CPU, kLowFloats,
        in_fp32(function_kernel(matmul_grad<float>), weight_grad_io));
  r.add(OpId::MatMulGrad, Device::CPU, DType::F64, function_kernel(matmul_grad<double>));
  r.add(OpId::GemmGrad, Device::CPU, DType::F32, kernel_factory<GemmGradKernel<float>>());
  r.add(OpId::GemmGrad, Device::CPU, kLowFloats,
        in_fp32(kernel_factory<GemmGradKernel<float>>(), weight_grad_io));
  r.add(OpId::GemmGrad, Device::CPU, DType::F64, kernel_factory<GemmGradKernel<double>>());
}

}  // namespace oat::cpu
