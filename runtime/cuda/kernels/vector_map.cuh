// Elementwise maps that read and write V consecutive elements per thread as one aligned pack: 16
// bytes of the widest operand (8 halves, 4 floats), so each load instruction moves 16 bytes.
//
// Why: a memory-bound kernel reaches the bandwidth only with enough bytes in flight per SM
// (Little's law: bandwidth × latency ≈ 3.35 TB/s × ~0.6 µs on an H100, ~15 KB per SM). One 2-byte
// load per thread keeps at most 2048 × 2 B = 4 KB in flight per SM; one 16-byte pack, 32 KB.
// This is what PyTorch's vectorized elementwise loops do (vec4/vec8 loads); FP16 gains most.
//
// Every pointer aligned to its pack (always, for the caching allocator's blocks) takes the packed
// loop; otherwise (an offset pointer) the same kernel runs the plain loop: one uniform branch, no
// second instantiation.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/kernels/device_types.cuh"

namespace oat::cuda {

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Elements per pack: 16 bytes of the widest operand type.
template <class... T>
constexpr int pack_elems() {
  return static_cast<int>(16 / std::max({sizeof(T)...}));
}

// Whether every pointer is aligned to its own pack of V elements (host).
template <int V, class... T>
bool packs_aligned(const T*... p) {
  return ((reinterpret_cast<uintptr_t>(p) % (sizeof(T) * V) == 0) && ...);
}

// Pack k of p (elements k·V ... k·V + V − 1) as one 16-byte access; the emulator stops where a
// GPU would fault on a misaligned one.
template <int V, class T>
__device__ __forceinline__ Pack<T, V> load_pack(const T* p, int64_t k) {
  const Pack<T, V>* q = reinterpret_cast<const Pack<T, V>*>(p) + k;
#ifdef OAT_CUDA_EMULATED
  ::oat_emu::check_vector_access(q, sizeof(*q));
#endif
  return *q;
}
template <int V, class T>
__device__ __forceinline__ void store_pack(T* p, int64_t k, const Pack<T, V>& v) {
  Pack<T, V>* q = reinterpret_cast<Pack<T, V>*>(p) + k;
#ifdef OAT_CUDA_EMULATED
  ::oat_emu::check_vector_access(q, sizeof(*q));
#endif
  *q = v;
}

template <int V, class TY, class F, class... P>
__device__ __forceinline__ Pack<TY, V> map_values(F& f, const P&... x) {
  Pack<TY, V> out;
  for (int k = 0; k < V; ++k) out.v[k] = f(x.v[k]...);
  return out;
}

// y[i] = f(x[i]...) for every i < n. Packed (V > 1 and every pointer aligned: packs_aligned):
// grid-stride over packs of V, the n % V elements after the last whole pack by the first threads
// of the grid; launch blocks_for(n / V) blocks. Otherwise one element per thread and iteration.
template <int V, class TY, class F, class... TX>
__device__ __forceinline__ void map_elements(bool packed, int64_t n, F f, TY* y, const TX*... x) {
  if (V == 1 || !packed) {
    OAT_GRID_STRIDE_LOOP(i, n) { y[i] = f(x[i]...); }
    return;
  }
  const int64_t packs = n / V;
  OAT_GRID_STRIDE_LOOP(p, packs) {
    store_pack<V>(y, p, map_values<V, TY>(f, load_pack<V>(x, p)...));
  }
  const int64_t i = packs * V + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = f(x[i]...);
}

// The launch's block count for map_elements.
inline unsigned map_blocks(bool packed, int v, int64_t n) { return blocks_for(packed ? n / v : n); }

}  // namespace oat::cuda
