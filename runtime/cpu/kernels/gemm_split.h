// Threading of the dense GEMMs (MatMul, Gemm and their gradients) by OpenMP instead of Eigen.
//
// Eigen's own multithreaded GEMM synchronises its threads with spin loops; on a machine whose
// cores other processes also want, a thread whose partner has been descheduled spins through its
// whole time slice (an MLP training step at 2 threads took 20x the CPU time of 1 thread). Here the
// product is cut into `parts` strips, rows of C when M >= N, else columns, and each strip is one
// single-threaded Eigen GEMM inside an OpenMP loop, whose barrier sleeps (the CLI's default
// OMP_WAIT_POLICY=PASSIVE). Each strip packs the other operand again, which costs little next to
// the product once every strip has at least kMinWork multiply-adds.
//   C[:, strip] = op(A) · op(B)[:, strip]     or     C[strip, :] = op(A)[strip, :] · op(B)
// Float products of 2 to 32 rows with neither operand transposed skip Eigen: gemm_small_m.h,
// in strips of columns; float products of more rows: gemm_packed.h, in strips of rows; of 16 to
// 32 rows with B transposed: gemm_packed.h on the transposed product.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "runtime/cpu/kernels/gemm_packed.h"
#include "runtime/cpu/kernels/gemm_small_m.h"
#include "runtime/threads.h"

