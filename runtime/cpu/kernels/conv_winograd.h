// Winograd F(2x2, 3x3) for 3x3, stride-1, undilated, ungrouped 2-D convolutions — the bulk of a
// ResNet's work — with 16 GEMMs of C-deep products instead of one 9C-deep one (2.25x fewer
// multiplications; Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2015).
//
// Each 2x2 output tile at (2·ty, 2·tx) reads the 4x4 input patch d starting at
// (2·ty - pad_top, 2·tx - pad_left) (0 outside the input), and
//   U[m, c] = G · g[m, c] · Gᵀ                   (4x4, per filter; g is the 3x3 kernel)
//   V[c, t] = Bᵀ · d[c, t] · B                   (4x4, per channel and tile)
//   Mx[ξ]   = U[ξ] (M x C) · V[ξ] (C x tiles)    for each of the 16 positions ξ of the 4x4
//   Y[m, t] = Aᵀ · Mx[m, t] · A + bias[m]        (2x2)
// with G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1], Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
// Aᵀ = [1 1 1 0; 0 1 -1 -1]. The transforms only add, subtract and halve, so the result differs
// from the direct sum by rounding alone (a few ulps of the largest partial sums).
//
// Tiles are processed in blocks (over all images) whose V and Mx fit in cache; blocks run in
// parallel with single-threaded GEMMs, or in turn with each GEMM split over the threads
// (gemm_split.h) when there are few.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/conv_im2col.h"
#include "runtime/host_allocator.h"

