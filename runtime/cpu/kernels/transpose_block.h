// An 8 x 8 transpose of 32-bit words through AVX2 registers, shared by the Transpose kernel
// (transpose.cc) and the packing of Bᵀ in gemm_packed.h.
#pragma once

#include <cstdint>

#ifdef __AVX2__
#include <immintrin.h>

namespace oat::cpu {

// dst[c * ds + r] = src[r * ss + c] for an 8 x 8 block of 32-bit words (bit patterns are kept:
// the float shuffles only move lanes).
template <class W>
inline void transpose8x8(const W* src, int64_t ss, W* dst, int64_t ds) {
  const float* s = reinterpret_cast<const float*>(src);
  float* d = reinterpret_cast<float*>(dst);
  __m256 r[8], t[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + k * ss);
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    r[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(d + k * ds, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
    _mm256_storeu_ps(d + (k + 4) * ds, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
  }
}

}  // namespace oat::cpu
#endif
