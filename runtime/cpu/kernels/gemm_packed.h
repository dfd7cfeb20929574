// Large float products: C[M, N] = alpha · op(A) · op(B) (+ C), row-major, op(A) = A [M, K] or
// Aᵀ with A stored [K, M] (read in place: the register tile broadcasts single elements of A),
// op(B) = B [K, N] or Bᵀ with B stored [N, K]; every operand has its own leading dimension (row
// stride), so a conv's im2col block or a column strip of a bigger matrix works in place. The
// MatMuls and Gemms of transformers and MLPs (M = tokens or batch rows, hundreds or more) and the
// im2col and Winograd GEMMs of convolutions (M = output channels) have this shape.
//
// Blocking (as BLIS and ONNX Runtime's MLAS do): K in blocks of kKc; for each block, kNc of
// op(B)'s columns at a time packed in panels of 48 (kKc x 48 floats, contiguous); kMc rows of A
// (kept in L2) run over each panel in turn (kept in L1), 8 rows at a time; each 8 x 48 tile of C
// is gemm_small_m.h's register block (24 accumulators), summed in k order within a K block and
// added to C across blocks:
//   C[m, n] = alpha · Σ_blocks Σ_{k in block} A[m, k] · op(B)[k, n] (+ C[m, n])
// The last N mod 16 columns are packed into a 16-wide panel padded with zeros and summed into a
// per-thread scratch block that is added to C at the end (a 7x7 plane's 49 columns would
// otherwise spend a third of their time on the one left over). Bᵀ is packed by 8 x 8
// transposes in registers (transpose_block.h, shared with the Transpose kernel). One thread of
// this 2-vCPU AMD EPYC VM, M x K x N from 1024 x 256 x 768 to 64 x 4608 x 512 and the conv
// shapes: 1.0-1.7x Eigen's GEMM (the least at 49 columns), 80-125 GMAC/s, B transposed or not
// (build/bench/oat_gemm_small_m, second table).
// AVX-512 builds only (as gemm_small_m.h); `packed_supported` is false elsewhere.
#pragma once

#include <algorithm>
#include <vector>

#include "runtime/cpu/kernels/gemm_small_m.h"
#include "runtime/cpu/kernels/transpose_block.h"