namespace oat::cpu {

// Above 256 x 256 channels the 16 transformed filters (16·M·C floats, repacked for every block
// of tiles) cost more than the saved multiplications: ResNet-18's 512-channel 7x7 layer measured
// 25 ms on Winograd against 19 ms on im2col (8 images, one thread).
constexpr int64_t kWinogradMaxCM = 256 * 256;

// Whether conv_winograd handles this conv, and pays off (thin products lose to im2col).
inline bool winograd_applies(const Window3& w, int64_t group, int64_t C, int64_t M) {
  return w.nd == 2 && w.k[1] == 3 && w.k[2] == 3 && w.stride[1] == 1 && w.stride[2] == 1 &&
         w.dil[1] == 1 && w.dil[2] == 1 && group == 1 && C >= 16 && M >= 16 &&
         C * M <= kWinogradMaxCM && w.out[1] >= 4 && w.out[2] >= 4;
}

// The stride between the 16 matrices of U, V and Mx (each of n floats): n rounded up to 4 KiB,
// plus one cache line. The transforms read or write all 16 at once; 4 KiB apart, as n·4 bytes
// often is (64 channels x 896 tiles), the 16 streams fall into one set of the 12-way L1 and
// evict one another at every access: the input transform of ResNet-18's 64-channel stage took
// 3.5 ms for 8 images, 1.4 ms with the strides one line off (bench/README.md, fifth session).
inline int64_t winograd_stride(int64_t n) { return (n + 1023) / 1024 * 1024 + 16; }

// U: 16 matrices (M x C), U[ξ·su + m·C + c], su = winograd_stride(M·C). Sixteen channels at a time:
// their 3x3 kernels are first copied to g[j][c] so that the transform runs across the channels in
// vector lanes (read in place, 9 floats apart, it measured 6x slower: 2.0 against 0.33 ms for 256 x
// 256).
template <class T>
void winograd_filter_transform(const T* wt, int64_t M, int64_t C, T* U) {
  constexpr int64_t L = 16;
  const int64_t s = winograd_stride(M * C);  // stride between ξ
#pragma omp parallel for schedule(static) if (M * C > 4096)
  for (int64_t m = 0; m < M; ++m) {
    const T* wm = wt + m * C * 9;
    T* um = U + m * C;
    for (int64_t c0 = 0; c0 < C; c0 += L) {
      const int64_t n = std::min(L, C - c0);
      T g[9][L] = {};
      for (int64_t c = 0; c < n; ++c)
        for (int j = 0; j < 9; ++j) g[j][c] = wm[(c0 + c) * 9 + j];
      T u[16][L];
#pragma omp simd
      for (int64_t c = 0; c < L; ++c) {
        T gg[4][3];  // G · g
        for (int j = 0; j < 3; ++j) {
          gg[0][j] = g[j][c];
          gg[1][j] = (g[j][c] + g[3 + j][c] + g[6 + j][c]) * T(0.5);
          gg[2][j] = (g[j][c] - g[3 + j][c] + g[6 + j][c]) * T(0.5);
          gg[3][j] = g[6 + j][c];
        }
        for (int i = 0; i < 4; ++i) {  // (G · g) · Gᵀ
          u[i * 4 + 0][c] = gg[i][0];
          u[i * 4 + 1][c] = (gg[i][0] + gg[i][1] + gg[i][2]) * T(0.5);
          u[i * 4 + 2][c] = (gg[i][0] - gg[i][1] + gg[i][2]) * T(0.5);
          u[i * 4 + 3][c] = gg[i][2];
        }
      }
      for (int xi = 0; xi < 16; ++xi) std::copy(u[xi], u[xi] + n, um + xi * s + c0);
    }
  }
}

// A run of tiles: the tiles tx in [tx0, tx1) of tile row ty of image n, at block column k0.
struct WinogradRun {
  int64_t n, ty, tx0, tx1, k0;
};

// The runs of the tiles [t0, t0 + nt), numbered image by image and row by row (per_image tiles
// an image, TW a row).
inline std::vector<WinogradRun> winograd_runs(int64_t t0, int64_t nt, int64_t per_image,
                                              int64_t TW) {
  std::vector<WinogradRun> runs;
  for (int64_t g = t0; g < t0 + nt;) {
    const int64_t n = g / per_image, ty = (g % per_image) / TW, tx = g % TW;
    const int64_t len = std::min(TW - tx, t0 + nt - g);
    runs.push_back({n, ty, tx, tx + len, g - t0});
    g += len;
  }
  return runs;
}

// V[ξ·sv + c·nt + k] = (Bᵀ d B)[ξ], sv = winograd_stride(C·nt), for tile k of the runs (nt tiles)
// in channel c, d the 4x4 input patch at (2·ty - pad_top, 2·tx - pad_left) of x (C planes of
// w.in[1] x w.in[2]).
template <class T>
void winograd_input_transform(const T* x, int64_t C, const Window3& w,
                              const std::vector<WinogradRun>& runs, int64_t nt, T* V) {
  const int64_t IH = w.in[1], IW = w.in[2], pt = w.pad[1], pl = w.pad[2];
  const int64_t TW = (w.out[2] + 1) / 2;
  T* rows = thread_scratch<T, 2>(static_cast<size_t>(4 * (2 * TW + 2)));
  const int64_t sv = winograd_stride(C * nt);  // V stride between ξ
  for (int64_t c = 0; c < C; ++c)
    for (const WinogradRun& r : runs) {
      // The 4 input rows under this tile row, zero-padded: row i, column 2·k + j holds
      // x[2·ty - pt + i, 2·(tx0 + k) - pl + j].
      const int64_t len = r.tx1 - r.tx0, width = 2 * len + 2, col0 = 2 * r.tx0 - pl;
      const T* xc = x + (r.n * C + c) * IH * IW;
      for (int i = 0; i < 4; ++i) {
        T* row = rows + i * width;
        const int64_t iy = 2 * r.ty - pt + i;
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
      const T *d0 = rows, *d1 = rows + width, *d2 = rows + 2 * width, *d3 = rows + 3 * width;
      T* v = V + c * nt + r.k0;
#pragma omp simd
      for (int64_t k = 0; k < len; ++k) {
        T q[4][4];  // Bᵀ d, column j of the patch at 2k + j
        for (int j = 0; j < 4; ++j) {
          const int64_t at = 2 * k + j;
          q[0][j] = d0[at] - d2[at];
          q[1][j] = d1[at] + d2[at];
          q[2][j] = d2[at] - d1[at];
          q[3][j] = d1[at] - d3[at];
        }
        for (int i = 0; i < 4; ++i) {  // (Bᵀ d) B
          v[(i * 4 + 0) * sv + k] = q[i][0] - q[i][2];
          v[(i * 4 + 1) * sv + k] = q[i][1] + q[i][2];
          v[(i * 4 + 2) * sv + k] = q[i][2] - q[i][1];
          v[(i * 4 + 3) * sv + k] = q[i][1] - q[i][3];
        }
      }
    }
}

// Tiles per block (B) and the block count for `tiles` tiles of a C -> M conv: blocks of 64 to
// 1024 tiles (the bound, 2^19 / (C + M), is above 1024 for every conv Winograd takes), then at
// least 4 blocks a thread (of at least 48 tiles) when there are threads, so that the blocks,
// run in parallel, balance. Shared by the forward and the weight gradient. (Blocks sized for L2
// measured slower: the transformed filters are then re-read per block, bench/README.md.)
inline int64_t winograd_block_width(int64_t tiles, int64_t C, int64_t M, int64_t threads,
                                    int64_t* blocks) {
  int64_t B = std::clamp<int64_t>((int64_t{1} << 19) / (16 * (C + M)) * 16, 64, 1024);
  int64_t n = (tiles + B - 1) / B;
  if (threads > 1 && n < 4 * threads) n = std::min(4 * threads, (tiles + 47) / 48);
  B = (tiles + n - 1) / n;
  *blocks = (tiles + B - 1) / B;
  return B;
}

// Block b of a Winograd pass over x (blocks of B tiles, `tiles` in all): its nt tiles and their
// runs, V = its input transform, and a second set of 16 matrices of M x nt (the forward's Mx, the
// weight gradient's DM), both in per-thread scratch, with their strides between ξ. Shared by the
// forward and the weight gradient (grad_conv_winograd.h).
template <class T>
struct WinogradBlock {
  int64_t nt, sv, sm;
  std::vector<WinogradRun> runs;
  T* V;
  T* Mx;
};
template <class T>
WinogradBlock<T> winograd_block(const T* x, int64_t C, int64_t M, const Window3& w, int64_t b,
                                int64_t B, int64_t tiles, int64_t per_image, int64_t TW) {
  const int64_t t0 = b * B, nt = std::min(tiles, t0 + B) - t0;
  const int64_t sv = winograd_stride(C * nt), sm = winograd_stride(M * nt);
  WinogradBlock<T> k{nt,
                     sv,
                     sm,
                     winograd_runs(t0, nt, per_image, TW),
                     thread_scratch<T, 0>(static_cast<size_t>(16 * sv)),
                     thread_scratch<T, 1>(static_cast<size_t>(16 * sm))};
  winograd_input_transform(x, C, w, k.runs, nt, k.V);
  return k;
}

// The transformed filters of W [M, C, 3, 3]: 16 matrices [M, C], winograd_stride(M·C) apart.
template <class T>
std::unique_ptr<HostBuffer<T>> winograd_filters(const T* wt, int64_t M, int64_t C) {
  auto U = std::make_unique<HostBuffer<T>>(static_cast<size_t>(16 * winograd_stride(M * C)));
  winograd_filter_transform(wt, M, C, U->data());
  return U;
}

// Y = conv(X, W) + bias with W's transformed filters U (winograd_filters).
template <class T>
void conv_winograd_u(const T* x, const T* U, const T* bias, T* y, int64_t N, int64_t C, int64_t M,
                     const Window3& w, int64_t threads) {
  const int64_t OH = w.out[1], OW = w.out[2];
  const int64_t TH = (OH + 1) / 2, TW = (OW + 1) / 2, per_image = TH * TW, tiles = N * per_image;
  const int64_t su = winograd_stride(M * C);

  int64_t blocks = 0;
  const int64_t B = winograd_block_width(tiles, C, M, threads, &blocks);

  auto block = [&](int64_t b) {
    const auto [nt, sv, sm, runs, V, Mx] = winograd_block(x, C, M, w, b, B, tiles, per_image, TW);
    for (int xi = 0; xi < 16; ++xi)  // Mx_ξ = U_ξ · V_ξ (written, not added: no pass to zero Mx)
      strided_gemm(U + xi * su, C, false, V + xi * sv, nt, false, Mx + xi * sm, nt, M, nt, C,
                   false);
    // Y = Aᵀ Mx A + bias: tile k's 2x2 values into o[(2i + j)·nt + k], in lanes over all the
    // block's tiles (a run has only 7 of a 14x14 output), then each run interleaved into Y's
    // two rows.
    T* o = thread_scratch<T, 3>(static_cast<size_t>(4 * nt));
    for (int64_t m = 0; m < M; ++m) {
      const T bm = bias ? bias[m] : T(0);
      const T* q = Mx + m * nt;
      T *o0 = o, *o1 = o + nt, *o2 = o + 2 * nt, *o3 = o + 3 * nt;
#pragma omp simd
      for (int64_t k = 0; k < nt; ++k) {
        T a[2][4];  // Aᵀ Mx
        for (int j = 0; j < 4; ++j) {
          a[0][j] = q[j * sm + k] + q[(4 + j) * sm + k] + q[(8 + j) * sm + k];
          a[1][j] = q[(4 + j) * sm + k] - q[(8 + j) * sm + k] - q[(12 + j) * sm + k];
        }
        o0[k] = a[0][0] + a[0][1] + a[0][2] + bm;
        o1[k] = a[0][1] - a[0][2] - a[0][3] + bm;
        o2[k] = a[1][0] + a[1][1] + a[1][2] + bm;
        o3[k] = a[1][1] - a[1][2] - a[1][3] + bm;
      }
      for (const WinogradRun& r : runs) {
        const int64_t len = r.tx1 - r.tx0, ox0 = 2 * r.tx0, cols = std::min(2 * len, OW - ox0);
        T* ym = y + (r.n * M + m) * OH * OW;
        const int64_t pairs = cols / 2;  // cols is odd only at an odd-width output's last tile
        for (int i = 0; i < 2 && 2 * r.ty + i < OH; ++i) {
          T* yr = ym + (2 * r.ty + i) * OW + ox0;
          const T *ev = (i ? o2 : o0) + r.k0, *od = (i ? o3 : o1) + r.k0;
#pragma omp simd
          for (int64_t k = 0; k < pairs; ++k) {
            yr[2 * k] = ev[k];
            yr[2 * k + 1] = od[k];
          }
          if (cols & 1) yr[cols - 1] = ev[pairs];
        }
      }
    }
  };
  if (threads > 1 && blocks >= threads) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t b = 0; b < blocks; ++b) block(b);
  } else {
    for (int64_t b = 0; b < blocks; ++b) block(b);  // gemm_accumulate threads the GEMMs
  }
}

// The same from W itself (its filters transformed for this call).
template <class T>
void conv_winograd(const T* x, const T* wt, const T* bias, T* y, int64_t N, int64_t C, int64_t M,
                   const Window3& w, int64_t threads) {
  const auto U = winograd_filters(wt, M, C);
  conv_winograd_u(x, U->data(), bias, y, N, C, M, w, threads);
}

}  // namespace oat::cpu