namespace oat::cpu {

// How many strips a [M, K] x [K, N] product is cut into: 1 inside a parallel region or with
// one thread, else up to the thread count, each with at least kMinWork multiply-adds and 8 rows
// (or columns).
inline int gemm_parts(int64_t M, int64_t N, int64_t K) {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;
#endif
  // 2^21 multiply-adds take one core ~40 µs, about what waking the sleeping OpenMP threads costs
  // (runtime/threads.h): a product is split only when each strip saves more than that. An LSTM's
  // recurrent [8, 256] x [256, 1024] step (2^21) now runs on one thread: bench/lstm_bench went
  // from 32 to 24 ms at 2 threads, with 2^17 before (bench/README.md).
  constexpr int64_t kMinWork = int64_t{1} << 21;
  const int64_t threads = num_threads();
  const int64_t by_work = (M * N * K) / kMinWork;
  const int64_t by_size = std::max(M, N) / 8;
  return static_cast<int>(std::max<int64_t>(1, std::min({threads, by_work, by_size})));
}

// Runs apply(C_strip, opA_strip, opB_strip) over the strips (apply does the Eigen assignment:
// `=`, `+=`, with alpha). M, N, K are the product's dimensions.
template <class CMat, class AOp, class BOp, class Apply>
void split_product(CMat& C, const AOp& opA, const BOp& opB, int64_t M, int64_t N, int64_t K,
                   Apply&& apply) {
  const int parts = gemm_parts(M, N, K);
  if (parts <= 1) {
    apply(C, opA, opB);
    return;
  }
  const bool rows = M >= N;
  const int64_t extent = rows ? M : N;
#pragma omp parallel for schedule(static) num_threads(parts)
  for (int p = 0; p < parts; ++p) {
    const int64_t lo = extent * p / parts, len = extent * (p + 1) / parts - lo;
    if (len == 0) continue;
    if (rows) {
      auto Cs = C.middleRows(lo, len);
      apply(Cs, opA.middleRows(lo, len), opB);
    } else {
      auto Cs = C.middleCols(lo, len);
      apply(Cs, opA, opB.middleCols(lo, len));
    }
  }
}

// C = A·B (C += A·B when accumulate) for Eigen operands: Maps, strided Maps, transposes.
// Every GEMM of the CPU kernels goes through split_product, here or in row_major_gemm: outside a
// parallel region it uses the threads, inside one it runs on the calling thread. Eigen's own GEMM
// threading is off (set_num_threads), so no product synchronises by spinning.
template <class CMat, class AOp, class BOp>
void threaded_product(CMat C, const AOp& A, const BOp& B, bool accumulate) {
  split_product(C, A, B, A.rows(), B.cols(), A.cols(),
                [accumulate](auto& Cs, const auto& a, const auto& b) {
                  if (accumulate)
                    Cs.noalias() += a * b;
                  else
                    Cs.noalias() = a * b;
                });
}

// C = alpha · op(A) · op(B) (+ C) on gemm_packed.h (packed_supported(M, N, K) must hold),
// leading dimensions lda, ldb, ldc; C's rows are cut into strips of multiples of 8, one per
// thread.
inline void threaded_packed_gemm(const float* a, int64_t lda, bool ta, const float* b, int64_t ldb,
                                 bool tb, float* c, int64_t ldc, int64_t M, int64_t N, int64_t K,
                                 float alpha, bool accumulate) {
  const int parts = static_cast<int>(std::min<int64_t>(gemm_parts(M, N, K), M / 8));
#pragma omp parallel for schedule(static) num_threads(parts) if (parts > 1)
  for (int p = 0; p < parts; ++p) {
    auto edge = [&](int q) { return q == parts ? M : M * q / parts / 8 * 8; };
    packed_gemm(a, lda, ta, b, ldb, tb, c, ldc, N, K, edge(p), edge(p + 1), alpha, accumulate);
  }
}

// C = alpha · A · B (+ C) on gemm_small_m.h (small_m_supported(M, N, K) must hold), leading
// dimensions lda, ldb, ldc; C's columns are cut into strips of multiples of 16, one per thread.
inline void threaded_small_m_gemm(const float* a, int64_t lda, const float* b, int64_t ldb,
                                  float* c, int64_t ldc, int64_t M, int64_t N, int64_t K,
                                  float alpha, bool accumulate) {
  const int parts = gemm_parts(M, N, K);
#pragma omp parallel for schedule(static) num_threads(parts) if (parts > 1)
  for (int p = 0; p < parts; ++p) {
    auto edge = [&](int q) { return q == parts ? N : N * q / parts / 16 * 16; };
    small_m_gemm(a, lda, b, ldb, c, ldc, M, K, edge(p), edge(p + 1), alpha, accumulate);
  }
}

// C = alpha · A · Bᵀ (+ C), B stored [N, K], with few rows (M <= 32) and many columns: computed
// as Cᵀ = B · Aᵀ on gemm_packed.h (B's N rows are the many rows there, Aᵀ the packed operand)
// into scratch, then added into C transposed (M x N elements, next to M·N·K multiply-adds).
// packed_supported(N, M, K) must hold. A Linear layer (transB) on a batch of 16-32 rows, and a
// conv's dW = D · colᵀ with 16-32 output channels: 1.1-1.5x Eigen (build/bench/oat_gemm_small_m).
inline void transposed_packed_gemm(const float* a, int64_t lda, const float* b, int64_t ldb,
                                   float* c, int64_t ldc, int64_t M, int64_t N, int64_t K,
                                   float alpha, bool accumulate) {
  thread_local std::vector<float> t;  // Cᵀ, N x M
  t.resize(static_cast<size_t>(N * M));
  threaded_packed_gemm(b, ldb, false, a, lda, true, t.data(), M, N, M, K, alpha, false);
  for (int64_t i = 0; i < M; ++i) {
    float* ci = c + i * ldc;
    for (int64_t j = 0; j < N; ++j) ci[j] = t[j * M + i] + (accumulate ? ci[j] : 0.f);
  }
}

// Whether transposed_packed_gemm takes C = A · Bᵀ (M x N x K).
inline bool transposed_packed_supported(int64_t M, int64_t N, int64_t K) {
  return M <= 32 && packed_supported(N, M, K);
}

// The float products that skip Eigen, chosen in one place for row_major_gemm and
// conv_im2col.h's strided_gemm: C = alpha · op(A) · op(B) (+ C) with leading dimensions lda, ldb,
// ldc on gemm_packed.h (more than 32 rows), as the transposed product (16-32 rows times Bᵀ) or
// on gemm_small_m.h (2-32 rows, neither transposed). False when none applies (Eigen's turn).
inline bool fast_float_gemm(const float* a, int64_t lda, bool ta, const float* b, int64_t ldb,
                            bool tb, float* c, int64_t ldc, int64_t M, int64_t N, int64_t K,
                            float alpha, bool accumulate) {
  if (packed_supported(M, N, K)) {
    threaded_packed_gemm(a, lda, ta, b, ldb, tb, c, ldc, M, N, K, alpha, accumulate);
  } else if (!ta && tb && transposed_packed_supported(M, N, K)) {
    transposed_packed_gemm(a, lda, b, ldb, c, ldc, M, N, K, alpha, accumulate);
  } else if (!ta && !tb && small_m_supported(M, N, K)) {
    threaded_small_m_gemm(a, lda, b, ldb, c, ldc, M, N, K, alpha, accumulate);
  } else {
    return false;
  }
  return true;
}

template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// C[M,N] = alpha · op(A) · op(B) (+ C when accumulate), op(X) = Xᵀ when the flag is set. A is
// stored [M,K] ([K,M] when ta), B is stored [K,N] ([N,K] when tb), all row-major; Eigen::Maps
// over the buffers, transposes read in place, strips threaded by split_product. For F32/F64.
template <class T>
void row_major_gemm(const T* a, bool ta, const T* b, bool tb, T* c, int64_t M, int64_t N, int64_t K,
                    T alpha, bool accumulate) {
  Eigen::Map<const RowMajorMatrix<T>> A(a, ta ? K : M, ta ? M : K), B(b, tb ? N : K, tb ? K : N);
  Eigen::Map<RowMajorMatrix<T>> C(c, M, N);
  if (K == 0) {  // empty inner dimension: the product is zero
    if (!accumulate) C.setZero();
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (fast_float_gemm(a, ta ? M : K, ta, b, tb ? K : N, tb, c, N, M, N, K, alpha, accumulate))
      return;
  }
  auto apply = [&](auto& Cs, const auto& opA, const auto& opB) {
    if (accumulate) {
      Cs.noalias() += alpha * opA * opB;
    } else if (alpha == T(1)) {
      Cs.noalias() = opA * opB;
    } else {
      Cs.noalias() = alpha * opA * opB;
    }
  };
  auto run = [&](const auto& opA, const auto& opB) { split_product(C, opA, opB, M, N, K, apply); };
  if (!ta && !tb) run(A, B);
  if (!ta && tb) run(A, B.transpose());
  if (ta && !tb) run(A.transpose(), B);
  if (ta && tb) run(A.transpose(), B.transpose());
}

}  // namespace oat::cpu
