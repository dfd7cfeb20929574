// Dropout's training mask, one rule for the CPU kernel (generator.cc) and the CUDA kernel
// (runtime/cuda/kernels/dropout_impl.cu), so both draw the same mask from the same seed:
//
//   key     = mix(seed)                    seed: the 'seed' attribute, else a hash of the node name
//   counter = elements drawn by the kernel's earlier training calls + i   (element i of this call)
//   bits    = mix(key + (counter + 1)·γ) >> 11                           (53 uniform bits)
//   keep    ⇔ bits / 2^53 ≥ ratio  ⇔  bits ≥ ceil(ratio·2^53)         (an exact integer test)
//
// mix is SplitMix64's output function and γ = 0x9E3779B97F4A7C15 its increment (Steele, Lea and
// Flood, "Fast splittable pseudorandom number generators", 2014), so `bits` is element `counter`
// of the SplitMix64 stream seeded with `key`: counter-based, each element independent of the
// others (parallel on the CPU, one thread per element on the device), and a fresh mask per call.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#ifdef __CUDACC__
#define OAT_DROPOUT_HD __host__ __device__
#else
#define OAT_DROPOUT_HD
#endif

namespace oat {

OAT_DROPOUT_HD inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The stream key of a seed.
inline uint64_t dropout_key(int64_t seed) { return splitmix64_mix(static_cast<uint64_t>(seed)); }

// The key of a Dropout node (a template so that nvcc need not see runtime/graph.h): its 'seed'
// attribute, else a hash of its name, so each node draws its own stream.
template <class NodeT>
uint64_t dropout_node_key(const NodeT& n) {
  return dropout_key(n.has_attr("seed") ? n.attr_int("seed", 0)
                                        : static_cast<int64_t>(std::hash<std::string>{}(n.name)));
}

// The keep threshold of a drop ratio in [0, 1]: ceil(ratio·2^53) (exact: 2^53 is a power of two).
inline uint64_t dropout_threshold(double ratio) {
  return static_cast<uint64_t>(std::ceil(ratio * 9007199254740992.0));
}

// Whether element `counter` of stream `key` is kept.
OAT_DROPOUT_HD inline bool dropout_keep(uint64_t key, uint64_t counter, uint64_t threshold) {
  return (splitmix64_mix(key + (counter + 1) * 0x9E3779B97F4A7C15ull) >> 11) >= threshold;
}

}  // namespace oat

#undef OAT_DROPOUT_HD
