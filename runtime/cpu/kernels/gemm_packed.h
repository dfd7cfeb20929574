// Large float products: C[M, N] = alpha · A[M, K] · op(B) (+ C), row-major, A not transposed,
// op(B) = B [K, N] or Bᵀ with B stored [N, K]. The MatMuls and Gemms of transformers and MLPs
// (M = tokens or batch rows, hundreds or more) have this shape.
//
// Blocking (as BLIS and ONNX Runtime's MLAS do): K in blocks of kKc; for each block, op(B)'s
// columns in panels of 48 packed contiguous (kKc x 48 floats, which stay in L1/L2 while every
// 8-row block of A runs over them); each 8 x 48 tile of C is gemm_small_m.h's register block
// (24 accumulators), summed in k order within a K block and added to C across blocks:
//   C[m, n] = alpha · Σ_blocks Σ_{k in block} A[m, k] · op(B)[k, n] (+ C[m, n])
// Columns past the last multiple of 16 run as scalar sums. One thread of this 2-vCPU AMD EPYC
// VM, M x K x N from 1024 x 256 x 768 to 64 x 4608 x 512: 1.3-1.4x Eigen's GEMM, ~120 GMAC/s
// (1.05-1.35x with B transposed, whose packing is a gather); build/bench/oat_gemm_small_m,
// second table. bench/transformer_encoder_bench inference 25-27 -> 19-24 ms at 2 threads.
// AVX-512 builds only (as gemm_small_m.h); `packed_supported` is false elsewhere.
#pragma once

#include <algorithm>
#include <vector>

#include "runtime/cpu/kernels/gemm_small_m.h"

namespace oat::cpu {

#if defined(__AVX512F__) && defined(__GNUC__)

inline bool packed_supported(int64_t M, int64_t N, int64_t K) {
  return M > 32 && N >= 16 && K >= 16;
}

namespace packed_detail {

constexpr int64_t kKc = 256;  // K block: a packed 48-column panel is 48 KB

// Rows [0, MR) of the tile at columns [0, 16·NV) over one K block, B packed with ld 16·NV.
using Tile = void (*)(const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t, float,
                      bool);
template <int NV>
Tile tile_for(int64_t rows) {
  using small_m_detail::block;
  static constexpr Tile kByRows[] = {nullptr,      block<1, NV>, block<2, NV>,
                                     block<3, NV>, block<4, NV>, block<5, NV>,
                                     block<6, NV>, block<7, NV>, block<8, NV>};
  return kByRows[rows];
}

// Packs op(B)[k0 : k0 + kc, n0 : n0 + w] into p (kc rows of w floats).
inline void pack(const float* b, bool tb, int64_t N, int64_t K, int64_t k0, int64_t kc, int64_t n0,
                 int64_t w, float* p) {
  if (!tb) {
    for (int64_t k = 0; k < kc; ++k) std::copy_n(b + (k0 + k) * N + n0, w, p + k * w);
  } else {  // B stored [N, K]: column n of op(B) is row n of B
    for (int64_t j = 0; j < w; ++j) {
      const float* src = b + (n0 + j) * K + k0;
      for (int64_t k = 0; k < kc; ++k) p[k * w + j] = src[k];
    }
  }
}

}  // namespace packed_detail

// Rows [m0, m1) of C; one thread (the caller splits rows over threads).
inline void packed_gemm(const float* a, const float* b, bool tb, float* c, int64_t M, int64_t N,
                        int64_t K, int64_t m0, int64_t m1, float alpha, bool accumulate) {
  using namespace packed_detail;
  (void)M;
  thread_local std::vector<float> panel;
  panel.resize(static_cast<size_t>(kKc * 48));
  const int64_t n16 = N / 16 * 16;
  for (int64_t k0 = 0; k0 < K; k0 += kKc) {
    const int64_t kc = std::min(kKc, K - k0);
    const bool acc = accumulate || k0 > 0;
    for (int64_t n0 = 0; n0 < n16;) {
      const int64_t w = n16 - n0 >= 48 ? 48 : 16;
      pack(b, tb, N, K, k0, kc, n0, w, panel.data());
      for (int64_t m = m0; m < m1; m += 8) {
        const int64_t rows = std::min<int64_t>(8, m1 - m);
        const Tile t = w == 48 ? tile_for<3>(rows) : tile_for<1>(rows);
        t(a + m * K + k0, K, kc, panel.data(), w, c + m * N + n0, N, alpha, acc);
      }
      n0 += w;
    }
  }
  for (int64_t n = n16; n < N; ++n)  // the last N mod 16 columns
    for (int64_t m = m0; m < m1; ++m) {
      float s = 0.f;
      for (int64_t k = 0; k < K; ++k) s += a[m * K + k] * (tb ? b[n * K + k] : b[k * N + n]);
      c[m * N + n] = alpha * s + (accumulate ? c[m * N + n] : 0.f);
    }
}

#else
inline bool packed_supported(int64_t, int64_t, int64_t) { return false; }
inline void packed_gemm(const float*, const float*, bool, float*, int64_t, int64_t, int64_t,
                        int64_t, int64_t, float, bool) {}
#endif

}  // namespace oat::cpu