namespace oat::cpu {

#if defined(__AVX512F__) && defined(__GNUC__)

inline bool packed_supported(int64_t M, int64_t N, int64_t K) {
  return M > 32 && N >= 16 && K >= 16;
}

namespace packed_detail {

constexpr int64_t kKc = 256;  // K block: a packed 48-column panel is 48 KB, in L1
constexpr int64_t kNc = 480;  // columns packed per K block: 480 KB, in L2
constexpr int64_t kMc = 128;  // rows of A run over each panel in turn: 128 KB, in L2

// Rows [0, MR) of the tile at columns [0, 16·NV) over one K block, B packed with ld 16·NV.
using Tile = void (*)(const float*, int64_t, int64_t, int64_t, const float*, int64_t, float*,
                      int64_t, float, bool);
template <int NV>
Tile tile_for(int64_t rows) {
  using small_m_detail::block;
  static constexpr Tile kByRows[] = {nullptr,      block<1, NV>, block<2, NV>,
                                     block<3, NV>, block<4, NV>, block<5, NV>,
                                     block<6, NV>, block<7, NV>, block<8, NV>};
  return kByRows[rows];
}

// Packs op(B)[k0 : k0 + kc, n0 : n0 + w] into p (kc rows of `width` floats, the columns past w
// zero). B's rows are ldb apart.
inline void pack(const float* b, int64_t ldb, bool tb, int64_t k0, int64_t kc, int64_t n0,
                 int64_t w, int64_t width, float* p) {
  if (!tb) {
    for (int64_t k = 0; k < kc; ++k) {
      std::copy_n(b + (k0 + k) * ldb + n0, w, p + k * width);
      std::fill(p + k * width + w, p + (k + 1) * width, 0.f);
    }
  } else {  // B stored [N, K]: column n of op(B) is row n of B; a transposition
    int64_t kb = 0;
    for (; kb + 8 <= kc; kb += 8) {  // 8 x 8 blocks in registers (transpose_block.h)
      int64_t j = 0;
      for (; j + 8 <= w; j += 8)
        transpose8x8(b + (n0 + j) * ldb + k0 + kb, ldb, p + kb * width + j, width);
      for (; j < w; ++j) {
        const float* src = b + (n0 + j) * ldb + k0;
        for (int64_t k = kb; k < kb + 8; ++k) p[k * width + j] = src[k];
      }
    }
    for (int64_t j = 0; j < w; ++j) {  // the last kc mod 8 rows of the panel
      const float* src = b + (n0 + j) * ldb + k0;
      for (int64_t k = kb; k < kc; ++k) p[k * width + j] = src[k];
    }
    for (int64_t k = 0; k < kc; ++k) std::fill(p + k * width + w, p + (k + 1) * width, 0.f);
  }
}

}  // namespace packed_detail

// Rows [m0, m1) of C = alpha · op(A) · op(B) (+ C), C [M, N]; A stored [M, K] ([K, M] when ta)
// with rows lda apart, B's rows ldb apart, C's ldc apart; one thread (the caller splits rows over
// threads).
inline void packed_gemm(const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, bool tb,
                        float* c, int64_t ldc, int64_t N, int64_t K, int64_t m0, int64_t m1,
                        float alpha, bool accumulate) {
  using namespace packed_detail;
  struct Panel {
    int64_t n0, width;  // first column; 48 or 16 (the padded tail too)
    const float* p;
  };
  thread_local std::vector<float> packed, tail;
  packed.resize(static_cast<size_t>(kKc * (kNc + 16)));
  const int64_t n16 = N / 16 * 16, rest = N - n16;
  if (rest > 0) tail.resize(static_cast<size_t>((m1 - m0) * 16));
  Panel panels[kNc / 16 + 1];
  const int64_t rs = ta ? 1 : lda, cs = ta ? lda : 1;  // op(A)[m, k] = a[m·rs + k·cs]
  for (int64_t k0 = 0; k0 < K; k0 += kKc) {
    const int64_t kc = std::min(kKc, K - k0);
    const bool acc = accumulate || k0 > 0;
    for (int64_t c0 = 0; c0 < N; c0 += kNc) {  // kNc columns (a multiple of 48), all packed
      const int64_t c1 = std::min(N, c0 + kNc), full = std::min(n16, c1);
      int64_t count = 0;
      float* p = packed.data();
      for (int64_t n0 = c0; n0 < c1; ++count) {
        const int64_t w = n0 == n16 ? rest : full - n0 >= 48 ? 48 : 16, width = w == 48 ? 48 : 16;
        pack(b, ldb, tb, k0, kc, n0, w, width, p);
        panels[count] = {n0, width, p};
        p += kc * width;
        n0 += w;
      }
      for (int64_t r0 = m0; r0 < m1; r0 += kMc) {  // kMc rows of A stay in L2 over the panels
        const int64_t r1 = std::min(m1, r0 + kMc);
        for (int64_t q = 0; q < count; ++q) {
          const Panel& pn = panels[q];
          for (int64_t m = r0; m < r1; m += 8) {  // the panel stays in L1 over the rows
            const int64_t rows = std::min<int64_t>(8, r1 - m);
            const Tile t = pn.width == 48 ? tile_for<3>(rows) : tile_for<1>(rows);
            const float* am = a + m * rs + k0 * cs;
            if (pn.n0 < n16)
              t(am, rs, cs, kc, pn.p, pn.width, c + m * ldc + pn.n0, ldc, alpha, acc);
            else  // the padded tail: into the scratch block, summed over the K blocks
              t(am, rs, cs, kc, pn.p, 16, tail.data() + (m - m0) * 16, 16, alpha, k0 > 0);
          }
        }
      }
    }
  }
  for (int64_t m = m0; rest > 0 && m < m1; ++m) {  // the last N mod 16 columns
    const float* s = tail.data() + (m - m0) * 16;
    float* d = c + m * ldc + n16;
    for (int64_t j = 0; j < rest; ++j) d[j] = s[j] + (accumulate ? d[j] : 0.f);
  }
}

#else
inline bool packed_supported(int64_t, int64_t, int64_t) { return false; }
inline void packed_gemm(const float*, int64_t, bool, const float*, int64_t, bool, float*, int64_t,
                        int64_t, int64_t, int64_t, int64_t, float, bool) {}
#endif

}  // namespace oat::cpu
