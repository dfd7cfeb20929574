// Winograd F(4x4, 3x3) for the convs conv_winograd.h takes (3x3, stride 1, 16..256 channels):
// each 4x4 output tile from a 6x6 input patch, 36 GEMMs of C-deep products in place of one
// 9C-deep one per 16 outputs (4x fewer multiplications, against F(2x2, 3x3)'s 2.25x; the
// transforms move 2.25 values per output instead of 4). Lavin & Gray 2015, as in
// conv_winograd.h, whose blocking, runs of tiles and strides this shares.
//
//   U[m, c] = G · g[m, c] · Gᵀ           (6x6)
//   V[c, t] = Bᵀ · d[c, t] · B           (6x6; d the 6x6 patch at (4·ty - pad_top, 4·tx -
//   pad_left)) Mx[ξ]   = U[ξ] (M x C) · V[ξ] (C x tiles)  for the 36 positions ξ Y[m, t] = Aᵀ ·
//   Mx[m, t] · A + bias[m]      (4x4)
// with
//   G  = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   Bᵀ = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   Aᵀ = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
// The larger coefficients cost some accuracy against F(2x2, 3x3): in float, errors of ~1e-6
// relative to the largest partial sums instead of a few ulps (tests/runtime/conv_test.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/cpu/kernels/conv_winograd.h"

