// What the .cc half of a CUDA kernel hands its _impl.cu half: plain types only (no Eigen, no
// Tensor), so nvcc compiles nothing but device code and its launchers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace oat::cuda {

// Same order as oat::DType (static_assert in register.cc).
enum class ElemType : int { F32, F16, BF16, F64, I64, I32, I8, U8, Bool };

constexpr int kMaxRank = 8;

#if defined(__CUDACC__)
#define OAT_HOST_DEVICE __host__ __device__
#else
#define OAT_HOST_DEVICE
#endif

// n / d for 0 <= n < 2^31 and 1 <= d < 2^31 by a multiply and a shift instead of a division
// (Granlund & Montgomery 1994, as PyTorch's IntDivider): with s = ceil(log2 d) and
//   m = floor(2^32 · (2^s − d) / d) + 1   (< 2^32),
//   n / d = (hi32(n · m) + n) >> s        (hi32: the high 32 bits of the 64-bit product).
// A GPU has no integer divider: nvcc expands a 64-bit '/' into a subroutine (with a branch to a
// ~20-instruction 32-bit sequence when both operands fit), per dimension and element; this is
// 2 instructions. The broadcast kernels (Add of a bias, Transpose, Where) run one per dim.
struct IndexDivider {
  uint32_t divisor = 1, magic = 0, shift = 0;
  IndexDivider() = default;
  explicit IndexDivider(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }
  OAT_HOST_DEVICE uint32_t div(uint32_t n) const {
    const uint32_t t = static_cast<uint32_t>((static_cast<uint64_t>(n) * magic) >> 32);
    return (t + n) >> shift;
  }
};

// Up to three operands indexed over one output shape: element i of the output reads operand k at
// Σ_d idx_d · strides[k][d] (stride 0 along a broadcast dimension). Dimensions are collapsed by
// the caller where every operand is contiguous across them (make_strided_index in common.h).
struct BroadcastIndex {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};
  bool contiguous = false;  // every operand is the full, contiguous output: offset = i
  // Set by finish_index (common.h): the element count and every operand's offsets fit in int32,
  // so the kernels index in 32 bits with divs[d] (d >= 1; the outermost index needs no division).
  bool index32 = false;
  IndexDivider divs[kMaxRank];
};

// Offsets of `nops` operands for output element i (see BroadcastIndex; host and device): the
// index's digits in the mixed radix dims[], innermost first; the outermost digit is what remains
// (i < Π dims), so it needs no division.
template <int NOPS>
OAT_HOST_DEVICE inline void broadcast_offsets(const BroadcastIndex& ix, int64_t i,
                                              int64_t (&off)[NOPS]) {
  if (ix.contiguous) {
    for (int k = 0; k < NOPS; ++k) off[k] = i;
    return;
  }
  if (ix.rank == 0) {
    for (int k = 0; k < NOPS; ++k) off[k] = 0;
    return;
  }
  if (ix.index32) {
    uint32_t j = static_cast<uint32_t>(i);
    int32_t o[NOPS];
    for (int k = 0; k < NOPS; ++k) o[k] = 0;
    for (int d = ix.rank - 1; d > 0; --d) {
      const uint32_t q = ix.divs[d].div(j);
      const int32_t r = static_cast<int32_t>(j - q * ix.divs[d].divisor);
      j = q;
      for (int k = 0; k < NOPS; ++k) o[k] += r * static_cast<int32_t>(ix.strides[k][d]);
    }
    for (int k = 0; k < NOPS; ++k)
      off[k] = o[k] + static_cast<int32_t>(j) * static_cast<int32_t>(ix.strides[k][0]);
    return;
  }
  for (int k = 0; k < NOPS; ++k) off[k] = 0;
  for (int d = ix.rank - 1; d > 0; --d) {
    const int64_t q = i / ix.dims[d];
    const int64_t r = i - q * ix.dims[d];
    i = q;
    for (int k = 0; k < NOPS; ++k) off[k] += r * ix.strides[k][d];
  }
  for (int k = 0; k < NOPS; ++k) off[k] += i * ix.strides[k][0];
}

constexpr int kThreads = 256;
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 16 ? 65535 * 16 : b));
}

// One reduction of `count` terms over several blocks. A reduction that runs as `base` blocks
// (one per output, or per tile of 32 columns) leaves most of a GPU idle when `base` is small
// (a bias gradient: 256 columns summed over 8192 rows is 8 tiles). It is then cut into `splits`
// chunks of `chunk` consecutive terms (at least `min_chunk`), blockIdx.y picking the chunk, until
// about kSplitTargetBlocks blocks exist; the chunks' FP32 partial results go to scratch and a
// second kernel combines them in chunk order. The numbers depend on the shape only, never on the
// device, so a result is the same on every GPU, on the emulator and in a CUDA-graph replay.
constexpr int64_t kSplitTargetBlocks = 1024;
struct ReductionSplit {
  int64_t splits = 1;
  int64_t chunk = 0;  // terms per split; the last split may have fewer
};
inline ReductionSplit split_reduction(int64_t base, int64_t count, int64_t min_chunk) {
  ReductionSplit s{1, count};
  if (base < 1) base = 1;
  if (base >= kSplitTargetBlocks || count < 2 * min_chunk) return s;
  int64_t n = (kSplitTargetBlocks + base - 1) / base;
  if (n > count / min_chunk) n = count / min_chunk;
  if (n > 65535) n = 65535;
  if (n <= 1) return s;
  s.chunk = (count + n - 1) / n;
  s.splits = (count + s.chunk - 1) / s.chunk;  // no empty chunk
  return s;
}

}  // namespace oat::cuda
