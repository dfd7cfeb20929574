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

// Dropout's counter-based keep flags (dropout_mask.h): element i of the draw numbered `draw`
// (0, 1, … per node) under `key` is word i mod 4 of Philox(counter = (i / 4, draw), key); its top
// 24 bits are u·2^24 with u uniform in [0, 1), and the element is kept when u >= ratio.
OAT_HOST_DEVICE inline Philox4 dropout_philox_block(uint64_t key, uint64_t draw, uint64_t block) {
  return philox4x32_10(Philox4{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                static_cast<uint32_t>(draw), static_cast<uint32_t>(draw >> 32)}},
                       static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
}
OAT_HOST_DEVICE inline bool dropout_philox_keep(uint32_t word, double ratio) {
  return static_cast<double>(word >> 8) * (1.0 / 16777216.0) >= ratio;
}

}  // namespace oat