namespace oat::cpu {

// U: 36 matrices (M x C), U[ξ·su + m·C + c], su = winograd_stride(M·C), ξ = 6·i + j.
template <class T>
void winograd4_filter_transform(const T* wt, int64_t M, int64_t C, T* U) {
  constexpr int64_t L = 16;
  const T q4 = T(0.25), s6 = T(1) / T(6), s12 = T(1) / T(12), s24 = T(1) / T(24);
  const int64_t s = winograd_stride(M * C);
#pragma omp parallel for schedule(static) if (M * C > 4096)
  for (int64_t m = 0; m < M; ++m) {
    const T* wm = wt + m * C * 9;
    T* um = U + m * C;
    for (int64_t c0 = 0; c0 < C; c0 += L) {
      const int64_t n = std::min(L, C - c0);
      T g[9][L] = {};
      for (int64_t c = 0; c < n; ++c)
        for (int j = 0; j < 9; ++j) g[j][c] = wm[(c0 + c) * 9 + j];
      T u[36][L];
#pragma omp simd
      for (int64_t c = 0; c < L; ++c) {
        T gg[6][3];  // G · g
        for (int j = 0; j < 3; ++j) {
          const T a = g[j][c], b = g[3 + j][c], e = g[6 + j][c];
          gg[0][j] = q4 * a;
          gg[1][j] = -s6 * (a + b + e);
          gg[2][j] = -s6 * (a - b + e);
          gg[3][j] = s24 * a + s12 * b + s6 * e;
          gg[4][j] = s24 * a - s12 * b + s6 * e;
          gg[5][j] = e;
        }
        for (int i = 0; i < 6; ++i) {  // (G · g) · Gᵀ
          const T a = gg[i][0], b = gg[i][1], e = gg[i][2];
          u[i * 6 + 0][c] = q4 * a;
          u[i * 6 + 1][c] = -s6 * (a + b + e);
          u[i * 6 + 2][c] = -s6 * (a - b + e);
          u[i * 6 + 3][c] = s24 * a + s12 * b + s6 * e;
          u[i * 6 + 4][c] = s24 * a - s12 * b + s6 * e;
          u[i * 6 + 5][c] = e;
        }
      }
      for (int xi = 0; xi < 36; ++xi) std::copy(u[xi], u[xi] + n, um + xi * s + c0);
    }
  }
}

// The 6 Bᵀ combinations of d0..d5 (one column or row of a patch) into o0..o5. A macro: with
// arrays passed to an inline function GCC left the loops over the lanes scalar.
#define WINOGRAD4_BT(o0, o1, o2, o3, o4, o5) \
  do {                                       \
    o0 = T(4) * d0 - T(5) * d2 + d4;         \
    o1 = d3 + d4 - T(4) * (d1 + d2);         \
    o2 = T(4) * (d1 - d2) + d4 - d3;         \
    o3 = T(2) * (d3 - d1) + d4 - d2;         \
    o4 = T(2) * (d1 - d3) + d4 - d2;         \
    o5 = T(4) * d1 - T(5) * d3 + d5;         \
  } while (0)

// V[ξ·sv + c·nt + k] = (Bᵀ d B)[ξ] for tile k of the runs, sv = winograd_stride(C·nt). Per
// channel and run: the 6 input rows under the run, zero-padded, contiguous; Bᵀ down the columns
// in one vector pass over the row (t[i][x], x the column within the run's patches); then B
// along each tile's 6 columns of t, a vector loop over the run's tiles.
template <class T>
void winograd4_input_transform(const T* x, int64_t C, const Window3& w,
                               const std::vector<WinogradRun>& runs, int64_t nt, T* V) {
  const int64_t IH = w.in[1], IW = w.in[2], pt = w.pad[1], pl = w.pad[2];
  const int64_t TW = (w.out[2] + 3) / 4, W = 4 * TW + 2;
  T* rows = thread_scratch<T, 2>(static_cast<size_t>(12 * W));
  T* t = rows + 6 * W;
  const int64_t sv = winograd_stride(C * nt);
  for (int64_t c = 0; c < C; ++c)
    for (const WinogradRun& r : runs) {
      const int64_t len = r.tx1 - r.tx0, width = 4 * len + 2, col0 = 4 * r.tx0 - pl;
      const T* xc = x + (r.n * C + c) * IH * IW;
      for (int i = 0; i < 6; ++i) {
        T* row = rows + i * W;
        const int64_t iy = 4 * r.ty - pt + i;
        if (iy < 0 || iy >= IH) {
          std::fill(row, row + width, T(0));
          continue;
        }
        const int64_t lo = std::clamp<int64_t>(-col0, 0, width);
        const int64_t hi = std::clamp<int64_t>(IW - col0, lo, width);
        std::fill(row, row + lo, T(0));
        std::copy(xc + iy * IW + col0 + lo, xc + iy * IW + col0 + hi, row + lo);
        std::fill(row + hi, row + width, T(0));
      }
      {
        const T *r0 = rows, *r1 = rows + W, *r2 = rows + 2 * W, *r3 = rows + 3 * W,
                *r4 = rows + 4 * W, *r5 = rows + 5 * W;
#pragma omp simd
        for (int64_t k = 0; k < width; ++k) {
          const T d0 = r0[k], d1 = r1[k], d2 = r2[k], d3 = r3[k], d4 = r4[k], d5 = r5[k];
          WINOGRAD4_BT(t[k], t[W + k], t[2 * W + k], t[3 * W + k], t[4 * W + k], t[5 * W + k]);
        }
      }
      T* v = V + c * nt + r.k0;
      for (int i = 0; i < 6; ++i) {
        const T* ti = t + i * W;
        T *v0 = v + (6 * i) * sv, *v1 = v0 + sv, *v2 = v1 + sv, *v3 = v2 + sv, *v4 = v3 + sv,
          *v5 = v4 + sv;
#pragma omp simd
        for (int64_t k = 0; k < len; ++k) {
          const T d0 = ti[4 * k], d1 = ti[4 * k + 1], d2 = ti[4 * k + 2], d3 = ti[4 * k + 3],
                  d4 = ti[4 * k + 4], d5 = ti[4 * k + 5];
          WINOGRAD4_BT(v0[k], v1[k], v2[k], v3[k], v4[k], v5[k]);
        }
      }
    }
}

template <class T>
void conv_winograd4(const T* x, const T* wt, const T* bias, T* y, int64_t N, int64_t C, int64_t M,
                    const Window3& w, int64_t threads) {
  const int64_t OH = w.out[1], OW = w.out[2];
  const int64_t TH = (OH + 3) / 4, TW = (OW + 3) / 4, per_image = TH * TW, tiles = N * per_image;
  const int64_t su = winograd_stride(M * C);
  HostBuffer<T> U(static_cast<size_t>(36 * su));
  winograd4_filter_transform(wt, M, C, U.data());

  int64_t blocks = 0;  // a tile holds 4x the outputs of F(2x2, 3x3)'s: blocks of a quarter
  const int64_t B = winograd_block_width(tiles, C, M, threads, &blocks, 4);

  auto block = [&](int64_t b) {
    const int64_t t0 = b * B, nt = std::min(tiles, t0 + B) - t0;
    const std::vector<WinogradRun> runs = winograd_runs(t0, nt, per_image, TW);
    const int64_t sv = winograd_stride(C * nt), sm = winograd_stride(M * nt);  // between ξ
    T* V = thread_scratch<T, 0>(static_cast<size_t>(36 * sv));
    T* Mx = thread_scratch<T, 1>(static_cast<size_t>(36 * sm));
    winograd4_input_transform(x, C, w, runs, nt, V);
    for (int xi = 0; xi < 36; ++xi)  // Mx_ξ = U_ξ · V_ξ
      strided_gemm(U.data() + xi * su, C, false, V + xi * sv, nt, false, Mx + xi * sm, nt, M, nt, C,
                   false);
    // Y = Aᵀ Mx A + bias: the block's 4x4 tiles into 16 rows (o[(4i + j)·OP + k] is value
    // (i, j) of tile k), in lanes over all the block's tiles (a run of a 14x14 output has only
    // 4), then each run interleaved into Y's four rows.
    constexpr int64_t L = 16;
    const int64_t OP = nt + L;  // a row of o, with room for the last lane block
    T* o = thread_scratch<T, 3>(static_cast<size_t>(16 * OP));
    for (int64_t m = 0; m < M; ++m) {
      const T bm = bias ? bias[m] : T(0);
      const T* q = Mx + m * nt;  // lanes past nt read the next row's values (sm > M·nt + 16)
      for (int64_t k0 = 0; k0 < nt; k0 += L) {
        T a[4][6][L];  // a[i][j] = (Aᵀ Mx)[i][j]
        for (int j = 0; j < 6; ++j) {
          const T* qj = q + j * sm + k0;  // Mx[l][j] at qj[6·l·sm]
#pragma omp simd
          for (int64_t l = 0; l < L; ++l) {
            const T m0 = qj[l], m1 = qj[6 * sm + l], m2 = qj[12 * sm + l], m3 = qj[18 * sm + l],
                    m4 = qj[24 * sm + l], m5 = qj[30 * sm + l];
            a[0][j][l] = m0 + m1 + m2 + m3 + m4;
            a[1][j][l] = m1 - m2 + T(2) * (m3 - m4);
            a[2][j][l] = m1 + m2 + T(4) * (m3 + m4);
            a[3][j][l] = m1 - m2 + T(8) * (m3 - m4) + m5;
          }
        }
        for (int i = 0; i < 4; ++i) {
          T* oi = o + 4 * i * OP + k0;  // (Aᵀ Mx) A: tile k's value (i, j) at oi[j·OP + k]
          const T(&e)[6][L] = a[i];
#pragma omp simd
          for (int64_t l = 0; l < L; ++l) {
            oi[l] = e[0][l] + e[1][l] + e[2][l] + e[3][l] + e[4][l] + bm;
            oi[OP + l] = e[1][l] - e[2][l] + T(2) * (e[3][l] - e[4][l]) + bm;
            oi[2 * OP + l] = e[1][l] + e[2][l] + T(4) * (e[3][l] + e[4][l]) + bm;
            oi[3 * OP + l] = e[1][l] - e[2][l] + T(8) * (e[3][l] - e[4][l]) + e[5][l] + bm;
          }
        }
      }
      for (const WinogradRun& r : runs) {  // each run's tiles into Y's four rows
        const int64_t len = r.tx1 - r.tx0, ox0 = 4 * r.tx0, cols = std::min(4 * len, OW - ox0);
        T* ym = y + (r.n * M + m) * OH * OW;
        for (int i = 0; i < 4 && 4 * r.ty + i < OH; ++i) {
          T* yr = ym + (4 * r.ty + i) * OW + ox0;
          const T* oi = o + 4 * i * OP + r.k0;
          for (int64_t col = 0; col < cols; ++col) yr[col] = oi[(col & 3) * OP + (col >> 2)];
        }
      }
    }
  };
  if (threads > 1 && blocks >= threads) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t b = 0; b < blocks; ++b) block(b);
  } else {
    for (int64_t b = 0; b < blocks; ++b) block(b);  // strided_gemm threads the GEMMs
  }
}

}  // namespace oat::cpu
