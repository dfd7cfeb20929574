// Conv with a single input channel (C == group == 1: LeNet's first layer, 1 -> 6 channels, 5x5,
// over 28x28 images) as direct loops over the taps, without im2col:
//
//   Y[n, m, oy, ox] = B[m] + Σ_{a, b} W[m, 0, a, b] · Xpad[n, oy·sy + a·dy, ox + b]
//
// (Xpad the image with its pads as zeros). im2col + GEMM would copy k_size values per output
// position for a GEMM of depth k_size. Here each image is copied once into a zero-padded plane
// whose rows are wide enough for 32-column blocks, and each block of an output row is 32 running
// sums in registers over the taps. Parallel over images.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/cpu/kernels/conv_geometry.h"

namespace oat::cpu {

// Copies one IH x IW plane into a zero-padded PH x PW plane whose (pad_y, pad_x) is its (0, 0).
template <class T>
void pad_plane(const T* x, int64_t IH, int64_t IW, int64_t pad_y, int64_t pad_x, int64_t PH,
               int64_t PW, T* dst) {
  for (int64_t r = 0; r < PH; ++r, dst += PW) {
    const int64_t iy = r - pad_y;
    for (int64_t c = 0; c < PW; ++c) {
      const int64_t ix = c - pad_x;
      dst[c] = iy >= 0 && iy < IH && ix >= 0 && ix < IW ? x[iy * IW + ix] : T(0);
    }
  }
}

// Whether direct_single_channel_conv handles this conv: 1-D or 2-D, one input channel, unit
// stride and dilation along the rows, rows at least 8 wide.
inline bool direct_single_channel_conv_applies(const Window3& w, int64_t C, int64_t G) {
  return C == 1 && G == 1 && w.out[0] == 1 && w.in[0] == 1 && w.k[0] == 1 &&
         w.stride[2] == 1 && w.dil[2] == 1 && w.out[2] >= 8 && w.k_size() <= 64;
}

// Y (N x M x P) of X (N x 1 x in_size) and W (M x 1 x k), bias optional.
template <class T>
void direct_single_channel_conv(const T* x, const T* wt, const T* bias, T* y, int64_t N,
                                int64_t M, const Window3& w, int64_t threads) {
  constexpr int64_t kL = 32;
  const int64_t ks = w.k_size(), P = w.out_size(), plane = w.in_size();
  const int64_t OH = w.out[1], OW = w.out[2], OWr = (OW + kL - 1) / kL * kL;
  const int64_t KH = w.k[1], KW = w.k[2], IH = w.in[1], IW = w.in[2];
  const int64_t sy = w.stride[1], dil_y = w.dil[1];
  const int64_t PH = (OH - 1) * sy + (KH - 1) * dil_y + 1, PW = OWr + KW - 1;
  const int64_t parts = std::max<int64_t>(1, std::min(threads, N));
#pragma omp parallel for schedule(static) num_threads(parts) if (parts > 1 && N * M * P * ks > (1 << 15))
  for (int64_t part = 0; part < parts; ++part) {
    std::vector<T> xpad(static_cast<size_t>(PH * PW));
    for (int64_t n = N * part / parts; n < N * (part + 1) / parts; ++n) {
      const T* xc = x + n * plane;
      pad_plane(xc, IH, IW, w.pad[1], w.pad[2], PH, PW, xpad.data());
      for (int64_t m = 0; m < M; ++m) {
        const T* wm = wt + m * ks;
        const T b0 = bias ? bias[m] : T(0);
        for (int64_t oy = 0; oy < OH; ++oy) {
          T* yr = y + (n * M + m) * P + oy * OW;
          for (int64_t c0 = 0; c0 < OW; c0 += kL) {
            T v[kL];
            for (int64_t l = 0; l < kL; ++l) v[l] = b0;
            for (int64_t a = 0; a < KH; ++a) {
              const T* s = xpad.data() + (oy * sy + a * dil_y) * PW + c0;
              for (int64_t b = 0; b < KW; ++b) {
                const T wv = wm[a * KW + b];
#pragma omp simd
                for (int64_t l = 0; l < kL; ++l) v[l] += wv * s[b + l];
              }
            }
            std::copy(v, v + std::min(kL, OW - c0), yr + c0);
          }
        }
      }
    }
  }
}

}  // namespace oat::cpu
