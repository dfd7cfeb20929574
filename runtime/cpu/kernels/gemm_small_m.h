// Products with few rows: C[M, N] = alpha · A[M, K] · B[K, N] (+ C), 2 <= M <= 32, float,
// row-major, neither operand transposed. An LSTM step ([batch, hidden] x [hidden, 4·hidden]) and
// a Linear layer on a batch of a few rows have this shape. Eigen's GEMM packs all of B into its
// panel layout at every call, which at M <= 8 costs about as much as the product itself; here
// each block of 48 columns of C (M x 3 vectors of 16 floats, at most 24 registers) is summed
// over k in order while B's rows stream through once, unpacked:
//   C[m, n0 + j] = alpha · Σ_k A[m, k] · B[k, n0 + j] (+ C[m, n0 + j])
// then 16 columns at a time, then single columns for the last N mod 16. Above 8 rows, the rows
// go in balanced chunks of at most 8 (B streams once per chunk). One AVX-512 core, 2 <= M <= 32,
// K x N of 256 x 1024, 784 x 256 and 1024 x 4096: 1.5-3x faster than Eigen's GEMM
// (build/bench/oat_gemm_small_m); at M = 1 Eigen's GEMV is faster (too few independent sums),
// so that stays with Eigen.
// Built only for AVX-512 (32 vector registers); elsewhere `small_m_supported` is false and the
// caller keeps Eigen's GEMM.
#pragma once

#include <cstdint>
#include <cstring>

namespace oat::cpu {

#if defined(__AVX512F__) && defined(__GNUC__)
constexpr bool kSmallMKernel = true;

namespace small_m_detail {

typedef float Vec16 __attribute__((vector_size(64)));

inline Vec16 load(const float* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof v);  // unaligned
  return v;
}

// Columns [0, 16·NV) of C's MR rows; a, b, c point at the block's first element; A[m, k] is
// a[m·rs + k·cs] (rs = K, cs = 1 here; gemm_packed.h passes its K blocks and transposed A).
template <int MR, int NV>
void block(const float* a, int64_t rs, int64_t cs, int64_t K, const float* b, int64_t ldb, float* c,
           int64_t ldc, float alpha, bool accumulate) {
  Vec16 acc[MR][NV] = {};
  for (int64_t k = 0; k < K; ++k, b += ldb, a += cs) {
    Vec16 bv[NV];
    for (int j = 0; j < NV; ++j) bv[j] = load(b + 16 * j);
    for (int m = 0; m < MR; ++m) {
      const float am = a[m * rs];
      for (int j = 0; j < NV; ++j) acc[m][j] += am * bv[j];
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int j = 0; j < NV; ++j) {
      float* cp = c + m * ldc + 16 * j;
      Vec16 r = acc[m][j] * alpha;
      if (accumulate) r += load(cp);
      std::memcpy(cp, &r, sizeof r);
    }
}

// Columns [n0, n1) of C; rows of A, B and C lda, ldb and ldc apart.
template <int MR>
void columns(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
             int64_t K, int64_t n0, int64_t n1, float alpha, bool accumulate) {
  int64_t n = n0;
  for (; n + 48 <= n1; n += 48)
    block<MR, 3>(a, lda, 1, K, b + n, ldb, c + n, ldc, alpha, accumulate);
  for (; n + 16 <= n1; n += 16)
    block<MR, 1>(a, lda, 1, K, b + n, ldb, c + n, ldc, alpha, accumulate);
  for (; n < n1; ++n)
    for (int m = 0; m < MR; ++m) {
      float s = 0.f;
      for (int64_t k = 0; k < K; ++k) s += a[m * lda + k] * b[k * ldb + n];
      c[m * ldc + n] = alpha * s + (accumulate ? c[m * ldc + n] : 0.f);
    }
}

}  // namespace small_m_detail

inline bool small_m_supported(int64_t M, int64_t N, int64_t K) {
  return M >= 2 && M <= 32 && N >= 16 && K > 0;
}

// Columns [n0, n1) of C = alpha · A · B (+ C); small_m_supported(M, N, K) must hold. Rows of
// A, B and C are lda, ldb and ldc apart.
inline void small_m_gemm(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                         int64_t ldc, int64_t M, int64_t K, int64_t n0, int64_t n1, float alpha,
                         bool accumulate) {
  using small_m_detail::columns;
  if (M > 8) {  // balanced chunks of at most 8 rows (never one of a single row)
    const int64_t chunks = (M + 7) / 8;
    for (int64_t q = 0; q < chunks; ++q) {
      const int64_t r0 = M * q / chunks, r1 = M * (q + 1) / chunks;
      small_m_gemm(a + r0 * lda, lda, b, ldb, c + r0 * ldc, ldc, r1 - r0, K, n0, n1, alpha,
                   accumulate);
    }
    return;
  }
  using Columns = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t,
                           int64_t, int64_t, float, bool);
  static constexpr Columns kByRows[] = {nullptr,    nullptr,    columns<2>, columns<3>, columns<4>,
                                        columns<5>, columns<6>, columns<7>, columns<8>};
  kByRows[M](a, lda, b, ldb, c, ldc, K, n0, n1, alpha, accumulate);
}
#else
constexpr bool kSmallMKernel = false;
inline bool small_m_supported(int64_t, int64_t, int64_t) { return false; }
inline void small_m_gemm(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t,
                         int64_t, int64_t, int64_t, float, bool) {}
#endif

}  // namespace oat::cpu
