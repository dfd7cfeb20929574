// Microseconds of one product C[M, N] = A[M, K] · B[K, N] (float, row-major, one thread):
// Eigen's GEMM against runtime/cpu/kernels/gemm_small_m.h (2 to 32 rows) and gemm_packed.h
// (more rows; also with B transposed, as Gemm's transB), gemm_split.h's transposed product (16-32
// rows times Bᵀ), and their largest difference.
//   build/bench/oat_gemm_small_m
#include "runtime/cpu/kernels/gemm_small_m.h"

#include <Eigen/Core>
#include <chrono>
#include <cstdio>
#include <tuple>
#include <utility>

#include "runtime/cpu/kernels/gemm_packed.h"
#include "runtime/cpu/kernels/gemm_split.h"
#include "runtime/threads.h"

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class F>
double microseconds(int reps, F&& f) {
  f();  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         reps;
}

int main() {
  if (!oat::cpu::kSmallMKernel) {
    std::printf("gemm_small_m.h is not built here (no AVX-512): nothing to compare\n");
    return 0;
  }
  oat::set_num_threads(1);
  std::printf("%4s %5s %5s %10s %10s %8s %10s\n", "M", "K", "N", "eigen_us", "small_us", "speedup",
              "max_diff");
  for (int M : {2, 4, 8, 16, 32})
    for (auto [K, N] : {std::pair{256, 1024}, {784, 256}, {1024, 4096}}) {
      const RowMajor A = RowMajor::Random(M, K), B = RowMajor::Random(K, N);
      RowMajor C(M, N), D(M, N);
      const int reps = K * N > (1 << 20) ? 200 : 2000;
      const double eigen = microseconds(reps, [&] { C.noalias() = A * B; });
      const double small = microseconds(reps, [&] {
        oat::cpu::small_m_gemm(A.data(), K, B.data(), N, D.data(), N, M, K, 0, N, 1.f, false);
      });
      std::printf("%4d %5d %5d %10.2f %10.2f %7.2fx %10.2e\n", M, K, N, eigen, small, eigen / small,
                  static_cast<double>((C - D).cwiseAbs().maxCoeff()));
    }

  std::printf("\n%4s %5s %5s %2s %10s %10s %8s %8s %10s\n", "M", "K", "N", "tB", "eigen_us",
              "packed_us", "speedup", "GMAC/s", "max_diff");
  for (auto [M, K, N] : {std::tuple{1024, 256, 768},
                         {1024, 256, 1024},
                         {1024, 1024, 256},
                         {512, 512, 1024},
                         {128, 768, 3072},
                         {64, 4608, 512},
                         {64, 147, 1242},
                         {512, 4608, 392},
                         {64, 64, 400},
                         {256, 256, 49},
                         {256, 256, 48},
                         {256, 256, 64},
                         {512, 4608, 49},
                         {512, 256, 4608},
                         {4608, 512, 256},
                         {512, 16, 4608},
                         {4608, 512, 16},
                         {2304, 256, 64},
                         {16, 150, 3200},
                         {16, 3200, 150},
                         {150, 3200, 16}})
    for (bool tb : {false, true}) {
      const RowMajor A = RowMajor::Random(M, K),
                     B = tb ? RowMajor::Random(N, K) : RowMajor::Random(K, N);
      RowMajor C(M, N), D(M, N);
      const int reps = 20;
      const double eigen = microseconds(reps, [&] {
        if (tb)
          C.noalias() = A * B.transpose();
        else
          C.noalias() = A * B;
      });
      const double packed = microseconds(reps, [&] {
        oat::cpu::packed_gemm(A.data(), K, false, B.data(), tb ? K : N, tb, D.data(), N, N, K, 0, M,
                              1.f, false);
      });
      std::printf("%4d %5d %5d %2d %10.1f %10.1f %7.2fx %8.1f %10.2e\n", M, K, N, tb ? 1 : 0, eigen,
                  packed, eigen / packed, double(M) * K * N / packed / 1e3,
                  static_cast<double>((C - D).cwiseAbs().maxCoeff()));
    }

  // Few rows times Bᵀ (a Linear layer on a small batch, a conv's dW with 16-32 channels):
  // Eigen against gemm_split.h's transposed_packed_gemm (Cᵀ = B · Aᵀ on the packed kernel).
  std::printf("\n%4s %5s %5s %10s %10s %8s %10s  (C = A · Bᵀ)\n", "M", "K", "N", "eigen_us",
              "transp_us", "speedup", "max_diff");
  for (auto [M, K, N] : {std::tuple{16, 784, 256},
                         {32, 784, 256},
                         {16, 3200, 150},
                         {32, 1024, 4096},
                         {16, 256, 1024}}) {
    const RowMajor A = RowMajor::Random(M, K), B = RowMajor::Random(N, K);
    RowMajor C(M, N), D(M, N);
    const int reps = 200;
    const double eigen = microseconds(reps, [&] { C.noalias() = A * B.transpose(); });
    const double transp = microseconds(reps, [&] {
      oat::cpu::transposed_packed_gemm(A.data(), K, B.data(), K, D.data(), N, M, N, K, 1.f, false);
    });
    std::printf("%4d %5d %5d %10.1f %10.1f %7.2fx %10.2e\n", M, K, N, eigen, transp, eigen / transp,
                static_cast<double>((C - D).cwiseAbs().maxCoeff()));
  }
}
