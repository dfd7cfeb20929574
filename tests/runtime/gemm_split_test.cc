// The GEMM threading of the CPU kernels (runtime/cpu/kernels/gemm_split.h): products cut into
// strips of rows or columns, each a single-threaded Eigen GEMM (or the few-row / packed kernels
// of gemm_small_m.h and gemm_packed.h), against direct loops in double.
#include "runtime/cpu/kernels/gemm_split.h"

#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "runtime/threads.h"

using oat::cpu::gemm_parts;
using oat::cpu::row_major_gemm;
using oat::cpu::threaded_product;

namespace {

std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// max |row_major_gemm - direct| over C, for A stored [M,K] ([K,M] when ta), B [K,N] ([N,K] when
// tb).
double gemm_error(int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha, bool accumulate) {
  std::mt19937 rng(static_cast<unsigned>(M * 7 + N * 3 + K + ta * 2 + tb));
  const auto a = random_values(static_cast<size_t>(M * K), rng);
  const auto b = random_values(static_cast<size_t>(K * N), rng);
  auto c = random_values(static_cast<size_t>(M * N), rng);
  std::vector<double> want(c.size());
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += double(a[ta ? k * M + i : i * K + k]) * double(b[tb ? j * K + k : k * N + j]);
      want[i * N + j] = alpha * s + (accumulate ? c[i * N + j] : 0.0);
    }
  row_major_gemm<float>(a.data(), ta, b.data(), tb, c.data(), M, N, K, alpha, accumulate);
  double err = 0;
  for (size_t i = 0; i < c.size(); ++i) err = std::max(err, std::abs(c[i] - want[i]));
  return err;
}

struct ThreadsGuard {
  explicit ThreadsGuard(int n) { oat::set_num_threads(n); }
  ~ThreadsGuard() { oat::set_num_threads(0); }
};

}  // namespace

TEST_CASE("gemm_parts: strips only where each has 2^21 multiply-adds, never nested") {
  ThreadsGuard threads(2);
  CHECK(gemm_parts(8, 1024, 256) == 1);  // an LSTM step: 2^21, one thread
  CHECK(gemm_parts(300, 200, 80) == 2);  // 4.8M
  CHECK(gemm_parts(4, 4096, 4096) == 2);
  CHECK(gemm_parts(4, 12, 1 << 20) == 1);  // too few rows and columns to cut
  int nested = -1;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    nested = gemm_parts(300, 200, 80);
  }
  CHECK(nested == 1);
  oat::set_num_threads(1);
  CHECK(gemm_parts(300, 200, 80) == 1);
}

TEST_CASE("row_major_gemm: split by rows and by columns agrees with direct loops") {
  for (int threads : {1, 2}) {
    ThreadsGuard guard(threads);
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        CAPTURE(threads);
        CAPTURE(ta);
        CAPTURE(tb);
        // rows (M >= N) and columns (N > M), above the threshold; a small one; K = 0.
        CHECK(gemm_error(300, 200, 80, ta, tb, 1.f, false) < 1e-4);
        CHECK(gemm_error(40, 900, 130, ta, tb, 0.5f, true) < 1e-4);
        CHECK(gemm_error(5, 7, 3, ta, tb, 2.f, true) < 1e-5);
        CHECK(gemm_error(6, 9, 0, ta, tb, 1.f, true) == 0.0);
      }
  }
}

TEST_CASE("threaded_product: strided maps and a transposed operand, split over two threads") {
  ThreadsGuard guard(2);
  using Strided =
      Eigen::Map<oat::cpu::RowMajorMatrix<float>, Eigen::Unaligned, Eigen::OuterStride<>>;
  using ConstStrided =
      Eigen::Map<const oat::cpu::RowMajorMatrix<float>, Eigen::Unaligned, Eigen::OuterStride<>>;
  const int64_t M = 64, N = 700, K = 100, lda = 110, ldb = 130, ldc = 720;
  REQUIRE(gemm_parts(M, N, K) == 2);
  std::mt19937 rng(5);
  const auto a = random_values(static_cast<size_t>(M * lda), rng);
  const auto bt = random_values(static_cast<size_t>(N * ldb), rng);  // Bᵀ stored [N, K], ld 130
  auto c = random_values(static_cast<size_t>(M * ldc), rng);
  const auto before = c;
  threaded_product(Strided(c.data(), M, N, Eigen::OuterStride<>(ldc)),
                   ConstStrided(a.data(), M, K, Eigen::OuterStride<>(lda)),
                   ConstStrided(bt.data(), N, K, Eigen::OuterStride<>(ldb)).transpose(), true);
  double err = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      double want = before[i * ldc + j];
      if (j < N)
        for (int64_t k = 0; k < K; ++k) want += double(a[i * lda + k]) * bt[j * ldb + k];
      err = std::max(err, std::abs(c[i * ldc + j] - want));  // the padding columns unchanged
    }
  CHECK(err < 1e-4);
}

