// Conv with a single input channel (C == group == 1: LeNet's first layer, 1 -> 6 channels, 5x5,
// over 28x28 images) as direct loops over the taps, without im2col:
//
//   Y[n, m, oy, ox] = B[m] + Σ_{a, b} W[m, 0, a, b] · Xpad[n, oy·sy + a·dy, ox + b]
//
// (Xpad the image with its pads as zeros). im2col + GEMM would copy k_size values per output
// position for a GEMM of depth k_size. Here each image is copied once into a zero-padded plane
// whose rows are wide enough for 32-column blocks, and each block of an output row holds 32
// running sums per output channel in registers over the taps, for a group of channels at once
// (direct_channels). Parallel over images.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
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
  return C == 1 && G == 1 && w.out[0] == 1 && w.in[0] == 1 && w.k[0] == 1 && w.stride[2] == 1 &&
         w.dil[2] == 1 && w.out[2] >= 8 && w.k_size() <= 64;
}

// Output channels [m0, m0 + kMM) of one image from its padded plane xpad (rows of PW): each
// 32-column block of an output row keeps kMM x 32 running sums in registers, so that every input
// value loaded serves kMM multiply-adds and the kMM·32/16 accumulator chains hide the FMA latency
// (one channel at a time left 2 chains and the core mostly waiting).
template <int kMM, class T>
void direct_channels(const T* xpad, int64_t PW, const T* wt, const T* bias, int64_t m0, T* yn,
                     const Window3& w) {
  constexpr int64_t kL = 32;
  const int64_t ks = w.k_size(), P = w.out_size(), OH = w.out[1], OW = w.out[2];
  const int64_t KH = w.k[1], KW = w.k[2], sy = w.stride[1], dil_y = w.dil[1];
  const T* wm = wt + m0 * ks;
  for (int64_t oy = 0; oy < OH; ++oy)
    for (int64_t c0 = 0; c0 < OW; c0 += kL) {
      T v[kMM][kL];
      for (int j = 0; j < kMM; ++j)
        for (int64_t l = 0; l < kL; ++l) v[j][l] = bias ? bias[m0 + j] : T(0);
      for (int64_t a = 0; a < KH; ++a) {
        const T* s = xpad + (oy * sy + a * dil_y) * PW + c0;
        for (int64_t b = 0; b < KW; ++b)
          for (int j = 0; j < kMM; ++j) {
            const T wv = wm[j * ks + a * KW + b];
#pragma omp simd
            for (int64_t l = 0; l < kL; ++l) v[j][l] += wv * s[b + l];
          }
      }
      for (int j = 0; j < kMM; ++j)
        std::copy(v[j], v[j] + std::min(kL, OW - c0), yn + (m0 + j) * P + oy * OW + c0);
    }
}

// How many kL-wide accumulator rows the register-blocked loops keep at once (output channels in
// direct_channels, kernel taps in grad_conv_direct.h's direct_taps): about 3/4 of the vector
// registers (the rest hold inputs and weights), at most 8: for float, 8 with AVX-512 (16 of 32
// zmm), 3 with AVX2 (12 of 16 ymm); for double, 6 and 1.
template <class T>
constexpr int direct_register_group(int64_t lanes) {
#ifdef __AVX512F__
  constexpr int64_t kVectorBytes = 64, kRegisters = 32;
#else
  constexpr int64_t kVectorBytes = 32, kRegisters = 16;
#endif
  const int64_t per_channel = std::max<int64_t>(1, lanes * int64_t{sizeof(T)} / kVectorBytes);
  return static_cast<int>(std::clamp<int64_t>(kRegisters * 3 / 4 / per_channel, 1, 8));
}

// Calls f(std::integral_constant<int, k>{}) for a run-time k in [1, kMax]: the register-blocked
// loops need their row count at compile time.
template <int kMax, class F>
void with_group_size(int64_t k, F&& f) {
  if constexpr (kMax > 1)
    if (k < kMax) return with_group_size<kMax - 1>(k, std::forward<F>(f));
  f(std::integral_constant<int, kMax>{});
}

// Y (N x M x P) of X (N x 1 x in_size) and W (M x 1 x k), bias optional. Output channels go
// in groups of at most kGroup, as even as possible.
template <class T>
void direct_single_channel_conv(const T* x, const T* wt, const T* bias, T* y, int64_t N, int64_t M,
                                const Window3& w, int64_t threads) {
  constexpr int64_t kL = 32;
  constexpr int kGroup = direct_register_group<T>(kL);
  const int64_t ks = w.k_size(), P = w.out_size(), plane = w.in_size();
  const int64_t OH = w.out[1], OW = w.out[2], OWr = (OW + kL - 1) / kL * kL;
  const int64_t KH = w.k[1], KW = w.k[2], IH = w.in[1], IW = w.in[2];
  const int64_t PH = (OH - 1) * w.stride[1] + (KH - 1) * w.dil[1] + 1, PW = OWr + KW - 1;
  const int64_t groups = (M + kGroup - 1) / kGroup;
  const int64_t parts = std::max<int64_t>(1, std::min(threads, N));
#pragma omp parallel for schedule(static) \
    num_threads(parts) if (parts > 1 && N * M * P * ks > (1 << 15))
  for (int64_t part = 0; part < parts; ++part) {
    std::vector<T> xpad(static_cast<size_t>(PH * PW));
    for (int64_t n = N * part / parts; n < N * (part + 1) / parts; ++n) {
      pad_plane(x + n * plane, IH, IW, w.pad[1], w.pad[2], PH, PW, xpad.data());
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t m0 = M * g / groups, mm = M * (g + 1) / groups - m0;
        with_group_size<kGroup>(mm, [&](auto k) {
          direct_channels<decltype(k)::value>(xpad.data(), PW, wt, bias, m0, y + n * M * P, w);
        });
      }
    }
  }
}

}  // namespace oat::cpu
