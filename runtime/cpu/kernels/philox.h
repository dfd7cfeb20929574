// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3",
// SC'11; the generator behind cuRAND's and PyTorch's CUDA dropout): a counter-based generator,
// four 32-bit words from a 128-bit counter and a 64-bit key, so element i of a draw is computed
// on its own, by any thread, on any backend. Plain integer arithmetic, compiled by g++ for the
// CPU kernels and by nvcc (host and device) for the CUDA ones, so both give the same bits.
//
//   one round:  (hi0, lo0) = M0·c0, (hi1, lo1) = M1·c2   (32 x 32 -> 64-bit products)
//               c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
//   10 rounds, the key bumped by the Weyl constants (W0, W1) between rounds.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define OAT_HOST_DEVICE __host__ __device__
#else
#define OAT_HOST_DEVICE
#endif

namespace oat {

struct Philox4 {
  uint32_t v[4];
};

OAT_HOST_DEVICE inline Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c.v[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c.v[2];
    c = Philox4{{static_cast<uint32_t>(p1 >> 32) ^ c.v[1] ^ k0, static_cast<uint32_t>(p1),
                 static_cast<uint32_t>(p0 >> 32) ^ c.v[3] ^ k1, static_cast<uint32_t>(p0)}};
  }
  return c;
}

// Block `block` of the draw numbered `draw` (0, 1, … per node) under `key`: Philox(counter =
// (block, draw), key), four words for elements 4·block … 4·block + 3.
OAT_HOST_DEVICE inline Philox4 philox_block(uint64_t key, uint64_t draw, uint64_t block) {
  return philox4x32_10(Philox4{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                static_cast<uint32_t>(draw), static_cast<uint32_t>(draw >> 32)}},
                       static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
}
// The word of element i of a draw: word i mod 4 of block i / 4.
OAT_HOST_DEVICE inline uint32_t philox_word(uint64_t key, uint64_t draw, uint64_t i) {
  return philox_block(key, draw, i / 4).v[i % 4];
}

// Dropout's keep flag from element i's word (dropout_mask.h): its top 24 bits are u·2^24 with u
// uniform in [0, 1), and the element is kept when u >= ratio.
OAT_HOST_DEVICE inline bool dropout_philox_keep(uint32_t word, double ratio) {
  return static_cast<double>(word >> 8) * (1.0 / 16777216.0) >= ratio;
}

// The random generators' draws (runtime/cpu/kernels/random.cc), element i of a draw, in double:
//   uniform  u = word_i · 2^-32, in [0, 1)
//   normal   pair p = i / 2 takes words 2(p mod 2), 2(p mod 2) + 1 of block p / 2 as (a, b):
//            u1 = (a + 1)·2^-32 in (0, 1], u2 = b·2^-32, r = √(−2 ln u1), θ = 2π·u2;
//            z = r cos θ for even i, r sin θ for odd i (Box-Muller)
OAT_HOST_DEVICE inline double philox_uniform01(uint64_t key, uint64_t draw, uint64_t i) {
  return static_cast<double>(philox_word(key, draw, i)) * (1.0 / 4294967296.0);
}
OAT_HOST_DEVICE inline double philox_normal(uint64_t key, uint64_t draw, uint64_t i) {
  const uint64_t p = i / 2;
  const Philox4 w = philox_block(key, draw, p / 2);
  const int k = static_cast<int>(p % 2) * 2;
  const double u1 = (static_cast<double>(w.v[k]) + 1.0) * (1.0 / 4294967296.0);
  const double u2 = static_cast<double>(w.v[k + 1]) * (1.0 / 4294967296.0);
  const double r = sqrt(-2.0 * log(u1));
  const double th = 6.283185307179586476925286766559 * u2;
  return i % 2 == 0 ? r * cos(th) : r * sin(th);
}

}  // namespace oat