TEST_CASE("row_major_gemm: products of 2 to 32 rows (gemm_small_m.h where built) agree") {
  if (!oat::cpu::kSmallMKernel)
    MESSAGE("gemm_small_m.h is not built here (no AVX-512): these products run on Eigen");
  CHECK(oat::cpu::small_m_supported(8, 1024, 256) == oat::cpu::kSmallMKernel);
  CHECK(oat::cpu::small_m_supported(32, 1024, 256) == oat::cpu::kSmallMKernel);
  CHECK_FALSE(oat::cpu::small_m_supported(33, 1024, 256));
  CHECK_FALSE(oat::cpu::small_m_supported(1, 1024, 256));
  for (int threads : {1, 2}) {
    ThreadsGuard guard(threads);
    for (int64_t M : {2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 25, 32})
      for (int64_t N : {16, 47, 48, 100, 1024})
        for (int64_t K : {1, 37}) {
          CAPTURE(threads);
          CAPTURE(M);
          CAPTURE(N);
          CAPTURE(K);
          CHECK(gemm_error(M, N, K, false, false, 1.f, false) < 1e-5);
          CHECK(gemm_error(M, N, K, false, false, -0.5f, true) < 1e-5);
        }
    // Large enough to be cut into column strips (2^21 multiply-adds each).
    CHECK(gemm_error(8, 4096, 256, false, false, 1.f, true) < 1e-4);
    CHECK(gemm_error(5, 1000, 1024, false, false, 2.f, false) < 1e-4);
  }
}

TEST_CASE("row_major_gemm: 16 to 32 rows times Bᵀ (the transposed packed product) agree") {
  CHECK(oat::cpu::transposed_packed_supported(16, 33, 16) == oat::cpu::kSmallMKernel);
  CHECK_FALSE(oat::cpu::transposed_packed_supported(15, 100, 100));
  CHECK_FALSE(oat::cpu::transposed_packed_supported(33, 100, 100));
  CHECK_FALSE(oat::cpu::transposed_packed_supported(20, 32, 100));
  for (int threads : {1, 2}) {
    ThreadsGuard guard(threads);
    for (int64_t M : {16, 17, 25, 32})
      for (int64_t N : {33, 100, 300})
        for (int64_t K : {16, 40, 300}) {
          CAPTURE(threads);
          CAPTURE(M);
          CAPTURE(N);
          CAPTURE(K);
          CHECK(gemm_error(M, N, K, false, true, 1.f, false) < 1e-4);
          CHECK(gemm_error(M, N, K, false, true, -0.5f, true) < 1e-4);
        }
    CHECK(gemm_error(32, 4096, 784, false, true, 1.f, true) < 2e-4);  // split over threads
  }
}

TEST_CASE("row_major_gemm: products of more than 32 rows (gemm_packed.h where built) agree") {
  if (!oat::cpu::kSmallMKernel)
    MESSAGE("gemm_packed.h is not built here (no AVX-512): these products run on Eigen");
  CHECK(oat::cpu::packed_supported(33, 16, 16) == oat::cpu::kSmallMKernel);
  CHECK_FALSE(oat::cpu::packed_supported(32, 1024, 256));
  CHECK_FALSE(oat::cpu::packed_supported(100, 15, 256));
  CHECK_FALSE(oat::cpu::packed_supported(100, 64, 15));
  for (int threads : {1, 2}) {
    ThreadsGuard guard(threads);
    // Rows past a multiple of 8, columns past 48 and 16, K across the 256-deep blocks.
    for (int64_t M : {33, 41, 100})
      for (int64_t N : {16, 17, 50, 96, 100})
        for (int64_t K : {16, 300, 513})
          for (bool ta : {false, true})
            for (bool tb : {false, true}) {
              CAPTURE(threads);
              CAPTURE(M);
              CAPTURE(N);
              CAPTURE(K);
              CAPTURE(ta);
              CAPTURE(tb);
              CHECK(gemm_error(M, N, K, ta, tb, 1.f, false) < 1e-4);
              CHECK(gemm_error(M, N, K, ta, tb, -0.5f, true) < 1e-4);
            }
    // Large enough to be cut into row strips (2^21 multiply-adds each).
    CHECK(gemm_error(1024, 256, 256, false, false, 1.f, true) < 1e-4);
    CHECK(gemm_error(520, 100, 600, false, true, 2.f, false) < 2e-4);
    CHECK(gemm_error(600, 530, 200, true, false, 1.f, true) < 2e-4);
  }
}

TEST_CASE("threaded_packed_gemm: leading dimensions past the rows, padding columns untouched") {
  // A conv's GEMM writes a column strip of Y (ldc = the plane) from an im2col block, or reads
  // W_gᵀ in place (ta); the padded 16-wide tail (N mod 16 != 0) must add only its own columns.
  if (!oat::cpu::kSmallMKernel) {
    MESSAGE("gemm_packed.h is not built here (no AVX-512): nothing to test");
    return;
  }
  for (int threads : {1, 2}) {
    ThreadsGuard guard(threads);
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [M, N, K] :
             {std::tuple<int64_t, int64_t, int64_t>{64, 49, 147}, {300, 700, 300}, {40, 16, 600}}) {
          CAPTURE(threads);
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(M);
          CAPTURE(N);
          const int64_t lda = (ta ? M : K) + 5, ldb = (tb ? K : N) + 11, ldc = N + 23;
          std::mt19937 rng(static_cast<unsigned>(M + N + K + tb + 2 * ta));
          const auto a = random_values(static_cast<size_t>((ta ? K : M) * lda), rng);
          const auto b = random_values(static_cast<size_t>((tb ? N : K) * ldb), rng);
          auto c = random_values(static_cast<size_t>(M * ldc), rng);
          const auto before = c;
          oat::cpu::threaded_packed_gemm(a.data(), lda, ta, b.data(), ldb, tb, c.data(), ldc, M, N,
                                         K, 0.5f, true);
          double err = 0;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
              double want = before[i * ldc + j];
              if (j < N)
                for (int64_t k = 0; k < K; ++k)
                  want += 0.5 * (ta ? a[k * lda + i] : a[i * lda + k]) *
                          (tb ? b[j * ldb + k] : b[k * ldb + j]);
              err = std::max(err, std::abs(c[i * ldc + j] - want));
            }
          CHECK(err < 1e-4);
        }
  }
}
