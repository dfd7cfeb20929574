// Force-included (g++ -include) ahead of every _impl.cu file compiled for the CUDA emulator: what
// nvcc gives device code implicitly (threadIdx and friends, math functions, intrinsics,
// __syncthreads, warp shuffles, atomics), implemented on the CPU. __shared__ variables become
// static: blocks run one after another on one OS thread, so a static is exactly one block's
// shared copy. Only the intrinsics the backend uses are here; a new one fails to compile until it
// is added.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/cuda/emulator/launch.h"

#undef __shared__
#define __shared__ static

#define threadIdx (::oat_emu::t_index.thread)
#define blockIdx (::oat_emu::t_index.block)
#define blockDim (::oat_emu::t_index.block_dim)
#define gridDim (::oat_emu::t_index.grid_dim)

inline void __syncthreads() { ::oat_emu::block_barrier(0); }
inline int __syncthreads_or(int p) { return ::oat_emu::block_barrier(p != 0); }
inline int __syncthreads_and(int p) { return !::oat_emu::block_barrier(p == 0); }

namespace oat_emu {
template <class T>
T shuffle_as(unsigned mask, T v, int kind, int delta, int width) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffle of a wide type");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = warp_shuffle(mask, bits, kind, delta, width);
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}
}  // namespace oat_emu

template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::oat_emu::shuffle_as(mask, v, 0, static_cast<int>(delta), width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return ::oat_emu::shuffle_as(mask, v, 1, static_cast<int>(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return ::oat_emu::shuffle_as(mask, v, 2, lane_mask, width);
}
template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return ::oat_emu::shuffle_as(mask, v, 3, src, width);
}

// Atomics: the emulator runs one thread at a time, so read-modify-write is atomic as it stands.
template <class T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = static_cast<T>(old + v);
  return old;
}
template <class T>
T atomicMax(T* p, T v) {
  const T old = *p;
  if (v > old) *p = v;
  return old;
}
template <class T>
T atomicMin(T* p, T v) {
  const T old = *p;
  if (v < old) *p = v;
  return old;
}
template <class T>
T atomicExch(T* p, T v) {
  const T old = *p;
  *p = v;
  return old;
}
template <class T>
T atomicCAS(T* p, T compare, T v) {
  const T old = *p;
  if (old == compare) *p = v;
  return old;
}
template <class T>
T atomicOr(T* p, T v) {
  const T old = *p;
  *p = old | v;
  return old;
}

// Bit casts and the IEEE round-to-nearest arithmetic intrinsics (no FMA contraction).
inline unsigned __float_as_uint(float x) {
  unsigned u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
inline int __float_as_int(float x) { return static_cast<int>(__float_as_uint(x)); }
inline float __int_as_float(int i) { return __uint_as_float(static_cast<unsigned>(i)); }
inline float __fadd_rn(float a, float b) {
  volatile float r = a + b;
  return r;
}
inline float __fmul_rn(float a, float b) {
  volatile float r = a * b;
  return r;
}
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float rsqrtf(float x) { return 1.f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }

// CUDA's global min/max overloads for mixed integer widths.
using std::max;
using std::min;
inline int64_t min(int64_t a, int b) { return a < b ? a : b; }
inline int64_t min(int a, int64_t b) { return a < b ? a : b; }
inline int64_t max(int64_t a, int b) { return a > b ? a : b; }
inline int64_t max(int a, int64_t b) { return a > b ? a : b; }
