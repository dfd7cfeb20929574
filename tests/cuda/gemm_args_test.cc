// The cuBLAS arguments of the CUDA GEMM (gemm.h: cublas_gemm_args), checked without a device:
// a column-major GEMM with cuBLAS's argument rules (leading dimensions >= max(1, rows), checked
// as cuBLAS checks them) run on those arguments over row-major buffers must give the row-major
// product C[M,N] = op(A)·op(B) for every transA/transB, K = 0 included; sizes beyond int fail.
// Built with the CUDA backend only (the function lives in it); elsewhere the file says so.
#include <doctest/doctest.h>

#ifdef OAT_HAVE_CUDA
#include <algorithm>
#include <tuple>
#include <vector>

#include "runtime/cuda/kernels/gemm.h"

using namespace oat;
using oat::cuda::cublas_gemm_args;
using oat::cuda::CublasGemmArgs;
using oat::cuda::GemmShape;

namespace {

// cuBLAS's validation of a GEMM's sizes (CUBLAS_STATUS_INVALID_VALUE otherwise).
bool cublas_accepts(const CublasGemmArgs& c) {
  if (c.m < 0 || c.n < 0 || c.k < 0 || c.batch < 0) return false;
  if (c.ld_first < std::max(1, c.trans_first ? c.k : c.m)) return false;
  if (c.ld_second < std::max(1, c.trans_second ? c.n : c.k)) return false;
  return c.ldc >= std::max(1, c.m);
}

// Column-major C(m×n) = op(X)·op(Y) as cuBLAS defines it, X the first operand, Y the second.
void column_major_gemm(const CublasGemmArgs& c, const std::vector<double>& X,
                       const std::vector<double>& Y, std::vector<double>& C) {
  for (int j = 0; j < c.n; ++j)
    for (int i = 0; i < c.m; ++i) {
      double s = 0;
      for (int p = 0; p < c.k; ++p) {
        const double x = c.trans_first ? X[p + static_cast<size_t>(i) * c.ld_first]
                                       : X[i + static_cast<size_t>(p) * c.ld_first];
        const double y = c.trans_second ? Y[j + static_cast<size_t>(p) * c.ld_second]
                                        : Y[p + static_cast<size_t>(j) * c.ld_second];
        s += x * y;
      }
      C[i + static_cast<size_t>(j) * c.ldc] = s;
    }
}

}  // namespace

TEST_CASE("cuBLAS GEMM arguments of a row-major product") {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{3, 4, 5}, {1, 7, 2},
                             {6, 1, 3}, {2, 3, 1}, {4, 2, 0}}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        const GemmShape g{ta, tb, M, N, K};
        const CublasGemmArgs c = cublas_gemm_args(g, 1);
        CHECK(cublas_accepts(c));
        CHECK(c.m == N);
        CHECK(c.n == M);
        CHECK(c.k == K);
        // Row-major A stored [K,M] when ta, [M,K] otherwise; B [N,K] when tb, [K,N] otherwise.
        std::vector<double> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N));
        for (size_t i = 0; i < A.size(); ++i) A[i] = 1.0 + static_cast<double>(i % 7) - 0.5 * (i % 3);
        for (size_t i = 0; i < B.size(); ++i) B[i] = 2.0 - static_cast<double>(i % 5) + 0.25 * (i % 4);
        auto a = [&](int64_t m, int64_t k) { return ta ? A[k * M + m] : A[m * K + k]; };
        auto b = [&](int64_t k, int64_t n) { return tb ? B[n * K + k] : B[k * N + n]; };
        std::vector<double> C(static_cast<size_t>(M * N), -1.0);
        column_major_gemm(c, B, A, C);  // cuBLAS's first operand is B, its second A
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double want = 0;
            for (int64_t k = 0; k < K; ++k) want += a(m, k) * b(k, n);
            CHECK(C[static_cast<size_t>(m * N + n)] == doctest::Approx(want));
          }
      }
}

TEST_CASE("cuBLAS GEMM arguments: K = 0 keeps leading dimensions >= 1; sizes beyond int fail") {
  // The failure mode this guards against: lda = K = 0 is CUBLAS_STATUS_INVALID_VALUE.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const CublasGemmArgs c = cublas_gemm_args(GemmShape{ta, tb, 8, 16, 0}, 3);
      CHECK(cublas_accepts(c));
      CHECK(c.batch == 3);
    }
  const int64_t big = int64_t{1} << 31;
  CHECK_THROWS_WITH_AS(cublas_gemm_args(GemmShape{true, false, 64, 64, big}, 1),
                       doctest::Contains("does not fit cuBLAS's int arguments"), Error);
  CHECK_THROWS_AS(cublas_gemm_args(GemmShape{false, false, big, 2, 2}, 1), Error);
  CHECK_THROWS_AS(cublas_gemm_args(GemmShape{false, false, 2, 2, 2}, big), Error);
  // The largest sizes that fit pass through unchanged.
  const int64_t most = (int64_t{1} << 31) - 1;
  const CublasGemmArgs c = cublas_gemm_args(GemmShape{false, false, 1, 1, most}, 1);
  CHECK(c.k == most);
  CHECK(c.ld_second == most);
}

#else
TEST_CASE("cuBLAS GEMM arguments") {
  MESSAGE("SKIPPED: this build has no CUDA backend");
}
#endif
