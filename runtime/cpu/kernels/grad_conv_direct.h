// The weight gradient of a Conv with one input channel per group (LeNet's first layer: 1 -> 6
// channels, 5x5, over 28x28 images) as direct loops over the taps, without im2col:
//
//   dW[m, 0, t] = Σ_n Σ_o dY[n, m, o] · X[n, g(m), o·stride - pad + t·dil]
//
// The im2col + GEMM path (grad_conv.cc) builds a K x (images·P) matrix for a GEMM of tiny
// M x K output (6 x 25) and huge depth, where packing costs more than the product. Here each
// thread owns a run of images and a partial sum per (m, tap, output column ox):
//   acc[m, t, ox] += dY[n, m, oy, ox] · X[n, g(m), iy(oy, t), ox + off_x(t)]
// an elementwise multiply-add along contiguous output rows (vectorised, no reduction inside
// the loop), and at the end dW[m, t] = Σ_thread Σ_ox acc[m, t, ox], in a fixed order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/cpu/kernels/conv_direct.h"
#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cpu/kernels/grad_conv_backward.h"

namespace oat::cpu {

// Whether direct_weight_gradient handles this conv: 1-D or 2-D, one input channel per group, unit
// stride and dilation along the rows (so they read contiguous input), and per-thread partial
// sums (M · k_size · 32 values) that stay in cache.
inline bool direct_weight_gradient_applies(const Window3& w, int64_t C, int64_t G, int64_t M) {
  return C == G && w.out[0] == 1 && w.in[0] == 1 && w.k[0] == 1 && w.stride[2] == 1 &&
         w.dil[2] == 1 && w.out[2] >= 8 &&
         M * w.k_size() * ((w.out[2] + 31) / 32 * 32) <= (int64_t{1} << 14);
}

// The partial sums of kNB taps (a, b0 .. b0 + kNB - 1) of one kernel row for one (image, m):
// acc[j, ox] += Σ_oy dY[oy, ox] · Xpad[oy·sy + a·dil_y, ox + b0 + j], with x pointing at
// Xpad's row a·dil_y, column b0. The taps share each dY load and keep kNB x 32 sums in registers
// (one tap at a time left 2 accumulator chains: FMA latency bound).
template <int kNB, class T>
void direct_taps(const T* dpad, int64_t OWr, const T* x, int64_t PW, int64_t OH, int64_t sy,
                 T* acc) {
  constexpr int64_t kL = 32;
  for (int64_t c0 = 0; c0 < OWr; c0 += kL) {
    T v[kNB][kL] = {};
    for (int64_t oy = 0; oy < OH; ++oy) {
      const T* d = dpad + oy * OWr + c0;
      const T* s = x + oy * sy * PW + c0;
      for (int j = 0; j < kNB; ++j) {
#pragma omp simd
        for (int64_t l = 0; l < kL; ++l) v[j][l] += d[l] * s[j + l];
      }
    }
    for (int j = 0; j < kNB; ++j) {
#pragma omp simd
      for (int64_t l = 0; l < kL; ++l) acc[j * OWr + c0 + l] += v[j][l];
    }
  }
}

// dW (M x 1 x k) of a Conv with C == G input channels (one per group) over N images; dy is
// N x M x P, x is N x C x in_size. Runs on up to `threads` threads, each over its own images.
// Each thread copies an image's input plane into a zero-padded plane (so every tap reads a
// full OH x OW window) and each dY plane into rows of OWr (OW rounded up to 32) with zero tails;
// then for each m, kernel row a, group of taps b and 32 columns at a time, the group's running
// sums over the output rows stay in registers (direct_taps):
//   v[b][l] += dY[oy, ox0 + l] · Xpad[oy·sy + a·dy, ox0 + l + b].
template <class T>
void direct_weight_gradient(const T* dy, const T* x, T* dw, int64_t N, int64_t C, int64_t M,
                            const Window3& w, int64_t threads) {
  constexpr int64_t kL = 32;
  const int64_t mult = M / C, ks = w.k_size(), P = w.out_size(), plane = w.in_size();
  const int64_t OH = w.out[1], OW = w.out[2], OWr = (OW + kL - 1) / kL * kL;
  const int64_t KH = w.k[1], KW = w.k[2], IH = w.in[1], IW = w.in[2];
  const int64_t sy = w.stride[1], dil_y = w.dil[1];
  // The padded input: rows iy = -pad_y .. (OH-1)·sy + (KH-1)·dil_y - pad_y, columns
  // ix = -pad_x .. OWr + KW - 2 - pad_x (zero outside the image).
  const int64_t PH = (OH - 1) * sy + (KH - 1) * dil_y + 1, PW = OWr + KW - 1;
  const int64_t size = M * ks * OWr;
  constexpr int kGroup = direct_register_group<T>(kL);  // taps of a kernel row taken at once
  const int64_t tap_groups = (KW + kGroup - 1) / kGroup;
  const int64_t parts = std::max<int64_t>(1, std::min(threads, N));
  std::vector<T> partial(static_cast<size_t>(parts * size), T(0));
#pragma omp parallel for schedule(static) num_threads(parts) if (parts > 1)
  for (int64_t part = 0; part < parts; ++part) {
    T* acc = partial.data() + part * size;
    std::vector<T> xpad(static_cast<size_t>(PH * PW), T(0)),
        dpad(static_cast<size_t>(OH * OWr), T(0));
    int64_t last_plane = -1;
    for (int64_t n = N * part / parts; n < N * (part + 1) / parts; ++n)
      for (int64_t m = 0; m < M; ++m) {
        const int64_t xp = n * C + m / mult;
        if (xp != last_plane) {  // copy the input plane into the padded one
          last_plane = xp;
          const T* xc = x + xp * plane;
          pad_plane(xc, IH, IW, w.pad[1], w.pad[2], PH, PW, xpad.data());
        }
        const T* dyp = dy + (n * M + m) * P;
        for (int64_t oy = 0; oy < OH; ++oy)
          std::copy(dyp + oy * OW, dyp + (oy + 1) * OW, dpad.data() + oy * OWr);
        for (int64_t a = 0; a < KH; ++a)
          for (int64_t g = 0; g < tap_groups; ++g) {
            const int64_t b0 = KW * g / tap_groups, nb = KW * (g + 1) / tap_groups - b0;
            with_group_size<kGroup>(nb, [&](auto k) {
              direct_taps<decltype(k)::value>(dpad.data(), OWr, xpad.data() + a * dil_y * PW + b0,
                                              PW, OH, sy, acc + (m * ks + a * KW + b0) * OWr);
            });
          }
      }
  }
  for (int64_t r = 0; r < M * ks; ++r) {
    T sum = T(0);
    for (int64_t part = 0; part < parts; ++part) {
      const T* a = partial.data() + part * size + r * OWr;
      for (int64_t ox = 0; ox < OW; ++ox) sum += a[ox];
    }
    dw[r] = sum;
  }
}

}  // namespace oat::cpu
