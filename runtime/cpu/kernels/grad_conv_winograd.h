// dW of a 3x3, stride-1 conv by Winograd F(2x2, 3x3) (conv_winograd.h), the adjoint of the
// forward transforms. Forward, per 2x2 output tile t and channel pair (m, c):
//   Y_t[m] = Aᵀ [Σ_c U[m, c] ⊙ V_t[c]] A,   U = G g Gᵀ,   V_t = Bᵀ d_t B
// so the gradient of the 3x3 filter g = W[m, c] is
//   dU[m, c] = Σ_t (A dY_t[m] Aᵀ) ⊙ V_t[c]          (4x4; dY_t is 0 past the output's edge)
//   dW[m, c] = Gᵀ dU[m, c] G                          (3x3)
// For each of the 16 positions ξ the tile sum is one GEMM, dU_ξ (M x C) += DM_ξ (M x tiles) ·
// V_ξᵀ (tiles x C), with 16·M·C multiply-adds a tile against 36·M·C for the im2col GEMM (2.25x
// fewer). Tiles run in blocks; blocks run in parallel (static, round-robin: each thread's dU
// partial sum covers the same blocks in the same order every run, so training repeats bit for
// bit), each with its own dU, summed in thread order at the end; with one thread or few blocks
// the GEMMs are threaded instead. With A = [1 0; 1 1; 1 -1; 0 -1] (4x2) and G as in
// conv_winograd.h, the float result differs from the direct sum by rounding alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/cpu/kernels/conv_winograd.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace oat::cpu {

// dW (M x C x 3 x 3) from x (N x C x IH x IW) and dy (N x M x OH x OW); `w` is the forward
// window, winograd_applies(w, 1, C, M) must hold.
template <class T>
void winograd_weight_gradient(const T* x, const T* dy, T* dw, int64_t N, int64_t C, int64_t M,
                              const Window3& w, int64_t threads) {
  const int64_t OH = w.out[1], OW = w.out[2];
  const int64_t TH = (OH + 1) / 2, TW = (OW + 1) / 2, per_image = TH * TW, tiles = N * per_image;
  int64_t blocks = 0;  // blocks of B tiles, as the forward's
  const int64_t B = winograd_block_width(tiles, C, M, threads, &blocks);
  const bool parallel = threads > 1 && blocks >= threads;
  const int64_t parts = parallel ? threads : 1;
  const int64_t sx = winograd_stride(M * C), su = 16 * sx;  // between ξ; one dU
  HostBuffer<T> dU_buffer(static_cast<size_t>(parts * su));
  T* dU = dU_buffer.data();
  std::fill(dU, dU + parts * su, T(0));

  auto block = [&](int64_t b, T* du) {
    const auto [nt, sv, sm, runs, V, DM] = winograd_block(x, C, M, w, b, B, tiles, per_image, TW);
    // DM[ξ·sm + m·nt + k] = (A dY Aᵀ)[ξ] of tile k's 2x2 output gradient: the two dY rows
    // under a run of tiles, zero-padded past the output's edge, then a vector loop over the run.
    T* rows = thread_scratch<T, 3>(static_cast<size_t>(4 * TW));
    for (int64_t m = 0; m < M; ++m)
      for (const WinogradRun& r : runs) {
        const int64_t len = r.tx1 - r.tx0, width = 2 * len, ox0 = 2 * r.tx0;
        const int64_t cols = std::min(width, OW - ox0);
        const T* ym = dy + (r.n * M + m) * OH * OW;
        T *e0 = rows, *e1 = rows + width;
        for (int i = 0; i < 2; ++i) {
          T* e = i == 0 ? e0 : e1;
          const int64_t oy = 2 * r.ty + i;
          if (oy < OH) {
            std::copy(ym + oy * OW + ox0, ym + oy * OW + ox0 + cols, e);
            std::fill(e + cols, e + width, T(0));
          } else {
            std::fill(e, e + width, T(0));
          }
        }
        T* q = DM + m * nt + r.k0;
#pragma omp simd
        for (int64_t k = 0; k < len; ++k) {
          const T g00 = e0[2 * k], g01 = e0[2 * k + 1], g10 = e1[2 * k], g11 = e1[2 * k + 1];
          const T a[4][2] = {
              {g00, g01}, {g00 + g10, g01 + g11}, {g00 - g10, g01 - g11}, {-g10, -g11}};  // A dY
          for (int i = 0; i < 4; ++i) {  // (A dY) Aᵀ
            q[(i * 4 + 0) * sm + k] = a[i][0];
            q[(i * 4 + 1) * sm + k] = a[i][0] + a[i][1];
            q[(i * 4 + 2) * sm + k] = a[i][0] - a[i][1];
            q[(i * 4 + 3) * sm + k] = -a[i][1];
          }
        }
      }
    for (int xi = 0; xi < 16; ++xi)  // dU_ξ += DM_ξ · V_ξᵀ
      strided_gemm(DM + xi * sm, nt, false, V + xi * sv, nt, true, du + xi * sx, C, M, C, nt, true);
  };
  if (parallel) {
#pragma omp parallel for schedule(static, 1) num_threads(parts)
    for (int64_t b = 0; b < blocks; ++b) {
#ifdef _OPENMP
      const int64_t t = omp_get_thread_num();
#else
      const int64_t t = 0;
#endif
      block(b, dU + t * su);
    }
    for (int64_t t = 1; t < parts; ++t)
      for (int64_t i = 0; i < su; ++i) dU[i] += dU[t * su + i];
  } else {
    for (int64_t b = 0; b < blocks; ++b) block(b, dU);
  }

  // dW[m, c] = Gᵀ dU[m, c] G, G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1].
#pragma omp parallel for schedule(static) if (M * C > 4096)
  for (int64_t mc = 0; mc < M * C; ++mc) {
    T u[4][4];
    for (int xi = 0; xi < 16; ++xi) u[xi / 4][xi % 4] = dU[xi * sx + mc];
    T h[3][4];  // Gᵀ dU
    for (int j = 0; j < 4; ++j) {
      h[0][j] = u[0][j] + T(0.5) * (u[1][j] + u[2][j]);
      h[1][j] = T(0.5) * (u[1][j] - u[2][j]);
      h[2][j] = T(0.5) * (u[1][j] + u[2][j]) + u[3][j];
    }
    T* g = dw + mc * 9;
    for (int i = 0; i < 3; ++i) {  // (Gᵀ dU) G
      g[i * 3 + 0] = h[i][0] + T(0.5) * (h[i][1] + h[i][2]);
      g[i * 3 + 1] = T(0.5) * (h[i][1] - h[i][2]);
      g[i * 3 + 2] = T(0.5) * (h[i][1] + h[i][2]) + h[i][3];
    }
  }
}

}  // namespace oat::cpu
